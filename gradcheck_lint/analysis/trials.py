"""Steps that do not train: trial steps undone by restoring the weights, and steps repeated on purpose
with no backward pass between them.

A look-ahead (a sharpness probe, a line search by hand, "try the step and measure") steps, reads the
model, and puts the weights back from a snapshot taken before the step:

    saved = copy.deepcopy(model.state_dict())
    optimizer.step()
    ahead = evaluate(model)
    model.load_state_dict(saved)         # the step is undone

and an optimizer benchmark times many steps on one backward pass:

    loss.backward()
    for _ in range(1000):
        optimizer.step()

Neither is a training step: the gradients such a step applies are not "already applied" for the real
step that follows, and a step that applies older gradients there breaks nothing. The step is recognised
by what the code does, not by names: a restore of the stepped model's weights later in the same block
(`load_state_dict` of a snapshot, or `p.data.copy_(s)` / `p.copy_(s)` / `p.data = s` over a snapshot),
with no backward between; or a loop whose body never backpropagates (`Counters.trains`) and whose
iterations do not change which optimizer steps.
"""

from __future__ import annotations

import ast
import bisect

from .walk import breadth_first, child_nodes, iter_tree

_SNAPSHOT_CALLS = frozenset({"state_dict", "deepcopy", "clone", "copy", "detach"})
_BLOCKS = ("body", "orelse", "finalbody")


def undone_steps(module: ast.Module) -> frozenset[int]:
    """ids of the `.step(...)` calls of `module` whose update a later statement of the same block undoes."""
    hit: frozenset[int] | None = getattr(module, "_undone_steps", None)  # kept on the tree: freed with it
    if hit is not None:
        return hit
    out: set[int] = set()
    scopes: list[ast.AST] = [module, *(n for n in iter_tree(module) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)))]
    # the lines of the module's `.step(...)` calls: a statement whose lines hold none is not walked
    lines = sorted({n.lineno for n in iter_tree(module) if isinstance(n, ast.Call) and _is_step(n)})
    for scope in scopes:
        snapshots = _snapshots(scope) if lines else None
        if snapshots:
            for block in _blocks(scope):
                _scan(block, snapshots, out, lines)
    found = frozenset(out)
    module._undone_steps = found  # type: ignore[attr-defined]
    return found


def _snapshots(scope: ast.AST) -> dict[str, int]:
    """Names the scope binds to a copy of weights (`saved = copy.deepcopy(model.state_dict())`,
    `backup = [p.detach().clone() for p in model.parameters()]`), with the line of the binding."""
    out: dict[str, int] = {}
    for node in _own_nodes(scope):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            calls = {n.func.attr if isinstance(n.func, ast.Attribute) else getattr(n.func, "id", "")
                     for n in breadth_first(node.value) if isinstance(n, ast.Call)}
            if calls & _SNAPSHOT_CALLS:
                out.setdefault(node.targets[0].id, node.lineno)
    return out


def _own_nodes(scope: ast.AST):
    """The nodes of a function (or a module's top level), nested functions and classes left out."""
    todo = child_nodes(scope)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        yield node
        todo.extend(child_nodes(node))


def _blocks(scope: ast.AST) -> list[list[ast.stmt]]:
    """Every statement list of the scope (its body, branches, loop bodies, handlers)."""
    out: list[list[ast.stmt]] = []
    for node in [scope, *_own_nodes(scope)]:
        for name in _BLOCKS:
            block = getattr(node, name, None)
            if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                out.append(block)
        for handler in getattr(node, "handlers", ()) or ():
            out.append(handler.body)
    return out


def _is_step(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "step"


def _scan(block: list[ast.stmt], snapshots: dict[str, int], out: set[int], lines: list[int]) -> None:
    for i, stmt in enumerate(block):
        at = bisect.bisect_left(lines, stmt.lineno)
        if at == len(lines) or lines[at] > (stmt.end_lineno or stmt.lineno):
            continue  # no step call in its lines
        steps = [n for n in breadth_first(stmt) if _is_step(n)]
        if not steps:
            continue
        for later in block[i + 1:]:
            if _backpropagates(later):
                break
            restored = _restores(later, snapshots, stmt.lineno)
            if restored:
                out.update(id(s) for s in steps)
                break


def _backpropagates(stmt: ast.stmt) -> bool:
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "backward" for n in breadth_first(stmt))


