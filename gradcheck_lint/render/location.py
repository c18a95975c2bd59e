"""Where a diagnostic points, spelled for each output: the one place to extend when locations grow."""

from __future__ import annotations

import os
from pathlib import PurePath

from ..diagnostics import Diagnostic


def text_location(d: Diagnostic) -> str:
    """Return the `path:line:col` prefix of a text diagnostic (`path:cell N:line:col` in a notebook)."""
    where = f"{d.path}:cell {d.cell}" if d.cell is not None else d.path
    return f"{where}:{d.line}:{d.column}"


def relative_to(path: str, root: str) -> str | None:
    """Return `path` relative to `root` with `/` separators, or None when it lies outside `root`."""
    absolute, base = os.path.abspath(path), os.path.abspath(root)
    try:
        rel = os.path.relpath(absolute, base)
    except ValueError:  # another drive on Windows
        return None
    if rel == os.pardir or rel.startswith(os.pardir + os.sep):
        return None
    return PurePath(rel).as_posix()


def workspace_path(path: str, root: str) -> str:
    """Return `path` relative to `root` when inside it, else as an absolute path (`/` separators)."""
    rel = relative_to(path, root)
    return rel if rel is not None else PurePath(os.path.abspath(path)).as_posix()
