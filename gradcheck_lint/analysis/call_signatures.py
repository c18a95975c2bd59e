"""Calls a function read in code cannot accept: Python raises `TypeError` before its body runs.

AdvancedLiterateMachinery's VQGAN trainer calls `self.vae(img, return_loss=True, apply_grad_penalty=...)`
on a `VQGanVAE` whose `forward` takes `add_gradient_penalty` and no `**kwargs`: every path through that call
raises, so the generator's backward and the steps below it never run, and a finding there describes code
that cannot run. Such a call ends its path, as a `raise` does.

Only what the signature says for sure: a keyword the function has no parameter for, when it takes no
`**kwargs`; for a module's `forward` called with the module (`self` bound), more positional arguments than it
takes, when it takes no `*args`; a parameter without a default that the call gives no value (`missing`:
JEN-1's `train.py` builds its trainer on ranks other than 0 without the `epoch_str` and `global_step` its
`__init__` requires, so that branch raises and its training never runs). A decorated function may be wrapped
into another signature, and a call with `*args` or `**kwargs` of its own hands over what is not in sight:
neither is read.
"""

from __future__ import annotations

import ast
from collections.abc import Collection

from .flow import Function


def rejects(fn: Function, call: ast.Call, bound: int | None = None) -> bool:
    """Whether calling `fn` as `call` surely raises `TypeError`. `bound`: how many leading parameters are
    bound by the call itself (1 for a method called on its object); None when that is not known, and only
    keywords are read then."""
    if fn.decorator_list:
        return False
    if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
        return False
    spec = fn.args
    if spec.kwarg is None and unknown_keyword(call, {a.arg for a in (*spec.args, *spec.kwonlyargs)}):
        return True
    if bound is not None and spec.vararg is None:
        return len(call.args) > len(spec.posonlyargs) + len(spec.args) - bound
    return False


def missing(fn: Function, call: ast.Call, bound: int) -> bool:
    """Whether calling `fn` as `call`, with its first `bound` parameters bound by the call itself (1 for a method
    called on its object, an `__init__` by its class), leaves a parameter without a default and without a value:
    `TypeError` before the body runs."""
    if fn.decorator_list:
        return False
    if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
        return False
    spec = fn.args
    positional = [*spec.posonlyargs, *spec.args]
    required = positional[bound:len(positional) - len(spec.defaults)]
    given = {k.arg for k in call.keywords}
    if any(a.arg not in given for a in required[len(call.args):]):
        return True
    return any(d is None and a.arg not in given for a, d in zip(spec.kwonlyargs, spec.kw_defaults))


def unknown_keyword(call: ast.Call, accepted: Collection[str]) -> bool:
    """The call passes a keyword none of `accepted` names (a function's parameters, or the keywords a catalogue
    row says a method takes: `backward(retain_variables=True)`)."""
    return any(k.arg is not None and k.arg not in accepted for k in call.keywords)
