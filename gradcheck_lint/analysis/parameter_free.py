"""Modules of a class read that hold no parameter: calling one builds no graph of its own.

Calling a module is taken to run its parameters, so its result holds a graph even when its inputs hold none. For a
class read whose objects provably hold no parameter (a fairness penalty, a loss of plain tensor arithmetic: FairBiNN's
`DemographicParityLoss(nn.Module)` whose `__init__` stores numbers and `torch.zeros(...)` matrices), that is a fact
assumed and wrong: its result holds the graphs of its inputs and nothing else, so a loss it computes on predictions
made under `torch.no_grad()` holds none.

Proven, not guessed: every base, transitively, is a class of the project or `nn.Module` (or a library loss base,
which holds none either); no method registers a parameter or a module (`nn.Parameter`, `register_parameter`,
`add_module`, `setattr`); and everything any method stores on `self` is data: literals, arithmetic, what another
store put on `self`, parameters of the method with a literal default, locals bound only to data, and calls the
catalogue models as making data (`torch.zeros`, `len`, `torch.device`, a constructor of a type that is no module),
with no `requires_grad=True`. Anything else (a parameter with no default, which may be a module handed in; a call
not modelled) leaves the class as before.
"""

from __future__ import annotations

import ast

from .apimodels import Catalogue
from .definitions import ClassInfo, Definitions
from .names import ImportMap, last_name
from .syntax import FUNCTIONS
from .walk import breadth_first

# the bases whose objects hold no parameter of their own
_ROOTS = ("torch.nn.Module", "torch.nn.modules.loss._Loss", "torch.nn.modules.loss._WeightedLoss")
# calls that give a module a parameter or a part (a part may hold parameters)
_REGISTERS = frozenset({"Parameter", "ParameterList", "ParameterDict", "UninitializedParameter", "register_parameter",
                        "add_module", "register_module", "setattr", "__setattr__", "ModuleList", "ModuleDict",
                        "Sequential", "load_state_dict", "apply"})
# what a call the catalogue models makes, when that is data (never a module, an optimizer or a parameter)
_DATA_EFFECTS = frozenset({"inert", "constant", "number", "detach"})
# methods of a tensor (or a number, a list, a dict of data) whose result is data again
_DATA_METHODS = frozenset({"to", "cuda", "cpu", "float", "double", "half", "long", "int", "bool", "view", "reshape",
                           "unsqueeze", "squeeze", "t", "clone", "detach", "item", "tolist", "numpy", "size",
                           "index", "copy", "keys", "values", "items", "get", "split", "strip", "lower", "upper",
                           "format", "flatten", "type", "sum", "mean", "max", "min"})
_NOT_DATA = ("torch.nn.Module", "torch.optim.Optimizer", "torch.nn.Parameter")  # what a constructor may make
_DEPTH = 4  # locals bound to locals bound to ...: how far a name is followed


def holds_no_parameters(definitions: Definitions, info: ClassInfo) -> bool:
    """Objects of `info` (a module class read) provably hold no parameter: see the module's docstring."""
    if not info.is_module or not definitions.only_extends(info, _ROOTS):
        return False
    lineage = (info, *definitions.ancestors(info))
    for cls in lineage:
        home = cls.home or definitions
        reader = _Reader(home.catalogue, home.imports)
        if not all(reader.method_is_clean(fn) for fn in cls.methods.values()):
            return False
    # what the class reads of itself is stored in sight (or is a method, or `nn.Module`'s own): an attribute read
    # but never stored is set from outside (`loss_fn.net = model`), nothing says what
    methods = {name for cls in lineage for name in cls.methods}
    stored = {t.attr for cls in lineage for fn in cls.methods.values() for t in _self_targets(fn)}
    catalogue = definitions.catalogue
    for cls in lineage:
        for fn in cls.methods.values():
            for attr in _self_reads(fn):
                if attr not in stored and attr not in methods and attr not in _MODULE_STATE \
                        and catalogue.method("torch.nn.Module", attr) is None:
                    return False
    return True


# what `nn.Module.__init__` sets on every module
_MODULE_STATE = frozenset({"training", "__class__", "__dict__"})


def _self_targets(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.Attribute]:
    """The `self.<attr>` the method binds (assignments, unpacking, augmented assignments)."""
    if not fn.args.args:
        return []
    me = fn.args.args[0].arg
    return [n for n in breadth_first(fn) if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Store)
            and isinstance(n.value, ast.Name) and n.value.id == me]


def _self_reads(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    """The attributes of `self` the method reads (`self.M`, `self.alpha`)."""
    if not fn.args.args:
        return set()
    me = fn.args.args[0].arg
    return {n.attr for n in breadth_first(fn) if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Load)
            and isinstance(n.value, ast.Name) and n.value.id == me}


