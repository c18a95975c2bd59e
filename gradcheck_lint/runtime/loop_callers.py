"""For GL006's words: the call, in the loop that repeats the window, that runs a backward in a helper.

The static side names it (`` `loss.backward()` (run by `trainer.train_step(x, y)` at line 31) ``): the
innermost loop around both the backward and the step is in a caller of the backward's function, and the
call in that loop leading to the backward is the one the reader looks for. At runtime the same is read
from the stacks: the user frames above the backward when it ran (`callers`, taken only for a backward of
a synced DDP forward, the ones GL006 may report), and those running the step (`reached_via`). The first
frame on both is where the two meet; the innermost loop of its function around both its line at the
backward and its line at the step is the window's loop, else the loop is further up, around the call that
frame was made from.
"""

from __future__ import annotations

import ast
import sys
from types import CodeType

from .gates import _chain_to
from .sites import _user_frame
from .source_calls import call_at, parsed

Frame = tuple[int, CodeType, int, int]  # a user frame: id, code, instruction, line
_LOOPS = (ast.For, ast.AsyncFor, ast.While)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


def callers(depth: int = 1) -> tuple[Frame, ...]:
    """The user frames from the caller's (`depth` frames up) upward, innermost first."""
    out: list[Frame] = []
    frame = _user_frame(sys._getframe(depth + 1))
    while frame is not None:
        out.append((id(frame), frame.f_code, frame.f_lasti, frame.f_lineno or 0))
        frame = _user_frame(frame.f_back)
    return tuple(out)


def reached_via(chain: tuple[Frame, ...], at_step: tuple[Frame, ...]) -> tuple[str, int] | None:
    """The call (text, line) that runs the backward of `chain` from the loop it shares with the step
    (the user frames at the step, `at_step`), or None: that loop is around the backward itself, or not found."""
    now = {fid: (code, line) for fid, code, _lasti, line in at_step}
    for i, (fid, code, _lasti, line) in enumerate(chain):
        here = now.get(fid)
        if here is None or here[0] is not code:
            continue
        if _common_loop(code, line, here[1]):
            return None if i == 0 else _call(chain[i])
        for j in range(i + 1, len(chain)):  # above the meeting frame: the same frames at the step
            _fid, upper, _l, upper_line = chain[j]
            if _common_loop(upper, upper_line, upper_line):
                return _call(chain[j])
        return None
    return None


def _common_loop(code: CodeType, a: int, b: int) -> bool:
    """Whether a loop of the function of `code` runs around both lines `a` and `b`."""
    p = parsed(code.co_filename)
    if p is None or a <= 0 or b <= 0:
        return False
    first, second = _chain_to(p.tree, a), _chain_to(p.tree, b)
    shared = [x for x, y in zip(first, second) if x is y]
    for node in reversed(shared):
        if isinstance(node, _SCOPES):
            return False
        if isinstance(node, _LOOPS):
            return True
    return False


def _call(frame: Frame) -> tuple[str, int] | None:
    _fid, code, lasti, line = frame
    call = call_at(code.co_filename, code, lasti, line)
    return (call.text, call.line) if call is not None else None
