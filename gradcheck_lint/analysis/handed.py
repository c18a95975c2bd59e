"""Functions handed to a framework that calls them once per batch: a catalogue hook with `handed` (Ignite's
`Engine(process_function)`, or `super().__init__(func)` in a subclass of Engine).

A function is handed when the call that builds the framework object names it: a function of the module or
one defined in an enclosing function (`Engine(train_step)`), or a method (`Engine(self.step)`,
`super().__init__(self.step)`). A subclass whose constructor only forwards a parameter of its own
(`def __init__(self, func, ...): super().__init__(func)`) is handed its function by whoever builds it; a
method of that class named where a call passes that parameter (`EngineClass(EngineClass.train, ...)`, the
builder's class not being known) is taken for a handed one on its name alone: an assumption, so what
is found there is only possible.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from .apimodels import ArgRef, Catalogue, Hook
from .definitions import ClassInfo
from .flow import Function
from .names import ImportMap
from .walk import breadth_first


@dataclass(frozen=True, slots=True)
class Handed:
    """A function a framework calls once per batch, and what it is handed."""

    function: Function
    cls: ClassInfo | None
    hook: Hook
    bound: bool  # reached as a bound method (`self.step`): its first parameter is the instance
    assumed: bool  # found by a method's name only (see the module's docstring)

    def counter(self) -> tuple[str, int] | None:
        """The name the function reads its batch counter by (`engine.state.iteration`), and its first value."""
        ref = self.hook.counter
        if ref is None:
            return None
        params = [p.arg for p in [*self.function.args.posonlyargs, *self.function.args.args]][1 if self.bound else 0:]
        name = next((params[i] for i in ref.positions if i < len(params)), None)
        name = name or next((k for k in ref.keywords if k in params), None)
        if name is None:
            return None
        return (f"{name}.{self.hook.counter_path}" if self.hook.counter_path else name), self.hook.counter_start


def _argument(call: ast.Call, ref: ArgRef) -> ast.expr | None:
    for i in ref.positions:
        if i < len(call.args) and not isinstance(call.args[i], ast.Starred):
            return call.args[i]
    return next((k.value for k in call.keywords if k.arg in ref.keywords), None)


def _is_super_init(call: ast.Call) -> bool:
    func = call.func
    return (isinstance(func, ast.Attribute) and func.attr == "__init__" and isinstance(func.value, ast.Call)
            and isinstance(func.value.func, ast.Name) and func.value.func.id == "super")


class _Finder(ast.NodeVisitor):
    def __init__(self, catalogue: Catalogue, imports: ImportMap, functions: dict[str, Function],
                 classes: dict[str, ClassInfo]) -> None:
        self.catalogue, self.imports, self.functions, self.classes = catalogue, imports, functions, classes
        self.scopes: list[Function] = []
        self.cls: ClassInfo | None = None
        self.found: dict[int, Handed] = {}
        self.forwarding: list[tuple[ClassInfo, Hook, int]] = []  # a subclass, its hook, the forwarded position

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        outer, self.cls = self.cls, self.classes.get(node.name) if not self.scopes else None
        self.generic_visit(node)
        self.cls = outer

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self.scopes.append(node)
        self.generic_visit(node)
        self.scopes.pop()

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Call(self, node: ast.Call) -> None:
        self.generic_visit(node)
        cat = self.catalogue
        hook: Hook | None = None
        if _is_super_init(node) and self.cls is not None and self.cls.api:
            hook = cat.handed_hook(self.cls.api)
        else:
            qual = self.imports.qualify(node.func)
            if qual is not None and cat.type(qual) is not None:
                hook = cat.handed_hook(cat.canonical(qual))
        if hook is None or hook.handed is None:
            return
        arg = _argument(node, hook.handed)
        if arg is None:
            return
        self._resolve(arg, hook)

    def _resolve(self, arg: ast.expr, hook: Hook) -> None:
        if isinstance(arg, ast.Name):
            scope = self.scopes[-1] if self.scopes else None
            params = [p.arg for p in [*scope.args.posonlyargs, *scope.args.args]] if scope is not None else []
            fn = self._local_def(arg.id)
            if fn is not None:
                self.found.setdefault(id(fn), Handed(fn, None, hook, False, False))
            elif arg.id in params and self.cls is not None and scope is not None and scope.name == "__init__":
                self.forwarding.append((self.cls, hook, params.index(arg.id) - 1))
        elif isinstance(arg, ast.Attribute) and isinstance(arg.value, ast.Name):
            owner = self.cls if arg.value.id == "self" else self.classes.get(arg.value.id)
            fn = owner.methods.get(arg.attr) if owner is not None else None
            if fn is not None and owner is not None:
                bound = arg.value.id == "self" and not _static(fn)
                self.found.setdefault(id(fn), Handed(fn, owner, hook, bound, False))

    def _local_def(self, name: str) -> Function | None:
        """The function `name` names where the call is: one defined in an enclosing function, or the module's."""
        for scope in reversed(self.scopes):
            for node in breadth_first(scope):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node is not scope and node.name == name:
                    return node
        return self.functions.get(name)


def _static(fn: Function) -> bool:
    return any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in fn.decorator_list)


def handed_functions(module: ast.Module, catalogue: Catalogue, imports: ImportMap, functions: dict[str, Function],
                     classes: dict[str, ClassInfo]) -> dict[int, Handed]:
    """The functions of `module` that a framework is handed to call once per batch, by id of their node."""
    handed = [h for h in catalogue.hooks() if h.handed is not None]
    packages: set[str] = set()
    for h in handed:
        api = catalogue.type(h.type)
        packages |= {name.split(".", 1)[0] for name in (h.type, *(api.aliases if api is not None else ()))}
    imported = any(v.split(".", 1)[0] in packages for v in imports.aliases.values())
    if not imported and not any(c.api and catalogue.handed_hook(c.api) for c in classes.values()):
        return {}  # nothing names the framework's type: no call can hand it a function (the walk is skipped)
    finder = _Finder(catalogue, imports, functions, classes)
    finder.visit(module)
    found = finder.found
    for cls, hook, position in finder.forwarding:
        family = [cls, *cls.subclasses]
        for call in (n for n in breadth_first(module) if isinstance(n, ast.Call)):
            arg = call.args[position] if 0 <= position < len(call.args) else None
            if not isinstance(arg, ast.Attribute):
                continue
            for info in family:
                fn = info.methods.get(arg.attr)
                if fn is not None and _static(fn):
                    found.setdefault(id(fn), Handed(fn, info, hook, False, True))
    return found
