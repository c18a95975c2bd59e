"""The result cache and the process pool change how fast gradlint runs, never what it reports."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gradcheck_lint.api import check_paths
from gradcheck_lint.cache import ResultCache, cache_key, tool_fingerprint
from gradcheck_lint.config import Settings
from gradcheck_lint.diagnostics import Diagnostic
from gradcheck_lint.runner import RunStats, lint_files
from support import BUGGY, FIXTURES, ROOT, FreshReport

CLEAN = BUGGY.replace("    opt.step()\n", "    opt.step()\n    opt.zero_grad()\n")


def gradlint(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run the command; without `env`, the cache goes where it would for a user (no GRADLINT_CACHE_DIR)."""
    base = {k: v for k, v in os.environ.items() if k != "GRADLINT_CACHE_DIR"}
    return subprocess.run([sys.executable, "-m", "gradcheck_lint", *args], capture_output=True, text=True, cwd=cwd,
                          env={**base, **(env or {})}, timeout=600)


def entries(directory: Path) -> list[Path]:
    return sorted(p for p in directory.rglob("*.json"))


def test_jobs_and_cache_give_the_fixtures_report_unchanged(tmp_path: Path) -> None:
    """Over every fixture: one process, two processes, a cold cache and a warm one report the same."""
    settings = Settings.default(root=str(FIXTURES))
    serial, files = check_paths([str(FIXTURES)], settings)
    assert files > 100 and serial
    # the pool and a cold cache in one run (each was a full analysis of the fixtures of its own: 30 s of CPU)
    stats = RunStats()
    cache = ResultCache(str(tmp_path / "cache"))
    cold, _ = check_paths([str(FIXTURES)], settings, jobs=2, cache=cache, stats=stats)
    assert stats.workers == 2 and cold == serial and cache.hits == 0 and cache.writes == files
    warm_stats = RunStats()
    warm_cache = ResultCache(str(tmp_path / "cache"))
    warm, _ = check_paths([str(FIXTURES)], settings, jobs=2, cache=warm_cache, stats=warm_stats)
    assert warm == serial  # equal dataclasses: spans, messages, fixes and cells all survived the round trip
    assert warm_cache.hits == files and warm_stats.analysed == 0 and warm_stats.workers == 0


def test_output_order_does_not_depend_on_scheduling(tmp_path: Path) -> None:
    """Files finish in any order in the pool (largest first); results come back in the input order."""
    names = [f"f{i:02d}.py" for i in range(12)]
    for i, name in enumerate(names):
        # Sizes grow with the index, so the pool starts with the last file.
        (tmp_path / name).write_text(BUGGY + "\n" * (i * 500))
    files = [str(tmp_path / n) for n in names]
    out = lint_files(files, Settings.default(root=str(tmp_path)), jobs=2)
    assert [Path(d.path).name for d in out] == names


def test_content_config_and_tool_are_in_the_key() -> None:
    base = cache_key(b"x", "a.py", {"GL001"})
    assert base != cache_key(b"y", "a.py", {"GL001"})
    assert base != cache_key(b"x", "b.py", {"GL001"})
    assert base != cache_key(b"x", "a.py", {"GL001", "GL002"})
    assert base == cache_key(b"x", "a.py", ["GL001"])
    assert len(tool_fingerprint()) == 20


