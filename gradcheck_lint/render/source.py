"""The source lines that diagnostics point at, read again from disk (diagnostics hold no text)."""

from __future__ import annotations

from typing import Callable

from ..diagnostics import Diagnostic
from ..sources import SourceText, read_source


class SourceLines:
    """Lazily read and cache the lines of reported files; a file that is gone simply has no lines."""

    def __init__(self, read: Callable[[str], SourceText] = read_source) -> None:
        self._read = read
        self._lines: dict[str, list[str] | None] = {}

    def _file(self, path: str) -> list[str] | None:
        if path not in self._lines:
            text = self._read(path).text
            # `read_source` already decodes like Python and normalises newlines to "\n".
            self._lines[path] = None if text is None else text.split("\n")
        return self._lines[path]

    def line(self, d: Diagnostic) -> str | None:
        """Return the text of the first line of `d`'s span, or None when it can no longer be read."""
        lines = self._file(d.path)
        if lines is None or not 1 <= d.line <= len(lines):
            return None
        return lines[d.line - 1]
