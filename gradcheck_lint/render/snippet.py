"""A source line with carets under a span, aligned in terminal cells (tabs, wide and combining characters)."""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass

TAB_SIZE = 4
_BIDI_CONTROLS = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f")


def char_width(ch: str) -> int:
    """Return how many terminal cells `ch` takes: 0 for combining marks, 2 for East Asian wide."""
    if unicodedata.combining(ch) or unicodedata.category(ch) in ("Mn", "Me", "Cf"):
        return 0
    return 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1


@dataclass(frozen=True, slots=True)
class Snippet:
    """One displayed source line (tabs expanded) and where, in terminal cells, its carets go."""

    line: int
    source: str
    start: int
    width: int

    @property
    def carets(self) -> str:
        """Return the caret line: spaces up to the span, then one caret per cell of it."""
        return " " * self.start + "^" * self.width


def _display(text: str) -> tuple[str, list[int]]:
    """Expand tabs and neutralise control characters; return the text and each index's start cell."""
    out: list[str] = []
    cells = [0]
    col = 0
    for ch in text:
        if ch == "\t":
            shown = " " * (TAB_SIZE - col % TAB_SIZE)
        elif unicodedata.category(ch) in ("Cc", "Zl", "Zp") or ch in _BIDI_CONTROLS:
            # Never echo escape sequences, line separators or bidi overrides from a file into the
            # terminal (they would move the text away from its carets); one cell per character.
            shown = " " if ch.isspace() else "\ufffd"
        else:
            shown = ch
        out.append(shown)
        col += len(shown) if ch == "\t" else sum(char_width(c) for c in shown)
        cells.append(col)
    return "".join(out), cells


def make_snippet(text: str, line: int, column: int, end_line: int, end_column: int) -> Snippet | None:
    """Underline the span starting at 1-based code-point `column` of `text`; None if it no longer fits.

    A span that runs onto later lines is underlined to the end of its first line; an empty span
    gets one caret. A column past the end of the line means the file changed since it was checked.
    """
    text = text.rstrip("\n")
    start = column - 1
    if start < 0 or start > len(text):
        return None
    stripped_end = len(text.rstrip())
    end = end_column - 1 if end_line == line else stripped_end
    end = min(max(end, start), len(text))
    shown, cells = _display(text)
    width = max(1, cells[end] - cells[start])
    return Snippet(line, shown.rstrip(), cells[start], width)
