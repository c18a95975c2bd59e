"""The README's runnable examples run, and say what the README says."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
from collections.abc import Callable
from pathlib import Path

import pytest

from support import BUGGY, FIXTURES, ROOT, write

pytest.importorskip("torch")


def _blocks() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    return [b for b in re.findall(r"```python\n(.*?)```", text, re.S) if "from gradcheck_lint.runtime import" in b]


@pytest.mark.parametrize("block", _blocks(), ids=lambda b: b.splitlines()[2][:40])
def test_readme_runtime_example(block: str) -> None:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(block, "README.md", "exec"), {})
    if "verify_accumulation" in block:
        assert out.getvalue().splitlines()[0] == "unscaled-loss GL003"


def test_readme_has_both_runtime_examples() -> None:
    assert len(_blocks()) == 2


# --- every shell and Python block, in a fresh virtual environment ----------------------------------------

_COPY_IGNORE = shutil.ignore_patterns(".git", ".ci-venv", ".venv", "venv", "__pycache__", "*.egg-info", "build", "dist",
                                      ".pytest_cache", ".mypy_cache", ".ruff_cache", ".gradlint_cache", ".hypothesis")
# The line that runs the whole test-suite would run this test again: it runs a collection instead, of the
# house tests, whose modules import neither torch nor the frameworks (pytest, its plugins, ours and the
# conftest load all the same): in the CI's environment, 2.2 s of CPU a collection against 6.0 for tests/cli,
# whose modules import torch. CI runs the whole suite in such an environment anyway.
_SUITE = "python -m pytest"
_SUITE_STAND_IN = "python -m pytest --collect-only -q -p no:cacheprovider tests/house"
# The line that makes the README's own `.venv` (its activation ends with the line): made without pip's
# bootstrap, which the test's environment above stands in for.
_VENV = "python3 -m venv .venv"
_VENV_STAND_IN = "python3 -m venv --without-pip .venv"


def _shell_lines(text: str) -> list[str]:
    """The commands of the README's ```bash blocks, one per line, comments kept (bash ignores them)."""
    lines = []
    for block in re.findall(r"```bash\n(.*?)```", text, re.S):
        lines.extend(line for line in block.splitlines() if line.strip() and not line.lstrip().startswith("#"))
    return lines


