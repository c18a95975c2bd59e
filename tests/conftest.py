import os
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

# Byte-code is kept, in `.pytest_cache/pycache/` when the environment asks for none in the tree
# (PYTHONDONTWRITEBYTECODE): else each of the hundreds of `gradlint` processes the tests start compiles
# the package again (0.63 s of CPU a `gradlint` run against 0.35 s with byte-code), and each pytest
# process rewrites the assertions of every test module again.
if sys.dont_write_bytecode or os.environ.get("PYTHONDONTWRITEBYTECODE"):
    _PYCACHE = str(Path(__file__).resolve().parent.parent / ".pytest_cache" / "pycache")
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    os.environ.setdefault("PYTHONPYCACHEPREFIX", _PYCACHE)
    sys.pycache_prefix = sys.pycache_prefix or os.environ["PYTHONPYCACHEPREFIX"]
    sys.dont_write_bytecode = False

# One intra-op thread per process (torch reads these when it is imported; the variables reach the
# subprocesses the tests start too). Under pytest-xdist two workers, the background fixture runs and
# the `gradlint run` subprocesses share the machine's cores: torch's OpenMP pool of one thread per core
# in each of them only spins against the others (test_runtime_lazy_cycle.py and test_runtime_fastpath.py
# under -n 2: 116 s of CPU with the default pool, 27 s with one thread; alone under -n 0 on the loaded
# machine, interleaved: 159 and 138 s of CPU with two threads, 18.7 and 18.0 s with one). The tests'
# models are tiny: a pool buys them nothing. Set the variables to run otherwise.
for _name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")
if "torch" in sys.modules:  # imported by a plugin before this file: the variables came too late
    sys.modules["torch"].set_num_threads(int(os.environ["OMP_NUM_THREADS"]))

# Every `gradlint` the tests start keeps its result cache here, not in the (snapshotted) project
# directories the tests create; the cache's own tests set or clear the variable themselves. One directory
# for the session: pytest-xdist's controller makes it and its workers, which inherit its environment, use
# it too (the cache writes atomically), so the fixture tree linted by one worker's test is not analysed
# again by the other's: `gradlint --format json fixtures` 16.9 s of CPU on a cold cache, then --format sarif,
# --statistics and --show-possible 1.2-1.4 s each on the warm one (measured here, one job each).
_SESSION_CACHE = "GRADLINT_TEST_SESSION_CACHE"
if os.environ.get("PYTEST_XDIST_WORKER") and os.path.isdir(os.environ.get(_SESSION_CACHE, "")):
    os.environ["GRADLINT_CACHE_DIR"] = os.environ[_SESSION_CACHE]
else:
    _CACHE = tempfile.TemporaryDirectory(prefix="gradlint-test-cache-")
    os.environ["GRADLINT_CACHE_DIR"] = os.environ[_SESSION_CACHE] = _CACHE.name


import importlib.util  # noqa: E402
import subprocess  # noqa: E402

import pytest  # noqa: E402 - after the cache variable, which the imports below must see

from script_runs import ROOT, run_scripts, runnable_fixtures  # noqa: E402
from support import FreshReport, made_fixture_file_diagnostics, made_fresh_fixtures_report, made_once  # noqa: E402

_WARMING: list[subprocess.Popen[bytes]] = []


def pytest_sessionstart(session: pytest.Session) -> None:
    """Under pytest-xdist, the controller starts the session's fixture runs in the background at once, so
    that they are made (and cached) while the workers run the other tests; a worker that needs them
    before they are done waits on their lock. Not for a selection (`-k`, `-m`, named tests)."""
    config = session.config
    if hasattr(config, "workerinput") or not getattr(config.option, "numprocesses", None):
        return
    if config.option.keyword or config.option.markexpr or config.args not in ([], [str(ROOT / "tests")], ["tests"]):
        return
    if importlib.util.find_spec("torch") is None:
        return
    _WARMING.append(subprocess.Popen([sys.executable, str(Path(__file__).with_name("script_runs.py"))], cwd=ROOT,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))


def pytest_sessionfinish(session: pytest.Session) -> None:
    for proc in _WARMING:
        try:
            proc.wait(timeout=600)
        except subprocess.TimeoutExpired:
            proc.kill()


