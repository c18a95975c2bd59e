"""The guard on programs written without reading it (`tests/blind_programs/`): each one, run under the
process-wide guard in record mode, gives exactly the codes its `# expect:` header names, one report
line per code and place."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")

HERE = Path(__file__).resolve().parent
PROGRAMS = sorted((HERE / "blind_programs").glob("[0-9]*.py"))
WORKER = HERE / "runtime_worker.py"


def expected_codes(path: Path) -> set[str]:
    """The codes of the `# expect:` header line (`none`: no code)."""
    match = re.search(r"^# expect: (.+)$", path.read_text(), re.M)
    assert match, f"{path.name} has no `# expect:` header"
    value = match.group(1).strip()
    return set() if value == "none" else {c.strip() for c in value.split(",")}


@pytest.fixture(scope="module")
def recorded() -> dict[str, dict[str, object]]:
    proc = subprocess.run([sys.executable, str(WORKER), *map(str, PROGRAMS)], capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_there_are_at_least_twenty_programs() -> None:
    assert len(PROGRAMS) >= 20


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.stem)
def test_guard_reports_exactly_the_expected_codes(program: Path, recorded) -> None:  # type: ignore[no-untyped-def]
    result = recorded[str(program)]
    assert not result["error"], result["error"]
    findings = result["findings"]
    assert {f[3] for f in findings} == expected_codes(program), "\n".join(result["messages"])
    # every finding points into the program itself, and each code and place is one report line
    assert all(f[0] == str(program) for f in findings), "\n".join(result["messages"])
    assert len({(f[1], f[2], f[3]) for f in findings}) == len(findings)
