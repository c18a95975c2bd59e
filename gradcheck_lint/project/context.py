"""One file's view of its project during its analysis: calls into other files of the project run there.

A function or class of another project file, named through an import, is followed the way a function
of the same file is: the interpreter inlines it at the call site (`analysis.inlining`), with the
caller's values bound, while the names inside it resolve against *its* module (its imports, functions,
classes, the evidence of its own names). What it does to gradients and optimizers (backward, clear,
step, scale, detach, DDP/FSDP wrapping, no_sync), what it returns (a graph or a number, a divided
loss, a wrapper, an optimizer over which parameters) and which arguments it touches are thereby
computed from its code, per call site; a function that cannot be read (a syntax error, too large, too
deep) stays an opaque call, which the rules treat as an assumption, never as a fact.

The view records which files were read (with their content digests: the result cache checks them)
and, for each function of another file, the call that first entered it, so that a finding anchored
inside another file is reported at the call in this file, naming the other file's line.
"""

from __future__ import annotations

import ast
import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..analysis.conventions import convention
from ..analysis.definitions import ClassInfo, Definitions
from ..analysis.flow import Function
from ..analysis.graph_cuts import may_cut_graphs
from ..analysis.names import ImportMap
from ..analysis.prescan import Prescan
from ..analysis.walk import breadth_first
from .caller_gates import CallerGate, caller_gates
from .index import ForeignModule, ProjectIndex, absolute_imports, module_identity, star_imports

if TYPE_CHECKING:
    from ..analysis.apimodels import Catalogue
    from ..analysis.interpreter import Interpreter

__all__ = ["Evidence", "ProjectView"]

# What the interpreter knows of the module whose code runs: swapped when a call crosses into another file.
_SWAPPED = ("imports", "definitions", "functions", "classes", "prescan", "called_names", "called_attrs",
            "model_refs", "optimizer_refs", "windows", "module_env")
MAX_FOREIGN_DEPTH = 3  # files deep a chain of calls is followed
# A function of another file that touches no gradient (its module's prescan says so) is followed only when
# it is this small (statements and expressions): a loss or a wrapper helper, not a data pipeline. A constructor is
# followed whatever its size (within the budgets below): which model each optimizer it builds steps is read there.
MAX_INERT_NODES = 400
# Statements interpreted in other files' code, over one analysis, past which calls into them stay opaque:
# code followed in a loop's fixpoint runs again on each iteration and path (keeps a file under 1 s).
FOREIGN_WORK_BUDGET = 1_000
# ... and within one call from this file: past it the calls it makes in turn stay opaque.
FOREIGN_CALL_BUDGET = 300
# Past this, even a function followed before stays opaque (see `ProjectView.follows`).
FOREIGN_WORK_CAP = 4 * FOREIGN_WORK_BUDGET



@dataclass(frozen=True, slots=True)
class Evidence:
    """A place in another file of the project that a finding rests on."""

    path: str  # as reported: the checked file's reported directory joined with the path from there
    shown: str  # relative to the checked file's directory (`losses.py`, `../utils/opt.py`)
    line: int
    column: int
    end_line: int
    end_column: int
    text: str


class _ModuleContext:
    """What the interpreter reads of one project module while its code runs."""

    def __init__(self, module: ForeignModule, catalogue: Catalogue, resolve_class: Any) -> None:
        """Built once per module content and catalogue, kept on the module (`shared_context`)."""
        self.module = module
        self.imports = module.imports
        self.definitions = Definitions(module.tree, module.imports, catalogue, foreign=resolve_class)
        self.functions = self.definitions.functions
        self.classes = self.definitions.classes
        scan = Prescan(module.tree, catalogue, module.imports)
        self.prescan = scan
        self.called_names, self.called_attrs = scan.called_names, scan.called_attrs
        self.model_refs, self.optimizer_refs = scan.evidence()
        self.windows = {k: frozenset(v) for k, v in scan.windows.items()}
        self.module_env: dict[str, Any] = {}


