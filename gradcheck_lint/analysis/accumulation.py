"""Which assignments carry a variable's previous value into its new one, and which only initialise it.

An accumulation is an assignment whose value is made of the target's previous value combined with new
terms: `total = total + loss`, and as much an exponential moving average `ema = a * loss + (1 - a) * ema`,
`acc = acc * m + x`, `acc = torch.add(acc, x)`, `acc = acc.mul(m).add(x)`, `acc = torch.cat([acc, x])`.
Each iteration's value holds the previous one, so a graph in a new term is chained to every earlier one.
`combined_terms` reads that shape from the syntax: the terms the previous value is combined with. Not an
accumulation: a value that leaves the previous one behind (`acc = acc.detach() + x`, `acc = acc.item()`),
or that is one of them or the other (`acc = x if acc is None else acc`).

A running value is often started inside the loop, on its first pass: `if ema: ema = a * x + (1 - a) * ema
else: ema = x`, `if acc is None: acc = x`. Such an assignment runs only while the variable is still
unset (`initialisations`): it starts the running value once, it does not reset it on each iteration.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from .names import last_name, ref_text

__all__ = ["combined_terms", "initialisations"]

_ARITHMETIC = (ast.Add, ast.Sub, ast.Mult, ast.Div)
_SIGNS = (ast.USub, ast.UAdd)
# Methods of a tensor that return a tensor made of the receiver and their tensor arguments. Only these
# carry the receiver: a method of any other object may make anything of it
# (`pipeline.scheduler = pipeline.scheduler.from_config(...)` builds a new scheduler)
_TENSOR_ARITHMETIC = frozenset({
    "add", "sub", "mul", "div", "true_divide", "lerp", "addcmul", "addcdiv", "neg", "abs", "pow", "sqrt", "exp", "log",
    "add_", "sub_", "mul_", "div_", "lerp_", "addcmul_", "addcdiv_", "clamp", "clamp_", "clip", "maximum", "minimum",
    "sum", "mean", "view", "reshape", "squeeze", "unsqueeze", "flatten", "to", "float", "double", "half", "clone",
})


def combined_terms(source: ast.AST, target: str, detaching: frozenset[str]) -> list[ast.expr] | None:
    """The terms `source` combines `target`'s previous value with, when its value carries that value
    (through arithmetic, a sign, an arm of a conditional, a tensor method or a `torch` function); None when
    it does not. `detaching`: the method and function names whose result holds no graph (`item`, `detach`)."""
    if ref_text(source) == target:
        return []
    if isinstance(source, ast.BinOp) and isinstance(source.op, _ARITHMETIC):
        left, right = combined_terms(source.left, target, detaching), combined_terms(source.right, target, detaching)
        if left is None and right is None:
            return None
        return (left if left is not None else [source.left]) + (right if right is not None else [source.right])
    if isinstance(source, ast.UnaryOp) and isinstance(source.op, _SIGNS):
        return combined_terms(source.operand, target, detaching)
    if isinstance(source, ast.IfExp):  # one arm or the other: an arm that is not an accumulation keeps nothing
        terms = (combined_terms(arm, target, detaching) for arm in (source.body, source.orelse))
        arms = [t for t in terms if t is not None]
        return [t for terms in arms for t in terms] if arms else None
    if isinstance(source, ast.Call) and isinstance(source.func, ast.Attribute) and source.func.attr not in detaching \
            and (_torch_function(source.func) or source.func.attr in _TENSOR_ARITHMETIC):
        return _call_terms(source, source.func, target, detaching)
    return None


def _torch_function(func: ast.Attribute) -> bool:
    return isinstance(func.value, ast.Name) and func.value.id == "torch"


def _call_terms(call: ast.Call, func: ast.Attribute, target: str, detaching: frozenset[str]) -> list[ast.expr] | None:
    """`acc.mul(m)`, `acc.add(x)`, `torch.add(acc, x)`, `torch.cat([acc, x])`, `x.lerp(acc, w)`: tensor
    arithmetic, or a function of `torch`, returns a tensor made of its receiver and its tensor arguments."""
    module = _torch_function(func)
    parts: list[ast.expr] = [] if module else [func.value]
    for arg in (*call.args, *(k.value for k in call.keywords)):
        parts.extend(arg.elts if isinstance(arg, (ast.List, ast.Tuple))
                     else [arg.value] if isinstance(arg, ast.Starred) else [arg])
    found = [combined_terms(p, target, detaching) for p in parts]
    if all(f is None for f in found):
        return None
    return [t for p, f in zip(parts, found, strict=True) for t in (f if f is not None else [p])]


def initialisations(body: list[ast.stmt], counters: frozenset[str] = frozenset()) -> dict[int, str]:
    """The assignments of a loop's body that run only while their target is unset, by id -> the target:
    those in the arm of an `if` that its test sends there when the target is falsy or None (`if not
    acc:`, `if acc is None:`, the `else:` of `if acc:` or `if acc is not None:`), or on the loop's first
    iteration (`if i == 0:` of a loop counter `i` from 0, `counters`). An arm taken while one of several
    is unset (the `else:` of `if term_ema and flow_ema:`) starts them when it assigns every one of them:
    once it ran, none is unset and it does not run again."""
    found: dict[int, str] = {}
    for stmt in body:
        for node in _statements(stmt):
            if not isinstance(node, ast.If):
                continue
            for arm, unset in ((node.body, _unset_when(node.test, True, counters)),
                               (node.orelse, _unset_when(node.test, False, counters))):
                if not unset:
                    continue
                assigned: dict[int, str] = {}
                for inner in (n for s in arm for n in _statements(s)):
                    if isinstance(inner, (ast.Assign, ast.AnnAssign)):
                        for t in inner.targets if isinstance(inner, ast.Assign) else [inner.target]:
                            text = ref_text(t)
                            if text is not None:
                                assigned[id(inner)] = text
                names = set(assigned.values())
                for key, text in assigned.items():
                    if any("" in some or text in some and some <= names for some in unset):
                        found[key] = text
    return found


# What a test says is unset when it has a truth: facts that all hold, each "one of these names is falsy
# or None" ("" for the loop's first iteration, when every running value is unset)
_Unset = tuple[frozenset[str], ...]


def _unset_when(test: ast.expr, truth: bool, counters: frozenset[str]) -> _Unset:
    """What `test` says is unset when it is `truth` (`_Unset`); () when it says nothing of that."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return _unset_when(test.operand, not truth, counters)
    if isinstance(test, ast.BoolOp):
        parts = [_unset_when(v, truth, counters) for v in test.values]
        if isinstance(test.op, ast.And) == truth:  # every operand has the truth: every fact holds
            return tuple(fact for part in parts for fact in part)
        # one operand has it, not known which: one of all their names is unset, if each says something
        return (frozenset().union(*(fact for part in parts for fact in part)),) if all(parts) else ()
    text = ref_text(test)
    if text is not None:
        return () if truth else (frozenset({text}),)  # `if acc:` false: acc is falsy
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        left, op, right = test.left, test.ops[0], test.comparators[0]
        name = ref_text(left)
        none = isinstance(right, ast.Constant) and right.value is None
        if name is not None and none and isinstance(op, (ast.Is, ast.Eq, ast.IsNot, ast.NotEq)):
            return (frozenset({name}),) if truth == isinstance(op, (ast.Is, ast.Eq)) else ()
        first = isinstance(right, ast.Constant) and type(right.value) is int and right.value == 0 and name in counters
        if first and isinstance(op, (ast.Eq, ast.NotEq)):
            return (frozenset({""}),) if truth == isinstance(op, ast.Eq) else ()
    return ()


