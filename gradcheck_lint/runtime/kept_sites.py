"""Name the statement that keeps a loss's graph alive (GL008), where the static side anchors it.

The guard sees that the graphs of a backward line outlive their steps, not which reference keeps them.
The statement is looked up in the source, from the backward call: in the function around it, a
statement that adds the loss to a name or a container that outlives the iteration (`total += loss`,
`total = total + loss * n`, `ema = 0.9 * ema + 0.1 * loss` and the other shapes of
`analysis.accumulation`, `losses.append(loss)`, `history["loss"].append(loss)`), the loss not taken
out of its graph there (`.item()`, `.detach()`, `float()`); else in a same-file function the loss is
passed to (`log_loss(history, loss)`), or a method of a class of the file called on an object by its
name (`meter.update(loss, n)`, `AverageMeter.update`'s `self.sum += val * n`; the object's class is not
known: every class of the file with a method of that name, in order), before a store call of that name
(`run_loss.append(loss)` of a `History` whose own `append` keeps it: the statement in the method, as the
static side anchors it; the call itself when the method keeps nothing). A loss returned to a caller is
followed into the names the caller assigns it to, one name or a tuple of them (`reg, cls, total =
trainer.train_step(...)`), or handed on from there. Functions and methods are followed into what they hand
the loss on to (a base class's loop calling `self.train_step_end(batch, loss)`, overridden by a subclass
that appends it; a hook handing it to `self.record(loss)`), up to three calls deep, and a loss held by an
attribute (`self.loss.backward()`) into the methods called on its object (`self.on_batch_end()` reading
`self.loss`). A loss that is an item of a container (`losses[-1].backward()`) is kept by the
statement that stores into that container (`losses.append(...)`). Not found: None, and the finding
stays at the backward.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, replace

from .evidence import Site
from .source_calls import _Parsed, char_col, parsed, segment

_STORE = frozenset({"append", "extend", "insert", "add", "appendleft", "add_"})  # `add_`: a tensor summed in place
_OUT_OF_GRAPH = frozenset({"item", "detach", "tolist", "numpy", "cpu_item", "float", "int"})
_LOOPS = (ast.For, ast.AsyncFor, ast.While)
_Loop = ast.For | ast.AsyncFor | ast.While


@dataclass(frozen=True, slots=True)
class Kept:
    """The keeping statement: where it is, what keeps (`target`), what it stores, the loop it outlives."""

    site: Site
    target: str
    stored: str
    loop_line: int | None
    via_item: str = ""  # `stored` holds the graph in this item (`output["loss"]` of `outputs.append(output)`)
    # the backward (as written, its line) that ran through the stored loss itself in the same function, without
    # `retain_graph`: it freed the activations the kept graphs saved (the static side's `_freed_by`)
    freed_by: tuple[str, int] | None = None


_FOUND: dict[Site, Kept | None] = {}


def kept_at(backward: Site) -> Kept | None:
    """The statement that most probably keeps the graphs of this backward line (None: not found)."""
    if backward not in _FOUND:
        try:
            _FOUND[backward] = _lookup(backward)
        except (RecursionError, ValueError):
            _FOUND[backward] = None
    return _FOUND[backward]


def _lookup(backward: Site) -> Kept | None:
    p = parsed(backward.path) if backward.path and backward.line else None
    if p is None:
        return None
    call = next((c for c in p.calls_by_line.get(backward.line, ()) if _is_backward(c)), None)
    if call is None:
        return None
    scope, loop = _scope_and_loop(p.tree, call)
    expr = _loss_expr(call)
    names = _loss_names(expr) if expr is not None else frozenset()
    if expr is None or not names:
        return None
    via = segment(p, expr) if isinstance(expr, (ast.Subscript, ast.Attribute)) else ""
    # `losses[-1].backward()`: the container the loss is an item of keeps whatever is stored into it
    containers = frozenset({segment(p, expr.value)}) if isinstance(expr, ast.Subscript) and \
        isinstance(expr.value, (ast.Name, ast.Attribute)) else frozenset()
    functions = {n.name: n for n in ast.walk(p.tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    methods: _Methods = {}
    for cls in ast.walk(p.tree):
        if isinstance(cls, ast.ClassDef):
            for fn in cls.body:
                if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    # the parameters the call's arguments fill: past the object's, but for a static method
                    methods.setdefault(fn.name, []).append((fn, 0 if _static(fn) else 1))
    callers = _calls_of(p.tree, scope) if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)) else []
    if loop is None and callers:  # a step method: the loop that calls it (`for x, y in batches: self.train_step(x, y)`)
        loop = callers[0][2]
    loop_line = loop.lineno if loop is not None else None
    # a store call a class of the file defines (`run_loss.append(loss)` of a `History`) is looked into
    # first, below, as a method the loss is handed to; the call itself only when that method keeps nothing
    deferred = frozenset(methods)
    found = _keeping(p, scope, names, call.lineno, backward.path, loop_line, via, containers, deferred)
    if found is not None:
        return _with_freed_by(found, p, call, expr)
    # the loss returned to a caller that keeps it (`errD = self.train_Dnet(...)`, then `errD_total += errD`),
    # or hands it on to a function or method that keeps it (`loss = self.train_step(x, y)`, then
    # `self.train_step_end(batch, loss)` of a subclass that appends it)
    returned = any(isinstance(n, ast.Return) and n.value is not None and _mentions(n.value, names)
                   for n in _own_nodes(scope))
    for node, caller, caller_loop in callers if returned else []:
        assigned = _assigned_from(caller, node)
        if assigned:
            line = caller_loop.lineno if caller_loop is not None else loop_line
            found = _keeping(p, caller, assigned, node.lineno, backward.path, line) or \
                _handed(p, caller, assigned, backward.path, line, functions, methods)
            if found is not None:
                return found
    # a same-file function the loss is handed to (`log_loss(history, loss)`), or a method of a class of
    # the file called on an object (`meter.update(loss, n)` of an `AverageMeter` whose `update` sums it);
    # a loss held by an attribute (`self.loss.backward()`) is handed to the methods called on its object
    ref = _dotted(expr) if isinstance(expr, ast.Attribute) else None
    found = _handed(p, scope, names | {ref} if ref else names, backward.path, loop_line, functions, methods)
    if found is not None:
        return found
    if deferred:
        found = _keeping(p, scope, names, call.lineno, backward.path, loop_line, via, containers)
        return _with_freed_by(found, p, call, expr) if found is not None else None
    return None


def _with_freed_by(kept: Kept, p: _Parsed, call: ast.Call, expr: ast.expr) -> Kept:
    """`kept` (found in the backward's own function) with the backward that freed its activations, when that
    backward runs through the stored value itself (`loss` of `scaler.scale(loss).backward()`) and retains nothing."""
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and expr.func.attr == "scale" \
            and len(expr.args) == 1:
        expr = expr.args[0]
    if kept.via_item or segment(p, expr) != kept.stored or any(k.arg == "retain_graph" for k in call.keywords):
        return kept
    return replace(kept, freed_by=(" ".join(segment(p, call).split()), call.lineno))


_Methods = dict[str, list[tuple[ast.FunctionDef | ast.AsyncFunctionDef, int]]]
_DEPTH = 3  # calls followed from the loop: a hook (`train_step_end`) that hands the loss on (`self.record(loss)`)


def _handed(p: _Parsed, scope: ast.AST, names: frozenset[str], path: str, loop_line: int | None,
            functions: dict[str, ast.FunctionDef | ast.AsyncFunctionDef], methods: _Methods,
            depth: int = 0) -> Kept | None:
    """The statement keeping the loss in a function or method of the file that the scope hands it to: a
    function by name (`log_loss(history, loss)`), a method by its name on any object, each class of the
    file defining it in order (`meter.update(loss, n)`; `self.train_step_end(batch, loss)` of a base class's
    loop, the subclass's override keeping it), with the parameters the arguments fill; a loss held by an
    attribute of the object a method is called on (`self.loss`) is read there through its first parameter.
    Followed into what those hand it on to, up to `_DEPTH` calls, those that keep it directly first."""
    onward: list[tuple[ast.FunctionDef | ast.AsyncFunctionDef, frozenset[str]]] = []
    for used in _own_nodes(scope):
        if not isinstance(used, ast.Call):
            continue
        targets: list[tuple[ast.FunctionDef | ast.AsyncFunctionDef, int]]
        if isinstance(used.func, ast.Name) and used.func.id in functions:
            targets = [(functions[used.func.id], 0)]
        elif isinstance(used.func, ast.Attribute) and used.func.attr in methods:
            targets = methods[used.func.attr]
        else:
            continue
        owner = used.func.value.id if isinstance(used.func, ast.Attribute) and \
            isinstance(used.func.value, ast.Name) else ""
        for fn, bound in targets:
            every = [a.arg for a in [*fn.args.posonlyargs, *fn.args.args]]
            params = every[bound:]
            passed = {params[i] for i, a in enumerate(used.args) if i < len(params) and _mentions(a, names)}
            passed |= {k.arg for k in used.keywords if k.arg and _mentions(k.value, names)}
            if owner and bound and every:  # `self.loss` of the caller is `self.loss` of the method called on `self`
                passed |= {every[0] + n[len(owner):] for n in names if n.startswith(owner + ".")}
            if passed:
                found = _keeping(p, fn, frozenset(passed), 0, path, loop_line)
                if found is not None:
                    return found
                onward.append((fn, frozenset(passed)))
    for fn, given in onward if depth + 1 < _DEPTH else []:
        found = _handed(p, fn, given, path, loop_line, functions, methods, depth + 1)
        if found is not None:
            return found
    return None


def _dotted(node: ast.expr) -> str | None:
    """`self.loss` of an attribute chain on a name; None for anything else."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    return ".".join([node.id, *reversed(parts)]) if isinstance(node, ast.Name) else None


def _static(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """A `@staticmethod`: no bound first parameter."""
    return any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in fn.decorator_list)


def _is_backward(call: ast.Call) -> bool:
    return isinstance(call.func, ast.Attribute) and call.func.attr == "backward" or \
        isinstance(call.func, ast.Name) and call.func.id == "backward"


def _loss_expr(call: ast.Call) -> ast.expr | None:
    """What the backward differentiates: `loss` of `loss.backward()`, `scaler.scale(loss)` of
    `scaler.scale(loss).backward()`, `loss` of `accelerator.backward(loss)`."""
    func = call.func
    if isinstance(func, ast.Attribute) and not (call.args and isinstance(func.value, ast.Name)
                                                and not _tensorish(func.value)):
        return func.value
    return call.args[0] if call.args else None


def _loss_names(expr: ast.expr) -> frozenset[str]:
    """The names in the loss expression, not the objects whose methods are called nor called functions."""
    # not the objects whose methods are called (`scaler` of `scaler.scale(loss)`), nor called functions
    bases = {id(n.func.value) for n in ast.walk(expr) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)}
    bases |= {id(n.func) for n in ast.walk(expr) if isinstance(n, ast.Call)}
    return frozenset(n.id for n in ast.walk(expr) if isinstance(n, ast.Name) and (id(n) not in bases or n is expr))


def _tensorish(node: ast.Name) -> bool:
    """`loss` of `loss.backward(gradient)`, a tensor's own backward; not `accelerator` of `accelerator.backward(x)`."""
    return "loss" in node.id.lower()


def _scope_and_loop(tree: ast.AST, call: ast.Call) -> tuple[ast.AST, _Loop | None]:
    """The innermost function (else the module) around the call, and the innermost loop around it there."""
    scope: ast.AST = tree
    loop: _Loop | None = None
    stack: list[tuple[ast.AST, ast.AST, _Loop | None]] = [(tree, tree, None)]
    while stack:
        node, sc, lp = stack.pop()
        if node is call:
            return sc, lp
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                stack.append((child, child, None))
            elif isinstance(child, _LOOPS):
                stack.append((child, sc, child))
            else:
                stack.append((child, sc, lp))
    return scope, loop


_Called = tuple[ast.Call, ast.AST, _Loop | None]


def _calls_of(tree: ast.AST, fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[_Called]:
    """The calls of `fn` by its name (`train_step(...)`, `self.train_step(...)`): each with the function
    (else the module) around it and the innermost loop around it there."""
    out: list[_Called] = []
    stack: list[tuple[ast.AST, ast.AST, _Loop | None]] = [(tree, tree, None)]
    while stack:
        node, sc, lp = stack.pop()
        if isinstance(node, ast.Call) and (isinstance(node.func, ast.Name) and node.func.id == fn.name
                                           or isinstance(node.func, ast.Attribute) and node.func.attr == fn.name):
            out.append((node, sc, lp))
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                stack.append((child, child, None))
            else:
                stack.append((child, sc, child if isinstance(child, _LOOPS) else lp))
    return sorted(out, key=lambda c: (c[0].lineno, c[0].col_offset))


def _assigned_from(scope: ast.AST, call: ast.Call) -> frozenset[str]:
    """The names a call's result is assigned to (`errD = self.train_Dnet(i, real, fake)`; each name of a
    tuple it is unpacked into, `reg, cls, total = trainer.train_step(x)`), none when it is not."""
    for node in _own_nodes(scope):
        if isinstance(node, ast.Assign) and node.value is call and len(node.targets) == 1:
            target = node.targets[0]
            if isinstance(target, ast.Name):
                return frozenset({target.id})
            if isinstance(target, (ast.Tuple, ast.List)):
                return frozenset(e.id for e in target.elts if isinstance(e, ast.Name))
    return frozenset()


def _own_nodes(scope: ast.AST) -> list[ast.stmt | ast.expr]:
    """The statements and expressions of a scope, not of the functions and classes it defines, in order."""
    out: list[ast.stmt | ast.expr] = []
    todo = list(ast.iter_child_nodes(scope))
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.stmt, ast.expr)):
            out.append(node)
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            todo.extend(ast.iter_child_nodes(node))
    return sorted(out, key=lambda n: (n.lineno, n.col_offset))


