"""Autograd switched off by a statement: `torch.set_grad_enabled(False)` on its own line.

`with torch.no_grad():` is lexical (`Frame.no_grad` over its body). The statement form is not: it holds from
there on, on the path that ran it, until `torch.set_grad_enabled(True)`, across the iterations of loops and
out of branches. RL drivers write it so (Neural-SLAM turns autograd off before its episode loop and on around the
training part of each step, then off again), and so does evaluation code at module level.

The mode is a mark on the path (`PathState.amp`, the pseudo uid `OFF`). A statement runs without autograd when
every path reaching it carries the mark; where some do and some do not, it runs as code with autograd on (what
the analysis assumes anywhere else). `set_grad_enabled(flag)` with a flag known only at run time takes the mark
away: autograd may be on.
"""
from __future__ import annotations

import ast
from dataclasses import replace
from typing import TYPE_CHECKING

from .callsite import literal_bool

if TYPE_CHECKING:
    from .apimodels import Catalogue
    from .flow import Flow, Frame
    from .names import ImportMap

__all__ = ["OFF", "MARK", "setting", "apply", "frame_for"]

OFF = -3  # the pseudo optimizer uid of the mark (amp.MADE is -1, callables.HOOKED -2)
MARK = (OFF, "grad", 0)


def setting(stmt: ast.AST, imports: ImportMap, catalogue: Catalogue) -> bool | None:
    """What a statement `torch.set_grad_enabled(flag)` sets: False (off), True (on, or a flag known only at run
    time: autograd may be on); None when the statement is no such call."""
    if type(stmt) is not ast.Expr or type(stmt.value) is not ast.Call:
        return None
    call = stmt.value
    last = call.func.attr if type(call.func) is ast.Attribute else call.func.id if type(call.func) is ast.Name else None
    if last not in catalogue.mode_setters():
        return None  # (read for every call statement: the name first, the import only for a setter's name)
    qual = imports.qualify(call.func)
    row = catalogue.call(qual) if qual else None
    if row is None:
        return None
    for effect in row.effects:
        ref = effect.ref("flag") if effect.kind == "no_grad" else None
        if ref is None:
            continue
        node = _argument(call, ref.positions, ref.keywords)
        return literal_bool(node) is not False
    return None


def _argument(call: ast.Call, positions: tuple[int, ...], keywords: tuple[str, ...]) -> ast.expr | None:
    if any(isinstance(a, ast.Starred) for a in call.args):
        return None
    for p in positions:
        if p < len(call.args):
            return call.args[p]
    for kw in call.keywords:
        if kw.arg in keywords:
            return kw.value
    return None


def apply(flow: Flow, on: bool) -> None:
    """The paths of `flow` ran `torch.set_grad_enabled(on)`."""
    if on:
        flow.map_quiet(lambda s: s._with(amp=s.amp - {MARK}) if MARK in s.amp else s)
    else:
        flow.map_quiet(lambda s: s if MARK in s.amp else s._with(amp=s.amp | {MARK}))


def frame_for(flow: Flow, frame: Frame) -> Frame:
    """The frame a statement runs in: without autograd where every path reaching it turned it off."""
    off = bool(flow.states) and all(MARK in s.amp for s in flow.states)
    if off and not frame.no_grad:
        return replace(frame, no_grad=True, by_mode=True)
    if not off and frame.by_mode:
        return replace(frame, no_grad=False, by_mode=False)
    return frame
