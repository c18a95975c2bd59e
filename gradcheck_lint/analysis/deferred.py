"""Context managers chosen before they are entered.

Real loops pick a gradient-sync context into a variable and enter it later:

    context = partial(accelerator.no_sync, model) if not is_last else nullcontext   # magvit2
    my_context = model.no_sync if batch_idx % accum_grad != 0 else nullcontext       # FunASR
    with context():
        ...

The method is referenced, not called, so nothing switches sync off where it is written. Here such a
reference (a bound method of an API object whose model is only a context effect, or `functools.partial`
of one) evaluates the call it stands for at once, which has no effect until the context is entered,
and wraps the context in a *deferred* value; calling a name that holds one gives the context back.
Only context-making methods are evaluated early: a `partial(train_step, model)` runs nothing here.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from .values import EMPTY, Value

if TYPE_CHECKING:
    from .apimodels import Catalogue

_DEFERRED = "deferred"
# effects that only make a context and change nothing until it is entered
_CONTEXT_EFFECTS = frozenset({"sync"})
# synthetic calls, one per source node, kept alive so their ids stay unique while analysed
_SYNTHETIC: dict[int, tuple[ast.AST, ast.Call]] = {}


def is_context(value: Value) -> bool:
    return isinstance(value.const, tuple) and value.const[:1] == ("context",)


def defer(value: Value) -> Value:
    """A callable that returns this context when called (EMPTY when it is no context)."""
    return Value(const=(_DEFERRED, value.const)) if is_context(value) else EMPTY


def entered(value: Value | None) -> Value | None:
    """What calling a deferred value gives: the context it stands for (None when it is no such value)."""
    if value is not None and isinstance(value.const, tuple) and value.const[:1] == (_DEFERRED,):
        return Value(const=value.const[1])
    return None


def makes_context_only(effects: tuple[object, ...]) -> bool:
    return bool(effects) and all(getattr(e, "kind", None) in _CONTEXT_EFFECTS for e in effects)


def may_make_context(catalogue: Catalogue, name: str) -> bool:
    """Some API type's method of this name only makes a context (`no_sync`, `no_backward_sync`)."""
    return any(makes_context_only(m.effects) for m in catalogue.methods_named(name))


def synthetic_call(source: ast.AST, func: ast.expr, args: list[ast.expr], keywords: list[ast.keyword]) -> ast.Call:
    """The call a reference stands for (`model.no_sync` -> `model.no_sync()`), placed at `source`."""
    hit = _SYNTHETIC.get(id(source))
    if hit is not None and hit[0] is source:
        return hit[1]
    call = ast.Call(func=func, args=args, keywords=keywords)
    ast.copy_location(call, source)
    call.end_lineno, call.end_col_offset = getattr(source, "end_lineno", None), getattr(source, "end_col_offset", None)
    if len(_SYNTHETIC) > 10_000:
        _SYNTHETIC.clear()
    _SYNTHETIC[id(source)] = (source, call)
    return call