def _mentions(expr: ast.AST, names: frozenset[str]) -> bool:
    """`expr` holds one of `names` with its graph (not only inside `.item()`, `.detach()`, `float(...)`)."""
    if isinstance(expr, ast.Name):
        return expr.id in names
    if isinstance(expr, ast.Call):
        func = expr.func
        called = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        if called in _OUT_OF_GRAPH:
            return False
    if isinstance(expr, ast.Attribute) and expr.attr in ("data", "grad"):
        return False
    if isinstance(expr, ast.Attribute) and any("." in n for n in names) and _dotted(expr) in names:
        return True  # an attribute holding the loss (`self.loss`, read in a method called on `self`)
    return any(_mentions(child, names) for child in ast.iter_child_nodes(expr))


def _with_graph(expr: ast.expr) -> bool:
    """`expr` may hold a graph: not a constant, nor a value taken out of it (`.item()`, `.detach()`, `float(...)`)."""
    if isinstance(expr, ast.Constant):
        return False
    if isinstance(expr, ast.Call):
        func = expr.func
        called = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        return called not in _OUT_OF_GRAPH
    return not (isinstance(expr, ast.Attribute) and expr.attr in ("data", "grad"))


def _narrowed(term: ast.expr, names: frozenset[str]) -> ast.expr:
    """The operand of `term` that holds the loss (`loss` of `0.1 * loss`), as the static side names it."""
    while isinstance(term, ast.BinOp):
        holding = [side for side in (term.left, term.right) if _mentions(side, names)]
        if len(holding) != 1:
            break
        term = holding[0]
    return term


