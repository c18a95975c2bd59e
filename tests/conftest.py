import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

# Every `gradlint` the tests start keeps its result cache here, not in the (snapshotted) project
# directories the tests create; the cache's own tests set or clear the variable themselves.
_CACHE = tempfile.TemporaryDirectory(prefix="gradlint-test-cache-")
os.environ["GRADLINT_CACHE_DIR"] = _CACHE.name


import importlib.util  # noqa: E402
import subprocess  # noqa: E402

import pytest  # noqa: E402 - after the cache variable, which the imports below must see

from script_runs import ROOT, run_scripts  # noqa: E402
from support import load_fixtures  # noqa: E402


def _runnable_fixtures() -> list[str]:
    return [str(f.path) for f in load_fixtures() if not f.static_only]


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
    return run_scripts(_runnable_fixtures(), "guard", cwd=ROOT)


@pytest.fixture(scope="session")
def fixture_runs_strict() -> dict[str, dict[str, object]]:
    """Every runnable fixture, run once under the strict guard."""
    pytest.importorskip("torch")
    return run_scripts(_runnable_fixtures(), "strict", cwd=ROOT)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Any other test reading the session's fixture runs is `slow` too: the runs take a minute of CPU when
    the cache does not hold them. (The modules that read them put themselves in one xdist group.)"""
    for item in items:
        if {"fixture_runs", "fixture_runs_strict"} & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)
