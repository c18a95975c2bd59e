"""Jupyter notebooks: the code cells joined into one virtual module, with a map back to (cell, line).

A model built in cell 2 and trained in cell 5 is analysed as one program, the way the kernel runs it.
IPython syntax is set aside first, keeping line numbers and indentation valid: a line magic, shell
escape, help request or `x = !cmd` / `x = %magic` line becomes `pass` at its own indentation. A cell
starting with `%%time`, `%%timeit` or `%%capture` keeps its Python body; any other cell magic
(`%%bash`, `%%writefile`, ...) makes the whole cell opaque, and it is skipped. Cells are numbered
1-based among all cells of the notebook, markdown and raw cells included, as Jupyter and VS Code
count them; lines and columns count within the cell.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

from .analysis.apimodels import catalogue_for
from .config import Settings
from .diagnostics import Diagnostic, Span
from .engine import FileReport, analyse_text, syntax_problems, unanalysable
from .prefilter import might_train

NOTEBOOK_SUFFIX = ".ipynb"
# Cell magics whose body IPython runs as Python: the body is analysed, the magic line set aside.
PYTHON_CELL_MAGICS = frozenset({"time", "timeit", "capture"})
# What an IPython-only line becomes: a statement that is valid wherever that line stood.
PLACEHOLDER = "pass"

_INVALID_HELP = "re-save the notebook with Jupyter (nbformat 4), or exclude it from the checked paths."
_SYNTAX_HELP = ("fix the cell so that Python can parse it (IPython magics and shell lines are set aside first), "
                "or exclude the notebook from the checked paths.")
# Escapes that make a line IPython's, not Python's: magics, shell, help, autocall (`/f x`, `,f a`, `;f a`).
_ESCAPES = ("%", "!", "?", "/", ",", ";")
# `obj?`, `obj.attr??`, `%magic?`: a help request written after the name.
_HELP_AFTER = re.compile(r"%{0,2}[A-Za-z_*][\w.*]*\?{1,2}")
_CELL_MAGIC = re.compile(r"%%(\w*)")
# " at line N" in a message names a line of the virtual module; it is rewritten to the cell's line.
_AT_LINE = re.compile(r" at line (\d+)\b")
# Characters before `=` that make it part of another operator (`==`, `!=`, `<=`, `+=`, `:=`, ...).
_NOT_ASSIGN_BEFORE = frozenset("=!<>:+-*/%&|^@~")


class NotebookError(ValueError):
    """The file is not a notebook that can be read; `reason` says why, in words."""

    def __init__(self, reason: str, line: int = 1, column: int = 1) -> None:
        super().__init__(reason)
        self.reason, self.line, self.column = reason, line, column


@dataclass(frozen=True, slots=True)
class Cell:
    """One cell: its 1-based index among all cells of the notebook, its type and its source text."""

    index: int
    cell_type: str
    source: str


@dataclass(frozen=True, slots=True)
class Notebook:
    """The cells of an nbformat 4 notebook and the kernel's language, when the metadata names one."""

    cells: tuple[Cell, ...]
    language: str | None = None

    @property
    def is_python(self) -> bool:
        """Whether the code cells are Python (a notebook that names no language is taken to be)."""
        return self.language is None or "python" in self.language.lower()


@dataclass(frozen=True, slots=True)
class Origin:
    """Where a line of the virtual module comes from: cell, line in the cell, columns removed by dedenting."""

    cell: int
    line: int
    column_offset: int = 0


@dataclass(frozen=True, slots=True)
class CellCode:
    """A code cell turned into Python: its lines (magics set aside) and where each one comes from."""

    index: int
    lines: tuple[str, ...]
    origins: tuple[Origin, ...]

    @property
    def text(self) -> str:
        """Return the cell's Python source."""
        return "".join(line + "\n" for line in self.lines)


@dataclass(frozen=True, slots=True)
class VirtualModule:
    """The code cells joined in order into one module, and the origin of each of its lines."""

    text: str
    origins: tuple[Origin, ...]

    @classmethod
    def join(cls, cells: Iterable[CellCode]) -> VirtualModule:
        """Concatenate cells into one module."""
        parts = list(cells)
        return cls("".join(c.text for c in parts), tuple(o for c in parts for o in c.origins))

    def origin(self, line: int) -> Origin:
        """Return where a 1-based line of the module comes from (clamped to the module)."""
        if not self.origins:
            return Origin(1, 1)
        return self.origins[min(max(line, 1), len(self.origins)) - 1]

    def relocate(self, diagnostic: Diagnostic) -> Diagnostic:
        """Move a diagnostic of the module to its cell, line and column, and reword its line references."""
        start, end = self.origin(diagnostic.span.line), self.origin(diagnostic.span.end_line)
        span = Span(start.line, diagnostic.span.column + start.column_offset,
                    end.line, diagnostic.span.end_column + end.column_offset)
        # fixes are not applied to notebooks: their edits would point into the joined module
        return replace(diagnostic, span=span, cell=start.cell, message=self._reword(diagnostic.message), fix=None)

    def _reword(self, message: str) -> str:
        # Quoted code (between backticks) is the user's and is left alone.
        parts = message.split("`")
        for i in range(0, len(parts), 2):
            parts[i] = _AT_LINE.sub(self._at, parts[i])
        return "`".join(parts)

    def _at(self, match: re.Match[str]) -> str:
        origin = self.origin(int(match.group(1)))
        return f" at line {origin.line} of cell {origin.cell}"


