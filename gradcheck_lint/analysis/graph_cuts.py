"""Whether a function may cut autograd graphs: what a module's `forward` returns may then hold fewer of its
arguments' graphs than it was handed (a VQGAN loss detaches the reconstruction on the discriminator's turn).

Read from the syntax once per function: a call of a method the catalogue says detaches (`x.detach()`,
`.item()`), a read of `.data`, a call that copies into a new tensor (`torch.tensor(self.crf.decode(feats))`), or a
call that turns autograd off (`with torch.no_grad():`). Names are
qualified with the imports of the file that defines the function.
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from .apimodels import Catalogue
from .walk import iter_tree, own_nodes

Qualify = Callable[[ast.expr], "str | None"]


def may_cut_graphs(fn: ast.FunctionDef | ast.AsyncFunctionDef, qualify: Qualify, catalogue: Catalogue) -> bool:
    for node in iter_tree(fn):
        if isinstance(node, ast.Attribute) and (node.attr == "data" or any(
                e.kind == "detach" for m in catalogue.methods_named(node.attr) for e in m.effects)):
            return True
        if isinstance(node, ast.Call):
            qual = qualify(node.func)
            row = catalogue.call(qual) if qual else None
            if row is not None and any(e.kind in ("no_grad", "detach") for e in row.effects):
                return True
    return False


def returns_copies(fn: ast.FunctionDef | ast.AsyncFunctionDef, qualify: Qualify, catalogue: Catalogue) -> bool:
    """Every `return` of the function (its own, not a nested function's) returns what a call that cuts graphs made:
    `return torch.tensor(self.crf.decode(feats))`, `return scores.argmax(-1).detach()`."""
    returns = [n for n in own_nodes(fn) if isinstance(n, ast.Return)]
    return bool(returns) and all(isinstance(r.value, ast.Call) and _cuts(r.value, qualify, catalogue) for r in returns)


def _cuts(call: ast.Call, qualify: Qualify, catalogue: Catalogue) -> bool:
    func = call.func
    if isinstance(func, ast.Attribute) and any(e.kind == "detach" for m in catalogue.methods_named(func.attr)
                                               for e in m.effects):
        return True
    qual = qualify(func)
    row = catalogue.call(qual) if qual else None
    return row is not None and any(e.kind == "detach" for e in row.effects)

