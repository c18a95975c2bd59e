"""The pre-commit hook, installed and run by the real `pre-commit` from a throwaway repository.

What pre-commit does with a local path: `try-repo PATH` clones PATH at HEAD and, when tracked
files differ from HEAD, adds the staged and modified tracked files in a shadow commit, but never
untracked files; it builds the hook environment in a temporary store, not in PRE_COMMIT_HOME, and
deletes it afterwards. So the test first snapshots this checkout as it is on disk (tracked and
untracked files that .gitignore keeps; a plain copy when it is not a git work tree) into a
one-commit repository: the same hook in a clean CI clone, in a working tree with new files, and
in an unpacked sdist. The environment that PRE_COMMIT_HOME keeps, checked for click, libcst and torch, is
the one built for the README's `.pre-commit-config.yaml`.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from support import FIXTURES, ROOT

pytestmark = [pytest.mark.slow, pytest.mark.network]

BUGGY_FIXTURE = FIXTURES / "missing_zero_grad" / "no_zero_grad_plain_loop.py"
CLEAN_FIXTURE = FIXTURES / "missing_zero_grad" / "zero_grad_at_end_of_loop_body.py"
NOTEBOOK_FIXTURE = FIXTURES / "notebooks" / "regression_missing_zero_grad.ipynb"
# Variables through which an enclosing git process (a hook running these tests) would redirect ours.
_GIT_LOCATION_VARS = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY",
                      "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_COMMON_DIR", "GIT_PREFIX", "GIT_NAMESPACE")
_COPY_IGNORE = shutil.ignore_patterns(".git", ".ci-venv", ".venv", "venv", "__pycache__", "*.egg-info", "build", "dist",
                                      ".pytest_cache", ".mypy_cache", ".ruff_cache", ".gradlint_cache")


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _GIT_LOCATION_VARS}
    env["PRE_COMMIT_HOME"] = str(home)
    return env


def _git(cwd: Path, *args: str) -> str:
    cmd = ["git", "-c", "user.name=gradlint tests", "-c", "user.email=tests@gradlint.invalid",
           "-c", "commit.gpgsign=false", "-c", "core.hooksPath=/dev/null", *args]
    res = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=120,
                         env={k: v for k, v in os.environ.items() if k not in _GIT_LOCATION_VARS})
    assert res.returncode == 0, res.stderr
    return res.stdout


def _checkout_files() -> list[str] | None:
    """Return the files of this checkout that git would keep (tracked or not ignored), or None without git."""
    try:
        res = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                             capture_output=True, text=True, timeout=60,
                             env={k: v for k, v in os.environ.items() if k not in _GIT_LOCATION_VARS})
    except OSError:
        return None
    if res.returncode != 0:
        return None
    return [f for f in res.stdout.split("\0") if f]


def _snapshot(dest: Path) -> str:
    """Copy this checkout as it is on disk into a fresh one-commit repository; return the commit."""
    files = _checkout_files()
    if files is None:
        shutil.copytree(ROOT, dest, ignore=_COPY_IGNORE, dirs_exist_ok=True)  # (dest may exist already)
    else:
        for rel in files:
            src = ROOT / rel
            if src.is_file():  # a tracked file deleted in the working tree is left out
                (dest / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src, dest / rel)
    _git(dest, "init", "-q")
    _git(dest, "add", "-A")
    _git(dest, "commit", "-q", "--no-verify", "-m", "snapshot")
    return _git(dest, "rev-parse", "HEAD").strip()


def _pre_commit(cwd: Path, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pre_commit", *args, "--color", "never"], cwd=cwd, env=_env(home),
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=900)


@pytest.fixture(scope="module")
def repos(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, Path, Path]:
    """The hook repository (a snapshot of this checkout), its commit, a user repository and PRE_COMMIT_HOME."""
    base = tmp_path_factory.mktemp("precommit")
    hook_repo, user_repo, home = base / "gradcheck_lint", base / "project", base / "pre-commit-home"
    hook_repo.mkdir()
    user_repo.mkdir()
    rev = _snapshot(hook_repo)
    _git(user_repo, "init", "-q")
    shutil.copy(BUGGY_FIXTURE, user_repo / "buggy.py")
    shutil.copy(CLEAN_FIXTURE, user_repo / "clean.py")
    shutil.copy(NOTEBOOK_FIXTURE, user_repo / "explore.ipynb")
    _git(user_repo, "add", "-A")
    _git(user_repo, "commit", "-q", "--no-verify", "-m", "scripts")
    return hook_repo, rev, user_repo, home


def test_try_repo_fails_on_the_buggy_script(repos: tuple[Path, str, Path, Path]) -> None:
    hook_repo, _rev, user_repo, home = repos
    res = _pre_commit(user_repo, home, "try-repo", str(hook_repo), "gradlint", "--files", "buggy.py")
    assert res.returncode == 1, res.stdout + res.stderr
    assert re.search(r"gradlint\.+Failed", res.stdout), res.stdout
    # `[*] ` marks a diagnostic `gradlint --fix` would fix
    assert re.search(r"buggy\.py:24:9: GL001 (\[\*\] )?`optimizer\.step\(\)` applies gradients", res.stdout), res.stdout


def test_try_repo_passes_on_the_clean_script(repos: tuple[Path, str, Path, Path]) -> None:
    hook_repo, _rev, user_repo, home = repos
    res = _pre_commit(user_repo, home, "try-repo", str(hook_repo), "gradlint", "--files", "clean.py")
    assert res.returncode == 0, res.stdout + res.stderr
    assert re.search(r"gradlint\.+Passed", res.stdout), res.stdout


def _readme_config(repo: Path, rev: str) -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = re.search(r"### pre-commit\n(.*?)\n## ", readme, re.S)
    assert section is not None, "README has no pre-commit section"
    # the snippet that names this repository (the other one is `repo: local`, tested in test_readme.py)
    block = next((b for b in re.findall(r"```yaml\n(.*?)```", section.group(1), re.S) if "rev:" in b), None)
    assert block is not None, "README has no pre-commit snippet for this repository"
    config = yaml.safe_load(block)
    [entry] = config["repos"]
    assert [h["id"] for h in entry["hooks"]] == [h["id"] for h in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())]
    entry.update(repo=str(repo), rev=rev)
    return yaml.safe_dump(config)


def test_readme_config_installs_without_torch(repos: tuple[Path, str, Path, Path]) -> None:
    """The README's snippet, pointed at the snapshot: notebooks are checked too; the kept environment has click, no libcst, no torch."""
    hook_repo, rev, user_repo, home = repos
    (user_repo / ".pre-commit-config.yaml").write_text(_readme_config(hook_repo, rev))
    res = _pre_commit(user_repo, home, "run", "--files", "buggy.py", "clean.py", "explore.ipynb")
    assert res.returncode == 1, res.stdout + res.stderr
    assert "buggy.py:24:9: GL001" in res.stdout and "clean.py" not in res.stdout, res.stdout
    assert "explore.ipynb:cell 5:6:9: GL001" in res.stdout, res.stdout
    pythons = sorted(home.glob("repo*/py_env-*/bin/python"))
    assert len(pythons) == 1, list(home.rglob("py_env-*"))
    probe = "import importlib.util as u; print(*(bool(u.find_spec(m)) for m in ('click', 'libcst', 'torch')))"
    out = subprocess.run([str(pythons[0]), "-c", probe], capture_output=True, text=True, timeout=120)
    assert out.stdout.split() == ["True", "False", "False"], out.stderr
