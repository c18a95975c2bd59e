"""The `gradlint` command as a user runs it: output formats, exit codes, bad input, the rule catalogue."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from support import BUGGY, FIXTURES, ROOT, FreshReport

CLEAN = BUGGY.replace("    opt.step()\n", "    opt.step()\n    opt.zero_grad()\n")


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "gradcheck_lint", *args], capture_output=True, text=True, cwd=cwd, timeout=120)


def test_text_output_and_exit_one(tmp_path: Path) -> None:
    f = tmp_path / "train.py"
    f.write_text(BUGGY)
    res = run(str(f))
    assert res.returncode == 1, res.stderr
    first, help_line = res.stdout.splitlines()[:2]
    assert first.startswith(f"{f}:6:5: GL001 [*] `opt.step()`")
    assert help_line.startswith("    help: ")


def test_clean_file_exits_zero(tmp_path: Path) -> None:
    f = tmp_path / "train.py"
    f.write_text(CLEAN)
    res = run(str(f))
    assert res.returncode == 0, res.stdout
    assert "All checks passed" in res.stdout


def test_json_output(tmp_path: Path) -> None:
    f = tmp_path / "train.py"
    f.write_text(BUGGY)
    res = run("--format", "json", str(f))
    data = json.loads(res.stdout)
    assert res.returncode == 1
    assert len(data) == 1
    keys = {"path", "line", "column", "end_line", "end_column", "code", "name", "severity", "message", "help"}
    assert keys <= set(data[0])
    assert (data[0]["line"], data[0]["column"], data[0]["code"], data[0]["name"]) == (6, 5, "GL001", "missing-zero-grad")
    assert data[0]["end_line"] == 6 and data[0]["end_column"] > data[0]["column"]


def test_select_ignore_and_exit_zero(tmp_path: Path) -> None:
    f = tmp_path / "train.py"
    f.write_text(BUGGY)
    assert run("--ignore", "GL001", str(f)).returncode == 0
    assert run("--select", "GL002,GL003", str(f)).returncode == 0
    assert run("--select", "GL00", str(f)).returncode == 1
    assert run("--select", "missing-zero-grad", str(f)).returncode == 1
    res = run("--exit-zero", str(f))
    assert res.returncode == 0 and "GL001" in res.stdout


def test_unknown_code_is_a_usage_error(tmp_path: Path) -> None:
    f = tmp_path / "train.py"
    f.write_text(CLEAN)
    res = run("--select", "GL999", str(f))
    assert res.returncode == 2
    assert "GL999" in res.stderr and "GL001" in res.stderr


def test_no_paths_is_a_usage_error() -> None:
    assert run().returncode == 2


def _bad_inputs(tmp_path: Path) -> dict[str, Path]:
    d = tmp_path / "proj"
    d.mkdir()
    (d / "good.py").write_text(BUGGY)
    # Each holds a backward pass and a step, so the prefilter lets it through to the parsers.
    (d / "syntax.py").write_text("for x in y\n    loss.backward()\n    opt.step()\n")
    (d / "latin1.py").write_bytes(b"x = '\xe9'  # backward, step\n")
    deep = "x = " + "(" * 5000 + "1" + ")" * 5000 + "\nloss.backward()\nopt.step()\n"
    (d / "deep.py").write_text(deep)
    (d / "dir.py").mkdir()
    os.symlink(d / "missing.py", d / "broken.py")
    (d / "nul.py").write_bytes(b"loss.backward()\x00\nopt.step()\n")
    return {"dir": d}


def test_bad_input_gives_gl000_and_others_still_checked(tmp_path: Path) -> None:
    d = _bad_inputs(tmp_path)["dir"]
    res = run("--format", "json", str(d))
    assert res.returncode == 2, res.stderr
    data = json.loads(res.stdout)
    by_file = {}
    for item in data:
        by_file.setdefault(Path(item["path"]).name, []).append(item["code"])
    assert by_file["good.py"] == ["GL001"]
    for name in ("syntax.py", "latin1.py", "deep.py", "dir.py", "broken.py", "nul.py"):
        assert by_file.get(name) == ["GL000"], (name, by_file)
    assert "Traceback" not in res.stderr


def test_encodings_bom_crlf_tabs(tmp_path: Path) -> None:
    cookie = b"# -*- coding: latin-1 -*-\n" + BUGGY.encode() + b"s = '\xe9'\n"
    (tmp_path / "cookie.py").write_bytes(cookie)
    (tmp_path / "bom.py").write_bytes(b"\xef\xbb\xbf" + BUGGY.encode())
    (tmp_path / "crlf.py").write_bytes(BUGGY.replace("\n", "\r\n").encode())
    (tmp_path / "tabs.py").write_text(BUGGY.replace("    ", "\t"))
    res = run("--format", "json", str(tmp_path))
    data = json.loads(res.stdout)
    got = sorted((Path(i["path"]).name, i["line"], i["code"]) for i in data)
    assert got == [("bom.py", 6, "GL001"), ("cookie.py", 7, "GL001"), ("crlf.py", 6, "GL001"), ("tabs.py", 6, "GL001")]


def test_directory_walk_skips_venvs_build_and_gitignored(tmp_path: Path) -> None:
    for sub in (".git", "venv", "build", "dist", "node_modules", "ignored", "src"):
        (tmp_path / sub).mkdir()
        (tmp_path / sub / "train.py").write_text(BUGGY)
    (tmp_path / "custom_env").mkdir()
    (tmp_path / "custom_env" / "pyvenv.cfg").write_text("home = /usr\n")
    (tmp_path / "custom_env" / "train.py").write_text(BUGGY)
    (tmp_path / "generated_train.py").write_text(BUGGY)
    (tmp_path / ".gitignore").write_text("ignored/\ngenerated_*.py\n")
    res = run("--format", "json", str(tmp_path))
    paths = {Path(i["path"]).relative_to(tmp_path).as_posix() for i in json.loads(res.stdout)}
    assert paths == {"src/train.py"}


def test_rule_catalogue() -> None:
    res = run("rule")
    assert res.returncode == 0
    assert [line.split()[0] for line in res.stdout.splitlines()] == [f"GL{n:03d}" for n in range(1, 11)] + ["GL100", "GL101"]
    doc = run("rule", "GL003")
    assert doc.returncode == 0
    assert doc.stdout.startswith("# GL003: unscaled-accumulated-loss")
    assert "## Use instead" in doc.stdout
    assert run("rule", "GL042").returncode == 2
    unused = run("rule", "unused-suppression")
    assert unused.returncode == 0 and unused.stdout.startswith("# GL100: unused-suppression")
    assert "## Runtime check\nNone: this is a static check only." in unused.stdout


def test_fixtures_directory_run_matches_expectations(fresh_fixtures_report: FreshReport) -> None:
    """The README's first command: `gradlint --show-possible fixtures/` reports exactly the annotated
    diagnostics, notebooks included; without the flag, exactly the certain ones among them."""
    from support import load_fixtures, load_notebook_fixtures

    # `gradlint --show-possible --format json <fixtures>` from the root: the session's fresh run (made once, read by
    # the hash-seed test too); the run without the flag reads the result cache that run filled
    res = fresh_fixtures_report.run
    assert res.args[-4:] == ["--show-possible", "--format", "json", str(FIXTURES)] and res.returncode == 1, res.stderr
    reported = json.loads(res.stdout)
    got = {(str(Path(i["path"]).resolve()), i["cell"], i["line"], i["code"]) for i in reported}
    default = subprocess.run([sys.executable, "-m", "gradcheck_lint", "--format", "json", str(FIXTURES)],
                             capture_output=True, text=True, cwd=ROOT, timeout=120,
                             env={**os.environ, "GRADLINT_CACHE_DIR": str(fresh_fixtures_report.cache_dir)})
    certain = [i for i in reported if i["certainty"] == "certain"]
    assert 0 < len(certain) < len(reported)
    assert json.loads(default.stdout) == certain
    want = {(str(f.path.resolve()), None, line, code) for f in load_fixtures() for line, code in f.expected}
    want |= {(str(f.path.resolve()), cell, line, code) for f in load_notebook_fixtures() for cell, line, code in f.expected}
    assert any(cell is not None for _path, cell, _line, _code in want)
    assert got == want


def test_installed_package_ships_rule_documents(tmp_path: Path) -> None:
    """Run from an unrelated directory: the installed package (a wheel in CI) finds its documents."""
    code = "from gradcheck_lint.rule_docs import read_doc; from gradcheck_lint.registry import catalogue; print(all(read_doc(c) and read_doc(c).startswith('# ' + c) for c in catalogue()))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert out.stdout.strip() == "True", out.stderr


def test_a_file_reached_twice_through_links_is_checked_once(tmp_path: Path) -> None:
    """The walk keeps one path per real file: a linked file, and files under a linked directory."""
    from gradcheck_lint.discovery import iter_python_files

    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "train.py").write_text(BUGGY)
    os.symlink(tmp_path / "pkg" / "train.py", tmp_path / "pkg" / "z_alias.py")
    os.symlink(tmp_path / "pkg", tmp_path / "z_linked")  # a linked directory is not walked into
    (tmp_path / "real").mkdir()
    os.symlink(tmp_path / "real", tmp_path / "view")
    (tmp_path / "real" / "a.py").write_text("x = 1\n")
    found = [os.path.relpath(p, tmp_path) for p in iter_python_files([str(tmp_path), str(tmp_path / "view")])]
    assert found == [os.path.join("pkg", "train.py"), os.path.join("real", "a.py")]
