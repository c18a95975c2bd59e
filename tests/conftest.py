import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

# Every `gradlint` the tests start keeps its result cache here, not in the (snapshotted) project
# directories the tests create; the cache's own tests set or clear the variable themselves.
_CACHE = tempfile.TemporaryDirectory(prefix="gradlint-test-cache-")
os.environ["GRADLINT_CACHE_DIR"] = _CACHE.name


import pytest  # noqa: E402 - after the cache variable, which the imports below must see

from script_runs import run_scripts  # noqa: E402
from support import load_fixtures  # noqa: E402


def _runnable_fixtures() -> list[str]:
    return [str(f.path) for f in load_fixtures() if not f.static_only]


@pytest.fixture(scope="session")
def fixture_runs() -> dict[str, dict[str, object]]:
    """Every runnable fixture, run once under the guard in record mode (cached on its content and the package's)."""
    pytest.importorskip("torch")
    return run_scripts(_runnable_fixtures(), "guard")


@pytest.fixture(scope="session")
def fixture_runs_strict() -> dict[str, dict[str, object]]:
    """Every runnable fixture, run once under the strict guard."""
    pytest.importorskip("torch")
    return run_scripts(_runnable_fixtures(), "strict")


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the xdist_group marks
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests reading the session's fixture runs go to one pytest-xdist worker (`--dist loadgroup`):
    the runs are made once there (two scripts at a time), while the other worker runs the rest. They
    are `slow`: the runs take a minute of CPU when the cache does not hold them."""
    for item in items:
        if {"fixture_runs", "fixture_runs_strict"} & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.xdist_group("fixture_runs"))
            item.add_marker(pytest.mark.slow)
