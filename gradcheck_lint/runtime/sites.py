"""Find the user's line in the stack: the first frame outside torch, frameworks and this package."""

from __future__ import annotations

import linecache
import os
import sys

from .ledger import Site

_PKG = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_SKIP_PARTS = (
    os.sep + "torch" + os.sep, os.sep + "lightning" + os.sep, os.sep + "pytorch_lightning" + os.sep,
    os.sep + "accelerate" + os.sep, os.sep + "transformers" + os.sep, os.sep + "deepspeed" + os.sep,
    os.sep + "contextlib.py", os.sep + "functools.py",
)


def _is_internal(filename: str) -> bool:
    return filename.startswith(_PKG) or filename.startswith("<frozen") or any(p in filename for p in _SKIP_PARTS)


def user_site(depth: int = 1) -> Site:
    """The innermost frame of the user's code calling into the current operation."""
    frame = sys._getframe(depth)
    while frame is not None and _is_internal(frame.f_code.co_filename):
        frame = frame.f_back  # type: ignore[assignment]
    if frame is None:
        return Site("<unknown>", 0, "")
    path, line = frame.f_code.co_filename, frame.f_lineno
    return Site(path, line, linecache.getline(path, line).strip())
