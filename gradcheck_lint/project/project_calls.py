"""The calls of a function of the project, found by its name in the project's Python files.

A setting no run sets is one that no call passes: `train(model, grad_iter=1)` called by every script of the project
without `grad_iter` runs with 1. The calls are found by the function's name in the project's files (a method's as
`.name(`), parsed; a call is taken for one of this function when it gives at least the arguments it requires. Nothing
is found (None) when a call hands on `*args` or `**kwargs`, when the function is handed on other than in a call (a
module function's name, or a method through `self`, as a callback or in `functools.partial`), when more than
`MAX_FILES_READ` files name it, or when the project runs nothing of its own (a library, called from outside).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterator

from ..analysis.walk import breadth_first, child_nodes, own_nodes
from .callers import project_files
from .index import ProjectIndex
from .reachability import project_words

__all__ = ["MAX_FILES_READ", "calls_of", "constructions", "defaults_of_one", "defaults_where", "is_method", "is_one",
           "never_constructed", "plausible_calls", "rebound", "unpassed"]

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)

MAX_FILES_READ = 24  # project files parsed looking for the calls of one function


_ENTRY = re.compile(r"__main__|^[A-Za-z_][\w.]*\(", re.M)  # a script: a `__main__` guard or a top-level call


# what a function named but not called is handed to: an argument, a binding, a container, a return
_HANDING = (ast.Call, ast.keyword, ast.Assign, ast.AnnAssign, ast.Return, ast.Tuple, ast.List, ast.Dict, ast.Set)


def unpassed(fn: ast.FunctionDef | ast.AsyncFunctionDef, cls: ast.ClassDef | None, names: set[str],
              ones: dict[str, int | None], index: ProjectIndex, path: str) -> bool:
    """Some call of `fn` is found in the project and none passes any of `names` (by keyword or by place)."""
    calls = plausible_calls(fn, cls, index, path)
    if not calls:
        return False
    skip = 1 if is_method(fn, cls) else 0
    for call in calls:
        given = {k.arg for k in call.keywords}
        for name in names:
            place = ones[name]
            if name in given or place is not None and place - skip < len(call.args):
                return False
    return True


def never_constructed(fn: ast.FunctionDef | ast.AsyncFunctionDef | None, cls: ast.ClassDef | None,
                       index: ProjectIndex, path: str) -> bool:
    """`fn` is the `__init__` of a class the project runs and never constructs (every construction read, none giving
    the arguments it requires; a base class whose subclasses do not call it; not a decorated class, not in a project
    that looks names up at run time): what it assigns is set by no run."""
    if fn is None or fn.name != "__init__" or cls is None or cls.decorator_list:
        return False  # (a decorated class may be registered, and made through its registry)
    words = project_words(index.root)
    return words is not None and not words.dynamic and plausible_calls(fn, cls, index, path) == []


def is_method(fn: ast.FunctionDef | ast.AsyncFunctionDef, cls: ast.ClassDef | None) -> bool:
    return cls is not None and bool(fn.args.args) and fn.args.args[0].arg in ("self", "cls") \
        and not any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in fn.decorator_list)


def plausible_calls(fn: ast.FunctionDef | ast.AsyncFunctionDef, cls: ast.ClassDef | None, index: ProjectIndex,
                     path: str) -> list[ast.Call] | None:
    """The calls of `fn` in the project that give at least the arguments it requires (a call of another function of
    that name, `model.train()`, gives fewer); None when they are not all read: a call that hands on `*args` or
    `**kwargs`, or see `calls_of` and `constructions`."""
    method = is_method(fn, cls)
    required = len(fn.args.posonlyargs) + len(fn.args.args) - len(fn.args.defaults) - (1 if method else 0)
    calls = constructions(cls, index, path) if method and fn.name == "__init__" and cls is not None \
        else calls_of(fn.name, method, index, path)
    if calls is None:
        return None
    out = []
    for call in calls:
        if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
            return None  # `train(*args, **kwargs)`: what it passes is not read
        if len(call.args) + len(call.keywords) >= required:
            out.append(call)
    return out


def calls_of(name: str, method: bool, index: ProjectIndex, path: str) -> list[ast.Call] | None:
    """The calls of a function (a method: `.name(...)`) in the project's Python files; None when the project runs
    nothing of its own, when too many files name it, or when some file names it other than in a call."""
    needle = re.compile(rf"\b{re.escape(name)}\b")
    found: list[ast.Call] = []
    read = 0
    runs = False
    for file in project_files(index.root):
        text = index.text_of(file)
        if not text:
            continue
        runs = runs or bool(_ENTRY.search(text))
        if not needle.search(text):
            continue
        read += 1
        if read > MAX_FILES_READ:
            return None
        module = index.load(file)
        if module is None:
            return None
        for node, parent in _named(module.tree, name):
            if isinstance(parent, ast.Call) and parent.func is node:
                if method == isinstance(node, ast.Attribute) or not method:
                    found.append(parent)
            elif isinstance(node.ctx, ast.Load) and isinstance(parent, _HANDING) and _itself(node, method):
                return None  # handed on: a callback, `partial(self.train, ...)`, `step = train`
    return found if runs else None


def constructions(cls: ast.ClassDef, index: ProjectIndex, path: str, depth: int = 0) -> list[ast.Call] | None:
    """The calls that run `cls.__init__`: the class called by its name (`DiffTrainer(model, config)`), and for each
    class of the project deriving from one of that name, its `super().__init__(...)` calls, or, when it has no
    `__init__` of its own, its constructions in turn; None when some are not read (see `calls_of`; an `__init__` called
    through the class, `Base.__init__(self, ...)`; a deeper family)."""
    found = calls_of(cls.name, False, index, path)
    if found is None or depth > 2:
        return None
    words = project_words(index.root)
    if words is None:
        return None
    for file, _ in words.naming(cls.name):
        module = index.load(file) if file.endswith(".py") else None
        for sub in breadth_first(module.tree) if module is not None else ():
            if not (isinstance(sub, ast.ClassDef) and any(_base_name(b) == cls.name for b in sub.bases)):
                continue
            init = next((f for f in sub.body if isinstance(f, _FUNCTIONS) and f.name == "__init__"), None)
            if init is None:
                more = constructions(sub, index, path, depth + 1)
                if more is None:
                    return None
                found += more
                continue
            for call in own_nodes(init):
                if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "__init__":
                    if not (isinstance(call.func.value, ast.Call) and isinstance(call.func.value.func, ast.Name)
                            and call.func.value.func.id == "super"):
                        return None  # `Base.__init__(self, ...)`
                    found.append(call)
    return found


def _base_name(base: ast.expr) -> str | None:
    """The name a class statement's base is spelt with (`pkg.Trainer`: `Trainer`)."""
    return base.id if isinstance(base, ast.Name) else base.attr if isinstance(base, ast.Attribute) else None


