"""Methods that hand back a value they made: every `return` is a tensor or container the call built.

`context = self._initial_context(v)` in a module's `forward`, where

    def _initial_context(self, v):
        context = v.mean(dim=-2).unsqueeze(-2).expand(v.shape).clone()
        return context

is a new tensor at each call (Pyraformer's ProbSparse attention): writing into it in place
(`context[:, index] = attn @ v`) keeps that call's graph in an object the call made, not in one that
outlives the loop around the call. A method of an object may in general hand back something it keeps
(`self.stats.get()`, a cache); one whose every `return` is a copy (`.clone()`, `new_zeros`), a tensor
built by a torch factory (`torch.zeros`, `torch.cat`), a display (`[]`, `{}`), or a local every binding
of which is one of those, hands back a new object.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping

from .walk import own_nodes

__all__ = ["made_in_the_call", "returns_made_afresh"]

# methods of a tensor whose result is a new tensor, never one of its operands
_COPIES = frozenset({"clone", "new_zeros", "new_ones", "new_empty", "new_full", "new_tensor", "copy", "deepcopy"})
# `torch.<name>(...)` that build a new tensor (a view, `torch.narrow`, `x.view`, is not one)
_FACTORIES = frozenset({"zeros", "ones", "empty", "full", "zeros_like", "ones_like", "empty_like", "full_like",
                        "rand", "randn", "randint", "rand_like", "randn_like", "tensor", "arange", "linspace",
                        "eye", "cat", "concat", "concatenate", "stack", "matmul", "bmm", "einsum"})
_DISPLAYS = (ast.Dict, ast.List, ast.Set, ast.ListComp, ast.DictComp, ast.SetComp)


def made_in_the_call(value: ast.expr) -> bool:
    """A copy (`x.expand(s).clone()`), a torch factory's tensor (`torch.zeros(n)`), or a display (`[]`): a new
    object at each evaluation."""
    if isinstance(value, _DISPLAYS):
        return True
    if not isinstance(value, ast.Call):
        return False
    func = value.func
    if isinstance(func, ast.Attribute) and func.attr in _COPIES:
        return True
    return isinstance(func, ast.Attribute) and func.attr in _FACTORIES \
        and isinstance(func.value, ast.Name) and func.value.id == "torch"


def _local_made(fn: ast.FunctionDef | ast.AsyncFunctionDef, nodes: list[ast.AST], name: str) -> bool:
    """`name` is a local of `fn` every binding of which makes a new object (`made_in_the_call`)."""
    params = {a.arg for a in [*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs]}
    if name in params or any(isinstance(n, (ast.Global, ast.Nonlocal)) and name in n.names for n in nodes):
        return False
    stores = sum(1 for n in nodes if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store))
    made = [a.value for a in nodes if isinstance(a, ast.Assign)
            for t in a.targets if isinstance(t, ast.Name) and t.id == name]
    return bool(made) and len(made) == stores and all(made_in_the_call(v) for v in made)


def returns_made_afresh(call: ast.Call, methods: Mapping[str, ast.AST]) -> bool:
    """`self.m(...)`, where `m` (a method of the class, `methods`) returns on every `return` a value it made
    (`made_in_the_call`, or a local made so), and returns nowhere else."""
    func = call.func
    if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self"):
        return False
    fn = methods.get(func.attr)
    if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) or fn.decorator_list:
        return False
    nodes = list(own_nodes(fn))
    if any(isinstance(n, (ast.Yield, ast.YieldFrom)) for n in nodes):
        return False
    returns = [n for n in nodes if isinstance(n, ast.Return)]
    if not returns or not isinstance(fn.body[-1], (ast.Return, ast.Raise)):
        return False  # the end of the body returns None
    for ret in returns:
        value = ret.value
        if value is None:
            return False
        if isinstance(value, ast.Name):
            if not _local_made(fn, nodes, value.id):
                return False
        elif not made_in_the_call(value):
            return False
    return True