@pytest.fixture(scope="session")
def fixture_runs() -> dict[str, dict[str, object]]:
    """Every runnable fixture, run once under the guard in record mode (cached on its content and the package's)."""
    pytest.importorskip("torch")
    return run_scripts(runnable_fixtures(), "guard", cwd=ROOT)


@pytest.fixture(scope="session")
def fixture_runs_strict() -> dict[str, dict[str, object]]:
    """Every runnable fixture, run once under the strict guard."""
    pytest.importorskip("torch")
    return run_scripts(runnable_fixtures(), "strict", cwd=ROOT)


@pytest.fixture(scope="session")
def default_diagnostics(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Any, ...]]:
    """`check_source`'s diagnostics of every fixture script and blind program, with the built-in settings, by path:
    the default side of the tests comparing a variant of the analysis with it (a memo turned off, a larger state
    cap), made once for the session (each of them made it: about 8 s of CPU a time)."""
    from gradcheck_lint import check_source

    scripts = sorted((ROOT / "fixtures").rglob("*.py")) + sorted((ROOT / "tests" / "blind_programs").glob("*.py"))
    return made_once(tmp_path_factory, "default_diagnostics",
                     lambda: {str(p): tuple(check_source(p.read_text(encoding="utf-8"), str(p))) for p in scripts})


@pytest.fixture(scope="session")
def fixture_file_diagnostics(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Any, ...]]:
    """`check_file` of every fixture, scripts and notebooks, by absolute path: made once for the session
    (support.made_fixture_file_diagnostics)."""
    return made_fixture_file_diagnostics(tmp_path_factory)


@pytest.fixture(scope="session")
def fresh_fixtures_report(tmp_path_factory: pytest.TempPathFactory) -> FreshReport:
    """`gradlint --show-possible --format json` of every fixture analysed afresh (PYTHONHASHSEED=1), with the result
    cache it filled: made once for the session (support.made_fresh_fixtures_report)."""
    return made_fresh_fixtures_report(tmp_path_factory)


# Tests sharing a costly setup made in a worker's memory: one xdist group each, so that one worker makes it (and no
# worker waits for the other's, as `support.made_once` would have it). test_autofix's `fix_run` (a check of every
# fixture and two `gradlint --fix` runs over them) was set up in both workers: 46 and 45 s in a full run at load ~4.
# (module, or "*" for any, fixture name): group
_GROUPED_FIXTURES = {
    ("tests/fixes/test_autofix.py", "fix_run"): "fix_run",
    ("tests/runtime/test_guard_mechanisms.py", "recorded"): "guard_mechanisms",
    ("*", "default_diagnostics"): "default_diagnostics",
    ("*", "fresh_fixtures_report"): "fresh_fixtures_report",
}


def pytest_itemcollected(item: pytest.Item) -> None:
    """Mark the tests of `_GROUPED_FIXTURES` with their xdist group (at collection: pytest-xdist reads the marks in
    its own pytest_collection_modifyitems, called before ours)."""
    module = item.nodeid.split("::", 1)[0]
    for fixture in getattr(item, "fixturenames", ()):
        group = _GROUPED_FIXTURES.get((module, fixture)) or _GROUPED_FIXTURES.get(("*", fixture))
        if group:
            item.add_marker(pytest.mark.xdist_group(group))


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's, which sends the worker's test ids to the controller
def pytest_collection_finish(session: pytest.Session) -> None:
    """Name each grouped test `nodeid@group`, as pytest-xdist 3.8's --dist loadgroup does by setting `item._nodeid`:
    pytest 9.2 takes a node's id from `item._id` instead, so no group formed (the fixture runs' tests were spread
    over both workers, and so was every other group)."""
    if not getattr(session.config.option, "loadgroup", False):
        return
    for item in session.items:
        groups = sorted({str(m.args[0] if m.args else m.kwargs.get("name", "default"))
                         for m in item.iter_markers("xdist_group")})
        if groups and item.nodeid.rfind("@") <= item.nodeid.rfind("]"):
            item._id = type(item._id).parse(f"{item.nodeid}@{'_'.join(groups)}")


