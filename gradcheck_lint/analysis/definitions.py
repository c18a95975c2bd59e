"""The functions and classes a module defines: class hierarchy, framework bases, abstract stubs."""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field

from . import named_tuples
from .apimodels import Catalogue, Hook
from .flow import Function
from .names import ImportMap, dotted, last_name
from .syntax import FUNCTIONS
from .walk import breadth_first

_TRIES: tuple[type, ...] = (ast.Try, getattr(ast, "TryStar", ast.Try))


@dataclass
class ClassInfo:
    """A class of the module: its methods, local parents, and the framework type it extends."""

    node: ast.ClassDef
    name: str
    bases: tuple[str, ...]
    methods: dict[str, Function]
    is_module: bool = False
    api: str = ""  # the nearest catalogue type among its bases (`lightning.pytorch.LightningModule`)
    manual_optimization: bool = False
    subclasses: list[ClassInfo] = field(default_factory=list)
    # the definitions of the file that holds the class: its base names are names of that file (a class of another
    # file of the project extends a class its own file defines or imports, which the checked file may not know)
    home: Definitions | None = field(default=None, repr=False, compare=False)


def is_property(fn: Function) -> bool:
    """`@property` or `@functools.cached_property` on the function: reading the attribute runs it."""
    return any(last_name(d) in ("property", "cached_property") for d in fn.decorator_list)


def is_abstract(fn: Function) -> bool:
    """A stub a subclass overrides: declared `@abstractmethod` (whatever its body: `pass`, `...`), or only raising
    NotImplementedError (after an optional docstring)."""
    if any(last_name(d) == "abstractmethod" for d in fn.decorator_list):
        return True
    name = _only_raises(fn)
    return name is not None and name.rsplit(".", 1)[-1] == "NotImplementedError"


def raises_only(fn: Function) -> bool:
    """A method whose body only raises (after an optional docstring), whatever the exception: on an object
    known only by the class it is annotated with, a placeholder a subclass overrides (maml_tryout's
    `raise RuntimeError('Subclass and implement this function')`), not what the object runs."""
    return _only_raises(fn) is not None


