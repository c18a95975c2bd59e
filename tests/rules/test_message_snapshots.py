"""Message snapshots (as ruff keeps them): what each fixture's findings say, word for word.

Every fixture with expected findings has a snapshot under `tests/rules/snapshots/`, the same path with
`.txt`: one block per finding (place, code, certainty, message, help, fix safety). A change of wording
shows up as a diff of these files in review. After a deliberate change, rewrite them with
`GRADLINT_UPDATE_SNAPSHOTS=1 python -m pytest tests/rules/test_message_snapshots.py` and read the diff.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

import pytest

from gradcheck_lint.diagnostics import Diagnostic
from support import FIXTURES, TESTS, load_fixtures, load_notebook_fixtures

SNAPSHOTS = TESTS / "rules" / "snapshots"
UPDATE = os.environ.get("GRADLINT_UPDATE_SNAPSHOTS", "") not in ("", "0")
CASES = [f.path for f in load_fixtures() if f.expected] + [f.path for f in load_notebook_fixtures() if f.expected]


def render(path: Path, diagnostics: Iterable[Diagnostic]) -> str:
    """The snapshot text of a fixture's diagnostics (`check_file`'s)."""
    blocks = []
    for d in sorted(diagnostics, key=lambda d: d.sort_key()):
        where = f"cell {d.cell}:{d.line}:{d.column}" if d.cell else f"{d.line}:{d.column}"
        fix = d.fix.applicability.value if d.fix else "none"
        message = d.message.replace(str(path), str(path.relative_to(FIXTURES.parent)))  # a notice names the file
        blocks.append(f"{where}: {d.code} [{d.certainty.value}] {message}\n    help: {d.help}\n    fix: {fix}\n")
    return "\n".join(blocks)


def snapshot_of(path: Path) -> Path:
    return SNAPSHOTS / path.relative_to(FIXTURES).with_suffix(".txt")


@pytest.mark.parametrize("path", CASES, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_messages_match_their_snapshot(path: Path, fixture_file_diagnostics: dict[str, tuple[Diagnostic, ...]]) -> None:
    text = render(path, fixture_file_diagnostics[str(path)])  # check_file of the fixture, made once for the session
    snap = snapshot_of(path)
    if UPDATE:
        snap.parent.mkdir(parents=True, exist_ok=True)
        snap.write_text(text, encoding="utf-8")
    assert snap.is_file(), f"no snapshot for {path.name}: run with GRADLINT_UPDATE_SNAPSHOTS=1 and review it"
    assert text == snap.read_text(encoding="utf-8")


def test_no_snapshot_without_its_fixture() -> None:
    wanted = {snapshot_of(p) for p in CASES}
    assert {p for p in SNAPSHOTS.rglob("*.txt")} <= wanted