def loop_counters(loop: ast.AST) -> frozenset[str]:
    """The counters a `for` loop binds that are 0 on its first iteration: `i` of `for i, x in
    enumerate(xs)` or `for i in range(n)`."""
    if not isinstance(loop, (ast.For, ast.AsyncFor)) or not isinstance(loop.iter, ast.Call):
        return frozenset()
    it, target = loop.iter, loop.target
    name = last_name(it.func)
    if name == "enumerate" and len(it.args) == 1 and not it.keywords and isinstance(target, ast.Tuple) \
            and target.elts and isinstance(target.elts[0], ast.Name):
        return frozenset({target.elts[0].id})
    if name == "range" and len(it.args) == 1 and isinstance(target, ast.Name):
        return frozenset({target.id})
    return frozenset()


def _statements(stmt: ast.stmt) -> Iterator[ast.stmt]:
    """`stmt` and the statements nested in it, not those of functions or classes defined there."""
    todo = [stmt]
    while todo:
        node = todo.pop()
        yield node
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        for field in ("body", "orelse", "finalbody", "handlers", "cases"):
            for child in getattr(node, field, ()):
                if isinstance(child, ast.stmt):
                    todo.append(child)
                elif isinstance(child, (ast.ExceptHandler, ast.match_case)):
                    todo.extend(child.body)
