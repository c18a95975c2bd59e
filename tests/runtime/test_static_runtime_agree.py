"""Static and runtime agree: every runnable fixture, run under the process-wide guard in record mode,
records exactly the codes (GL001-GL010, less those marked runtime-blind) its `# expect:` comments give, one report
line per finding."""

from __future__ import annotations

import pytest

from support import load_fixtures

pytest.importorskip("torch")

# the session's fixture runs are made once, on the one pytest-xdist worker that runs these tests (--dist loadgroup)
pytestmark = [pytest.mark.xdist_group("fixture_runs"), pytest.mark.slow]

RUNTIME_CODES = {f"GL{n:03d}" for n in range(1, 11)}  # every rule has a runtime counterpart
RUNNABLE = [f for f in load_fixtures() if not f.static_only]


def _unexpected_lines(fixture, result) -> list[tuple[str, int, str]]:  # type: ignore[no-untyped-def]
    """The report lines that are not a (line, code) the fixture's `# expect:` comments anchor in the fixture itself
    (a code the fixture marks runtime-also excepted), and each line printed more than once."""
    lines = [(str(path), int(line), str(code)) for path, line, _col, code, *_rest in result["findings"]]
    want = {(line, code) for line, code in fixture.expected if code in RUNTIME_CODES - fixture.runtime_blind}
    twice = [x for x in set(lines) if lines.count(x) > 1]
    return sorted(twice + [(path, line, code) for path, line, code in lines if code not in fixture.runtime_also
                           and (path != str(fixture.path) or (line, code) not in want)])


def _agree(fixture, result) -> None:  # type: ignore[no-untyped-def]
    if fixture.raises is None:
        assert not result["error"], result["error"]
    else:  # the script fails by design: the guard must still have recorded what it saw before
        assert fixture.raises[1] in result["error"], result["error"]
    got = {code for _line, code in result["found"]}
    want = {code for _line, code in fixture.expected if code in RUNTIME_CODES - fixture.runtime_blind} | fixture.runtime_also
    assert got == want, "\n".join(result["messages"])
    # one report line per finding, for every code: no line beside the expected ones (a vague duplicate of a finding,
    # the same finding anchored at a second place, a line in another file), none printed twice
    extra = _unexpected_lines(fixture, result)
    assert not extra, f"unexpected report lines {extra}:\n" + "\n".join(result["messages"])


@pytest.mark.parametrize("fixture", RUNNABLE, ids=lambda f: f.id)
def test_runtime_guard_agrees_with_static(fixture, fixture_runs) -> None:  # type: ignore[no-untyped-def]
    _agree(fixture, fixture_runs[str(fixture.path)])


@pytest.mark.parametrize("fixture", RUNNABLE, ids=lambda f: f.id)
def test_strict_guard_agrees_with_static(fixture, fixture_runs_strict) -> None:  # type: ignore[no-untyped-def]
    """Strict mode measures every parameter: no false alarm on a correct fixture, no finding lost."""
    _agree(fixture, fixture_runs_strict[str(fixture.path)])


def _anchored(fixture) -> bool:  # type: ignore[no-untyped-def]
    return any(code in RUNTIME_CODES - fixture.runtime_blind for _line, code in fixture.expected)


@pytest.mark.parametrize("fixture", [f for f in RUNNABLE if _anchored(f)], ids=lambda f: f.id)
def test_runtime_anchors_on_the_static_line(fixture, fixture_runs) -> None:  # type: ignore[no-untyped-def]
    """Every code the guard sees is reported on the line the static side anchors it to: GL001/GL005 at the step,
    GL003 at the backward (a framework's loss hook: its return), GL002 at the misplaced clear, GL004 at the gate,
    GL008 at each statement that keeps the graph, and so on for each rule (the fixture's `# expect:` lines), less
    the codes the fixture marks runtime-blind."""
    found = {tuple(x) for x in fixture_runs[str(fixture.path)]["found"]}
    want = {(line, code) for line, code in fixture.expected if code in RUNTIME_CODES - fixture.runtime_blind}
    missing = sorted(want - found)
    assert not missing, f"not anchored on {missing}; the guard anchored {sorted(found)}:\n" + "\n".join(
        fixture_runs[str(fixture.path)]["messages"])
