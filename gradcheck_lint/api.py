"""Public entry points of the static analyzer."""

from __future__ import annotations

from typing import Iterable

from .diagnostics import Diagnostic
from .discovery import iter_python_files
from .engine import check_text, unanalysable
from .notebooks import check_notebook_file, is_notebook
from .sources import read_source


def check_source(text: str, path: str = "<string>", codes: Iterable[str] | None = None) -> list[Diagnostic]:
    """Lint Python source text; `codes` limits the rules run (default: all)."""
    return check_text(text, path, codes)


def check_file(path: str, codes: Iterable[str] | None = None) -> list[Diagnostic]:
    """Lint one file (a `.ipynb` file as a notebook); unreadable or unparsable files give a single GL000 diagnostic."""
    if is_notebook(path):
        return check_notebook_file(path, codes)
    src = read_source(path)
    if src.text is None:
        return [unanalysable(path, src.error or "cannot be read")]
    return check_text(src.text, path, codes)


def check_paths(paths: list[str], codes: Iterable[str] | None = None) -> tuple[list[Diagnostic], int]:
    """Lint files and directories (scripts and notebooks); return the diagnostics and the number of files checked."""
    selected = list(codes) if codes is not None else None
    out: list[Diagnostic] = []
    count = 0
    for path in iter_python_files(paths):
        count += 1
        out.extend(check_file(path, selected))
    return sorted(out, key=Diagnostic.sort_key), count
