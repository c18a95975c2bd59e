"""Settings a script's own code requires: an object's optional part it uses where using it would raise if it were
absent.

gpt4all's and HuatuoGPT-II's training scripts build `accelerator = Accelerator()` with no DeepSpeed plugin among
its arguments: which engine `prepare` builds is chosen by `accelerate launch --config_file ...`, out of sight. Yet
each script can only run with the plugin:

    accelerator.state.deepspeed_plugin.deepspeed_config["train_batch_size"] = ...   # AttributeError on None

    if accelerator.state.deepspeed_plugin is not None:
        gradient_accumulation_steps = accelerator.state.deepspeed_plugin.deepspeed_config[...]
    total = len(loader) / gradient_accumulation_steps                               # UnboundLocalError otherwise

On the path without the plugin, the script raises before it prepares anything: its `prepare` builds DeepSpeed
engines, not DDP wrappers (the catalogue's `unless_requires` on `Accelerator.prepare`).

A witness is a simple statement that every path to the call runs first: one before the call's statement in its
block or before a statement holding it in a block around it, up to its function (a statement inside an `if`, a
loop or a `try` of its own is no witness). It either uses `<name>.<part>.<attribute>` (or an item of it) where
the statement always evaluates it (not in operands of `and`/`or` after the first, the arms of `x if c else y`,
lambdas or comprehensions), or reads there a local bound only in the arm of an earlier `if` that tests the part
present (`if <name>.<part> is not None:`, `if <name>.<part>:`, the `else` of `is None`/`not`), nowhere else in
its scope (no parameter, `global` or import of that name).
"""

from __future__ import annotations

import ast
import builtins
from collections.abc import Callable, Iterator, Sequence

from . import names as N
from .walk import iter_tree, own_nodes

__all__ = ["requires_part"]

_SIMPLE = (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Expr)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
_BLOCKS = ("body", "orelse", "finalbody", "handlers")


def requires_part(statement: ast.stmt, parent: Callable[[ast.AST], ast.AST | None], chain: str) -> bool:
    """Whether every path of its scope that reaches `statement` first ran a statement that raises unless `chain`
    (`accelerator.state.deepspeed_plugin`) is present (see the module's docstring)."""
    path: list[tuple[list[ast.stmt], ast.stmt]] = []  # (block, the statement of it on the way), innermost first
    node: ast.AST = statement
    scope: ast.AST | None = None
    while True:
        holder = parent(node)
        if holder is None:
            return False
        block = next((b for b in (getattr(holder, f, None) for f in _BLOCKS) if isinstance(b, list) and node in b),
                     None)
        if block is not None and isinstance(node, ast.stmt):
            path.append((block, node))
        if isinstance(holder, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Module)):
            scope = holder
            break
        if isinstance(holder, (ast.ClassDef, ast.Lambda)):
            return False
        node = holder
    guarded: dict[str, ast.If] = {}  # locals bound in an arm that tests the part present
    for block, on_way in reversed(path):
        for earlier in block:
            if earlier is on_way:
                break
            if isinstance(earlier, ast.If):
                arm = _present_arm(earlier, chain)
                for bound in _bound_in(arm or []):
                    guarded[bound] = earlier
            elif isinstance(earlier, _SIMPLE) and _witnesses(earlier, chain, guarded, scope):
                return True
    return False


def _present_arm(test_if: ast.If, chain: str) -> list[ast.stmt] | None:
    """The arm of `if` run when `chain` is present, if its test is only about that."""
    test = test_if.test
    negated = False
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        test, negated = test.operand, True
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and N.ref_text(test.left) == chain \
            and isinstance(test.comparators[0], ast.Constant) and test.comparators[0].value is None:
        if isinstance(test.ops[0], ast.IsNot):
            present = not negated
        elif isinstance(test.ops[0], ast.Is):
            present = negated
        else:
            return None
    elif N.ref_text(test) == chain:
        present = not negated
    else:
        return None
    return test_if.body if present else (test_if.orelse or None)


def _bound_in(arm: list[ast.stmt]) -> Iterator[str]:
    for statement in arm:
        for node in iter_tree(statement):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                yield node.id


def _witnesses(statement: ast.stmt, chain: str, guarded: dict[str, ast.If], scope: ast.AST) -> bool:
    for node in _always_evaluated(statement):
        if isinstance(node, (ast.Attribute, ast.Subscript)) and N.ref_text(node.value) == chain:
            return True
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in guarded \
                and _bound_only_there(scope, node.id, guarded[node.id], chain):
            return True
    return False


def _always_evaluated(node: ast.AST) -> Iterator[ast.AST]:
    """The nodes of `node` evaluated whenever it is."""
    yield node
    if isinstance(node, (*_SCOPES, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
        return
    children: Sequence[ast.AST]
    if isinstance(node, ast.BoolOp):
        children = node.values[:1]
    elif isinstance(node, ast.IfExp):
        children = [node.test]
    else:
        children = list(ast.iter_child_nodes(node))
    for child in children:
        yield from _always_evaluated(child)


def _bound_only_there(scope: ast.AST, local: str, test_if: ast.If, chain: str) -> bool:
    """`local` is bound in `scope` only inside the arm of `test_if` that runs when `chain` is present, and is no
    name the scope shares with another (a parameter, `global`, `nonlocal`, an import)."""
    arm = _present_arm(test_if, chain) or []
    inside = {id(n) for s in arm for n in iter_tree(s)}
    if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
        if local in {a.arg for a in (*scope.args.posonlyargs, *scope.args.args, *scope.args.kwonlyargs,
                                     *filter(None, (scope.args.vararg, scope.args.kwarg)))}:
            return False
    elif hasattr(builtins, local) or local.startswith("__"):
        return False
    for node in own_nodes(scope):
        if isinstance(node, (ast.Global, ast.Nonlocal)) and local in node.names:
            return False
        if _binds(node, local) and id(node) not in inside:
            return False
    return True


def _binds(node: ast.AST, local: str) -> bool:
    if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
        return node.id == local
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return any((a.asname or a.name.split(".")[0]) == local or a.name == "*" for a in node.names)
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return node.name == local
    if isinstance(node, ast.ExceptHandler):
        return node.name == local
    if isinstance(node, (ast.MatchAs, ast.MatchStar)):
        return node.name == local
    return False