def parse_notebook(text: str) -> Notebook:
    """Read nbformat 4 JSON into cells.

    Raises:
        NotebookError: the text is not JSON, or not an nbformat 4 notebook.
    """
    try:
        data: Any = json.loads(text)
    except json.JSONDecodeError as exc:
        raise NotebookError(f"is not valid JSON ({exc.msg})", exc.lineno, exc.colno) from None
    except (ValueError, RecursionError, MemoryError) as exc:
        raise NotebookError(f"is not valid notebook JSON ({type(exc).__name__})") from None
    if not isinstance(data, dict):
        raise NotebookError("is not a Jupyter notebook (its JSON is not an object)")
    version = data.get("nbformat")
    if version is None:
        raise NotebookError("is not a Jupyter notebook (it has no `nbformat` version)")
    if isinstance(version, bool) or version != 4:
        raise NotebookError(f"is a notebook in format {str(version)[:20]!s}; only nbformat 4 notebooks can be checked")
    raw_cells = data.get("cells")
    if not isinstance(raw_cells, list):
        raise NotebookError("is not a valid nbformat 4 notebook (`cells` is not a list)")
    cells = []
    for index, raw in enumerate(raw_cells, 1):
        if not isinstance(raw, dict):
            raise NotebookError(f"is not a valid nbformat 4 notebook (cell {index} is not an object)")
        cell_type, source = raw.get("cell_type"), raw.get("source", "")
        if not isinstance(cell_type, str):
            raise NotebookError(f"is not a valid nbformat 4 notebook (cell {index} has no `cell_type`)")
        if isinstance(source, list) and all(isinstance(s, str) for s in source):
            source = "".join(source)
        if not isinstance(source, str):
            raise NotebookError(f"is not a valid nbformat 4 notebook (the source of cell {index} is not text)")
        cells.append(Cell(index, cell_type, source.replace("\r\n", "\n").replace("\r", "\n")))
    return Notebook(tuple(cells), _language(data.get("metadata")))


def _language(metadata: Any) -> str | None:
    if not isinstance(metadata, dict):
        return None
    for key, field in (("language_info", "name"), ("kernelspec", "language")):
        section = metadata.get(key)
        if isinstance(section, dict) and isinstance(section.get(field), str) and section[field]:
            return str(section[field])
    return None


def cell_to_python(cell: Cell) -> CellCode | None:
    """Set aside a code cell's IPython syntax; None when a cell magic makes the cell opaque."""
    lines = cell.source.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    offsets = [0] * len(lines)
    first = next((i for i, line in enumerate(lines) if line.strip()), None)
    if first is None:
        return CellCode(cell.index, (), ())
    # IPython removes the first line's indentation from every line that starts with it.
    indent = lines[first][: len(lines[first]) - len(lines[first].lstrip())]
    if indent:
        for i, line in enumerate(lines):
            if line.startswith(indent):
                lines[i], offsets[i] = line[len(indent):], len(indent)
    out = list(lines)
    body_start = 0
    magic = _CELL_MAGIC.match(lines[first])
    if magic:
        if magic.group(1) not in PYTHON_CELL_MAGICS:
            return None
        out[first] = PLACEHOLDER
        body_start = first + 1
    scanner = _LineScanner()
    in_magic = False
    for i in range(body_start, len(lines)):
        line = lines[i]
        if in_magic:  # a backslash-continued magic line goes on
            out[i] = ""
            in_magic = line.endswith("\\")
            continue
        if scanner.at_statement_start and _is_ipython_line(line):
            stripped = line.lstrip()
            out[i] = line[: len(line) - len(stripped)] + PLACEHOLDER
            in_magic = line.endswith("\\")
            continue
        scanner.feed(line)
    origins = tuple(Origin(cell.index, i + 1, offsets[i]) for i in range(len(lines)))
    return CellCode(cell.index, tuple(out), origins)


def _is_ipython_line(line: str) -> bool:
    """Whether a line that starts a statement is IPython syntax rather than Python."""
    stripped = line.strip()
    if not stripped:
        return False
    if stripped.startswith(_ESCAPES) or _HELP_AFTER.fullmatch(stripped):
        return True
    return _assigns_from_magic(stripped)


