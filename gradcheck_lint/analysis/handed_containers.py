"""Containers handed to a call and grown there: the caller's list is the callee's.

Values are kept by name, so `lst.append(opt)` in a callee changes what the callee's parameter holds and
nothing of the caller's. Yet a parameter the callee never rebinds names the caller's object for the whole
call: what the callee added to it (`def add_optimizer(module, lst): lst.append(Adam(...))`) is in the
caller's list afterwards, and one handed inside a tuple or list display (`add_optimizer(enc, (a2a, a2b))`,
then `for d in directions: d.append(opt)`) may have grown through any of its items. Without this, the
caller's `a2a = []` stays a list read as empty, and a loop clearing its members clears nothing.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from . import names as N
from .values import Value, join
from .walk import child_nodes

# methods that change a list, dict or set in place
_GROWS = frozenset({"append", "extend", "insert", "update", "setdefault", "add"})


@dataclass(frozen=True, slots=True)
class Grown:
    """The names of a function's body that stand for an object a parameter holds, grown in place there:
    `direct` the parameters themselves (`lst.append(x)`, `lst[k] = x`), `items` the names bound to an item
    of a parameter (`for d in directions: d.append(x)`, `d = directions[0]`), by parameter."""

    direct: frozenset[str]
    items: tuple[tuple[str, frozenset[str]], ...]


def grown(fn: ast.FunctionDef | ast.AsyncFunctionDef, params: frozenset[str]) -> Grown:
    """What `fn` grows in place of what its parameters hold, read from its text (nested definitions apart)."""
    known: Grown | None = getattr(fn, "_grown_containers", None)  # kept on the node: freed with its tree
    if known is not None:
        return known
    item_of: dict[str, str] = {}  # a local bound to an item of a parameter -> that parameter
    mutated: set[str] = set()
    todo: list[ast.AST] = list(fn.body)
    nodes: list[ast.AST] = []
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        nodes.append(node)
        todo.extend(child_nodes(node))
    for node in nodes:
        if isinstance(node, (ast.For, ast.AsyncFor)) and isinstance(node.target, ast.Name):
            source = _walked(node.iter)
            if source in params:
                item_of[node.target.id] = source
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                and isinstance(node.value, ast.Subscript) and isinstance(node.value.value, ast.Name) \
                and node.value.value.id in params:
            item_of[node.targets[0].id] = node.value.value.id
    for node in nodes:
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _GROWS \
                and isinstance(node.func.value, ast.Name):
            mutated.add(node.func.value.id)
        elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store) and isinstance(node.value, ast.Name):
            mutated.add(node.value.id)
    items: dict[str, set[str]] = {}
    for local, param in item_of.items():
        if local in mutated and local not in params:
            items.setdefault(param, set()).add(local)
    out = Grown(frozenset(mutated & params), tuple((p, frozenset(ls)) for p, ls in items.items()))
    setattr(fn, "_grown_containers", out)  # noqa: B010 (an attribute ast nodes do not declare)
    return out


def _walked(it: ast.expr) -> str | None:
    """The name a `for` loop walks the items of: `xs`, `enumerate(xs)` is not (its items are pairs)."""
    if isinstance(it, ast.Name):
        return it.id
    if isinstance(it, ast.Call) and N.last_name(it.func) in ("list", "tuple", "reversed", "sorted") \
            and len(it.args) == 1 and isinstance(it.args[0], ast.Name):
        return it.args[0].id
    return None


def display_refs(call: ast.Call, params: list[str], kwonly: list[str]) -> dict[str, tuple[str, ...]]:
    """The parameters the call binds to a tuple or list display of the caller's names (`(a2a, a2b)`), by
    parameter: the names of its items, each a plain name or attribute chain."""
    out: dict[str, tuple[str, ...]] = {}
    if any(isinstance(a, ast.Starred) for a in call.args):
        return out
    pairs = list(zip(params, call.args))
    pairs += [(k.arg, k.value) for k in call.keywords if k.arg is not None and k.arg in (*params, *kwonly)]
    for name, arg in pairs:
        if isinstance(arg, (ast.Tuple, ast.List)) and arg.elts:
            refs = [N.ref_text(e) for e in arg.elts]
            if all(r is not None and r != "self" and all(p.isidentifier() for p in r.split(".")) for r in refs):
                out[name] = tuple(r for r in refs if r is not None)
    return out


def write_back(caller_env: dict[str, Value], callee_env: dict[str, Value], entry: dict[str, Value],
               handed: dict[str, str], displays: dict[str, tuple[str, ...]], what: Grown,
               shadowed: frozenset[str]) -> None:
    """After the call: the caller's names handed to a parameter the callee grew hold what it holds now
    (its value at the end of the call, joined with the caller's own where the callee started from another
    stand-in); the names of a display whose items the callee grew may each have grown by it."""
    for p_name in what.direct:
        a_text = handed.get(p_name)
        if a_text is None or p_name in shadowed or a_text not in caller_env:
            continue
        now, start = callee_env.get(p_name), entry.get(p_name)
        if now is None or now is start:
            continue
        before = caller_env[a_text]
        caller_env[a_text] = now if start is before else join([before, now])
    for p_name, locals_ in what.items:
        refs = displays.get(p_name)
        if not refs or p_name in shadowed:
            continue
        added = [callee_env[name] for name in locals_ if name in callee_env]
        if not added:
            continue
        for ref in refs:
            if ref in caller_env:
                caller_env[ref] = join([caller_env[ref], *added])
