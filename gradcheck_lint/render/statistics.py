"""Counts of diagnostics per code (`--statistics`)."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from ..diagnostics import Diagnostic, Severity


@dataclass(frozen=True, slots=True)
class CodeCount:
    """How many diagnostics one code produced."""

    code: str
    name: str
    severity: Severity
    count: int


def count_codes(diagnostics: Sequence[Diagnostic]) -> list[CodeCount]:
    """Count diagnostics per code, most frequent first, ties by code."""
    counts = Counter(d.code for d in diagnostics)
    first: dict[str, Diagnostic] = {}
    for d in diagnostics:
        first.setdefault(d.code, d)
    rows = [CodeCount(code, first[code].name, first[code].severity, n) for code, n in counts.items()]
    return sorted(rows, key=lambda r: (-r.count, r.code))


def render_statistics_json(counts: Sequence[CodeCount]) -> str:
    """Render the counts as a JSON list of `{code, name, count}` objects."""
    return json.dumps([{"code": c.code, "name": c.name, "count": c.count} for c in counts], indent=2)
