"""The guard on programs written without reading it (`tests/blind_programs/`): each one, run under the
process-wide guard in record mode, gives exactly the findings its `# expect:` comments name, one report
line per code and place."""

from __future__ import annotations

from pathlib import Path

import pytest

from gradcheck_lint.api import check_file
from script_runs import run_scripts
from support import TESTS, found_findings, parse_expectations, parse_expected_findings

pytest.importorskip("torch")

PROGRAMS = sorted((TESTS / "blind_programs").glob("[0-9]*.py"))


@pytest.fixture(scope="module")
def recorded() -> dict[str, dict[str, object]]:
    return run_scripts(PROGRAMS, "guard")


def test_there_are_at_least_twenty_programs() -> None:
    assert len(PROGRAMS) >= 20


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.stem)
def test_static_analysis_reports_exactly_the_expected_findings(program: Path) -> None:
    assert found_findings(check_file(str(program))) == parse_expected_findings(program.read_text(encoding="utf-8"))


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.stem)
def test_guard_reports_exactly_the_expected_codes(program: Path, recorded) -> None:  # type: ignore[no-untyped-def]
    result = recorded[str(program)]
    assert not result["error"], result["error"]
    findings = result["findings"]
    expected = parse_expectations(program.read_text(encoding="utf-8"))
    assert {f[3] for f in findings} == {code for _line, code in expected}, "\n".join(result["messages"])
    # on the static side's line, GL004 included (the gate, or where the flag it reads is computed)
    assert {(f[1], f[3]) for f in findings} == set(expected)
    # every finding points into the program itself, and each code and place is one report line
    assert all(f[0] == str(program) for f in findings), "\n".join(result["messages"])
    assert len({(f[1], f[2], f[3]) for f in findings}) == len(findings)