def _only_raises(fn: Function) -> str | None:
    body = [s for s in fn.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    if len(body) != 1 or not isinstance(body[0], ast.Raise) or body[0].exc is None:
        return None
    exc = body[0].exc
    return dotted(exc.func) if isinstance(exc, ast.Call) else dotted(exc)


class Definitions:
    """Every module-level function and class, with the classes' place in the hierarchy."""

    def __init__(self, module: ast.Module, imports: ImportMap, catalogue: Catalogue,
                 foreign: Callable[[str], ClassInfo | None] | None = None) -> None:
        """`foreign`: the class of another project file a qualified base name names (`gradcheck_lint.project`)."""
        self.catalogue = catalogue
        self.foreign = foreign
        self.imports = imports  # how the file's names qualify (`nn.Parameter` -> `torch.nn.Parameter`)
        self.functions: dict[str, Function] = {}
        self.classes: dict[str, ClassInfo] = {}
        self._stores: dict[str, dict[str, list[ast.expr]]] = {}  # class -> attribute -> what `self.attr = ...` stores
        # named tuple classes (`LossTuple = namedtuple(...)`, `class Losses(NamedTuple)`) -> their fields
        self.named_tuples = named_tuples.defined(toplevel_statements(module.body), imports)
        for stmt in toplevel_statements(module.body):
            if isinstance(stmt, FUNCTIONS):
                self.functions[stmt.name] = stmt
            elif isinstance(stmt, ast.ClassDef):
                methods = {s.name: s for s in stmt.body if isinstance(s, FUNCTIONS)}
                bases = tuple(filter(None, (imports.qualify(a) for a in stmt.bases)))
                self.classes[stmt.name] = ClassInfo(
                    stmt, stmt.name, bases, methods, home=self)  # type: ignore[arg-type]
        self._resolve_hierarchy(imports)

    def _resolve_hierarchy(self, imports: ImportMap) -> None:
        cat = self.catalogue
        for info in self.classes.values():
            for base in info.bases:
                parent = self.classes.get(base.rsplit(".", 1)[-1])
                if parent is not None and parent is not info:
                    parent.subclasses.append(info)
                    continue
                head = base.split(".", 1)[0]
                known = cat.type(base) is not None
                if not known and self.foreign is not None:
                    other = self.foreign(base)  # `class Trainer(BaseTrainer)` of another file of the project
                    if other is not None:
                        if other.api and not info.api:
                            info.api = other.api
                        continue
                bare = None if known or head in imports.aliases else cat.bare_type(base)
                if bare is not None:  # `from pytorch_lightning import *`: named with no import
                    base, known = bare, True
                if known and not info.api:
                    info.api = cat.canonical(base)
        changed = True
        while changed:  # what a local parent extends, its children extend (transitively)
            changed = False
            for info in self.classes.values():
                for child in info.subclasses:
                    if info.api and not child.api:
                        child.api = info.api
                        changed = True
        for info in self.classes.values():
            info.is_module = bool(info.api) and cat.is_a(info.api, "torch.nn.Module")
            hook = self.hook_flag(info)
            if hook is not None:
                lineage = [info, *self.ancestors(info)]
                info.manual_optimization = any(_sets_false(c.node, hook.manual_flag) for c in lineage) or (
                    _calls_manual_only(lineage, hook))

    def hook_flag(self, info: ClassInfo) -> Hook | None:
        """The framework hook whose `manual_flag` the class may set (Lightning's automatic_optimization)."""
        if not info.api:
            return None
        for hook in self.catalogue.hooks():
            if hook.manual_flag and self.catalogue.is_a(info.api, hook.type):
                return hook
        return None

    def ancestors(self, info: ClassInfo) -> Iterable[ClassInfo]:
        return (parent for _base, parent in self._bases(info) if parent is not None)

    def _bases(self, info: ClassInfo) -> Iterator[tuple[str, ClassInfo | None]]:
        """Every base name of the class and of its project ancestors, with the class of the project it names (None:
        none, a library's or unknown); each class is walked once, by definition, not name: `class
        Trainer(basic.Trainer)` extends another `Trainer`."""
        seen = {id(info.node)}
        todo = [info]
        while todo:
            current = todo.pop()
            for base in current.bases:
                parent = self._parent(base, current)
                if parent is None:
                    yield base, None
                elif id(parent.node) not in seen:
                    seen.add(id(parent.node))
                    yield base, parent
                    todo.append(parent)

    def _parent(self, base: str, child: ClassInfo) -> ClassInfo | None:
        """The class a base name of `child` names: a class of this file by its name, unless the name is qualified
        (`plato.trainers.basic.Trainer`) and names a class of another file of the project; never `child` itself.
        A class of another file names its bases in its own file (`class Waifu2xEnv(I2IEnv)` of `env.py`)."""
        if child.home is not None and child.home is not self:
            return child.home._parent(base, child)
        local = self.classes.get(base.rsplit(".", 1)[-1])
        if local is child:
            local = None
        if local is not None and "." not in base:
            return local
        found = self.foreign(base) if self.foreign is not None else None
        return found if found is not None else local

    def plain(self, info: ClassInfo) -> bool:
        """A class known to be a plain object: every base, transitively, is `object` or a class of the
        project known to be plain (a base of an installed package outside the catalogue may be a module)."""
        return all(base in ("object", "builtins.object") or parent is not None and not parent.api
                   for base, parent in self._bases(info))

    def only_extends(self, info: ClassInfo, roots: Iterable[str]) -> bool:
        """Every base of the class, transitively, is a class of the project or one of the catalogue types
        `roots` (canonical names): nothing the class inherits comes from code not read but those types."""
        allowed = {self.catalogue.canonical(r) for r in roots}
        known = self.catalogue
        return all(parent is not None or known.type(base) is not None and known.canonical(base) in allowed
                   for base, parent in self._bases(info))

    def find_method(self, info: ClassInfo | None, name: str) -> Function | None:
        """The method `name` as the class resolves it (its own, then its local parents')."""
        if info is None:
            return None
        if name in info.methods:
            return info.methods[name]
        for parent in self.ancestors(info):
            if name in parent.methods:
                return parent.methods[name]
        return None

    def find_property(self, info: ClassInfo | None, name: str) -> Function | None:
        """The getter of the property `name` as the class resolves it (its own, then its parents', in any
        file of the project); None when the name is a plain method, an abstract stub, or not defined."""
        if info is None:
            return None
        for owner in (info, *self.ancestors(info)):
            for stmt in owner.node.body:
                if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and stmt.name == name:
                    if is_property(stmt):
                        return None if is_abstract(stmt) else stmt
            if name in owner.methods:
                return None
        return None

    def stored_functions(self, info: ClassInfo | None, attr: str) -> list[Function]:
        """The module's functions a method of the class (or of a base here) stores as `self.attr`
        (`self.disc_loss = hinge_d_loss` in `__init__`, or one of two by a conditional expression): calling
        `self.attr(...)` runs one of them. Empty
        when anything else is ever stored there (a module, a lambda, a function of unknown origin)."""
        found: list[Function] = []
        for cls in (info, *self.ancestors(info)) if info is not None else ():
            if self.classes.get(cls.name) is not cls:
                continue  # a base of another file stores the functions of its own module
            for value in self._self_stores(cls).get(attr, ()):
                # (`self.disc_loss = hinge_d_loss if kind == "hinge" else vanilla_d_loss`: either)
                choices = [value.body, value.orelse] if isinstance(value, ast.IfExp) else [value]
                for choice in choices:
                    fn = self.functions.get(choice.id) if isinstance(choice, ast.Name) else None
                    if fn is None:
                        return []
                    if fn not in found:
                        found.append(fn)
        return found

    def _self_stores(self, cls: ClassInfo) -> dict[str, list[ast.expr]]:
        """What the class's methods assign to `self.<attr>`, by attribute, in the order of their code
        (one walk of the class per file: `stored_functions` is asked at every `self.<attr>(...)` call)."""
        stores = self._stores.get(cls.name)
        if stores is None:
            stores = self._stores[cls.name] = {}
            for method in cls.methods.values():
                for node in breadth_first(method):
                    if isinstance(node, ast.Assign):
                        for target in node.targets:
                            if (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name)
                                    and target.value.id == "self"):
                                stores.setdefault(target.attr, []).append(node.value)
        return stores

    def owner_of(self, fn: Function) -> ClassInfo | None:
        for info in self.classes.values():
            if any(m is fn for m in info.methods.values()):
                return info
        return None