class ProjectView:
    """The project as seen from the file being analysed (one per analysis)."""

    def __init__(self, index: ProjectIndex, path: str, catalogue: Catalogue, used: dict[str, str] | None = None) -> None:
        self.index = index
        self.path = path  # as reported
        self.abs = os.path.abspath(path)
        self.home_base, name, is_init = module_identity(self.abs)
        self.package = name if is_init else name.rpartition(".")[0]
        self.catalogue = catalogue
        self.packages = frozenset(catalogue._packages) | frozenset(catalogue._foreign)
        self.current: ForeignModule | None = None  # None: the checked file's own code runs
        self._home: dict[str, Any] | None = None
        self._contexts: dict[int, _ModuleContext] = {}
        self._globals: dict[int, dict[str, Any]] = {}  # module globals another file's code made in this analysis
        self._fn_module: dict[int, ForeignModule | None] = {}
        self._cuts: dict[int, bool] = {}  # id of a function of another file -> whether it may cut graphs
        self._builds: dict[int, bool] = {}  # ... -> whether its own body builds an optimizer (`_builds_optimizer`)
        self.entry: dict[int, ast.AST] = {}  # id of a function of another file -> the call that first entered it
        self.inner_entry: dict[int, ast.AST] = {}  # ... called from that file itself: the call there
        self.used: dict[str, str] = used if used is not None else {}  # absolute path -> content digest of every other file read
        self.depth = 0
        # uids of the models, optimizers, wrappers... made by code of another file (`utils.wrap(model)`'s DDP):
        # a fact read there, through the summary of a call; the certainty of a finding resting on one can say so
        self.made_elsewhere: set[int] = set()
        self.work = 0  # statements interpreted in other files' code (see FOREIGN_WORK_BUDGET)
        self.started = 0  # the interpreter's work count when the current call from this file entered another

    # ------------------------------------------------------------------ set-up
    def home_imports(self, module: ast.Module) -> ImportMap:
        """The checked file's imports with relative ones made absolute (`from .losses import f`)."""
        imports = absolute_imports(module, self.package)
        stars = star_imports(module, self.package)
        if stars:
            own = frozenset(n.name for n in module.body
                            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)))
            self.index.merge_star_aliases(imports, stars, self.home_base, own)
        return imports

    def home_class_resolver(self) -> Any:
        return self._class_resolver(self.home_base)

    def attach(self, interp: Interpreter) -> None:
        """Remember the checked file's own context (restored when a call returns from another file)."""
        self._home = {k: getattr(interp, k) for k in _SWAPPED}

    def _class_resolver(self, base_dir: str) -> Any:
        return _class_resolver(self.index, base_dir, self.catalogue, self.packages, self)

    def context(self, module: ForeignModule) -> _ModuleContext:
        ctx = self._contexts.get(id(module))
        if ctx is None:
            ctx = self._contexts[id(module)] = shared_context(self.index, module, self.catalogue, self.packages)
            self.used[module.path] = module.digest
        return ctx

    def class_info(self, module: ForeignModule, name: str) -> ClassInfo | None:
        self.used[module.path] = module.digest
        return self.context(module).classes.get(name)

    def noting_mint(self, mint: Any) -> Any:
        """`Objects.mint`, noting the entities made while code of another file runs (`made_elsewhere`)."""
        def noted(*args: Any, **kwargs: Any) -> Any:
            ent = mint(*args, **kwargs)
            if self.current is not None:
                self.made_elsewhere.add(ent.uid)
            return ent
        return noted

    def caller_gates(self, method: str, position: int, param: str) -> list[CallerGate]:
        """The accumulation gates of other project files' loops that set the flag they hand to `method`
        as this parameter (`caller_gates`); the files they were read in count as read."""
        found = caller_gates(self.index, self.abs, method, position, param)
        for gate in found:
            module = self.index.load(gate.path)
            if module is not None:
                self.used[module.path] = module.digest
        return found

    def shown(self, path: str) -> str:
        """Another project file as named from the checked file's directory (`../train.py`)."""
        return os.path.relpath(path, os.path.dirname(self.abs)).replace(os.sep, "/")

    # ------------------------------------------------------------------ names
    def target(self, qual: str) -> tuple[Function | None, ClassInfo | None] | None:
        """What a qualified name used in the code now running names in the project: (a function, None),
        (a method, its class), (None, a class); None when it is no project definition."""
        base = self.current.base_dir if self.current is not None else self.home_base
        found = self.index.resolve(qual, base, self.packages)
        if found is None and self.current is None and os.path.dirname(self.abs) != base:
            # a script inside a package's folder, run as `python folder/script.py`: its own folder comes
            # first on the import path (`from utils import train` names folder/utils.py)
            found = self.index.resolve(qual, os.path.dirname(self.abs), self.packages)
        if found is None or (self.current is None and found.module.path == self.abs):
            return None
        module = found.module
        if found.function is not None:
            self.used[module.path] = module.digest
            return found.function, None
        info = self.class_info(module, found.class_name or "")
        if info is None:
            return None
        if found.method is None:
            return None, info
        method = self.context(module).definitions.find_method(info, found.method)
        return (method, info) if method is not None else None

    def module_of(self, fn: ast.AST) -> ForeignModule | None:
        """The other project file a function (or method) was read from; None for the checked file's own."""
        key = id(fn)
        if key in self._fn_module:
            return self._fn_module[key]
        found = None
        for ctx in self._contexts.values():
            if ctx.module.holds(fn):
                found = ctx.module
                break
        else:
            for _, module in self.index._files.values():
                if module is not None and module.holds(fn):
                    found = module
                    break
        self._fn_module[key] = found
        return found

    def cuts_graphs(self, fn: Function) -> bool | None:
        """Whether a function of another file may cut graphs (`graph_cuts`), read once with its own file's imports;
        None for the checked file's own function."""
        module = self.module_of(fn)
        if module is None:
            return None
        known = self._cuts.get(id(fn))
        if known is None:
            known = self._cuts[id(fn)] = may_cut_graphs(fn, self.context(module).imports.qualify, self.catalogue)
        return known

    def prescan_of(self, fn: ast.AST) -> Prescan | None:
        """The prescan of the other project file that defines `fn` (None: the checked file's own): what
        that file's functions of a name can do is read in that file."""
        module = self.module_of(fn)
        return self.context(module).prescan if module is not None else None

    def is_foreign(self, node: ast.AST) -> bool:
        return self.module_of_node(node) is not None

    def module_of_node(self, node: ast.AST) -> ForeignModule | None:
        for ctx in self._contexts.values():
            if ctx.module.holds(node):
                return ctx.module
        return None

    def parent(self, node: ast.AST) -> ast.AST | None:
        module = self.module_of_node(node)
        return module.parents.get(id(node)) if module is not None else None

    def class_named(self, name: str) -> ClassInfo | None:
        """A class of another file made here (`Value(const=("instance", name))` of `instantiate`), or of the checked
        file while another file's code runs (a mixin's `self.agents[i].step(obs)` of objects the checked file's
        `__init__` made)."""
        for ctx in self._contexts.values():
            info = ctx.classes.get(name)
            if info is not None:
                return info
        home = self._home.get("classes") if self.current is not None and self._home is not None else None
        found = home.get(name) if isinstance(home, dict) else None
        return found if isinstance(found, ClassInfo) else None

    def class_source(self, name: str) -> tuple[ast.ClassDef, Any] | None:
        """The definition of a class of another file read here (by its name, qualified or not), with the
        qualifier of that file's imports (`nn.Linear` -> `torch.nn.Linear` as *its* imports say)."""
        short = name.rpartition(".")[2]
        for ctx in self._contexts.values():
            info = ctx.classes.get(short)
            if info is not None:
                return info.node, ctx.imports.qualify
        if "." not in name:
            return None
        # a class of a file no call read, found by its qualified name (`models.encoder.Encoder`, built in the
        # `__init__` of a class that was read): its definition is read, not run
        base = self.current.base_dir if self.current is not None else self.home_base
        found = self.index.resolve(name, base, self.packages)
        if found is None or found.class_name is None or found.method is not None:
            return None
        return found.module.class_nodes[found.class_name], found.module.imports.qualify

    def global_value(self, interp: Interpreter, qual: str) -> Any:
        """The value of a name another file of the project binds once in its top-level code (`criterion =
        nn.MSELoss()` of `config.py`, read as `config.criterion` or imported): its expression evaluated in that
        file's context, once per analysis, so that every reader sees one object. None when `qual` names no
        such binding (a function, a class, an installed package's name, one bound twice)."""
        base = self.current.base_dir if self.current is not None else self.home_base
        found = self.index.resolve(qual, base, self.packages)
        if found is None or found.variable is None or self._home is None \
                or (self.current is None and found.module.path == self.abs):
            return None
        return self.module_global(interp, found.module, found.variable)

    def module_global(self, interp: Interpreter, module: ForeignModule, name: str) -> Any:
        """The value of `name`, bound once in the top-level code of `module` (another file of the project): its
        expression evaluated in that file's context, once per analysis (None past the depth of files read). Also
        for that file's own code run here (`self.accelerate = accelerator` of `accelerator = Accelerator()` there)."""
        if name not in module.globals or self._home is None:
            return None
        env = self._globals.setdefault(id(module), {})
        if name in env:
            return env[name]
        if self.depth >= MAX_FOREIGN_DEPTH:
            return None
        from ..analysis.flow import Flow, Frame
        from ..analysis.values import OPAQUE

        env[name] = OPAQUE  # (read while it is evaluated: a cycle of imports)
        self.used[module.path] = module.digest
        with self._in_module(interp, module):
            top = Frame(function=None, cls=None, self_value=None, depth=0, local_defs={})
            env[name] = interp.eval(module.globals[name], Flow({}, frozenset()), top)
        return env[name]

    # ------------------------------------------------------------------ running code of another file
    @contextlib.contextmanager
    def entered(self, interp: Interpreter, fn: Function, call: ast.AST | None) -> Iterator[bool]:
        """Run `fn` in the context of the module that defines it; yield False when it may not run
        (a chain of calls too many files deep: the caller treats it as opaque)."""
        module = self.module_of(fn)
        if not self.follows(interp, fn):
            yield False
            return
        if module is not None and call is not None and module is self.current:
            # a call inside that file, `outer` calling `inner` there: `anchor` climbs the chain back through it (kept
            # apart from `entry`, which also says what `follows` reads again past the budgets)
            self.inner_entry.setdefault(id(fn), call)
        if module is self.current or self._home is None:
            yield True
            return
        if module is not None and call is not None:
            self.entry.setdefault(id(fn), call)
        with self._in_module(interp, module):
            yield True

    @contextlib.contextmanager
    def _in_module(self, interp: Interpreter, module: ForeignModule | None) -> Iterator[None]:
        """The interpreter switched to `module`'s context (None: the checked file's), and back."""
        if module is self.current:
            yield
            return
        saved = {k: getattr(interp, k) for k in _SWAPPED}
        if self.current is None:
            self._home = saved  # the checked file's context as it is now (its module globals once run)
        outer, self.current = self.current, module
        values = (self._home or saved) if module is None else vars(self.context(module))
        for k in _SWAPPED:
            setattr(interp, k, values[k])
        if module is not None:
            interp.module_env = self._globals.setdefault(id(module), {})  # this analysis's own objects
            interp.boolparts.include(module.tree)  # its `and`/`or` tests' shared parts (`boolparts`)
        self.depth += module is not None
        started = interp.work
        if outer is None and module is not None:
            self.started = started
        try:
            yield
        finally:
            self.depth -= module is not None
            if module is not None and outer is None:
                # other files' code is charged to its own budget, not to the file's (`WORK_BUDGET`)
                self.work += interp.work - started
                interp.work = started
            self.current = outer
            for k, v in saved.items():
                setattr(interp, k, v)

    def follows(self, interp: Interpreter, fn: Function) -> bool:
        """Whether a call of `fn` would run (`entered`): not past a budget, not too many files deep."""
        # A function followed once (entered from this file or from another file's code) is followed again past the
        # budgets (up to FOREIGN_WORK_CAP): a loop's fixpoint
        # runs its calls once per iteration, and reading one call two ways on two iterations (followed, then
        # opaque or read from use) mixes two objects for one (neural_sp's scheduler: its optimizer, then itself).
        # So is one that may touch gradients (a clear, a step in a helper method): the budgets are spent on what
        # the rules read; past them, the calls that stay opaque are those of code that touches no gradient
        # (a loss, a model's construction, logging)
        module = self.module_of(fn)
        if module is None and self.current is None:
            return True  # the checked file's own code, called from itself
        inside = interp.work - self.started if self.current is not None else 0
        if self.work > FOREIGN_WORK_CAP or inside > FOREIGN_WORK_CAP:
            return False
        # (not a constructor there: `nn.ModuleList([Block(...) for _ in range(depth)])` runs one call of it again and
        # again, and following each would spend the cap before the calls that train)
        again = (id(fn) in self.entry or (id(fn) in self.inner_entry and fn.name != "__init__")
                 or self.may_touch_gradients(fn) or self._forward_cutting_graphs(fn)
                 or self._sets_up_training(fn, module) or _graph_method(fn))
        if inside > FOREIGN_CALL_BUDGET and not again:
            # the rest of the calls it makes stay opaque (abandoning it half-way would leave the state of
            # the statements it is in, a `with` block's, behind)
            return False
        if module is self.current or self._home is None:
            return True
        return module is None or not (self.depth >= MAX_FOREIGN_DEPTH or self.work > FOREIGN_WORK_BUDGET and not again
                                      or not self._worth_following(module, fn))

    def may_touch_gradients(self, fn: Function) -> bool:
        """Whether a function of another file may clear, step, write or rescale gradients: its module's
        prescan does not show it inert (the checked file's own functions: its prescan)."""
        module = self.module_of(fn)
        prescan = self.context(module).prescan if module is not None else (self._home or {}).get("prescan")
        return prescan is None or not prescan.function_inert(fn)

    def _sets_up_training(self, fn: Function, module: ForeignModule | None) -> bool:
        """A function of another file that builds an optimizer (`_builds_optimizer`), or the `__init__` of a plain
        class (not a module) another method of which may touch gradients (an `Architect` whose `step()`
        back-propagates and steps `self.optimizer`): it builds what those methods use, so it is read past the budgets
        as they are. Left opaque, its object has no attributes in sight, and the caller's
        `architect.optimizer.zero_grad()` clears an optimizer of its own, not the one `architect.step()` steps
        (darts-pt's search loop, after a large model's construction spent the budget: a certain GL001)."""
        if module is None:
            return False
        if self._builds_optimizer(fn, module):
            return True
        if fn.name != "__init__":
            return False
        holder = module.parents.get(id(fn))
        if not isinstance(holder, ast.ClassDef):
            return False
        info = self.context(module).classes.get(holder.name)
        if info is None or info.is_module:
            return False
        return any(isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n is not fn
                   and self.may_touch_gradients(n) for n in holder.body)

    def _builds_optimizer(self, fn: Function, module: ForeignModule) -> bool:
        """The function's own body builds an optimizer of the catalogue (neural_sp's `set_optimizer(model, name, lr)`
        returning `torch.optim.SGD(parameters, ...)` or another by name): which parameters the optimizer updates is
        read there. Left opaque past the budget, the optimizer is the result of a call not read."""
        known = self._builds.get(id(fn))
        if known is None:
            imports, catalogue = module.imports, self.catalogue
            known = any(isinstance(n, ast.Call) and isinstance(n.func, (ast.Name, ast.Attribute))
                        and (q := imports.qualify(n.func)) is not None
                        and (row := catalogue.call(q)) is not None and catalogue.constructs(row.effects, "optimizer")
                        for n in breadth_first(fn))
            self._builds[id(fn)] = known
        return known

    def _forward_cutting_graphs(self, fn: Function) -> bool:
        """A module's `forward` of another file that may cut graphs (`graph_cuts`): what its result still holds
        of its arguments' graphs decides which models a loss made from it reaches, so it is read whatever
        its size, and past the budgets as code that touches gradients is."""
        return fn.name == "forward" and bool(self.cuts_graphs(fn))

    def _worth_following(self, module: ForeignModule, fn: Function) -> bool:
        """Follow a function that may touch gradients, or a small one (what it returns may be a loss, a
        wrapper, an optimizer); a large inert one stays an opaque call, as it was read before."""
        key = -id(fn)
        known = self._fn_module.get(key)
        if known is not None:
            return known is module
        worth = not self.context(module).prescan.surely_inert(fn.name) or fn.name == "__init__" \
            or _size(fn) <= MAX_INERT_NODES or self._forward_cutting_graphs(fn) or self._builds_optimizer(fn, module)
        self._fn_module[key] = module if worth else None
        return worth

    # ------------------------------------------------------------------ findings
    def anchor(self, node: ast.AST, via: tuple[ast.Call, ...] = ()) -> tuple[ast.AST, tuple[Evidence, ...]]:
        """Where a finding at `node` is reported in the checked file, with the places in other files
        it passed through (innermost first). With `via`, the calls that ran it (outermost first): the
        innermost of them in the checked file, which is where this run of it came from; without, the
        call that last entered the function holding it (one of its callers, when several call it)."""
        chain: list[Evidence] = []
        if via and self.module_of_node(node) is not None:
            local = [i for i, call in enumerate(via) if self.module_of_node(call) is None]
            if local:
                inner = [node, *reversed(via[local[-1] + 1:])]
                found = [(self.module_of_node(n), n) for n in inner]
                return via[local[-1]], tuple(self.evidence(m, n) for m, n in found if m is not None)
            # every call of this run is in other files: where the run came from is what entered its outermost call,
            # not what last entered `node`'s function (a helper also called from an evaluation loop of this file);
            # a base class's loop run with this file's class as `self` (`inherited_loops`) whose run met none of the
            # class's own code finds what the base's own file finds: reported there
            for n in (node, *reversed(via[1:])):
                module = self.module_of_node(n)
                if module is not None:
                    chain.append(self.evidence(module, n))
            start, where = self.anchor(via[0])
            return (node, ()) if isinstance(start, ast.ClassDef) else (start, (*chain, *where))
        seen: set[int] = set()
        while True:
            module = self.module_of_node(node)
            if module is None:
                return node, tuple(chain)
            if id(node) in seen:
                break
            seen.add(id(node))
            chain.append(self.evidence(module, node))
            owner = module.owner(node)
            call = (self.entry.get(id(owner)) or self.inner_entry.get(id(owner))) if owner is not None else None
            if call is None:
                break
            node = call
        return node, tuple(chain)

    def evidence(self, module: ForeignModule, node: ast.AST) -> Evidence:
        span = module.source.span(node)
        rel = os.path.relpath(module.path, os.path.dirname(self.abs))
        shown = os.path.normpath(os.path.join(os.path.dirname(self.path), rel)) if os.path.dirname(self.path) else rel
        segment = " ".join(module.source.segment(node).split()) if hasattr(node, "lineno") else ""
        return Evidence(shown.replace(os.sep, "/"), rel.replace(os.sep, "/"), span.line, span.column, span.end_line, span.end_column, segment[:80])

    def dependencies(self) -> tuple[tuple[str, str], ...]:
        """The other files read, with their content digests (what the result depends on besides the file)."""
        return tuple(sorted(self.used.items()))


