"""A project's own clip, read from its body: a function that computes the norm of gradients and multiplies
them by a factor made from that norm clips them, as `torch.nn.utils.clip_grad_norm_` does.

Projects copy `clip_grad_norm_` to change it (a name printed on a non-finite norm, a dictionary of
parameters): `total_norm = torch.norm(torch.stack([torch.norm(p.grad.detach(), 2) for p in parameters]))`,
`clip_coef = max_norm / (total_norm + 1e-6)`, then `p.grad.detach().mul_(clip_coef)`. No name says so and no
row of the API-model catalogue can: what makes it a clip is written in its body. The reading is syntactic
and per function: names are followed through assignments, loops and comprehensions (what a name is made
from), and the clipped parameter is the one the rescaled gradients' owners come from. A call of such a
function is then a `clip` of that argument (`calls.Calls`), wherever the function is defined.
"""

from __future__ import annotations

import ast

from .apimodels.schema import ArgRef, Effect
from .flow import Function
from .walk import breadth_first

__all__ = ["clip_effect"]

_NORMS = frozenset({"norm", "vector_norm", "_foreach_norm"})
_RESCALES = frozenset({"mul_", "div_"})
_FOREACH_RESCALES = frozenset({"_foreach_mul_", "_foreach_div_"})
_VIEWS = frozenset({"detach", "data", "to", "float", "double", "half", "view", "view_as", "flatten"})



def clip_effect(fn: Function, method: bool, known: dict[int, Effect | None]) -> Effect | None:
    """The `clip` effect a call of `fn` has (its `params` naming the argument whose gradients it rescales by a
    factor of their norm), or None when its body does not clip; `method`: `fn` is called bound (`self.f(x)`),
    so its first parameter is not among the call's arguments; `known`: the readings so far, by function (the
    caller keeps them for as long as the definitions live)."""
    if id(fn) not in known:
        known[id(fn)] = _read(fn)
    effect = known[id(fn)]
    if effect is None or not method or any(_last(d) == "staticmethod" for d in fn.decorator_list):
        return effect
    ref = effect.ref("params")
    if ref is None or not ref.positions:
        return effect
    if ref.positions[0] == 0:
        return None  # the bound receiver itself (`self`): not an argument of the call
    return Effect("clip", (("params", ArgRef(positions=(ref.positions[0] - 1,), keywords=ref.keywords)),))


def _read(fn: Function) -> Effect | None:
    if not any(isinstance(n, ast.Call) and _last(n.func) in _NORMS for n in breadth_first(fn)):
        return None  # it computes no norm (of gradients or else): nothing is rescaled by one (`fn`'s walk is kept)
    body = _Body(fn)
    clipped = body.clipped()
    if clipped is None:
        return None
    args = fn.args
    positional = [a.arg for a in [*args.posonlyargs, *args.args]]
    if clipped in positional:
        named = () if clipped in [a.arg for a in args.posonlyargs] else (clipped,)
        ref = ArgRef(positions=(positional.index(clipped),), keywords=named)
    else:
        ref = ArgRef(keywords=(clipped,))
    return Effect("clip", (("params", ref),))


def _names(node: ast.AST | None) -> set[str]:
    """The names an expression reads (comprehensions' iterables included)."""
    if node is None:
        return set()
    return {n.id for n in breadth_first(node) if isinstance(n, ast.Name)}


def _bound(target: ast.AST) -> list[str]:
    return [n.id for n in breadth_first(target) if isinstance(n, ast.Name)]


def _last(func: ast.expr) -> str | None:
    if isinstance(func, ast.Attribute):
        return func.attr
    if isinstance(func, ast.Name):
        return func.id
    return None


def _unviewed(node: ast.expr) -> ast.expr:
    """`p.grad.detach()`, `p.grad.data`: the gradient itself."""
    while True:
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _VIEWS:
            node = node.func.value
        elif isinstance(node, ast.Attribute) and node.attr in _VIEWS:
            node = node.value
        else:
            return node


