"""The static side on the guard's programs (`tests/runtime/programs/`, `tests/runtime/report_programs/`):
each gives exactly the (line, code, certainty) of its `# expect:` comments, the very pairs the guard is
held to by `tests/runtime/test_guard_mechanisms.py` and `test_guard_report_lines.py`, so the two sides
agree on every mechanism of issue 31 (reentrant checkpointing, steps in gradient hooks, per-task losses
of one batch, ...)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gradcheck_lint import check_file
from support import TESTS, found_findings, parse_expected_findings

PROGRAMS = sorted([*(TESTS / "runtime" / "programs").glob("*.py"), *(TESTS / "runtime" / "report_programs").glob("*.py")])


def test_the_programs_are_there() -> None:
    assert len(PROGRAMS) >= 40


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_static_findings_are_the_expected_ones(program: Path) -> None:
    diagnostics = check_file(str(program))
    expected = parse_expected_findings(program.read_text(encoding="utf-8"))
    assert found_findings(diagnostics) == expected, "\n".join(f"{d.line}: {d.code} ({d.certainty.value}) {d.message}" for d in diagnostics)
