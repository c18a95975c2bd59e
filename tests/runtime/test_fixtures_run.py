"""Every fixture not marked static-only is a real training script: it runs to completion on CPU.

The verdict is read from the session's one run of each fixture under the guard in record mode
(`fixture_runs` in conftest.py): the guard records and never raises, so a script fails there exactly
when it fails on its own."""

from __future__ import annotations

import pytest

from support import load_fixtures

pytest.importorskip("torch")

# the session's fixture runs are made once, on the one pytest-xdist worker that runs these tests (--dist loadgroup)
pytestmark = [pytest.mark.xdist_group("fixture_runs"), pytest.mark.slow]

RUNNABLE = [f for f in load_fixtures() if not f.static_only]


@pytest.mark.parametrize("fixture", RUNNABLE, ids=lambda f: f.id)
def test_fixture_runs(fixture, fixture_runs) -> None:  # type: ignore[no-untyped-def]
    error = str(fixture_runs[str(fixture.path)]["error"])
    if fixture.raises is None:
        assert not error, error
    else:  # a script that fails by design (PyTorch raises on the bug): it must fail that way
        kind, text = fixture.raises
        assert kind in error and text in error, error