def toplevel_statements(body: Sequence[ast.AST]) -> Iterable[ast.AST]:
    """Module-level statements, looking into `if`/`try` blocks (e.g. `if __name__ == '__main__':`)."""
    for stmt in body:
        yield stmt
        if isinstance(stmt, ast.If):
            yield from toplevel_statements(stmt.body)
            yield from toplevel_statements(stmt.orelse)
        elif isinstance(stmt, _TRIES):
            yield from toplevel_statements(stmt.body)


def _sets_false(cls: ast.ClassDef, flag: str) -> bool:
    """`self.<flag> = False` in a method, `<flag> = False` in the class body, or a property returning False."""
    for node in breadth_first(cls):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and node.value.value is False:
            for target in node.targets:
                text = dotted(target)
                if text in (flag, f"self.{flag}"):
                    return True
        elif isinstance(node, FUNCTIONS) and node.name == flag:
            returns = [s for s in breadth_first(node) if isinstance(s, ast.Return)]
            if returns and all(isinstance(r.value, ast.Constant) and r.value.value is False for r in returns):
                return True
    return False


def _calls_manual_only(lineage: Sequence[ClassInfo], hook: Hook) -> bool:
    """Whether the class (with its ancestors) calls one of the hook's `manual_only` methods on `self` and never reads
    its `manual_flag`: it runs only under manual optimization, the flag set out of sight (a subclass of another file,
    a constructor's argument); a class that reads the flag may run either way."""
    if not hook.manual_only:
        return False
    calls = False
    for info in lineage:
        for node in breadth_first(info.node):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
                if node.attr == hook.manual_flag and isinstance(node.ctx, ast.Load):
                    return False
            elif isinstance(node, FUNCTIONS) and node.name == hook.manual_flag \
                    and not _sets_false(info.node, hook.manual_flag):
                return False  # a property computing the flag
            elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                  and node.func.attr in hook.manual_only
                  and isinstance(node.func.value, ast.Name) and node.func.value.id == "self"):
                calls = True
    return calls
