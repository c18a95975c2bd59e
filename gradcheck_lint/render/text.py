"""The human-readable outputs: diagnostics (optionally with source) and per-code statistics."""

from __future__ import annotations

from typing import Sequence

from ..diagnostics import Diagnostic, Severity
from .location import text_location
from .snippet import Snippet, make_snippet
from .source import SourceLines
from .statistics import CodeCount
from .style import BLUE, BOLD, CYAN, RED, YELLOW, Style


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'s' if n != 1 else ''}"


def _severity_color(d: Diagnostic) -> str:
    return YELLOW if d.severity is Severity.WARNING else RED


def summary_line(problems: int, files: int) -> str:
    """Return the closing line: how many problems in how many files."""
    if problems:
        return f"Found {_plural(problems, 'problem')} in {_plural(files, 'file')} checked."
    return f"All checks passed ({_plural(files, 'file')} checked)."


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
) -> str:
    """Render `path:line:col: CODE message` and a `help:` line per diagnostic, then a summary."""
    lines: list[str] = []
    if show_source and sources is None:
        sources = SourceLines()
    for d in diagnostics:
        color = _severity_color(d)
        where = style.paint(text_location(d), BOLD)
        lines.append(f"{where}: {style.paint(d.code, color, BOLD)} {d.message}")
        if sources is not None:
            text = sources.line(d)
            s = d.span
            snippet = None if text is None else make_snippet(text, s.line, s.column, s.end_line, s.end_column)
            if snippet is not None:
                lines.extend(_snippet_lines(snippet, color, style))
        lines.append(f"    {style.paint('help', CYAN, BOLD)}: {d.help}")
    lines.append(style.paint(summary_line(len(diagnostics), files), BOLD))
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
