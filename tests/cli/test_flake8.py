"""The flake8 plugin, run through the real `flake8`: it reports exactly what `gradlint` reports."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from support import BUGGY, FIXTURES, ROOT, FreshReport

FORMAT = "%(path)s\t%(row)d\t%(col)d\t%(code)s\t%(text)s"


def flake8(*args: str, stdin: str | None = None, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "flake8", "--isolated", "--select", "GL", f"--format={FORMAT}", *args]
    return subprocess.run(cmd, input=stdin, capture_output=True, text=True, cwd=cwd, timeout=600)


def parse(stdout: str) -> set[tuple[str, int, int, str, str]]:
    out = set()
    for line in stdout.splitlines():
        path, row, col, code, text = line.split("\t")
        out.add((str(Path(path).resolve()), int(row), int(col), code, text))
    return out


def test_flake8_reports_what_gradlint_reports_on_every_fixture(fresh_fixtures_report: FreshReport) -> None:
    files = sorted(str(p) for p in FIXTURES.rglob("*.py"))
    res = flake8(str(FIXTURES))  # one invocation over the directory
    assert res.returncode == 1, res.stderr
    got = parse(res.stdout)
    # gradlint's side reads the result cache of the session's fresh run of the same files at the same paths
    lint = subprocess.run([sys.executable, "-m", "gradcheck_lint", "--format", "json", *files],
                          capture_output=True, text=True, cwd=ROOT, timeout=600,
                          env={**os.environ, "GRADLINT_CACHE_DIR": str(fresh_fixtures_report.cache_dir)})
    assert lint.returncode == 1, lint.stderr
    want = {(str(Path(d["path"]).resolve()), d["line"], d["column"], d["code"], d["message"]) for d in json.loads(lint.stdout)}
    # the flake8 plugin reports the rules' findings; a GL099 notice (an analysis cut at the path cap) is gradlint's own
    want = {w for w in want if w[3] != "GL099"}
    assert {code for *_, code, _text in want} == {f"GL{n:03d}" for n in range(1, 11)}
    assert got == want


def test_stdin_and_crlf(tmp_path: Path) -> None:
    for text in (BUGGY, BUGGY.replace("\n", "\r\n")):
        res = flake8("--stdin-display-name", "train.py", "-", stdin=text, cwd=tmp_path)
        assert res.returncode == 1, res.stderr
        [(path, row, col, code, message)] = parse(res.stdout)
        assert (Path(path).name, row, col, code) == ("train.py", 6, 5, "GL001")
        assert message.startswith("`opt.step()` applies gradients")


def test_noqa_is_handled_by_flake8(tmp_path: Path) -> None:
    (tmp_path / "silenced.py").write_text(BUGGY.replace("    opt.step()\n", "    opt.step()  # noqa: GL001\n"))
    (tmp_path / "other_code.py").write_text(BUGGY.replace("    opt.step()\n", "    opt.step()  # noqa: E501\n"))
    res = flake8(".", cwd=tmp_path)
    assert {(Path(p).name, row, code) for p, row, _c, code, _t in parse(res.stdout)} == {("other_code.py", 6, "GL001")}


_IN_PROCESS = """
import sys
from flake8.main.cli import main
status = main(["--isolated", "--select", "GL", "--jobs", "1", sys.argv[1]])
print(status, *(m in sys.modules for m in ("gradcheck_lint.flake8_plugin", "gradcheck_lint.engine", "gradcheck_lint.analysis.interpreter", "torch")))
"""


def test_files_without_backward_cost_only_the_prefilter(tmp_path: Path) -> None:
    """Without `backward` the plugin neither parses nor imports the analyzer; with it, it does (and finds the bug)."""
    (tmp_path / "plain.py").write_text(BUGGY.replace(".backward()", ".sum()"))
    (tmp_path / "train.py").write_text(BUGGY)

    def run(name: str) -> list[str]:
        res = subprocess.run([sys.executable, "-c", _IN_PROCESS, str(tmp_path / name)],
                             capture_output=True, text=True, cwd=tmp_path, timeout=300)
        return res.stdout.split("\n")[-2].split()

    assert run("plain.py") == ["0", "True", "False", "False", "False"]
    assert run("train.py") == ["1", "True", "True", "True", "False"]