# Measured at about 5 s or more on the 2-core machine (`--durations`), or sharing a module fixture that is:
# `slow`, so that `python -m pytest -m "not slow"` stays a quick loop. Whole modules, then single tests.
_SLOW_MODULES = {
    "tests/runtime/test_runtime_lazy_cycle.py", "tests/runtime/test_run_command.py", "tests/runtime/test_guard_mechanisms.py",
    "tests/runtime/test_blind_programs.py", "tests/runtime/test_frameworks.py", "tests/runtime/test_differential.py",
    "tests/runtime/test_differential_contract.py", "tests/runtime/test_gpu_check_script.py", "tests/cli/test_server.py",
    "tests/fixes/test_autofix.py", "tests/analysis/test_fuzz.py", "tests/cli/test_flake8.py", "tests/cli/test_cache_and_jobs.py",
}
_SLOW_TESTS = (
    "test_all_generated_training_loops_pass_the_prefilter", "test_generated_statement_soup_passes_the_prefilter",
    "test_pytest_plugin", "test_ddp_two_processes_gloo", "test_the_state_cap_decides_no_verdict_on_the_fixtures",
    "test_twenty_thousand_loops_in_one_file", "test_sarif_on_fixtures_validates_and_matches_json",
    "test_run_prints_paths_as_the_static_side_does", "test_add_noqa_then_a_run_is_clean_on_the_fixtures",
    "test_a_long_steady_run_keeps_the_ledger_small", "test_the_buggy_loops_are_found", "test_libcst_is_imported_only_when_fixing",
    "test_fixed_fixtures_still_run", "test_fixtures_directory_run_matches_expectations", "test_select_ignore_and_exit_zero",
    "test_unsafe_diff_round_trips_with_patch", "test_every_fixture_passes_the_prefilter", "test_every_flagged_fixture_passes_the_prefilter",
    "test_no_fixture_without_a_required_word_is_flagged", "test_fast_path_gives_the_full_paths_findings",
    "test_gl006_names_the_ddp_model_and_says_an_inverted_no_sync_diverges", "test_gl006_names_the_model_variable_not_its_class",
    "test_environment_variable_without_code_change", "test_record_mode_prints_the_report_at_exit",
    "test_every_safe_fix_of_the_fixtures_holds", "test_enable_catches_every_optimizer", "test_statistics_equal_json_counts_on_fixtures",
    "test_mutated_fixtures_pass_the_prefilter",
    "test_gl006_ddp_accumulation_without_no_sync_and_with_it",  # 8: two fresh interpreters running gloo
    # the slowest of the rest (1.4-2.1 s each, `--durations` on the idle machine): the quick loop keeps a margin
    "test_late_deviations_are_found_at_their_step", "test_no_naming_regex_lives_outside_the_table",
    "test_the_backward_wrappers_inline_memo_at_a_scripts_module_level", "test_baseline_reports_only_findings_added_after_it",
    "test_json_sarif_github_carry_certainty", "test_linear_layer_saves_its_weight_certain_and_raises",
    "test_exclude_and_extend_exclude_on_the_command_line", "test_module_of_unknown_saves_is_possible_and_says_if",
)


# The longest single tests (`--durations`, seconds on the 2-core machine), started first: pytest-xdist hands
# out tests in collection order, and one of these picked up last keeps one worker busy while the other
# has nothing left to do.
_LONGEST_FIRST = (
    "test_every_shell_and_python_block_runs_in_a_fresh_venv",  # 80-140: README lines in a fresh venv
    "test_mypy_passes",  # 19-54
    "test_exit_codes_arguments_and_modes",  # 20-29: `gradlint run` subprocesses
    "test_all_generated_training_loops_pass_the_prefilter",  # 21
    "test_pytest_plugin",  # 17-21
    "test_generated_statement_soup_passes_the_prefilter",  # 14
    "test_the_state_cap_decides_no_verdict_on_the_fixtures",  # 14
    "test_twenty_thousand_loops_in_one_file",  # 12
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark `slow` what the lists above name, and every test reading the session's fixture runs (a minute
    of CPU when the cache does not hold them; their modules put themselves in one xdist group). Then
    order: the longest tests, the other slow ones, the rest (a stable sort: modules stay together)."""
    for item in items:
        module = item.nodeid.split("::", 1)[0]
        name = item.name.split("[", 1)[0]
        if (module in _SLOW_MODULES or name in _SLOW_TESTS
                or {"fixture_runs", "fixture_runs_strict"} & set(getattr(item, "fixturenames", ()))):
            item.add_marker(pytest.mark.slow)
    rank = {name: i for i, name in enumerate(_LONGEST_FIRST)}
    items.sort(key=lambda item: (rank.get(item.name.split("[", 1)[0], len(rank)), item.get_closest_marker("slow") is None))