def _restores(stmt: ast.stmt, snapshots: dict[str, int], before: int) -> bool:
    """The statement puts weights back from a snapshot taken before line `before`."""
    taken = {name for name, line in snapshots.items() if line < before}
    if not taken:
        return False
    for node in breadth_first(stmt):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "load_state_dict" \
                and node.args and _names(node.args[0]) & taken:
            return True
        if isinstance(node, (ast.For, ast.AsyncFor)) and _names(node.iter) & taken:
            targets = _names(node.target)
            for sub in breadth_first(node):
                if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute) and sub.func.attr == "copy_" \
                        and _names(sub.func.value) & targets and sub.args and _names(sub.args[0]) & targets:
                    return True  # `for p, s in zip(model.parameters(), saved): p.data.copy_(s)`
                if isinstance(sub, ast.Assign) and any(isinstance(t, ast.Attribute) and t.attr == "data" and _names(t) & targets
                                                       for t in sub.targets) and _names(sub.value) & targets:
                    return True  # `p.data = s`
    return False


def _names(node: ast.AST) -> set[str]:
    return {n.id for n in breadth_first(node) if isinstance(n, ast.Name)}


# Calls a benchmark loop makes that cannot backpropagate: the standard library's clocks and builtins,
# torch's own functions (its `backward` aside), array libraries. A call on an object of the script
# (`model.update()`, `trainer.run()`) or of another module of the project may train, and keeps the loop
# a training loop.
_LIBRARIES = frozenset({"time", "timeit", "torch", "numpy", "math", "statistics", "logging", "gc", "random", "tqdm",
                        "functools"})
_BUILTINS = frozenset({"print", "range", "len", "min", "max", "sum", "abs", "float", "int", "str", "round", "enumerate", "zip", "list"})


def module_functions(module: ast.Module,
                     imports: dict[str, str]) -> dict[str, list[ast.FunctionDef | ast.AsyncFunctionDef]]:
    """The module-level functions, by name (all definitions of a name redefined), and the names the module binds to
    one of them wrapped by a library call: `compiled_adam = torch.compile(foreach_map_adam)` runs the body of
    `foreach_map_adam` (as do `torch.jit.script(f)`, `functools.partial(f, x)`)."""
    out: dict[str, list[ast.FunctionDef | ast.AsyncFunctionDef]] = {}
    for node in module.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            out.setdefault(node.name, []).append(node)
    for node in module.body:
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                and isinstance(node.value, ast.Call) and node.value.args and isinstance(node.value.args[0], ast.Name)):
            continue
        wrapped = out.get(node.value.args[0].id)
        root = node.value.func
        while isinstance(root, ast.Attribute):
            root = root.value
        if wrapped and isinstance(root, ast.Name) and imports.get(root.id, "").split(".", 1)[0] in _LIBRARIES:
            out.setdefault(node.targets[0].id, []).extend(wrapped)
    return out


def steps_without_backward(loop: ast.AST, imports: dict[str, str], defined: set[str],
                           functions: dict[str, list[ast.FunctionDef | ast.AsyncFunctionDef]] | None = None) -> bool:
    """The loop steps and nothing in it can backpropagate: every call is a step, a clear, a call of a
    library that does not train (`imports`: the module's import aliases; `defined`: names it defines), or
    a call of a function of the module (`functions`, by name: `module_functions`) whose body is such in turn (the
    tutorial's `fn()`, that steps an optimizer and its scheduler, called five times on one backward pass; its
    arguments are read there, where a call on one of them may backpropagate)."""
    return _steps_only(loop, imports, defined, functions or {}, set()) is True


def _steps_only(node_: ast.AST, imports: dict[str, str], defined: set[str],
                functions: dict[str, list[ast.FunctionDef | ast.AsyncFunctionDef]], seen: set[str]) -> bool | None:
    """True: steps, never backpropagates; None: neither; False: may backpropagate."""
    stepped = False
    for node in breadth_first(node_):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Name) and func.id in functions and func.id not in seen and len(seen) < 3:
            # (every module-level function of that name: a tutorial redefines `fn` between its loops)
            inner = [_steps_only(fn, imports, defined, functions, seen | {func.id}) for fn in functions[func.id]]
            if False in inner:
                return False
            stepped = stepped or True in inner
            continue
        last = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
        if last == "backward" or last is None:
            return False
        if last == "step":
            if node.args or node.keywords:  # `opt.step(closure)`: the closure may backpropagate (LBFGS)
                return False
            stepped = True
            continue
        if last == "zero_grad":
            continue
        root = func
        while isinstance(root, ast.Attribute):
            root = root.value
        if not isinstance(root, ast.Name) or root.id in defined:
            return False
        if isinstance(func, ast.Name) and func.id in _BUILTINS:
            continue
        if imports.get(root.id, "").split(".", 1)[0] not in _LIBRARIES:
            return False
    return True if stepped else None
