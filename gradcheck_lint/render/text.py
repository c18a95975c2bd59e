"""The human-readable outputs: diagnostics (optionally with source) and per-code statistics."""

from __future__ import annotations

from collections.abc import Sequence

from ..diagnostics import Diagnostic, Severity
from .location import text_location
from .snippet import Snippet, make_snippet
from .source import SourceLines
from .statistics import CodeCount
from .style import BLUE, BOLD, CYAN, RED, YELLOW, Style


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'s' if n != 1 else ''}"


def _severity_color(d: Diagnostic) -> str:
    return CYAN if d.severity is Severity.NOTE else YELLOW if d.severity is Severity.WARNING else RED


def summary_line(problems: int, files: int, fixed: int | None = None, hidden: int = 0) -> str:
    """Return the closing line: how many problems (remaining, after `--fix`) in how many files, and how
    many possible ones were not shown."""
    remaining = " remaining" if fixed else ""
    more = f" {_plural(hidden, 'possible problem')} not shown (`--show-possible` shows {'it' if hidden == 1 else 'them'})." if hidden else ""
    if problems:
        return f"Found {_plural(problems, 'problem')}{remaining} in {_plural(files, 'file')} checked.{more}"
    return f"All checks passed ({_plural(files, 'file')} checked).{more}"


def fixable_lines(diagnostics: Sequence[Diagnostic], unsafe_fixes: bool) -> list[str]:
    """Return the line saying how many diagnostics `--fix` would fix (and how many more need --unsafe-fixes)."""
    fixable = sum(1 for d in diagnostics if d.fix is not None and d.fix.applies(unsafe_fixes))
    hidden = sum(1 for d in diagnostics if d.fix is not None and not d.fix.applies(unsafe_fixes))
    command = "gradlint --fix --unsafe-fixes" if unsafe_fixes else "gradlint --fix"
    if fixable:
        more = f" ({hidden} more with `--unsafe-fixes`)" if hidden else ""
        return [f"[*] {fixable} fixable with `{command}`{more}."]
    if hidden:
        return [f"{hidden} fixable with `gradlint --fix --unsafe-fixes`."]
    return []


def _snippet_lines(snippet: Snippet, color: str, style: Style) -> list[str]:
    number = str(snippet.line)
    pad = " " * len(number)
    bar = style.paint("|", BLUE, BOLD)
    return [
        f"{pad} {bar}",
        f"{style.paint(number, BLUE, BOLD)} {bar} {snippet.source}".rstrip(),
        f"{pad} {bar} {' ' * snippet.start}{style.paint('^' * snippet.width, color, BOLD)}",
    ]


def render_text(
    diagnostics: Sequence[Diagnostic],
    files: int,
    *,
    show_source: bool = False,
    style: Style = Style(),
    sources: SourceLines | None = None,
    unsafe_fixes: bool = False,
    fixed: int | None = None,
    quiet: bool = False,
    hidden: int = 0,
) -> str:
    """Render `path:line:col: CODE message` and a `help:` line per diagnostic, then a summary (not when `quiet`).

    `[*]` marks the diagnostics `--fix` would fix; `fixed` counts the fixes applied by this run.
    """
    lines: list[str] = []
    if show_source and sources is None:
        sources = SourceLines()
    for d in diagnostics:
        color = _severity_color(d)
        where = style.paint(text_location(d), BOLD)
        mark = "[*] " if d.fix is not None and d.fix.applies(unsafe_fixes) else ""
        certainty = "(possible) " if d.possible else ""
        lines.append(f"{where}: {style.paint(d.code, color, BOLD)} {certainty}{mark}{d.message}")
        if sources is not None:
            text = sources.line(d)
            s = d.span
            snippet = None if text is None else make_snippet(text, s.line, s.column, s.end_line, s.end_column)
            if snippet is not None:
                lines.extend(_snippet_lines(snippet, color, style))
        lines.append(f"    {style.paint('help', CYAN, BOLD)}: {d.help}")
    if quiet:
        return "\n".join(lines)
    if fixed:
        lines.append(f"Fixed {_plural(fixed, 'problem')}.")
    # a notice (part of a file not analysed) is said, not counted as a problem
    lines.append(style.paint(summary_line(sum(not d.notice for d in diagnostics), files, fixed, hidden), BOLD))
    lines.extend(fixable_lines(diagnostics, unsafe_fixes))
    return "\n".join(lines)


def render_statistics_text(counts: Sequence[CodeCount], files: int, style: Style = Style()) -> str:
    """Render one `count<TAB>code<TAB>name` row per code (most frequent first), like `ruff --statistics`."""
    if not counts:
        return style.paint(summary_line(0, files), BOLD)
    width = max(len(str(c.count)) for c in counts)
    code_width = max(len(c.code) for c in counts)
    return "\n".join(
        f"{style.paint(str(c.count).rjust(width), BOLD)}\t"
        f"{style.paint(c.code.ljust(code_width), RED if c.severity is Severity.ERROR else YELLOW, BOLD)}\t{c.name}"
        for c in counts
    )
