"""Objects built switched on or off by a setting: a GradScaler does its work only where it is enabled.

`torch.amp.GradScaler(enabled=use_amp)` scales nothing when `use_amp` is false: `scale(loss)` returns the loss,
`unscale_` returns at once and `step(optimizer)` is `optimizer.step()`. Code built that way tests the same setting
where it matters:

    scaler = GradScaler(enabled=use_amp)
    scaler.scale(loss).backward()
    if use_amp:
        scaler.unscale_(optimizer)   # only where the scaler scaled
    clip_grad_norm_(model.parameters(), 1.0)

Here the clip never sees scaled gradients: the path that skips `unscale_` is the run where the scaler is off.
A `scale` call therefore splits the paths that do not know the setting yet into the two runs (worlds): one where
the setting holds and the gradients are scaled, one where it does not and nothing is; each path remembers which,
so a later test of the setting goes its way. The setting is read as a literal of a branch test (`pathcond`); a
setting the constructor also stores under an attribute (`self.fp16 = cfg.get("fp16", False)` beside
`GradScaler(enabled=cfg.get("fp16", False))`) is that attribute, which other methods test. Paths are split only
where some test of the setting can touch gradients (`pathcond.subjects_tested`): elsewhere the split would only
multiply the paths, and the run where the scaler is on carries every misuse there is.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable

from . import pathcond
from .gradstate import PathState
from .syntax import code
from .walk import iter_tree

__all__ = ["runs_of", "setting_literal", "setting_name"]


def setting_literal(expr: ast.expr, call: ast.AST,
                    parent: Callable[[ast.AST], ast.AST | None]) -> pathcond.Literal | None:
    """The literal a constructor's on/off argument `expr` (at `call`) is, as other tests spell it: an attribute the
    same function stores the same expression under, else the expression's own atom (None: a shape no branch tests,
    or a constant)."""
    if isinstance(expr, ast.Constant):
        return None
    text = code(expr)
    fn = parent(call)
    while fn is not None and not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
        fn = parent(fn)
    if fn is not None:
        for node in iter_tree(fn):
            if (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Attribute)
                    and isinstance(node.targets[0].value, ast.Name) and node.targets[0].value.id == "self"
                    and code(node.value) == text):
                return pathcond.Literal(pathcond.Atom(pathcond.TRUTHY, code(node.targets[0])), True)
    lit = pathcond.literal(expr)
    return None if lit.atom.kind == pathcond.TEXT else lit


def setting_name(expr: ast.expr) -> str | None:
    """The name a setting goes by, whatever object holds it: `amp` of `args.amp`, `use_amp`, `not args.amp`,
    `cfg.get("amp", False)`, `args.precision == "fp16"` (its left side); None for another shape. Where the analysis
    cannot tell whether two settings are one (`args.amp` of a constructor's `args` and of a loop's), the name is what
    the code says of them."""
    while isinstance(expr, ast.UnaryOp) and isinstance(expr.op, ast.Not):
        expr = expr.operand
    if isinstance(expr, ast.Compare):
        expr = expr.left
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and expr.func.attr == "get" and expr.args \
            and isinstance(expr.args[0], ast.Constant) and isinstance(expr.args[0].value, str):
        return expr.args[0].value
    if isinstance(expr, ast.Attribute):
        return expr.attr
    if isinstance(expr, ast.Name):
        return expr.id
    return None


def runs_of(states: Iterable[PathState], decided: Callable[[PathState], bool | None], akey: int, polarity: bool,
            asked: int = 0) -> tuple[list[PathState], list[PathState]]:
    """The paths on which the setting (assumption key `akey`, true when its atom is `polarity`) holds, and those on which
    it does not; a path `decided` says nothing of goes both ways and remembers which. `asked`: the key of the object's
    own answer (`scaler.is_enabled()`), remembered alike (0: no test asks it)."""
    on, off = [], []
    for s in states:
        known = decided(s)
        if known is None and asked:  # `if not scaler.is_enabled():` ran before
            known = s.assumption(asked)
        if known is None:
            on.append(s.assume(akey, polarity))
            off.append(s.assume(akey, not polarity))
        else:
            (on if known else off).append(s)
    if asked:
        on = [s.assume(asked, True) for s in on]
        off = [s.assume(asked, False) for s in off]
    return on, off