def _class_resolver(index: ProjectIndex, base_dir: str, catalogue: Catalogue, packages: frozenset[str],
                    view: ProjectView | None = None) -> Any:
    """The class of another project file a qualified base name names, for `Definitions`; `view` (when the
    checked file's own classes ask) records the files read."""
    def resolve(qual: str) -> ClassInfo | None:
        found = index.resolve(qual, base_dir, packages)
        if found is None or found.class_name is None or found.method is not None:
            return None
        ctx = view.context(found.module) if view is not None else shared_context(index, found.module, catalogue, packages)
        return ctx.classes.get(found.class_name)
    return resolve


def shared_context(index: ProjectIndex, module: ForeignModule, catalogue: Catalogue, packages: frozenset[str]) -> _ModuleContext:
    """What the interpreter reads of `module`, built once per content and catalogue for every analysis."""
    ctx = module._by_catalogue.get(id(catalogue))
    if ctx is None:
        ctx = _ModuleContext(module, catalogue, _class_resolver(index, module.base_dir, catalogue, packages))
        module._by_catalogue[id(catalogue)] = ctx
    return ctx  # type: ignore[return-value]


def _size(fn: Function) -> int:
    return sum(1 for _ in breadth_first(fn))


_GRAPH_METHOD = convention("graph_method")


def _graph_method(fn: Function) -> bool:
    """A method whose name says its result carries the graph of its module's own parameters (`netG_adv_loss` of a
    discriminator, `forward_features`): left unread, which parameters a loss made from it reaches rests on that name
    alone (`recorder`: an assumption), so it is read past the budgets, as code that touches gradients is."""
    args = fn.args.posonlyargs or fn.args.args
    return bool(args) and args[0].arg == "self" and bool(_GRAPH_METHOD.search(fn.name))
