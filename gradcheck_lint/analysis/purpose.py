"""What a loop is for: training a model, or measuring one.

A loop that feeds its models nothing but constant data (tensors of the catalogue's `constant` rows:
`torch.ones(4, L, d)` made once before it, `torch.zeros([4, 1024]).long()` made in it) in a function
that reads a clock or the memory in use (`measures` rows: `time.time()`, `torch.cuda.max_memory_allocated()`,
`pynvml.*`) times a layer or probes its memory: its backward passes and steps make no model anyone keeps
(LTSF-Linear's attention benchmarks step 1,000 times on one input without a clear, on purpose; an FSDP
memory smoke test backpropagates `output.mean()` of zeros). The gradients are as wrong as the rules say,
but whether that matters rests on the loop being training: an assumption (`Assumption.INTENT`), so a
finding in such a loop is `possible`.

A test function that asserts (`def test_forward(self): ... assert type(loss.item()) == float`) probes too:
its loop over dummy inputs of a test-utilities module (`DUMMY_INPUTS`, imported: the same object each
iteration) checks that a few steps run, and trains nothing.

Random data (`torch.randn`) is not constant: a script that trains on synthetic data still trains.

A test drives calls in sequence, too: backward passes and steps written one after another in a test function
that asserts, in no loop of it (torchft's `test_local_sgd_healthy`: `loss.backward(); optimizer.step()` twice,
then `assertEqual(manager.start_quorum.call_count, 1)`), check what each call does to a wrapper; nothing there
repeats as training does (`drives`). A loop in a test function is read as above.

And a test of a test module (`def test_system():` in `test/test_system.py`, asserting or not: CoreAudioML's system
test runs three short epochs to see that they run) trains a model nobody keeps: a finding there rests on the
test being training (`tests`).
"""

from __future__ import annotations

import ast
import os
from collections.abc import Callable, Iterator

from .apimodels import Catalogue
from .names import ImportMap
from .walk import breadth_first, own_nodes

_LOOPS = (ast.For, ast.AsyncFor, ast.While)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
# methods that move or reshape a tensor: a constant stays constant through them
_SAME_DATA = frozenset({"to", "cuda", "cpu", "long", "float", "half", "double", "int", "bool", "bfloat16", "type",
                        "view", "reshape", "expand", "repeat", "contiguous", "unsqueeze", "squeeze", "requires_grad_",
                        "detach", "clone", "permute", "transpose"})


