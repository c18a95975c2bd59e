"""Readings of issues 12 and 13, each as a small bug and (mostly) its correct twin under `tests/readings/`.

An audit of the two issues wrote these pairs to see each named reading work: a framework API of the
catalogue, a role decided by construction and use, an entry point or step function, a counter form, a loss
scaling case, GL007 beyond clips. Many of them had no test. Each bug must give exactly its findings (code
and line), each twin its own (none, but for `accel_nowin`, whose hand accumulation through a prepared model
is GL006 in both: only the division differs). Expected findings are `# expect:` comments on their lines.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gradcheck_lint.api import check_file
from support import TESTS, found_findings, parse_expected_findings

HERE = TESTS / "readings"
READINGS = sorted(HERE.glob("*.py"))


@pytest.mark.parametrize("path", READINGS, ids=lambda p: p.stem)
def test_each_reading_gives_exactly_its_expected_findings(path: Path) -> None:
    """Line, code and certainty, as the file's `# expect:` comments write them (none in a correct twin)."""
    assert found_findings(check_file(str(path))) == parse_expected_findings(path.read_text(encoding="utf-8"))


def test_every_bug_expects_a_finding_and_most_have_a_correct_twin() -> None:
    bugs = [p for p in READINGS if p.stem.endswith("_bug")]
    assert len(bugs) >= 50
    assert all(parse_expected_findings(p.read_text(encoding="utf-8")) for p in bugs)
    twins = [p for p in bugs if p.with_name(p.name.replace("_bug.py", "_ok.py")).exists()]
    assert len(twins) >= len(bugs) - 2
    assert {p.stem.rsplit("_", 1)[1] for p in READINGS} == {"bug", "ok"}


def test_gradients_decayed_on_purpose_are_only_possibly_a_bug() -> None:
    (finding,) = check_file(str(HERE / "decay_bug.py"))
    assert finding.certainty.value == "possible" and "decayed" in finding.message
