"""The source lines that diagnostics point at, read again from disk (diagnostics hold no text)."""

from __future__ import annotations

from collections.abc import Callable

from ..diagnostics import Diagnostic
from ..sources import SourceText, read_source


class SourceLines:
    """Lazily read and cache the lines of reported files; a file that is gone simply has no lines."""

    def __init__(self, read: Callable[[str], SourceText] = read_source) -> None:
        self._read = read
        self._lines: dict[str, list[str] | None] = {}
        self._cells: dict[str, dict[int, list[str]] | None] = {}

    def _cell(self, path: str, cell: int) -> list[str] | None:
        if path not in self._cells:
            from ..notebooks import NotebookError, parse_notebook

            text = self._read(path).text
            try:
                nb = parse_notebook(text) if text is not None else None
            except NotebookError:
                nb = None
            self._cells[path] = None if nb is None else {c.index: c.source.split("\n") for c in nb.cells}
        cells = self._cells[path]
        return None if cells is None else cells.get(cell)

    def _file(self, path: str) -> list[str] | None:
        if path not in self._lines:
            text = self._read(path).text
            # `read_source` already decodes like Python and normalises newlines to "\n".
            self._lines[path] = None if text is None else text.split("\n")
        return self._lines[path]

    def line(self, d: Diagnostic) -> str | None:
        """Return the text of the first line of `d`'s span, or None when it can no longer be read."""
        lines = self._file(d.path) if d.cell is None else self._cell(d.path, d.cell)
        if lines is None or not 1 <= d.line <= len(lines):
            return None
        return lines[d.line - 1]
