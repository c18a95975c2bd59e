"""Turn diagnostics into text or JSON."""

from __future__ import annotations

import json
from typing import Sequence

from .diagnostics import Diagnostic


def render_text(diagnostics: Sequence[Diagnostic], files: int) -> str:
    """Render `path:line:col: CODE message` (`path:cell N:line:col:` in notebooks) and a help line."""
    lines: list[str] = []
    for d in diagnostics:
        where = f"{d.path}:cell {d.cell}" if d.cell is not None else d.path
        lines.append(f"{where}:{d.line}:{d.column}: {d.code} {d.message}")
        lines.append(f"    help: {d.help}")
    n = len(diagnostics)
    summary = f"Found {n} problem{'s' if n != 1 else ''} in {files} file{'s' if files != 1 else ''} checked." if n else f"All checks passed ({files} file{'s' if files != 1 else ''} checked)."
    lines.append(summary)
    return "\n".join(lines)


def render_json(diagnostics: Sequence[Diagnostic]) -> str:
    """Render a JSON array of the diagnostics' `to_json()` objects."""
    return json.dumps([d.to_json() for d in diagnostics], indent=2)