def _assigns_from_magic(line: str) -> bool:
    """`files = !ls`, `out = %sx ls`: the first top-level plain `=` is followed by `!` or `%`."""
    depth, quote, i, n = 0, "", 0, len(line)
    while i < n:
        ch = line[i]
        if quote:
            if ch == "\\":
                i += 2
                continue
            if line.startswith(quote, i):
                i, quote = i + len(quote), ""
                continue
        elif ch == "#":
            return False
        elif ch in "\"'":
            quote = line[i:i + 3] if line[i:i + 3] in ('"""', "'''") else ch
            i += len(quote)
            continue
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif (ch == "=" and depth == 0 and line[i + 1:i + 2] != "="
              and (i == 0 or line[i - 1] not in _NOT_ASSIGN_BEFORE)):
            return line[i + 1:].lstrip().startswith(("!", "%"))
        i += 1
    return False


class _LineScanner:
    """Tracks, line by line, whether the next line starts a statement (not in brackets, a string, or a continuation)."""

    __slots__ = ("depth", "quote", "continued")

    def __init__(self) -> None:
        self.depth = 0
        self.quote = ""
        self.continued = False

    @property
    def at_statement_start(self) -> bool:
        return self.depth == 0 and not self.quote and not self.continued

    def feed(self, line: str) -> None:
        """Advance over one physical line of Python."""
        self.continued = False
        escaped_newline = False
        i, n = 0, len(line)
        while i < n:
            ch = line[i]
            if self.quote:
                if ch == "\\":
                    escaped_newline = i == n - 1
                    i += 2
                    continue
                if line.startswith(self.quote, i):
                    i, self.quote = i + len(self.quote), ""
                    continue
            elif ch == "#":
                break
            elif ch in "\"'":
                self.quote = line[i:i + 3] if line[i:i + 3] in ('"""', "'''") else ch
                i += len(self.quote)
                continue
            elif ch in "([{":
                self.depth += 1
            elif ch in ")]}":
                self.depth = max(0, self.depth - 1)
            elif ch == "\\" and i == n - 1:
                self.continued = True
            i += 1
        if self.quote in ("'", '"') and not escaped_newline:
            self.quote = ""  # a one-quote string cannot span lines: Python reports it; stay in step


def python_cells(notebook: Notebook) -> list[CellCode]:
    """Return the code cells as Python, in order, skipping cells made opaque by a cell magic."""
    out = []
    for cell in notebook.cells:
        if cell.cell_type == "code":
            code = cell_to_python(cell)
            if code is not None and code.lines:
                out.append(code)
    return out


def check_notebook(text: str, path: str, settings: Settings | None = None) -> list[Diagnostic]:
    """Lint a notebook's JSON text; diagnostics carry their cell. Never raises."""
    return analyse_notebook(text, path, settings).diagnostics


def analyse_notebook(text: str, path: str, settings: Settings | None = None) -> FileReport:
    """`check_notebook` with the result's reproducibility (see `engine.FileReport`)."""
    try:
        notebook = parse_notebook(text)
    except NotebookError as exc:
        return FileReport([unanalysable(path, exc.reason, exc.line, exc.column, help=_INVALID_HELP)])
    catalogue = catalogue_for((settings or Settings.default()).api_models())
    if not notebook.is_python or not might_train("\n".join(c.source for c in notebook.cells if c.cell_type == "code"), catalogue):
        return FileReport([])
    cells = python_cells(notebook)
    module = VirtualModule.join(cells)
    if not might_train(module.text, catalogue):  # the words were only in magics or skipped cells
        return FileReport([])
    # Jupyter compiles each cell on its own: a syntax error is reported in its own cell.
    for cell in cells:
        problems = syntax_problems(cell.text, path)
        if problems:
            return FileReport([VirtualModule.join([cell]).relocate(replace(problems[0], help=_SYNTAX_HELP))])
    report = analyse_text(module.text, path, settings)
    return FileReport([module.relocate(d) for d in report.diagnostics], report.reproducible)



def analyse_notebook_bytes(data: bytes | str, path: str, settings: Settings | None = None) -> FileReport:
    """Lint a notebook's bytes (or the reason they could not be read)."""
    if isinstance(data, str):
        return FileReport([unanalysable(path, data)])
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        return FileReport([unanalysable(path, f"cannot be decoded as UTF-8 at byte {exc.start}: {exc.reason}", help=_INVALID_HELP)])
    return analyse_notebook(text, path, settings)


def is_notebook(path: str) -> bool:
    """Whether a path names a Jupyter notebook (by its suffix)."""
    return path.endswith(NOTEBOOK_SUFFIX)