class Purposes:
    """Which loops of a module measure rather than train (see the module's doc)."""

    def __init__(self, module: ast.Module, parent: Callable[[ast.AST], ast.AST | None],
                 imports: ImportMap, catalogue: Catalogue, forward_sites: dict[int, ast.Call | None]) -> None:
        self._parent = parent
        self._qualify = imports.qualify
        self._imported = frozenset(imports.aliases)
        self._catalogue = catalogue
        self._forwards = [c for c in forward_sites.values() if isinstance(c, ast.Call)]
        self._probes: dict[int, bool] = {}  # id of a loop -> whether it measures
        self._measuring: dict[int, bool] = {}  # id of a scope -> whether it reads a clock or memory
        self._module = module

    def measures(self, node: ast.AST) -> bool:
        """Whether `node` sits in a loop that measures (see the module's doc)."""
        for loop in self._enclosing_loops(node):
            found = self._probes.get(id(loop))
            if found is None:
                found = self._probes[id(loop)] = self._is_probe(loop)
            if found:
                return True
        return False

    def drives(self, node: ast.AST) -> bool:
        """Whether `node` sits in a test function that asserts, in no loop of it (see the module's doc)."""
        child: ast.AST | None = node
        while child is not None and not isinstance(child, _SCOPES):
            up = self._parent(child)
            if isinstance(up, _LOOPS) and child in getattr(up, "body", []):
                return False
            child = up
        return isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) and _asserting_test(child)

    def tests(self, node: ast.AST, path: str) -> bool:
        """Whether `node` sits in a test of a test module (`def test_system():` of `test/test_system.py`, pytest's or
        unittest's, at any depth): what its loops train is checked or thrown away, no model anyone keeps."""
        if not _test_module(path):
            return False
        up: ast.AST | None = node
        while up is not None:
            if isinstance(up, (ast.FunctionDef, ast.AsyncFunctionDef)) and up.name.startswith("test"):
                return True
            up = self._parent(up)
        return False

    def _enclosing_loops(self, node: ast.AST) -> Iterator[ast.AST]:
        child: ast.AST | None = node
        while child is not None and not isinstance(child, _SCOPES):
            up = self._parent(child)
            if isinstance(up, _LOOPS) and child in getattr(up, "body", []):
                yield up
            child = up

    def _scope(self, node: ast.AST) -> ast.AST:
        up = self._parent(node)
        while up is not None and not isinstance(up, (ast.FunctionDef, ast.AsyncFunctionDef)):
            up = self._parent(up)
        return up if up is not None else self._module

    def _is_probe(self, loop: ast.AST) -> bool:
        inside = {id(n) for n in breadth_first(loop)}
        forwards = [c for c in self._forwards if id(c) in inside]
        if not forwards:
            return False
        scope = self._scope(loop)
        if not self._reads_a_probe(scope):
            return False
        targets = _loop_targets(loop)
        return all(self._constant(a, scope, targets, set()) for c in forwards for a in [*c.args, *(k.value for k in c.keywords)])

    def _reads_a_probe(self, scope: ast.AST) -> bool:
        found = self._measuring.get(id(scope))
        if found is None:
            found = self._measuring[id(scope)] = _asserting_test(scope) or any(
                isinstance(n, ast.Call) and self._row_is(n.func, "measures") for n in own_nodes(scope))
        return found

    def _row_is(self, func: ast.expr, kind: str) -> bool:
        qualified = self._qualify(func)
        row = self._catalogue.call(qualified) if qualified is not None else None
        return row is not None and any(e.kind == kind for e in row.effects)

    def _constant(self, expr: ast.expr, scope: ast.AST, targets: set[str], seen: set[str]) -> bool:
        """Whether an argument of a forward pass is the same data at every iteration."""
        if isinstance(expr, ast.Starred):
            return False
        if isinstance(expr, ast.Constant):
            return True
        if isinstance(expr, (ast.Tuple, ast.List)):
            return all(self._constant(e, scope, targets, seen) for e in expr.elts)
        if isinstance(expr, ast.Attribute):
            return self._constant(expr.value, scope, targets, seen)
        if isinstance(expr, ast.Subscript):  # `DUMMY_TARGETS[:, 1:]`, `outputs["logits"]`; not `data[i]`
            index = [n for n in breadth_first(expr.slice) if isinstance(n, ast.Name)]
            return self._constant(expr.value, scope, targets, seen) and all(
                self._constant(n, scope, targets, seen) for n in index)
        if isinstance(expr, ast.Call):
            func = expr.func
            if isinstance(func, ast.Attribute) and func.attr in _SAME_DATA:
                return self._constant(func.value, scope, targets, seen)
            if any(expr is c for c in self._forwards):  # a forward pass of constant data gives the same each time
                given = [*expr.args, *(k.value for k in expr.keywords)]
                return all(self._constant(a, scope, targets, seen) for a in given)
            return self._row_is(func, "constant")
        if isinstance(expr, ast.Name):
            if expr.id in targets or expr.id in seen:
                return False
            values = _assigned_values(scope, expr.id)
            if not values and scope is not self._module:  # a name of the module: bound once for the whole run
                if expr.id in self._imported:
                    return True  # `DUMMY_INPUTS` of a test-utilities module: the same object each iteration
                return self._constant(expr, self._module, set(), seen)
            return bool(values) and all(v is not None and self._constant(v, scope, targets, seen | {expr.id}) for v in values)
        return False


def _test_module(path: str) -> bool:
    """A module pytest or unittest collects tests from: `test_*.py` or `*_test.py`."""
    name = os.path.basename(path)
    return name.endswith(".py") and (name.startswith("test_") or name.endswith("_test.py"))


def _asserting_test(scope: ast.AST) -> bool:
    """A test function (`def test_forward(self):`, pytest's or unittest's) that asserts: its loop checks what a
    few steps produce (`assert type(loss.item()) == float`), it trains nothing anyone keeps."""
    if not (isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)) and scope.name.startswith("test")):
        return False
    return any(isinstance(n, ast.Assert) or isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
               and n.func.attr.startswith("assert") for n in own_nodes(scope))


def _loop_targets(loop: ast.AST) -> set[str]:
    target = getattr(loop, "target", None)
    return {n.id for n in breadth_first(target) if isinstance(n, ast.Name)} if target is not None else set()


def _assigned_values(scope: ast.AST, name: str) -> list[ast.expr | None]:
    """Every value `name` is bound to in the scope (None for a binding whose value is not one expression:
    a `for` target, an augmented assignment, an unpacking, a parameter)."""
    found: list[ast.expr | None] = []
    if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
        every = [*scope.args.posonlyargs, *scope.args.args, *scope.args.kwonlyargs, scope.args.vararg, scope.args.kwarg]
        if any(a is not None and a.arg == name for a in every):
            found.append(None)
    for node in own_nodes(scope):
        if isinstance(node, ast.Assign):
            for t in node.targets:
                if isinstance(t, ast.Name) and t.id == name:
                    found.append(node.value)
                elif any(isinstance(n, ast.Name) and n.id == name for n in breadth_first(t)):
                    found.append(None)
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)) and isinstance(node.target, ast.Name) and node.target.id == name:
            found.append(node.value if isinstance(node, ast.AnnAssign) else None)
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.With, ast.AsyncWith, ast.NamedExpr, ast.comprehension)):
            bound = [node.target] if isinstance(node, (ast.For, ast.AsyncFor, ast.NamedExpr, ast.comprehension)) else [
                i.optional_vars for i in node.items if i.optional_vars is not None]
            if any(isinstance(n, ast.Name) and n.id == name for t in bound for n in breadth_first(t)):
                found.append(None)
    return found
