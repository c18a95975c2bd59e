"""Command-line options a ruff or flake8 user expects, and the wording of the command's own errors."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from support import BUGGY, FIXTURES, ROOT, invoke, write


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    return subprocess.run([sys.executable, "-m", "gradcheck_lint", *args], capture_output=True, text=True, cwd=cwd,
                          env=env, timeout=300)


def tree(tmp_path: Path) -> Path:
    write(tmp_path, {"src/train.py": BUGGY, "gen/train.py": BUGGY, "tests/test_train.py": BUGGY})
    return tmp_path


def test_exclude_and_extend_exclude_on_the_command_line(tmp_path: Path) -> None:
    root = tree(tmp_path)
    assert run("--show-files", ".", cwd=root).stdout.split() == ["./gen/train.py", "./src/train.py", "./tests/test_train.py"]
    assert run("--show-files", "--extend-exclude", "gen,tests", ".", cwd=root).stdout.split() == ["./src/train.py"]
    # --exclude replaces the built-in excludes too: `build` is then walked
    write(root, {"build/train.py": BUGGY})
    assert "./build/train.py" not in run("--show-files", ".", cwd=root).stdout
    assert "./build/train.py" in run("--show-files", "--exclude", "gen", ".", cwd=root).stdout.split()
    res = run("--extend-exclude", "gen,tests,build", ".", cwd=root)
    assert res.returncode == 1 and "Found 1 problem in 1 file checked." in res.stdout


def test_per_file_ignores_on_the_command_line(tmp_path: Path) -> None:
    root = tree(tmp_path)
    res = run("--per-file-ignores", "tests/*.py:GL001", "--per-file-ignores", "gen/**:GL0", ".", cwd=root)
    assert res.returncode == 1 and res.stdout.startswith("./src/train.py:6:5: GL001") and "in 3 files checked" in res.stdout
    assert res.stdout.count("GL001") == 1
    bad = run("--per-file-ignores", "tests/*.py", ".", cwd=root)
    assert bad.returncode == 2 and "write PATTERN:CODES" in bad.stderr
    unknown = run("--per-file-ignores", "tests/*.py:GL999", ".", cwd=root)
    assert unknown.returncode == 2 and "GL999" in unknown.stderr


def test_quiet_and_verbose(tmp_path: Path) -> None:
    root = tree(tmp_path)
    quiet = run("-q", "src", cwd=root)
    assert quiet.returncode == 1 and quiet.stdout.startswith("src/train.py:6:5: GL001") and "Found" not in quiet.stdout
    assert "fixable" not in quiet.stdout
    silent = run("-qq", "src", cwd=root)
    assert silent.returncode == 1 and silent.stdout == "" and silent.stderr == ""
    verbose = run("-v", "--no-cache", "src", cwd=root)
    assert "gradlint: configuration: none (built-in defaults)" in verbose.stderr
    assert "gradlint: 1 file checked" in verbose.stderr


def test_show_settings(tmp_path: Path) -> None:
    write(tmp_path, {"pyproject.toml": '[tool.gradlint]\nignore = ["GL003"]\n[tool.gradlint.per-file-ignores]\n"tests/*" = ["GL001"]\n',
                     "tests/t.py": BUGGY})
    res = run("--show-settings", "tests/t.py", cwd=tmp_path)
    assert res.returncode == 0 and res.stdout.startswith("# settings for tests/t.py\n")
    assert f"config-file = {tmp_path / 'pyproject.toml'}" in res.stdout
    assert '"GL003"' not in res.stdout.split("select = ")[1].split("\n")[0]
    assert 'per-file-ignores = {"tests/*" = ["GL001"]}' in res.stdout
    assert "codes for tests/t.py = [" in res.stdout and '"GL001"' not in res.stdout.split("codes for tests/t.py = ")[1]


def test_no_python_file_found_is_a_warning_and_exit_zero(tmp_path: Path) -> None:
    write(tmp_path, {"docs/readme.md": "# nothing here\n"})
    res = run("docs", cwd=tmp_path)
    assert res.returncode == 0 and res.stdout == ""
    assert "warning: no Python file (*.py, *.ipynb) was found under docs; nothing was checked" in res.stderr


def test_help_lists_the_commands() -> None:
    res = invoke("--help")
    for command in ("gradlint rule [CODE]", "gradlint run [--mode", "gradlint server"):
        assert command in res.stdout, res.stdout


@pytest.mark.parametrize("name", ["run", "rule", "server"])
def test_a_directory_named_like_a_command_is_a_path(tmp_path: Path, name: str) -> None:
    write(tmp_path, {f"{name}/train.py": BUGGY})
    res = run(name, cwd=tmp_path)
    assert res.returncode == 1 and res.stdout.startswith(f"{name}/train.py:6:5: GL001"), res.stdout + res.stderr
    assert run(f"./{name}", cwd=tmp_path).returncode == 1
    # elsewhere the word is the command
    assert run("rule", "GL001", cwd=tmp_path / name).stdout.startswith("# GL001")


def test_config_errors_are_not_usage_errors(tmp_path: Path) -> None:
    write(tmp_path, {"pyproject.toml": '[tool.gradlint]\nselet = ["GL001"]\n', "t.py": BUGGY})
    res = run("t.py", cwd=tmp_path)
    assert res.returncode == 2 and res.stdout == ""
    assert res.stderr.startswith("gradlint: error: ") and "Usage:" not in res.stderr and "did you mean 'select'" in res.stderr


def test_run_prints_paths_as_the_static_side_does(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    rel = "missing_zero_grad/seq2seq_decoder_optimizer_never_cleared.py"
    res = run("run", f"fixtures/{rel}", cwd=ROOT)
    assert res.returncode == 1
    static = run(f"fixtures/{rel}", cwd=ROOT).stdout.split(":", 1)[0]
    assert static == f"fixtures/{rel}"
    assert f"\nfixtures/{rel}:49:5: GL001 " in "\n" + res.stderr and str(FIXTURES) not in res.stderr
