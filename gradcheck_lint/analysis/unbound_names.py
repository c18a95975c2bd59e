"""Statements that always raise NameError: they read a misspelt name, one nothing binds in any scope they can
see while a name one edit away is bound there.

UniCL's `train_one_epoch` stores the forward's result in `ouputs` and then reads `criterion(outputs,
targets)`: `outputs` is bound nowhere in the module, so every path through that statement raises before
the backward and the clipping below it, and findings there describe code that never runs. Such a statement
ends its path, as a `raise` does. A free name with no bound near-miss (`for x in loader:` in a snippet that
never defines `loader`) is an input the reader supplies, not a typo: it leaves the path open.

A name counts as bound when any scope the statement sees binds it anywhere (its function and the
functions around it, the module, builtins, Python 2's builtins): this is about names bound nowhere, not about
order. Nothing is decided in a module that can bind names out of sight (`from x import *`, `globals()`,
`exec`, `sys.modules`), inside a `try` with handlers or `with suppress(...)` (the error may be caught), or for
a read that runs only on some evaluations (the arms of `x if c else y`, operands after the first of
`and`/`or`, lambdas, comprehension bodies).
"""

from __future__ import annotations

import ast
import builtins

from .walk import child_nodes

_TRIES: tuple[type, ...] = (ast.Try, getattr(ast, "TryStar", ast.Try))  # try/except* from Python 3.11
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
# names every module and notebook sees besides builtins: module attributes, IPython's injected names, and
# Python 2's builtins (old code is read as written, not as broken)
_ALWAYS = frozenset({
    "__file__", "__name__", "__doc__", "__spec__", "__loader__", "__package__", "__builtins__", "__path__",
    "__annotations__", "__cached__", "__class__", "get_ipython", "display", "In", "Out",
    "xrange", "unicode", "basestring", "long", "raw_input", "reduce", "execfile", "unichr", "cmp", "file",
    "reload", "buffer", "intern", "apply", "coerce",
})
_KNOWN = frozenset(dir(builtins)) | _ALWAYS
# calls that bind names the syntax does not show
_DYNAMIC = frozenset({"globals", "locals", "vars", "exec", "eval", "execfile", "setattr"})


def may_raise(read: set[str], bound: set[str]) -> bool:
    """Whether any statement can read a misspelt name, from the names the module reads and binds anywhere
    (`Prescan`): a name read and bound nowhere, one edit from a bound one. Most modules have none, and
    `raising_statements` is not worth its walks there."""
    if "*" in bound or read & _DYNAMIC:
        return False  # `from x import *` (prescan binds "*"), `globals()`: names may be bound out of sight
    return any(_misspelt(name, [bound]) for name in read - bound - _KNOWN)


def raising_statements(module: ast.Module) -> frozenset[int]:
    """The ids of the statements of the module (and its functions) that read, on every evaluation, a name
    bound in no scope they see; empty when the module may bind names out of sight."""
    if _binds_out_of_sight(module):
        return frozenset()
    declared_global = {n for node in ast.walk(module) if isinstance(node, ast.Global) for n in node.names}
    module_names = _bound_in(module.body) | declared_global
    out: set[int] = set()
    _visit(module.body, [module_names], out, guarded=False)
    return frozenset(out)


def _binds_out_of_sight(module: ast.Module) -> bool:
    for node in ast.walk(module):
        if isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names):
            return True
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _DYNAMIC:
            return True
        if isinstance(node, ast.Attribute) and node.attr == "modules" and isinstance(node.value, ast.Name) \
                and node.value.id == "sys":
            return True
    return False


def _visit(body: list[ast.stmt], scopes: list[set[str]], out: set[int], guarded: bool) -> None:
    """Mark the raising statements of one block, then those of the blocks and functions inside it."""
    for stmt in body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            own = _bound_in(stmt.body) | _parameters(stmt.args)
            own -= {n for node in _own_walk(stmt.body) if isinstance(node, ast.Global) for n in node.names}
            _visit(stmt.body, [own, *scopes], out, guarded=False)
            continue
        if isinstance(stmt, ast.ClassDef):
            continue  # class bodies run at import; their methods see no class scope (read as functions above)
        if not guarded and any(not _sees(name, scopes) and _misspelt(name, scopes) for name in _always_read(stmt)):
            out.add(id(stmt))
        caught = isinstance(stmt, _TRIES) and bool(getattr(stmt, "handlers", None))
        withs = stmt.items if isinstance(stmt, (ast.With, ast.AsyncWith)) else []
        suppressed = any(_suppresses(item.context_expr) for item in withs)
        inner_guarded = guarded or caught or suppressed
        for field in ("body", "orelse", "finalbody"):
            block = getattr(stmt, field, None)
            if isinstance(block, list):
                # a `try`'s `else`/`finally` are not guarded by its handlers; its body is
                _visit(block, scopes, out, inner_guarded if field == "body" else guarded)
        for handler in getattr(stmt, "handlers", None) or []:
            _visit(handler.body, scopes, out, guarded)
        for case in getattr(stmt, "cases", None) or []:
            _visit(case.body, scopes, out, guarded)
    for stmt in body:
        if isinstance(stmt, ast.ClassDef):
            for item in stmt.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    _visit([item], scopes, out, guarded=False)