def test_an_edited_file_is_analysed_again(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text(BUGGY)
    env = {"GRADLINT_CACHE_DIR": str(tmp_path / "cache")}
    assert gradlint(str(script), env=env).returncode == 1
    script.write_text(CLEAN)
    assert gradlint(str(script), env=env).returncode == 0  # not the cached finding of the old text
    script.write_text(BUGGY)
    again = gradlint(str(script), env=env)
    assert again.returncode == 1 and "GL001" in again.stdout


def test_changing_the_selection_is_not_answered_from_the_cache(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text(BUGGY)
    env = {"GRADLINT_CACHE_DIR": str(tmp_path / "cache")}
    assert gradlint(str(script), env=env).returncode == 1
    assert gradlint("--ignore", "GL001", str(script), env=env).returncode == 0
    assert gradlint(str(script), env=env).returncode == 1


@pytest.mark.parametrize("damage", ["garbage", "truncated", "other_key", "bad_span", "wrong_type", "empty", "directory"])
def test_a_corrupt_entry_is_ignored_and_rewritten(tmp_path: Path, damage: str) -> None:
    script = tmp_path / "train.py"
    script.write_text(BUGGY)
    cache_dir = tmp_path / "cache"
    env = {"GRADLINT_CACHE_DIR": str(cache_dir)}
    first = gradlint("--format", "json", str(script), env=env)
    # the listing's result and its fixes' verification (see cache.py): every entry is damaged alike
    found = entries(cache_dir)
    assert found
    goods = {entry: entry.read_text() for entry in found}
    for entry, good in goods.items():
        _damage(entry, good, damage)
    second = gradlint("--format", "json", str(script), env=env)
    assert second.returncode == 1 and json.loads(second.stdout) == json.loads(first.stdout), second.stderr
    assert "Traceback" not in second.stderr
    if damage != "directory":
        for entry, good in goods.items():
            assert json.loads(entry.read_text()) == json.loads(good)  # rewritten with the sound result


def _damage(entry: Path, good: str, damage: str) -> None:
    data = json.loads(good)
    if damage == "garbage":
        entry.write_bytes(b"\x00\xff not json")
    elif damage == "truncated":
        entry.write_text(good[: len(good) // 2])
    elif damage == "other_key":
        data["key"] = "0" * 64
        entry.write_text(json.dumps(data))
    elif damage == "bad_span":
        data["diagnostics"][0]["line"] = "six"
        entry.write_text(json.dumps(data))
    elif damage == "wrong_type":
        data["diagnostics"] = {"not": "a list"}
        entry.write_text(json.dumps(data))
    elif damage == "empty":
        entry.write_text("")
    else:
        entry.unlink()
        entry.mkdir()


def test_a_forged_clean_entry_is_not_believed_for_other_content(tmp_path: Path) -> None:
    """An entry claiming 'no findings' under another file's key is never used for this file."""
    script = tmp_path / "train.py"
    script.write_text(BUGGY)
    cache = ResultCache(str(tmp_path / "cache"))
    settings = Settings.default(root=str(tmp_path))
    key = cache_key(CLEAN.encode(), str(script), settings.codes_for(str(script)))
    cache.put(key, [])
    out = lint_files([str(script)], settings, cache=cache)
    assert [d.code for d in out] == ["GL001"]


def test_the_cache_directory_may_vanish_or_be_unwritable(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text(BUGGY)
    cache_dir = tmp_path / "cache"
    env = {"GRADLINT_CACHE_DIR": str(cache_dir)}
    assert gradlint(str(script), env=env).returncode == 1
    assert (cache_dir / "CACHEDIR.TAG").is_file() and (cache_dir / ".gitignore").read_text().strip().endswith("*")
    shutil.rmtree(cache_dir)
    assert gradlint(str(script), env=env).returncode == 1
    assert entries(cache_dir)  # recreated
    blocker = tmp_path / "a_file"
    blocker.write_text("not a directory")
    res = gradlint(str(script), env={"GRADLINT_CACHE_DIR": str(blocker / "cache")})
    assert res.returncode == 1 and "GL001" in res.stdout and "Traceback" not in res.stderr


def test_no_cache_neither_reads_nor_writes(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text(BUGGY)
    res = gradlint("--no-cache", str(script), cwd=tmp_path)
    assert res.returncode == 1
    assert not (tmp_path / ".gradlint_cache").exists()
    assert gradlint(str(script), cwd=tmp_path).returncode == 1
    assert (tmp_path / ".gradlint_cache").is_dir()  # the default: in the project root


def test_cache_dir_option_and_default_location(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    (project / "src").mkdir(parents=True)
    (project / "pyproject.toml").write_text("[tool.gradlint]\nselect = ['GL']\n")
    (project / "src" / "train.py").write_text(BUGGY)
    assert gradlint("src", cwd=project).returncode == 1
    assert (project / ".gradlint_cache").is_dir()
    assert gradlint("--cache-dir", str(tmp_path / "elsewhere"), "src", cwd=project).returncode == 1
    assert entries(tmp_path / "elsewhere")


def test_diagnostics_round_trip_through_json(default_diagnostics: dict[str, tuple[Diagnostic, ...]]) -> None:
    """Every fixture's diagnostics (the session's default analysis of them, conftest.py)."""
    fixtures = sorted(FIXTURES.rglob("*.py"))
    assert sum(len(default_diagnostics[str(fixture)]) for fixture in fixtures) > 100
    for fixture in fixtures:
        for d in default_diagnostics[str(fixture)]:
            assert Diagnostic.from_json(json.loads(json.dumps(d.to_json()))) == d


@pytest.mark.parametrize("bad", [{}, {"path": 1}, [], "x", None])
def test_malformed_diagnostics_are_refused(bad: object) -> None:
    with pytest.raises(ValueError):
        Diagnostic.from_json(bad)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="workers inherit the patched function only by fork")
def test_a_file_that_kills_its_worker_is_reported_alone(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """A native crash in one worker: that file gets GL000, every other file is still checked."""
    import gradcheck_lint.runner as runner

    for i in range(4):
        (tmp_path / f"ok{i}.py").write_text(BUGGY)
    (tmp_path / "killer.py").write_text(BUGGY)
    real = runner.analyse_bytes

    def crashing(data, path, settings):  # type: ignore[no-untyped-def]
        if path.endswith("killer.py"):
            os._exit(139)  # what a segfault in the parser looks like from outside
        return real(data, path, settings)

    monkeypatch.setattr(runner, "analyse_bytes", crashing)  # inherited by the forked workers
    files = sorted(str(p) for p in tmp_path.glob("*.py"))
    out = lint_files(files, Settings.default(root=str(tmp_path)), jobs=2)
    by_file = {Path(d.path).name: d for d in out}
    assert sorted(by_file) == ["killer.py", "ok0.py", "ok1.py", "ok2.py", "ok3.py"]
    assert by_file["killer.py"].code == "GL000" and "crashed" in by_file["killer.py"].message
    assert all(by_file[f"ok{i}.py"].code == "GL001" for i in range(4))


def test_jobs_option_is_validated() -> None:
    res = gradlint("--jobs", "-1", "x.py")
    assert res.returncode == 2 and "--jobs" in res.stderr


def test_results_do_not_depend_on_the_hash_seed(fresh_fixtures_report: FreshReport) -> None:
    """Rules pick their witness (which backward a message names) among path states held in sets;
    the choice must not follow set iteration order, or a cached result would differ from a fresh one."""
    # two seeds: set iteration order of strings differs between any two (a third run was 15 s of CPU more).
    # Seed 1: the session's run of the fixtures on an empty cache of its own (every file analysed afresh, as
    # with --no-cache), which test_cli's fixtures-directory test reads too; possible findings are compared as well.
    outputs = {
        "1": fresh_fixtures_report.run.stdout,
        "2": gradlint("--no-cache", "--show-possible", "--format", "json", str(FIXTURES), cwd=ROOT,
                      env={"PYTHONHASHSEED": "2"}).stdout,
    }
    assert fresh_fixtures_report.run.args[-4:] == ["--show-possible", "--format", "json", str(FIXTURES)]
    assert json.loads(outputs["1"]) and len(set(outputs.values())) == 1


def test_results_of_other_versions_are_pruned(tmp_path: Path) -> None:
    cache_dir = tmp_path / "cache"
    old = cache_dir / ("0" * 20) / "ab"
    old.mkdir(parents=True)
    (old / "entry.json").write_text("{}")
    keep = cache_dir / "notes.txt"  # not a bucket of ours: left alone
    keep.write_text("mine")
    script = tmp_path / "train.py"
    script.write_text(BUGGY)
    assert gradlint(str(script), env={"GRADLINT_CACHE_DIR": str(cache_dir)}).returncode == 1
    assert not (cache_dir / ("0" * 20)).exists() and keep.read_text() == "mine"
    assert (cache_dir / tool_fingerprint()).is_dir()


def test_a_dependency_hashed_once_is_still_checked_after_it_changes(tmp_path: Path) -> None:
    """Entries naming the same settled dependency hash it once per cache object; a later rewrite of it
    (new stamp) is still seen by the same object, and a freshly written file is never remembered."""
    helper = tmp_path / "helper.py"
    helper.write_text("x = 1\n")
    old = 1_600_000_000
    os.utime(helper, (old, old))  # settled: its stamp is remembered with its digest
    digest = __import__("hashlib").sha256(b"x = 1\n").hexdigest()
    cache = ResultCache(str(tmp_path / "cache"))
    for name in ("a", "b"):
        cache.put(name * 64, [], [(str(helper), digest)])
    assert cache.get("a" * 64) == [] and cache.get("b" * 64) == []
    assert len(cache._digests) == 1
    helper.write_text("x = 2\n")  # same size, new mtime: a new stamp
    assert cache.get("a" * 64) is None
    assert len(cache._digests) == 1  # the fresh stamp was not remembered
    helper.write_text("x = 1\n")
    os.utime(helper, (old, old))
    assert cache.get("b" * 64) == []
