"""Turn diagnostics into text or JSON."""

from __future__ import annotations

import json
from typing import Sequence

from .diagnostics import Diagnostic


def render_text(diagnostics: Sequence[Diagnostic], files: int, unsafe_fixes: bool = False, fixed: int | None = None) -> str:
    """Render diagnostics as text; `[*]` marks those `--fix` would fix, `fixed` counts fixes applied."""
    lines: list[str] = []
    for d in diagnostics:
        mark = "[*] " if d.fix is not None and d.fix.applies(unsafe_fixes) else ""
        lines.append(f"{d.path}:{d.line}:{d.column}: {d.code} {mark}{d.message}")
        lines.append(f"    help: {d.help}")
    if fixed:
        lines.append(f"Fixed {_count(fixed, 'problem')}.")
    n = len(diagnostics)
    remaining = " remaining" if fixed else ""
    summary = f"Found {_count(n, 'problem')}{remaining} in {_count(files, 'file')} checked." if n else f"All checks passed ({_count(files, 'file')} checked)."
    lines.append(summary)
    fixable = sum(1 for d in diagnostics if d.fix is not None and d.fix.applies(unsafe_fixes))
    hidden = sum(1 for d in diagnostics if d.fix is not None and not d.fix.applies(unsafe_fixes))
    command = "gradlint --fix --unsafe-fixes" if unsafe_fixes else "gradlint --fix"
    if fixable:
        more = f" ({hidden} more with `--unsafe-fixes`)" if hidden else ""
        lines.append(f"[*] {fixable} fixable with `{command}`{more}.")
    elif hidden:
        lines.append(f"{hidden} fixable with `gradlint --fix --unsafe-fixes`.")
    return "\n".join(lines)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'s' if n != 1 else ''}"


def render_json(diagnostics: Sequence[Diagnostic]) -> str:
    return json.dumps([d.to_json() for d in diagnostics], indent=2)