def _suppresses(expr: ast.expr) -> bool:
    func = expr.func if isinstance(expr, ast.Call) else None
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
    return name == "suppress"


def _sees(name: str, scopes: list[set[str]]) -> bool:
    return name in _KNOWN or any(name in s for s in scopes)


def _misspelt(name: str, scopes: list[set[str]]) -> bool:
    """A bound name in sight is one edit (a letter left out, added, changed or two swapped) from `name`."""
    if len(name) < 4:
        return False
    # (`epochs` beside `epoch`: a collection named after its items, a snippet's input, not a typo)
    return any(abs(len(other) - len(name)) <= 1 and not _plural(name, other) and _one_edit(name, other)
               for scope in scopes for other in scope)


def _plural(a: str, b: str) -> bool:
    return a == b + "s" or b == a + "s"


def _one_edit(a: str, b: str) -> bool:
    if a == b:
        return False
    if len(a) == len(b):
        diff = [i for i, (x, y) in enumerate(zip(a, b)) if x != y]
        if len(diff) == 1:
            return True
        return len(diff) == 2 and diff[1] == diff[0] + 1 and a[diff[0]] == b[diff[1]] and a[diff[1]] == b[diff[0]]
    short, long_ = (a, b) if len(a) < len(b) else (b, a)
    i = next((k for k, (x, y) in enumerate(zip(short, long_)) if x != y), len(short))
    return short[i:] == long_[i + 1:]


def _always_read(stmt: ast.stmt) -> list[str]:
    """The names the statement's own expressions read on every evaluation (not those of its nested blocks)."""
    if isinstance(stmt, ast.AnnAssign):
        roots: list[ast.AST] = [stmt.value] if stmt.value is not None else []
    elif isinstance(stmt, (ast.If, ast.While)):
        roots = [stmt.test]
    elif isinstance(stmt, (ast.For, ast.AsyncFor)):
        roots = [stmt.iter]
    elif isinstance(stmt, (ast.With, ast.AsyncWith)):
        roots = [item.context_expr for item in stmt.items]
    elif isinstance(stmt, ast.Match):
        roots = [stmt.subject]
    elif isinstance(stmt, (*_TRIES, ast.Global, ast.Nonlocal, ast.Import, ast.ImportFrom)):
        roots = []
    else:
        roots = [stmt]
    names: list[str] = []
    todo = list(roots)
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Name):
            if isinstance(node.ctx, ast.Load):
                names.append(node.id)
            continue
        if isinstance(node, _SCOPES):
            continue
        if isinstance(node, _COMPREHENSIONS):
            todo.append(node.generators[0].iter)  # the first iterable runs at once; the rest per item
            continue
        if isinstance(node, ast.IfExp):
            todo.append(node.test)
            continue
        if isinstance(node, ast.BoolOp):
            todo.append(node.values[0])
            continue
        todo.extend(child_nodes(node))
    return names


def _parameters(args: ast.arguments) -> set[str]:
    every = [*args.posonlyargs, *args.args, *args.kwonlyargs, *(a for a in (args.vararg, args.kwarg) if a is not None)]
    return {a.arg for a in every}


def _own_walk(body: list[ast.stmt]) -> list[ast.AST]:
    """The nodes of a block, not inside functions, classes or lambdas it defines (their names are theirs)."""
    out: list[ast.AST] = []
    todo: list[ast.AST] = list(body)
    while todo:
        node = todo.pop()
        out.append(node)
        if isinstance(node, _SCOPES):
            continue
        todo.extend(child_nodes(node))
    return out


def _bound_in(body: list[ast.stmt]) -> set[str]:
    """Every name a block binds in its own scope: assignments, loop and `with` targets, imports, `def`/`class`
    names, `except ... as`, pattern captures, `:=` (also inside comprehensions, whose other targets stay
    theirs: counted too, which only makes fewer names unbound)."""
    names: set[str] = set()
    for node in _own_walk(body):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                names.add(alias.asname or alias.name.split(".", 1)[0])
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
        elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
            names.add(node.name)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            names.add(node.rest)
        elif isinstance(node, ast.Nonlocal):
            names.update(node.names)
    return names
