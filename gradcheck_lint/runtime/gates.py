"""Where GL004 anchors: the condition that lets a step run on the wrong micro-batch, as the static side.

The guard sees a step apply a first window of the wrong size; the bug is in the condition gating that
step (`if i % N == 0:`). Read from the source of the step's own frame: the innermost `if` around the
step call in its loop body (the step in its body or its `else`) whose condition takes a remainder
(`%`), else the innermost `if` around it, or else the nearest earlier `if ...: continue` of that
body (a guard clause skipping the step). The anchor is the condition's
position; the site keeps the step's call text and names, which the message speaks of. No such `if`
in the step's own function (a step in a helper called under the gate): the step itself.
"""

from __future__ import annotations

import ast
import dataclasses

from .ledger import Site
from .source_calls import char_col, parsed

_LOOPS = (ast.For, ast.AsyncFor, ast.While)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda, ast.Module)


def gate_of(step: Site) -> Site:
    """The step's site anchored at its gate's condition (see the module's docstring), or unchanged."""
    p = parsed(step.path)
    if p is None or step.line <= 0:
        return step
    chain = _chain_to(p.tree, step.line)
    if not chain:
        return step
    gates: list[ast.If] = []  # the `if`s around the step in its loop body, innermost first
    for node, child in zip(reversed(chain[:-1]), reversed(chain[1:])):
        if isinstance(node, ast.If) and child is not node.test:
            gates.append(node)
        elif isinstance(node, (*_LOOPS, *_SCOPES)):
            if not gates:
                guard = _guard_clause(node, child)
                return _at(step, p, guard.test) if guard is not None else step
            break
    if not gates:
        return step
    # a counter's test (`i % N == 0`) before any other (`if scaler is not None:` around the step)
    counted = [g for g in gates if any(isinstance(n, ast.BinOp) and isinstance(n.op, ast.Mod) for n in ast.walk(g.test))]
    return _at(step, p, (counted or gates)[0].test)


def _chain_to(tree: ast.AST, line: int) -> list[ast.AST]:
    """The nodes from the module down to the innermost statement that starts on `line`."""
    chain: list[ast.AST] = [tree]
    node = tree
    while True:
        nxt = None
        for child in ast.iter_child_nodes(node):
            if not isinstance(child, ast.stmt):
                continue
            end = getattr(child, "end_lineno", None) or child.lineno
            if child.lineno <= line <= end:
                nxt = child
                break
        if nxt is None:
            return chain
        chain.append(nxt)
        node = nxt


def _guard_clause(block_owner: ast.AST, child: ast.AST) -> ast.If | None:
    """The nearest `if ...: continue` before `child` in the body of a loop or function."""
    body = getattr(block_owner, "body", [])
    if child not in body:
        return None
    for stmt in reversed(body[:body.index(child)]):
        if isinstance(stmt, ast.If) and stmt.body and isinstance(stmt.body[-1], ast.Continue) and not stmt.orelse:
            return stmt
    return None


def _at(step: Site, p: object, test: ast.expr) -> Site:
    return dataclasses.replace(step, line=test.lineno, col=char_col(p, test.lineno, test.col_offset))  # type: ignore[arg-type]
