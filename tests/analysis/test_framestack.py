"""`framestack.on_roomy_stack`: the analysis runs from a frame that opens a frame-stack chunk of its own."""

from __future__ import annotations

import sys

import pytest

from gradcheck_lint.framestack import on_roomy_stack


def test_it_passes_arguments_and_the_result_through() -> None:
    assert on_roomy_stack(divmod, 7, 2) == (3, 1)
    assert on_roomy_stack(dict, a=1) == {"a": 1}


def test_an_exception_propagates_unchanged() -> None:
    with pytest.raises(ZeroDivisionError):
        on_roomy_stack(divmod, 1, 0)


def test_its_frame_is_larger_than_a_chunk_of_16_kib() -> None:
    """A frame over 16 KiB cannot share a chunk: CPython maps one of its own for it (8-byte slots)."""
    code = on_roomy_stack.__code__
    assert code.co_argcount == 1 and code.co_varnames[:3] == ("fn", "args", "kwargs")
    assert code.co_nlocals * 8 > 64 * 1024


def test_deep_recursion_still_works_from_it() -> None:
    def down(n: int) -> int:
        return 0 if n == 0 else 1 + down(n - 1)

    limit = sys.getrecursionlimit()
    assert on_roomy_stack(down, limit // 2) == limit // 2
