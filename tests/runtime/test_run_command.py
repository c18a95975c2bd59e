"""`gradlint run script.py [args...]` and `python -m gradcheck_lint.run`: a script under the guard."""

from __future__ import annotations

import functools
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from support import load_fixtures

pytest.importorskip("torch")

RUNTIME_CODES = {"GL001", "GL002", "GL003", "GL004", "GL005"}
GRADLINT = [sys.executable, "-c", "import sys; from gradcheck_lint.cli import main; sys.argv[0] = 'gradlint'; main()"]
LINE = re.compile(r"^(?P<path>.+?):(?P<line>\d+):(?P<col>\d+): (?P<code>GL\d{3}) .* \[(?P<steps>\d+) steps?, first at step (?P<first>\d+)(?: of `(?P<opt>[^`]+)`)?\]$")


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*GRADLINT, "run", *args], capture_output=True, text=True, timeout=300, cwd=cwd)


def findings(stderr: str) -> list[dict[str, str]]:
    return [m.groupdict() for m in map(LINE.match, stderr.splitlines()) if m]


def _pick(theme: str, name: str):  # type: ignore[no-untyped-def]
    return next(f for f in load_fixtures() if f.path.parent.name == theme and f.path.stem == name)


# The run of no_zero_grad_plain_loop is read by two tests (`run_fixture`): one xdist group puts them on one worker,
# where it is made once (~4 s of CPU; the tests landed on either worker, each then made it).
_PLAIN_LOOP_RUN = pytest.mark.xdist_group("run_no_zero_grad_plain_loop")

# one fixture per runtime code, and correct ones
SAMPLES = [
    pytest.param(_pick("missing_zero_grad", "no_zero_grad_plain_loop"), marks=_PLAIN_LOOP_RUN),
    _pick("zero_grad_before_step", "zero_grad_between_backward_and_step"),
    _pick("unscaled_accumulated_loss", "modulo_step_unscaled_loss"),
    _pick("accumulation_off_by_one", "enumerate_mod_zero"),
    _pick("cross_model_grad_leak", "gan_g_first_d_zeroed_after_step"),
    _pick("correct_idioms", "lbfgs_closure"),
    _pick("correct_idioms", "window_start_zero_grad_across_epochs"),
]


@functools.cache
def run_fixture(path: str) -> subprocess.CompletedProcess[str]:
    """`gradlint run` on a bundled fixture, once per process: two tests read the same run (~4 s of CPU each)."""
    return run(path)


@pytest.mark.parametrize("fixture", SAMPLES, ids=lambda f: f.id)
def test_run_on_bundled_fixtures(fixture) -> None:  # type: ignore[no-untyped-def]
    out = run_fixture(str(fixture.path))
    want = {code for _line, code in fixture.expected if code in RUNTIME_CODES}
    got = findings(out.stderr)
    assert {f["code"] for f in got} == want, out.stderr
    assert out.returncode == (1 if want else 0), out.stderr
    # one line per code and place, then the summary line
    assert len({(f["path"], f["line"], f["col"], f["code"]) for f in got}) == len(got)
    assert out.stderr.rstrip().splitlines()[-1].startswith("gradlint guard: ")
    for f in got:
        assert os.path.abspath(f["path"]) == str(fixture.path)  # relative to the working directory when under it
        if f["code"] in {"GL001", "GL002", "GL003", "GL005"}:
            assert (int(f["line"]), f["code"]) in fixture.expected, out.stderr


@_PLAIN_LOOP_RUN
def test_repeated_finding_is_one_line_with_its_step_count() -> None:
    out = run_fixture(str(_pick("missing_zero_grad", "no_zero_grad_plain_loop").path))
    (only,) = findings(out.stderr)
    assert int(only["steps"]) > 1 and only["first"] == "2" and only["opt"] == "optimizer"


def test_exit_codes_arguments_and_modes(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(
        """
        import sys
        import torch
        print("args", sys.argv[1:])
        model = torch.nn.Linear(3, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for _ in range(4):
            model(torch.randn(2, 3)).sum().backward()
            opt.step()
        if "--fail" in sys.argv:
            sys.exit(3)
        if "--crash" in sys.argv:
            raise ValueError("boom")
        """
    ))
    broken = run(str(script), "--lr", "1")
    assert broken.returncode == 1 and "args ['--lr', '1']" in broken.stdout
    (f,) = findings(broken.stderr)
    assert f["code"] == "GL001" and f["steps"] == "3" and f["first"] == "2" and f["opt"] == "opt"
    assert run(str(script), "--fail").returncode == 3  # the script's own exit code wins
    crashed = run(str(script), "--crash")
    assert crashed.returncode == 1 and "ValueError: boom" in crashed.stderr
    raised = run("--mode", "raise", str(script))  # stops at the first broken step
    assert raised.returncode == 1
    (f,) = findings(raised.stderr)
    assert f["steps"] == "1" and f["first"] == "2"
    module = subprocess.run([sys.executable, "-m", "gradcheck_lint.run", "--strict", str(script)],
                            capture_output=True, text=True, timeout=300)
    assert module.returncode == 1 and [g["code"] for g in findings(module.stderr)] == ["GL001"]


def test_clean_script_and_usage_errors(tmp_path: Path) -> None:
    script = tmp_path / "ok.py"
    script.write_text(textwrap.dedent(
        """
        import torch
        model = torch.nn.Linear(3, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for _ in range(3):
            opt.zero_grad()
            model(torch.randn(2, 3)).sum().backward()
            opt.step()
        """
    ))
    ok = run(str(script))
    assert ok.returncode == 0 and findings(ok.stderr) == []
    assert "held on every step" in ok.stderr
    assert run(str(tmp_path / "missing.py")).returncode == 2
    assert run().returncode == 2
    assert run("--mode", "loud", str(script)).returncode == 2


def test_run_module_imports_without_torch(tmp_path: Path) -> None:
    """`gradlint run` is reached through the static CLI, which must import without torch."""
    (tmp_path / "sitecustomize.py").write_text("import sys\nsys.modules['torch'] = None\n")
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    script = tmp_path / "s.py"
    script.write_text("print('hi')\n")
    out = subprocess.run([*GRADLINT, "run", str(script)], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 2 and "torch" in out.stderr.lower(), out.stderr


def test_verify_every_cycle_reaches_the_guard(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """`--verify-every-cycle` is handed to the process-wide guard; without it the environment decides."""
    import importlib

    from gradcheck_lint import run as run_module
    from gradcheck_lint.runtime.report import Report

    guard_module = importlib.import_module("gradcheck_lint.runtime.guard")  # the module, not the class

    given: list[object] = []

    def enable(mode: str = "raise", strict: bool = False, verify_every_cycle: bool | None = None) -> None:
        given.append(verify_every_cycle)

    monkeypatch.setattr(guard_module, "enable", enable)
    monkeypatch.setattr(guard_module, "disable", Report)
    script = tmp_path / "nothing.py"
    script.write_text("pass\n")
    assert run_module.main(["--verify-every-cycle", str(script)]) == 0
    assert run_module.main([str(script)]) == 0
    assert given == [True, None]