def _itself(node: ast.Name | ast.Attribute, method: bool) -> bool:
    """A reference that may be the function itself: a module function's name, or a method through `self` (`opt.train`,
    an attribute of some other object, is taken for data: a method handed on through another name is not read)."""
    if not method:
        return isinstance(node, ast.Name)
    return isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")


def _named(tree: ast.Module, name: str) -> Iterator[tuple[ast.Name | ast.Attribute, ast.AST | None]]:
    """The names and attributes spelt `name` in a module, with the node each is a direct child of."""
    todo: list[tuple[ast.AST, ast.AST | None]] = [(tree, None)]
    while todo:
        node, parent = todo.pop()
        if isinstance(node, ast.Name) and node.id == name or isinstance(node, ast.Attribute) and node.attr == name:
            yield node, parent
        todo.extend((child, node) for child in child_nodes(node))


def rebound(fn: ast.AST, name: str) -> bool:
    """The function assigns the parameter itself (`grad_iter = max(grad_iter, cfg.accum)`)."""
    return any(isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store) for n in own_nodes(fn))


def defaults_where(fn: ast.FunctionDef | ast.AsyncFunctionDef, test: Callable[[ast.expr], bool]
                   ) -> dict[str, int | None]:
    """The parameters whose default passes `test`: their positional index (None: keyword-only)."""
    args = fn.args
    positional = [*args.posonlyargs, *args.args]
    out: dict[str, int | None] = {}
    for arg, default in zip(positional[len(positional) - len(args.defaults):], args.defaults):
        if test(default):
            out[arg.arg] = positional.index(arg)
    for arg, kw_default in zip(args.kwonlyargs, args.kw_defaults):
        if kw_default is not None and test(kw_default):
            out[arg.arg] = None
    return out


def defaults_of_one(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> dict[str, int | None]:
    """The parameters whose default is the literal 1: their positional index (None: keyword-only)."""
    return defaults_where(fn, is_one)


def is_one(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and type(node.value) is int and node.value == 1