class _Reader:
    """What the methods of one class store on `self`, read with the imports of the class's own file."""

    def __init__(self, catalogue: Catalogue, imports: ImportMap) -> None:
        self.catalogue = catalogue
        self.imports = imports

    def method_is_clean(self, fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
        if not fn.args.args:
            return True  # a static method: it stores on no `self`
        me = fn.args.args[0].arg
        defaults = _literal_defaults(fn)
        bound = _local_bindings(fn)
        for node in breadth_first(fn):
            if isinstance(node, ast.Call) and last_name(node.func) in _REGISTERS:
                return False
            if isinstance(node, FUNCTIONS + (ast.Lambda, ast.ClassDef)) and node is not fn:
                continue
            stored = _stored_on(node, me)
            if stored is not None and not self._data(stored, me, defaults, bound, _DEPTH):
                return False
        return True

    def _data(self, expr: ast.expr, me: str, defaults: frozenset[str], bound: dict[str, list[ast.expr]],
              depth: int) -> bool:
        """`expr` is data: no module, optimizer or parameter can come out of it."""
        if depth < 0:
            return False
        called = {id(n.func) for n in breadth_first(expr) if isinstance(n, ast.Call)}
        for node in breadth_first(expr):
            if id(node) in called and isinstance(node, ast.Name):
                continue  # a function's name: the call is judged as a whole (`_data_call`)
            if isinstance(node, (ast.Lambda, ast.NamedExpr, ast.Await, ast.Yield, ast.YieldFrom)):
                return False
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                if node.id == me or node.id in defaults or node.id in ("True", "False", "None"):
                    continue
                values = bound.get(node.id)
                if values is None and self._importable(node.id):
                    continue  # a module's name (`torch`, `math`), read through, or a constant of this file
                if not values or not all(self._data(v, me, defaults, bound, depth - 1) for v in values):
                    return False
            elif isinstance(node, ast.Call) and not self._data_call(node):
                return False
        return True

    def _importable(self, name: str) -> bool:
        """A name the file imports, or a module-level constant written in capitals (`EPS`, `N_CLASSES`)."""
        return name in self.imports.aliases or (name.isupper() and len(name) > 1)

    def _data_call(self, call: ast.Call) -> bool:
        if any(k.arg == "requires_grad" and not (isinstance(k.value, ast.Constant) and not k.value.value)
               for k in call.keywords):
            return False
        func = call.func
        if isinstance(func, ast.Attribute) and func.attr in _DATA_METHODS and self.imports.qualify(func) is None:
            return True  # `self.M.to(device)`, `sensitive.view(-1)`: the receiver is checked as part of the store
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Call):
            return func.attr in _DATA_METHODS  # `torch.zeros(3).cuda()`
        name = self.imports.qualify(func) if isinstance(func, (ast.Name, ast.Attribute)) else None
        if name is None:
            return False
        if isinstance(func, ast.Name) and func.id not in self.imports.aliases:
            name = func.id  # a builtin (`len`, `float`, `list`)
        model = self.catalogue.call(name)
        if model is None:
            return name in _BUILTIN_DATA
        for effect in model.effects:
            if effect.kind in _DATA_EFFECTS:
                continue
            made = effect.value("type") if effect.kind == "construct" else None
            if not isinstance(made, str) or any(self.catalogue.is_a(made, t) for t in _NOT_DATA):
                return False
        return True


# builtins of plain data the catalogue need not model (their results hold no module)
_BUILTIN_DATA = frozenset({"list", "tuple", "dict", "set", "frozenset", "bool", "abs", "min", "max", "sum", "round",
                           "sorted", "reversed", "enumerate", "zip", "map", "filter", "divmod", "pow", "any", "all",
                           "len", "int", "float", "str", "range"})


def _stored_on(node: ast.AST, me: str) -> ast.expr | None:
    """What the statement stores on the object (`self.x = value`, `self.x += value`, `self.a, self.b = value`)."""
    if isinstance(node, ast.Assign):
        if any(_on(t, me) for t in node.targets):
            return node.value
    elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
        if node.value is not None and _on(node.target, me):
            return node.value
    return None


def _on(target: ast.expr, me: str) -> bool:
    """The target names an attribute of the object itself (`self.x`), or unpacks into one."""
    if isinstance(target, (ast.Tuple, ast.List)):
        return any(_on(t, me) for t in target.elts)
    if isinstance(target, ast.Starred):
        return _on(target.value, me)
    return isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == me


def _literal_defaults(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> frozenset[str]:
    """Parameters whose default is a literal (`alpha=1`, `classes=[0, 1]`, `eps=1e-6`): numbers and settings, never
    a module handed in."""
    args = fn.args
    positional = [*args.posonlyargs, *args.args]
    pairs = list(zip(positional[len(positional) - len(args.defaults):], args.defaults))
    pairs += [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None]
    return frozenset(a.arg for a, d in pairs if _literal(d))


def _literal(node: ast.expr) -> bool:
    try:
        ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False
    return True


def _local_bindings(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> dict[str, list[ast.expr]]:
    """What each local name of the method is bound to (a loop's name: its iterable; a comprehension's: its)."""
    out: dict[str, list[ast.expr]] = {}
    for node in breadth_first(fn):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                for name in _names(target):
                    out.setdefault(name, []).append(node.value)
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)) and node.value is not None:
            for name in _names(node.target):
                out.setdefault(name, []).append(node.value)
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
            for name in _names(node.target):
                out.setdefault(name, []).append(node.iter)
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                if item.optional_vars is not None:
                    for name in _names(item.optional_vars):
                        out.setdefault(name, []).append(item.context_expr)
    return out


def _names(target: ast.expr) -> list[str]:
    return [n.id for n in breadth_first(target) if isinstance(n, ast.Name)]
