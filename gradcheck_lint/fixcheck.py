"""Check the safe fixes of one text, each on its own: the result parses, its finding is gone, and gradlint
reports nothing new on it. The fixer relies on this holding (`fixes.fix_source` also refuses a safe fix
that breaks it); the test-suite and `benchmarks/fix_safety.py` check the rules' plans with it."""

from __future__ import annotations

from dataclasses import dataclass

from .api import check_source
from .config import Settings
from .diagnostics import Applicability, Diagnostic
from .fixes import CodemodsUnavailable, _parses, _shape, apply_edits, materialise, new_findings, normalise
from .registry import PARSE_ERROR_CODE


@dataclass(frozen=True, slots=True)
class FixOutcome:
    """One safe fix applied alone: what went wrong with it (nothing when `ok`)."""

    diagnostic: Diagnostic
    parses: bool
    resolved: bool  # its finding is no longer reported
    new: tuple[Diagnostic, ...]  # findings the fixed text has and the original had not

    @property
    def ok(self) -> bool:
        return self.parses and self.resolved and not self.new


def check_safe_fixes(text: str, path: str, settings: Settings | None = None) -> list[FixOutcome]:
    """Apply each safe fix of `text` alone and relint; one outcome per safe fix."""
    text = normalise(text)
    before = check_source(text, path, settings=settings)
    if any(d.code == PARSE_ERROR_CODE for d in before):
        return []
    try:
        ready = materialise(text, before, unsafe=False)
    except CodemodsUnavailable:
        return []
    out = []
    for d in ready:
        fix = d.fix
        if fix is None or fix.applicability is not Applicability.SAFE or not fix.edits:
            continue
        try:
            fixed = apply_edits(text, fix.edits)
        except ValueError:
            out.append(FixOutcome(d, False, False, ()))
            continue
        if not _parses(fixed):
            out.append(FixOutcome(d, False, False, ()))
            continue
        after = check_source(fixed, path, settings=settings)
        # positions move with the edits: the finding is gone when fewer say the same (numbers masked)
        resolved = sum(_shape(a) == _shape(d) for a in after) < sum(_shape(b) == _shape(d) for b in before)
        out.append(FixOutcome(d, True, resolved, tuple(new_findings(before, after, text, fixed))))
    return out