class _Body:
    """One function's body: what each name is made from, which names hold gradients, which hold their norm."""

    def __init__(self, fn: Function) -> None:
        args = fn.args
        self.params = [a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]]
        self.nodes = [n for stmt in fn.body for n in breadth_first(stmt)]
        bindings = [b for node in self.nodes for b in _bindings(node)]  # read once, for every pass below
        self.made: dict[str, set[str]] = {}  # a name -> the names its values are made from
        for targets, value in bindings:
            for name in targets:
                self.made.setdefault(name, set()).update(_names(value))
        self.grads: set[str] = set()
        changed = True
        while changed:  # the names that hold gradients: `g` of `for g in grads`, `grads = [p.grad for p in ps]`
            changed = False
            for targets, value in bindings:
                fresh = [t for t in targets if t not in self.grads]
                if fresh and self._is_grads(value):
                    self.grads.update(fresh)
                    changed = True
        self.norms: set[str] = set()
        for targets, value in bindings:
            if value is not None and any(self._norm_of_grads(sub) for sub in breadth_first(value)):
                self.norms.update(targets)
        changed = True
        while changed:  # and the names made from their norm: `clip_coef = max_norm / (total_norm + 1e-6)`
            changed = False
            for name, sources in self.made.items():
                if name not in self.norms and sources & self.norms:
                    self.norms.add(name)
                    changed = True

    def _is_grads(self, node: ast.AST | None) -> bool:
        """The value is gradients: `p.grad`, `p.grad.detach()`, a name holding some, `grads[i]`, a list of them."""
        if not isinstance(node, ast.expr):
            return False
        node = _unviewed(node)
        if isinstance(node, ast.Attribute) and node.attr == "grad":
            return True
        if isinstance(node, ast.Name):
            return node.id in self.grads
        if isinstance(node, ast.Subscript):
            return self._is_grads(node.value)
        if isinstance(node, (ast.ListComp, ast.GeneratorExp, ast.SetComp)):
            return self._is_grads(node.elt)
        if isinstance(node, (ast.List, ast.Tuple)):
            return bool(node.elts) and all(self._is_grads(e) for e in node.elts)
        return False

    def _norm_of_grads(self, node: ast.AST) -> bool:
        """`torch.norm(p.grad, 2)`, `p.grad.norm()`, `torch.linalg.vector_norm(g)` of gradients."""
        if not isinstance(node, ast.Call) or _last(node.func) not in _NORMS:
            return False
        if isinstance(node.func, ast.Attribute) and self._is_grads(node.func.value):
            return True
        return bool(node.args) and self._is_grads(node.args[0])

    def _from_norm(self, node: ast.AST | None) -> bool:
        return node is not None and bool(_names(node) & self.norms)

    def clipped(self) -> str | None:
        """The parameter whose gradients are rescaled by a factor of their norm, or None."""
        if not self.norms:
            return None
        for node in self.nodes:
            owner = self._rescaled(node)
            if owner is not None:
                found = self._origin(owner)
                if found is not None:
                    return found
        return None

    def _rescaled(self, node: ast.AST) -> ast.AST | None:
        """The gradients a statement or call multiplies by a factor of their norm: `p.grad.mul_(coef)`,
        `g.detach().mul_(coef)` of a gradient `g`, `p.grad *= coef`, `torch._foreach_mul_(grads, coef)`."""
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _RESCALES:
            if node.args and self._from_norm(node.args[0]) and self._is_grads(node.func.value):
                return node.func.value
        if isinstance(node, ast.Call) and _last(node.func) in _FOREACH_RESCALES and len(node.args) >= 2:
            if self._is_grads(node.args[0]) and self._from_norm(node.args[1]):
                return node.args[0]
        if isinstance(node, ast.AugAssign) and isinstance(node.op, (ast.Mult, ast.Div)):
            if self._from_norm(node.value) and self._is_grads(node.target):
                return node.target
        return None

    def _origin(self, grads: ast.AST) -> str | None:
        """The first parameter (in order) the names of these gradients are made from."""
        seen: set[str] = set()
        todo = list(_names(grads))
        while todo:
            name = todo.pop()
            if name in seen:
                continue
            seen.add(name)
            todo.extend(self.made.get(name, ()))
        for p in self.params:
            if p in seen and p not in ("self", "cls"):
                return p
        return None


def _bindings(node: ast.AST) -> list[tuple[list[str], ast.AST | None]]:
    """The names a node binds and what from: assignments, loops, `with ... as`, comprehension clauses."""
    if isinstance(node, ast.Assign):
        return [([n for t in node.targets for n in _bound(t)], node.value)]
    if isinstance(node, (ast.AnnAssign, ast.AugAssign)) and node.value is not None:
        return [(_bound(node.target), node.value)]
    if isinstance(node, ast.NamedExpr):
        return [(_bound(node.target), node.value)]
    if isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
        return [(_bound(node.target), node.iter)]
    if isinstance(node, ast.withitem) and node.optional_vars is not None:
        return [(_bound(node.optional_vars), node.context_expr)]
    return []
