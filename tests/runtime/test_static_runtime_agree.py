"""Static and runtime agree: every runnable fixture, run under the process-wide guard in record mode,
records exactly the codes (GL001-GL010, less those marked runtime-blind) its `# expect:` comments give."""

from __future__ import annotations

import pytest

from support import load_fixtures

pytest.importorskip("torch")

# the session's fixture runs are made once, on the one pytest-xdist worker that runs these tests (--dist loadgroup)
pytestmark = [pytest.mark.xdist_group("fixture_runs"), pytest.mark.slow]

RUNTIME_CODES = {f"GL{n:03d}" for n in range(1, 11)}  # every rule has a runtime counterpart
RUNNABLE = [f for f in load_fixtures() if not f.static_only]


def _agree(fixture, result) -> None:  # type: ignore[no-untyped-def]
    if fixture.raises is None:
        assert not result["error"], result["error"]
    else:  # the script fails by design: the guard must still have recorded what it saw before
        assert fixture.raises[1] in result["error"], result["error"]
    got = {code for _line, code in result["found"]}
    want = {code for _line, code in fixture.expected if code in RUNTIME_CODES - fixture.runtime_blind} | fixture.runtime_also
    assert got == want, "\n".join(result["messages"])


@pytest.mark.parametrize("fixture", RUNNABLE, ids=lambda f: f.id)
def test_runtime_guard_agrees_with_static(fixture, fixture_runs) -> None:  # type: ignore[no-untyped-def]
    _agree(fixture, fixture_runs[str(fixture.path)])


@pytest.mark.parametrize("fixture", RUNNABLE, ids=lambda f: f.id)
def test_strict_guard_agrees_with_static(fixture, fixture_runs_strict) -> None:  # type: ignore[no-untyped-def]
    """Strict mode measures every parameter: no false alarm on a correct fixture, no finding lost."""
    _agree(fixture, fixture_runs_strict[str(fixture.path)])


@pytest.mark.parametrize("fixture", [f for f in RUNNABLE if any(c in {"GL001", "GL003", "GL005"} for _, c in f.expected)], ids=lambda f: f.id)
def test_runtime_anchors_on_the_static_line(fixture, fixture_runs) -> None:  # type: ignore[no-untyped-def]
    """GL001/GL005 point at the step, GL003 at the backward call, on both sides: the same file line."""
    found = {tuple(x) for x in fixture_runs[str(fixture.path)]["found"]}
    for line, code in fixture.expected:
        if code in {"GL001", "GL003", "GL005"} - fixture.runtime_blind:
            assert (line, code) in found

