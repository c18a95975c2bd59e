"""Standard input (`gradlint - --stdin-filename`), `--add-noqa`, `--baseline` and an unreadable path (D1)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from gradcheck_lint.diagnostics import Span
from support import BUGGY, FIXTURES, ROOT, UNSCALED, invoke, write

CLEAN = BUGGY.replace("    opt.step()\n", "    opt.step()\n    opt.zero_grad()\n")


def run(*args: str, cwd: Path, stdin: str | bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    data = stdin.encode() if isinstance(stdin, str) else stdin
    return subprocess.run([sys.executable, "-m", "gradcheck_lint", *args], input=data, capture_output=True, cwd=cwd,
                          env=env, timeout=180)


# --- standard input ----------------------------------------------------------------------------------


def test_stdin_is_checked_as_the_named_file(tmp_path: Path) -> None:
    res = run("-", "--stdin-filename", "src/train.py", cwd=tmp_path, stdin=BUGGY)
    assert res.returncode == 1, res.stderr
    assert res.stdout.decode().startswith("src/train.py:6:5: GL001 [*] `opt.step()`")
    assert run("-", "--stdin-filename", "src/train.py", cwd=tmp_path, stdin=CLEAN).returncode == 0


def test_stdin_honours_the_configuration_of_its_name(tmp_path: Path) -> None:
    write(tmp_path, {"pyproject.toml": '[tool.gradlint.per-file-ignores]\n"scripts/*.py" = ["GL001"]\n'})
    assert run("-", "--stdin-filename", "scripts/train.py", cwd=tmp_path, stdin=BUGGY).returncode == 0
    assert run("-", "--stdin-filename", "src/train.py", cwd=tmp_path, stdin=BUGGY).returncode == 1


def test_stdin_fix_writes_the_fixed_source_to_stdout(tmp_path: Path) -> None:
    res = run("--fix", "-", "--stdin-filename", "train.py", cwd=tmp_path, stdin=BUGGY.replace("\n", "\r\n"))
    assert res.returncode == 0, res.stderr
    assert res.stdout == CLEAN.replace("\n", "\r\n").encode()  # the fix, in the input's own newlines
    assert b"Fixed 1 problem." in res.stderr
    # nothing to fix: the input comes back unchanged; what remains is reported on stderr
    unscaled = UNSCALED.replace("(i + 1) % 4", "(i + 1) % steps").replace("import torch\n", "import torch\nsteps = 4\n")
    res = run("--fix", "-", "--stdin-filename", "train.py", cwd=tmp_path, stdin=CLEAN)
    assert res.stdout == CLEAN.encode() and res.returncode == 0
    res = run("--diff", "-", "--stdin-filename", "train.py", cwd=tmp_path, stdin=unscaled)
    assert res.returncode == 1 and res.stdout.decode().startswith("--- train.py\n+++ train.py\n")


def test_stdin_that_does_not_parse_is_gl000_and_left_alone(tmp_path: Path) -> None:
    broken = "for x in y\n    loss.backward()\n    opt.step()\n"
    res = run("--fix", "-", "--stdin-filename", "t.py", cwd=tmp_path, stdin=broken)
    assert res.returncode == 2 and res.stdout == broken.encode() and b"GL000" in res.stderr


def test_stdin_usage_errors(tmp_path: Path) -> None:
    write(tmp_path, {"a.py": CLEAN})
    assert run("-", "a.py", cwd=tmp_path, stdin=CLEAN).returncode == 2
    assert run("--stdin-filename", "x.py", "a.py", cwd=tmp_path).returncode == 2


# --- --add-noqa ------------------------------------------------------------------------------------------


def test_add_noqa_then_a_run_is_clean_on_the_fixtures(tmp_path: Path) -> None:
    tree = tmp_path / "fixtures"
    shutil.copytree(FIXTURES, tree)  # scripts and notebooks
    # every current finding, the possible ones too: turning --show-possible on later stays quiet
    before = run("--format", "json", "--show-possible", "fixtures", cwd=tmp_path)
    assert before.returncode == 1
    count = sum(d["code"] != "GL099" for d in json.loads(before.stdout))  # a path-cap notice is no finding
    res = run("--add-noqa", "fixtures", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert f"added {count} suppressions".encode() in res.stderr
    after = run("--extend-select", "GL100", "fixtures", cwd=tmp_path)
    assert after.returncode == 0, after.stdout.decode()[-3000:]  # all suppressed, none of the comments unused
    text = (tree / "missing_zero_grad" / "no_zero_grad_plain_loop.py").read_text(encoding="utf-8")
    assert "optimizer.step()  # expect: GL001  # gradlint: ignore[GL001]\n" in text
    notebook = (tree / "notebooks" / "gan_cross_model_leak.ipynb").read_text(encoding="utf-8")
    assert '"    opt_D.step()  # expect: GL005  # gradlint: ignore[GL005]\\n",' in notebook  # in its cell, Jupyter's layout kept
    # a second run adds nothing
    assert b"added 0 suppressions" in run("--add-noqa", "fixtures", cwd=tmp_path).stderr


def test_add_noqa_extends_an_existing_directive_and_avoids_strings(tmp_path: Path) -> None:
    source = BUGGY.replace("    opt.step()\n", "    opt.step()  # gradlint: ignore[GL003]\n")
    write(tmp_path, {"a.py": source})
    res = run("--add-noqa", "--extend-select", "GL100", "a.py", cwd=tmp_path)
    assert (tmp_path / "a.py").read_text() == BUGGY.replace("    opt.step()\n", "    opt.step()  # gradlint: ignore[GL001, GL003]\n")
    assert res.returncode == 1  # the GL100 of the stale GL003 code is left for the author to edit
    from gradcheck_lint.add_noqa import plan_noqa
    from gradcheck_lint.api import check_source
    from gradcheck_lint.fixes import apply_edits

    # A line ending inside a string cannot carry a comment (it would become part of the string): the
    # statement's first line does, when it is another line; when it is not, the finding is left and said so.
    multi = BUGGY.replace("    opt.step()\n", '    opt.step(\n        note="""\n    x""")\n')
    found = check_source(multi, "m.py")
    assert [d.line for d in found] == [6]
    fixed = apply_edits(multi, plan_noqa(multi, found).edits)
    assert check_source(fixed, "m.py") == [] and "    opt.step(  # gradlint: ignore[GL001]\n" in fixed
    assert plan_noqa(multi, [replace(found[0], span=Span(7, 9, 7, 12))]).edits == plan_noqa(multi, found).edits
    stuck = BUGGY.replace("    opt.step()\n", '    opt.step(note="""\n    x""")\n')
    plan = plan_noqa(stuck, check_source(stuck, "s.py"))
    assert plan.edits == () and [d.code for d in plan.left] == ["GL001"]


# --- --baseline ------------------------------------------------------------------------------------------


def test_baseline_reports_only_findings_added_after_it(tmp_path: Path) -> None:
    write(tmp_path, {"src/a.py": BUGGY, "src/b.py": CLEAN})
    first = invoke("--baseline", str(tmp_path / "gradlint-baseline.json"), str(tmp_path / "src"))
    assert first.exit_code == 0 and "wrote 1 finding to the baseline" in first.stderr
    again = run("--baseline", "gradlint-baseline.json", "./src", cwd=tmp_path)  # another spelling of the path
    assert again.returncode == 0, again.stdout
    # Lines added above the old finding leave it matched; the finding added to b.py is reported, alone.
    (tmp_path / "src" / "a.py").write_text("# a comment\n\n" + BUGGY.replace("import torch\n", "import torch\nimport os\n"))
    (tmp_path / "src" / "b.py").write_text(UNSCALED)
    res = run("--format", "json", "--baseline", "gradlint-baseline.json", "src", cwd=tmp_path)
    assert res.returncode == 1
    assert [(d["path"], d["code"]) for d in json.loads(res.stdout)] == [("src/b.py", "GL003")]
    # a second identical finding in a.py is new too: matching counts occurrences
    (tmp_path / "src" / "a.py").write_text(BUGGY + BUGGY.split("\n", 3)[3])
    res = run("--format", "json", "--baseline", "gradlint-baseline.json", "src/a.py", cwd=tmp_path)
    assert [(d["path"], d["line"], d["code"]) for d in json.loads(res.stdout)] == [("src/a.py", 9, "GL001")]
    # --update-baseline takes in what is there now
    assert run("--baseline", "gradlint-baseline.json", "--update-baseline", "src", cwd=tmp_path).returncode == 0
    assert run("--baseline", "gradlint-baseline.json", "src", cwd=tmp_path).returncode == 0


def test_a_broken_baseline_is_an_error_not_a_crash(tmp_path: Path) -> None:
    write(tmp_path, {"a.py": BUGGY, "base.json": "{not json"})
    res = run("--baseline", "base.json", "a.py", cwd=tmp_path)
    assert res.returncode == 2 and b"gradlint: error: the baseline base.json is not valid JSON" in res.stderr
    assert b"Traceback" not in res.stderr


# --- D1: a path named on the command line that cannot be read -------------------------------------------


def test_an_unreadable_path_is_one_gl000_and_the_others_are_checked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Once a click usage error (exit 2, nothing checked). chmod does not stop root, so the denial is simulated
    where the operating system would give it: `os.access` (which click consulted) and `os.open`."""
    write(tmp_path, {"u.py": BUGGY, "a.py": BUGGY})
    locked = str(tmp_path / "u.py")
    real_access, real_open = os.access, os.open

    def access(path: object, mode: int, *args: object, **kwargs: object) -> bool:
        return False if os.fspath(path) == locked else real_access(path, mode, *args, **kwargs)  # type: ignore[arg-type]

    def open_(path: object, flags: int, *args: object, **kwargs: object) -> int:
        if os.fspath(path) == locked:  # type: ignore[arg-type]
            raise PermissionError(13, "Permission denied", locked)
        return real_open(path, flags, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "access", access)
    monkeypatch.setattr(os, "open", open_)
    res = invoke("--format", "json", "--jobs", "1", "--no-cache", locked, str(tmp_path / "a.py"))
    assert res.exit_code == 2, res.output
    found = sorted((Path(d["path"]).name, d["code"]) for d in json.loads(res.stdout))
    assert found == [("a.py", "GL001"), ("u.py", "GL000")]
    assert "permission denied" in next(d["message"] for d in json.loads(res.stdout) if d["code"] == "GL000")


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root reads any file")
def test_an_unreadable_file_really(tmp_path: Path) -> None:
    write(tmp_path, {"u.py": BUGGY, "a.py": BUGGY})
    (tmp_path / "u.py").chmod(0)
    try:
        res = run("u.py", "a.py", cwd=tmp_path)
    finally:
        (tmp_path / "u.py").chmod(0o644)
    assert res.returncode == 2 and b"u.py:1:1: GL000" in res.stdout and b"a.py:6:5: GL001" in res.stdout
