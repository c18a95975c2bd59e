"""Imported at interpreter start (through a .pth file) only when GRADLINT_GUARD is set."""

from __future__ import annotations

import atexit
import sys

try:
    from .guard import disable, enable_from_environment
except ImportError as exc:  # torch missing: say so once, never break the interpreter
    print(f"gradlint: GRADLINT_GUARD is set but the guard cannot start: {exc}", file=sys.stderr)
else:
    _guard = enable_from_environment()
    if _guard is not None and _guard.mode == "record":
        @atexit.register
        def _print_report() -> None:
            print(disable(), file=sys.stderr)