def _fresh_venv(where: Path) -> Path:
    """A new virtual environment whose heavy third-party packages (torch, the frameworks, pygls) come from
    this one through a `.pth` line, so that nothing of gigabytes is downloaded; gradcheck_lint itself is
    not there until a README line installs it (pip never uninstalls outside its own environment)."""
    venv = where / "venv"
    # without its own copy of pip (ensurepip: a third of this test's time): the pip of this environment,
    # visible through the `.pth`, run by the new one's python installs into the new one
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=300)
    purelib = subprocess.run([str(venv / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    (Path(purelib) / "readme-test-deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    pip = venv / "bin" / "pip"
    pip.write_text(f'#!/bin/sh\nexec "{venv / "bin" / "python"}" -m pip "$@"\n')
    pip.chmod(0o755)
    return venv


# `.ci/run` makes a fresh virtual environment, runs the README's set-up commands in it (the three lines
# below) and then, in that environment, the suite: it names the environment in this variable. There this
# test does not run the set-up lines again in an environment of its own (which sees this one's packages
# through a `.pth`, so it was never a fresh machine either: three wheel builds, a resolution of the test
# extra and a lint of the fixtures, most of this test's time); the CI run that is under way is their proof
# on a fresh machine, and `test_ci_runs_the_readme_set_up_commands` holds `.ci/run` to those lines.
# Everywhere else (a developer's `python -m pytest`) the test runs every line, as before.
CI_FRESH_VENV = "GRADLINT_CI_FRESH_VENV"
_SET_UP_LINES = 3  # `python3 -m venv .venv && . .venv/bin/activate`, then README commands 1 and 2


def _in_the_ci_fresh_venv() -> bool:
    """Whether this interpreter runs in the environment `.ci/run` has just made and set up by the README."""
    made = os.environ.get(CI_FRESH_VENV)
    return bool(made) and Path(made).resolve() == Path(sys.prefix).resolve()


def _command(words: str) -> list[str]:
    """A command line's words, comment and environment activation left out."""
    return shlex.split(words.split("#", 1)[0])


def _set_up_commands() -> list[list[str]]:
    """The README's set-up commands (the first three shell lines), each `&&` part split into words."""
    lines = _shell_lines((ROOT / "README.md").read_text(encoding="utf-8"))[:_SET_UP_LINES]
    return [_command(part) for line in lines for part in line.split("#", 1)[0].split("&&")]


def test_ci_runs_the_readme_set_up_commands() -> None:
    """`.ci/run` runs what the README's set-up lines run: a fresh environment, the install of command 2 (whose
    `.[test]` holds command 1's `.`), `gradlint fixtures/` expecting exit 1, `python -m pytest`; and it names
    the environment in GRADLINT_CI_FRESH_VENV only after command 1 passed, before the suite."""
    readme = _set_up_commands()
    assert readme == [["python3", "-m", "venv", ".venv"], [".", ".venv/bin/activate"],
                      ["pip", "install", "."], ["gradlint", "fixtures/"],
                      ["pip", "install", "torch==2.13.0", ".[test]"], ["python", "-m", "pytest"]], readme
    script = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    lines = [_command(line) for line in script.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    lines = [words for words in lines if words]

    def at(predicate: Callable[[list[str]], bool]) -> int:
        found = [i for i, words in enumerate(lines) if predicate(words)]
        assert found, script
        return found[0]

    venv = at(lambda w: w[:3] == ["python3", "-m", "venv"] and w[-1] == ".ci-venv")
    activate = at(lambda w: w == [".", ".ci-venv/bin/activate"])
    install = at(lambda w: w[:4] == ["python", "-m", "pip", "install"])
    requirements = [w for w in lines[install][4:] if not w.startswith("-")]
    assert requirements == readme[4][2:], lines[install]  # README command 2's install
    assert readme[2][2:] == ["."] and ".[test]".startswith("."), readme[2]  # command 1's install: the same package
    lint = at(lambda w: w[:2] == ["gradlint", "fixtures/"])
    assert 'if [ "$status" -ne 1 ]; then' in script and "exit 1" in script.split('if [ "$status" -ne 1 ]; then', 1)[1]
    named = at(lambda w: w[:1] == ["export"] and w[1].startswith(f"{CI_FRESH_VENV}="))
    suite = at(lambda w: w == ["python", "-m", "pytest"])
    assert venv < activate < install < lint < named < suite, (venv, activate, install, lint, named, suite)
    assert lines[named][1] == f"{CI_FRESH_VENV}=$PWD/.ci-venv", lines[named]


@pytest.mark.slow
@pytest.mark.network  # `pip install .` builds the wheel with hatchling, fetched by pip's build isolation
def test_every_shell_and_python_block_runs_in_a_fresh_venv(tmp_path: Path) -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    repo = tmp_path / "gradcheck_lint"
    shutil.copytree(ROOT, repo, ignore=_COPY_IGNORE)
    # What the Usage lines name: a script, a directory, a notebook, a configuration file.
    write(repo, {"train.py": BUGGY, "src/train.py": BUGGY, "ci/lint.toml": "[tool.gradlint]\nignore = []\n"})
    shutil.copy(FIXTURES / "notebooks" / "regression_missing_zero_grad.ipynb", repo / "nb.ipynb")
    venv = _fresh_venv(tmp_path)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(PATH=f"{venv / 'bin'}{os.pathsep}{env['PATH']}", VIRTUAL_ENV=str(venv), PIP_DISABLE_PIP_VERSION_CHECK="1")
    lines = _shell_lines(text)
    assert lines[1].startswith("pip install . && gradlint fixtures/") and _SUITE in lines[2]
    first = 0
    if _in_the_ci_fresh_venv():
        # The set-up lines ran in this environment moments ago (see CI_FRESH_VENV): the other lines run with
        # its `gradlint` (and flake8) behind the new environment's, which stays the one pip installs into.
        first = _SET_UP_LINES
        env["PATH"] = f"{venv / 'bin'}{os.pathsep}{Path(sys.prefix) / 'bin'}{os.pathsep}{os.environ['PATH']}"
    for number, line in enumerate(lines[first:], first):
        command = line.replace(_SUITE, _SUITE_STAND_IN) if _SUITE in line and "pytest --" not in line else line
        command = command.replace(_VENV, _VENV_STAND_IN)
        res = subprocess.run(["bash", "-c", command], cwd=repo, env=env, capture_output=True, text=True, timeout=1800)
        expected = {1} if number == 1 else {0, 1}  # the fixtures hold bugs on purpose; else findings or none
        assert res.returncode in expected, f"README line {line!r} exited {res.returncode}:\n{res.stdout[-2000:]}\n{res.stderr[-3000:]}"
        assert "Traceback" not in res.stderr, (line, res.stderr[-3000:])
    assert (venv / "bin" / "gradlint").exists(), "no README line installed gradlint into the environment"
    # Each Python block in a process of its own, forked from one of the environment's interpreters that
    # imported torch (and Lightning, transformers) once, by tests/forkserver.py: a fresh interpreter per
    # block paid those imports six times (~35 s of CPU for the six blocks at load 12).
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    scripts = []
    for number, block in enumerate(blocks):
        scripts.append(tmp_path / f"block{number}.py")
        scripts[-1].write_text(block, encoding="utf-8")
    res = subprocess.run([str(venv / "bin" / "python"), str(repo / "tests" / "forkserver.py"), "plain", "2", *map(str, scripts)],
                         cwd=repo, env=env, capture_output=True, text=True, timeout=900)
    assert res.returncode == 0, res.stderr[-3000:]
    results = json.loads(res.stdout.strip().splitlines()[-1])
    for script, block in zip(scripts, blocks):
        assert results[str(script)]["error"] == "", f"README block failed:\n{block}\n{results[str(script)]['error']}"


def test_readme_local_pre_commit_hook_runs(tmp_path: Path) -> None:
    """The README's `repo: local` pre-commit snippet, run by the real pre-commit with this gradlint on PATH."""
    pre_commit = shutil.which("pre-commit") or str(Path(sys.executable).with_name("pre-commit"))
    if not Path(pre_commit).exists():
        pytest.skip("pre-commit is not installed")
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = re.search(r"### pre-commit\n.*?```yaml\n(.*?)```", text, re.S)
    assert block is not None and "repo: local" in block.group(1)
    write(tmp_path, {".pre-commit-config.yaml": block.group(1), "buggy.py": (FIXTURES / "missing_zero_grad" / "no_zero_grad_plain_loop.py").read_text()})
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t.invalid", "-c", "commit.gpgsign=false"]
    for args in (["init", "-q"], ["add", "."]):
        subprocess.run([*git, *args], cwd=tmp_path, check=True, capture_output=True)
    bindir = tmp_path / "bin"
    bindir.mkdir()
    shim = bindir / "gradlint"
    shim.write_text(f"#!/bin/sh\nPYTHONPATH={ROOT} exec {sys.executable} -m gradcheck_lint \"$@\"\n")
    shim.chmod(0o755)
    env = dict(os.environ, PATH=f"{bindir}{os.pathsep}{os.environ['PATH']}", PRE_COMMIT_HOME=str(tmp_path / "home"))
    res = subprocess.run([pre_commit, "run", "--files", "buggy.py"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert res.returncode == 1 and "buggy.py:24:9: GL001" in res.stdout, res.stdout + res.stderr
