"""Find the user's call in the stack: the first frame outside torch, frameworks and this package."""

from __future__ import annotations

import os
import sys
from types import CodeType, FrameType

from .evidence import UNKNOWN_SITE, Site
from .source_calls import call_at

_PKG = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_SKIP_PARTS = (
    os.sep + "torch" + os.sep, os.sep + "lightning" + os.sep, os.sep + "pytorch_lightning" + os.sep,
    os.sep + "lightning_fabric" + os.sep,
    os.sep + "accelerate" + os.sep, os.sep + "transformers" + os.sep, os.sep + "deepspeed" + os.sep,
    os.sep + "contextlib.py", os.sep + "functools.py",
)
_INTERNAL: dict[str, bool] = {}
# (id of the code object, instruction) -> (that code object, kept alive so its id is not reused; site).
# Not keyed by the code object itself: code objects compare by value, and the same source run from
# two paths (a script copied, a generated program run twice) gives equal code with another filename.
_SITES: dict[tuple[int, int], tuple[CodeType, Site]] = {}


def _is_internal(filename: str) -> bool:
    known = _INTERNAL.get(filename)
    if known is None:
        known = _INTERNAL[filename] = (filename.startswith(_PKG) or filename.startswith("<frozen")
                                       or any(p in filename for p in _SKIP_PARTS))
    return known


def user_site(depth: int = 1, methods: tuple[str, ...] = ()) -> Site:
    """The call expression of the user's code that is running the current operation.

    Args:
        depth: frames to skip first (1: the caller of `user_site`).
        methods: method names the user's call probably has (`step`), to choose among calls of a line
            when the interpreter gives no column.
    """
    frame = _user_frame(sys._getframe(depth))
    return UNKNOWN_SITE if frame is None else _site_of(frame, methods)



class SiteMemo:
    """The last answer of `memo_site` for one entry point (a backward wrapper, a step hook), and the
    frames it was read from: the code object of each frame walked, and the instruction of each user
    frame. The same frames again give the same answer: whether a frame is the user's depends on its
    code object's file only, and a site on the user frame's code object and instruction."""

    __slots__ = ("chain", "site", "via", "code", "lasti", "skip", "mid", "via_code", "via_lasti")

    def __init__(self) -> None:
        self.chain: tuple[tuple[CodeType | None, int], ...] = ()  # (None, -2): the top of the stack
        self.site: Site = UNKNOWN_SITE
        self.via: tuple[int, int] | None = None
        # For a caller to compare inline (`probe._wrap_zero_grad`, `torch_patches._backward_with_ids`,
        # `Probe._before_step`), when the chain is short: the user frame's code object and instruction
        # (the site depends on them alone); `skip`: the code of the one internal frame below it (torch's
        # `Tensor.backward`, the optimizer's step wrapper), or None when the chain starts at the user
        # frame; with `caller`, `via_code` and `via_lasti`: the user frame right above it (`via`), or
        # None and -2 when the user frame is the top of the stack (a script's module code).
        self.code: CodeType | None = None
        self.lasti = -1
        self.skip: CodeType | None = None
        # without `caller`: the code of a second internal frame between `skip` and the user frame, or None
        # (an LR scheduler's wrapper of `optimizer.step`, `LRScheduler.__init__`'s `patch_track_step_called`)
        self.mid: CodeType | None = None
        self.via_code: CodeType | None = None
        self.via_lasti = -1


MEMOS = 4  # memos kept for an entry point called from several places in turn (`memo_sites`)


def _walked_again(frame: FrameType | None, chain: tuple[tuple[CodeType | None, int], ...]) -> bool:
    """The frames from `frame` up are those of `chain` (a memo's walk): the same answer."""
    if not chain:
        return False
    f = frame
    for code, lasti in chain:
        if code is None:  # the walk went to the top of the stack: it must end there again
            if f is not None:
                return False
        elif f is None or f.f_code is not code or (lasti >= 0 and f.f_lasti != lasti):
            return False
        else:
            f = f.f_back
    return True


def memo_sites(frame: FrameType | None, memos: list[SiteMemo], methods: tuple[str, ...],
               caller: bool) -> tuple[Site, tuple[int, int] | None]:
    """`memo_site` over a few memos, most recently walked first: the one whose frames these are, else a
    new walk into the least recently walked one (which moves to the front)."""
    for memo in memos:
        if _walked_again(frame, memo.chain):
            return memo.site, memo.via
    memo = memos.pop()
    memos.insert(0, memo)
    return memo_site(frame, memo, methods, caller)


