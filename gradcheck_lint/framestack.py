"""Run a deep computation on a frame stack with room to spare.

CPython 3.11 keeps the frames of Python calls in chunks of 16 KiB, maps a new chunk when a call does not
fit in the current one, and unmaps a chunk as soon as its last frame returns (python/cpython#142183).
The interpreter recurses thousands of times a second through the same few depths: when one of those
depths sits on a chunk boundary, every call and return there is an mmap and a munmap. Which depth that
is depended on how deep the caller was, so `gradlint` and `python -m gradcheck_lint` differed by 30 %
on the same tree, and each code change moved the luck from one to the other.

`on_roomy_stack(fn, ...)` calls `fn` from a frame too large for any chunk, which CPython gives a chunk
of its own of 128 KiB, half of it free after that frame: `fn` and everything it calls start at the same
place of a fresh chunk whoever called it, and stay in it up to 64 KiB deep (some 200 frames).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

_LOCALS = 8_300  # 8 bytes each: a frame of ~65 KiB, just over half a 128 KiB chunk


def on_roomy_stack(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Call `fn(*args, **kwargs)` at the start of a frame-stack chunk of its own (see the module)."""
    return fn(*args, **kwargs)


# Unused locals make the frame as large as needed: CPython reserves a slot for each when it pushes the
# frame, and leaves it empty. They come after the parameters, so no instruction's index changes.
_code = on_roomy_stack.__code__
on_roomy_stack.__code__ = _code.replace(co_varnames=_code.co_varnames + tuple(f"_unused{i}" for i in range(_LOCALS)),
                                        co_nlocals=_code.co_nlocals + _LOCALS)
del _code