def _bounded(p: _Parsed, scope: ast.AST, call: ast.Call, into: str) -> bool:
    """The store call adds to a deque made with a length bound at every binding (`analysis.bounded_containers`)."""
    from ..analysis.bounded_containers import grows_bounded  # read only once a graph was kept

    cls = next((c for c in ast.walk(p.tree) if isinstance(c, ast.ClassDef) and any(f is scope for f in c.body)), None)
    function = scope if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)) else None
    return grows_bounded(call, into, function, cls, p.tree)


def _keeping(p: _Parsed, scope: ast.AST, names: frozenset[str], after: int, path: str, loop_line: int | None,
             via: str = "", containers: frozenset[str] = frozenset(),
             deferred: frozenset[str] = frozenset()) -> Kept | None:
    """The first keeping statement of the scope after line `after` (else the first before it).

    `containers`: containers the loss is an item of, kept by any store into them of a value with a graph;
    `deferred`: store methods not counted here (a class of the file defines them)."""
    from ..analysis.accumulation import combined_terms  # read only once a graph was kept: not at the guard's import
    from ..analysis.names import ref_text

    found: list[tuple[ast.stmt | ast.expr, str, str]] = []
    for node in _own_nodes(scope):
        if isinstance(node, ast.AugAssign) and isinstance(node.op, ast.Add) and _mentions(node.value, names) \
                and not (isinstance(node.target, ast.Name) and node.target.id in names):
            found.append((node, segment(p, node.target), segment(p, node.value)))
        elif isinstance(node, ast.Assign) and len(node.targets) == 1:
            # `total = total + loss`, `ema = 0.9 * ema + 0.1 * loss`: the previous value and the loss
            own = ref_text(node.targets[0])
            terms = combined_terms(node.value, own, _OUT_OF_GRAPH) if own is not None else None
            term = next((t for t in terms or () if _mentions(t, names)), None)
            if term is not None:
                # `total = total + loss * n` stores its right side whole, as the static side names it
                whole = (isinstance(node.value, ast.BinOp) and isinstance(node.value.op, ast.Add)
                         and len(terms or ()) == 1)
                found.append((node, segment(p, node.targets[0]), segment(p, term if whole else _narrowed(term, names))))
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            store, args = node.value.func, node.value.args
            if not (isinstance(store, ast.Attribute) and store.attr in _STORE and args) or store.attr in deferred:
                continue
            into = segment(p, store.value)
            if _bounded(p, scope, node.value, into):
                continue  # `self.deque.append(loss)` of `deque(maxlen=20)`: a bounded window (as statically)
            if _mentions(args[-1], names) or into in containers and _with_graph(args[-1]):
                found.append((node.value, into, segment(p, args[-1])))
    if not found:
        return None
    node, target, stored = next((f for f in found if f[0].lineno > after), found[0])
    line, col = node.lineno, node.col_offset
    via_item = via if via and stored in names and via != stored else ""
    return Kept(Site(path, line, segment(p, node), col=char_col(p, line, col)), target, stored, loop_line, via_item)