def memo_site(frame: FrameType | None, memo: SiteMemo, methods: tuple[str, ...], caller: bool) -> tuple[Site, tuple[int, int] | None]:
    """`user_site` (and with `caller`, `user_caller`) of the operation run from `frame` (the first frame
    `user_site` would look at), answered from `memo` when the frames walked are the same as last time."""
    if _walked_again(frame, memo.chain):
        return memo.site, memo.via
    walked: list[tuple[CodeType | None, int]] = []
    user = None
    via = None
    f = frame
    while f is not None:
        code = f.f_code
        internal = _INTERNAL.get(code.co_filename)
        if internal is None:
            internal = _is_internal(code.co_filename)
        if not internal and code.co_name in _OPTIMIZER_METHODS and code.co_name in methods and _optimizer_method(f):
            internal = True  # a wrapper optimizer's own `step`/`zero_grad` forwarding to the one it wraps
        walked.append((code, -1 if internal else f.f_lasti))
        if not internal:
            if user is None:
                user = f
                if not caller:
                    break
            else:
                via = (id(code), f.f_lasti)
                break
        f = f.f_back
    if f is None:
        walked.append((None, -2))
    site = UNKNOWN_SITE if user is None else _site_of(user, methods)
    memo.chain, memo.site, memo.via = tuple(walked), site, via
    memo.code, memo.lasti, memo.skip, memo.mid, memo.via_code, memo.via_lasti = None, -1, None, None, None, -1
    n = len(walked)
    if not caller and n == 1 and walked[0][1] >= 0:
        memo.code, memo.lasti = walked[0]
    elif not caller and n == 3 and walked[0][1] == -1 and walked[1][1] == -1 and walked[2][1] >= 0:
        # (internal frames: compared by their code alone, as `_walked_again` compares them)
        memo.skip, memo.mid = walked[0][0], walked[1][0]
        memo.code, memo.lasti = walked[2]
    elif n == (3 if caller else 2) and walked[0][1] == -1 and walked[1][1] >= 0 and (not caller or walked[2][1] != -1):
        memo.skip = walked[0][0]
        memo.code, memo.lasti = walked[1]
        if caller:
            memo.via_code, memo.via_lasti = walked[2]
    return site, via


_OPTIMIZER_METHODS = ("step", "zero_grad")


def _optimizer_method(frame: FrameType) -> bool:
    """The frame runs a method of a `torch.optim.Optimizer` (a wrapper defined in the user's code, such as
    PULSE's SphericalOptimizer, whose `step` calls the step of the optimizer it wraps): the user's call
    is the one of the wrapper, up the stack, where the static analysis also anchors it. Read on the
    slow path only (`memo_site` remembers the frames walked)."""
    import torch  # the runtime side only (this module is not imported by the static analysis)

    return isinstance(frame.f_locals.get("self"), torch.optim.Optimizer)


def user_caller(depth: int = 1) -> tuple[int, int] | None:
    """Where the user's code that runs the current operation was itself called from (the code object's
    id and instruction of the next user frame up), or None: `backward_d(D, real, fake1)` and
    `backward_d(D, real, fake2)` run one backward line from two places, two losses of one step."""
    frame = _user_frame(sys._getframe(depth))
    caller = _user_frame(frame.f_back) if frame is not None else None
    return (id(caller.f_code), caller.f_lasti) if caller is not None else None


def _user_frame(frame: FrameType | None) -> FrameType | None:
    """This frame or the first one up from it outside torch, frameworks and this package."""
    internal = _INTERNAL
    while frame is not None:
        filename = frame.f_code.co_filename
        known_internal = internal.get(filename)
        if known_internal is None:
            known_internal = _is_internal(filename)
        if not known_internal:
            return frame
        frame = frame.f_back
    return None


def _site_of(frame: FrameType, methods: tuple[str, ...]) -> Site:
    code = frame.f_code
    known = _SITES.get((id(code), frame.f_lasti))
    site = known[1] if known is not None and known[0] is code else None
    if site is None:
        path, line = code.co_filename, frame.f_lineno or 0
        call = call_at(path, code, frame.f_lasti, line, methods)
        if call is None:
            site = Site(path, line, "", col=1)
        else:
            site = Site(path, call.line, call.text, col=call.col, receiver=call.receiver,
                        first_arg=call.first_arg, method=call.method)
        if len(_SITES) < 100_000:
            _SITES[(id(code), frame.f_lasti)] = (code, site)
    return site
