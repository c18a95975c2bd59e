"""Abstract interpretation of a module's training code over the gradient typestate.

The interpreter walks statements in order, carrying a *flow*: one environment of abstract values
(joined over paths: which names may be models, optimizers, tensors reaching a model) and a set of
path states (the gradient typestate, kept per path, with branch assumptions). Loops run to a fixed
point, so the path from the end of one iteration to the start of the next is checked too. Calls to
functions and methods defined in the same file are followed; other calls are opaque.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import itertools
import re
import time
from dataclasses import dataclass, field, replace
from typing import Callable, Iterable, Iterator, Sequence

from . import names as N
from .conditions import (
    ALL_PHASES,
    FIRST,
    NEXT_PHASE,
    Condition,
    analyse_test,
    code,
    grad_existence_test,
    modulo_atoms,
    phase_truth,
    first_window,
    first_window_size,
    truth_at_zero,
)
from .events import Backward, Clear, Loop, Step
from .syntax import FUNCTIONS, LOOPS, SIMPLE_STATEMENTS, WITHS, Source, arguments, int_value, is_int, is_number, keyword_value, parameters, read_source
from .walk import children
from .gradstate import PathState, merge_states
from .values import (
    EMPTY,
    OPAQUE,
    Counter,
    Entity,
    EntityTable,
    Holder,
    Kind,
    Ownership,
    Value,
    join,
    union_as_tensor,
)

MAX_DEPTH = 8
MAX_LOOP_ITERATIONS = 12
WORK_BUDGET = 20_000  # statements interpreted per file; past it the analysis stops where it is
TIME_BUDGET = 30.0  # seconds per file: a safety net; the work budget is what normally stops


_TRIES: tuple[type, ...] = (ast.Try, getattr(ast, "TryStar", ast.Try))  # try/except* from Python 3.11
# Statements that hold no other statement.
_COMPREHENSIONS: tuple[type, ...] = (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)
# Statements that leave the block: an `if` holding one matters to the paths through it.
_LEAVING = frozenset({ast.Continue, ast.Break, ast.Return, ast.Raise})
_SMALL = frozenset(SIMPLE_STATEMENTS)
_Function = ast.FunctionDef | ast.AsyncFunctionDef


class BudgetExhausted(Exception):
    """The file needs more interpretation than the budget allows; findings so far stand."""
EVENT_ATTRS = frozenset(
    {"backward", "manual_backward", "step", "zero_grad", "zero_", "requires_grad_", "optimizer_step",
     "toggle_optimizer", "untoggle_optimizer", "fill_", "mul_", "div_", "detach_", "unscale_"}
)


_MISSING = object()


class Flow:
    """The analysis state at one program point: an environment and a set of path states."""

    __slots__ = ("env", "states")

    def __init__(self, env: dict[str, Value], states: frozenset[PathState]) -> None:
        self.env = env
        self.states = states

    def copy(self) -> "Flow":
        return Flow(dict(self.env), self.states)

    def map(self, fn: Callable[[PathState], PathState]) -> None:
        self.states = frozenset(fn(s) for s in self.states)

    @staticmethod
    def join(flows: Sequence["Flow | None"]) -> "Flow | None":
        live = [f for f in flows if f is not None]
        if not live:
            return None
        if len(live) == 1:
            return live[0].copy()
        states = merge_states(frozenset().union(*(f.states for f in live)))
        if len(live) == 2:  # the common case (two branches, loop head and back edge): one pass
            a, b = live[0].env, live[1].env
            env = {}
            for k, v in a.items():
                w = b.get(k, _MISSING)
                env[k] = v if w is v else join([v] if w is _MISSING else [v, w])
            for k, w in b.items():
                if k not in a:
                    env[k] = join([w])
            return Flow(env, states)
        env = {}
        keys: list[str] = []
        seen: set[str] = set()
        for f in live:
            for k in f.env:
                if k not in seen:
                    seen.add(k)
                    keys.append(k)
        for k in keys:
            vals = [f.env[k] for f in live if k in f.env]
            first = vals[0]
            env[k] = first if len(vals) == len(live) and all(v is first for v in vals) else join(vals)
        return Flow(env, states)


_SELF_CALL = re.compile(r"\bself\.(\w+)\s*\(")
_SELF_NAME = re.compile(r"\bself\.(\w+)")
_ASSIGNMENT_TARGET = re.compile(r"^[ \t]*([^=\n#(]*?)(?::[^=\n]*)?(?<![=!<>])=(?!=)", re.M)

@dataclass
class Outcome:
    normal: Flow | None
    breaks: list[Flow] = field(default_factory=list)
    continues: list[Flow] = field(default_factory=list)
    returns: list[tuple[Flow, Value]] = field(default_factory=list)


@dataclass
class ClassInfo:
    node: ast.ClassDef
    name: str
    bases: tuple[str, ...]
    methods: dict[str, _Function]
    is_module: bool = False
    is_lightning: bool = False
    manual_optimization: bool = False


@dataclass
class Frame:
    """Where the interpreter is: which function, class, loops and branches enclose it."""

    function: _Function | None
    cls: ClassInfo | None
    self_value: Value | None
    depth: int
    local_defs: dict[str, _Function]
    loops: tuple[int, ...] = ()
    ifs: tuple[int, ...] = ()
    no_grad: bool = False
    accumulate_ctx: bool = False
    active: tuple[int, ...] = ()  # functions being inlined, for recursion


class _Prescan:
    """One pass over the module collecting what the interpreter needs to know up front."""

    def __init__(self, local_callables: set[str]) -> None:
        self.local = local_callables
        self.interesting: dict[int, bool] = {}
        self.called_names: set[str] = set()
        self.called_attrs: set[str] = set()
        self.models: set[str] = set()
        self.called_models: set[str] = set()
        self.stepped: set[str] = set()
        self.zeroed: set[str] = set()
        self.windows: dict[str, set[str]] = {}

    def scan(self, module: ast.Module) -> None:
        """One iterative pass over every node, each carrying the `if`s and comprehensions around it."""
        interesting = self.interesting
        todo: list[tuple[ast.AST, tuple[int, ...]]] = [(module, ())]
        while todo:
            node, around = todo.pop()
            kind = node.__class__
            if kind is ast.If:
                interesting.setdefault(id(node), False)
                for counter, window in modulo_atoms(node.test):  # type: ignore[attr-defined]
                    self.windows.setdefault(counter, set()).add(window)
                around = around + (id(node),)
            elif kind in _COMPREHENSIONS:
                # the element is outside the clauses; the `for` clauses are keyed by the first one
                for part in (node.key, node.value) if kind is ast.DictComp else (node.elt,):  # type: ignore[attr-defined]
                    todo.append((part, around))
                key = id(node.generators[0])  # type: ignore[attr-defined]
                interesting.setdefault(key, False)
                inner = around + (key,)
                todo.extend((clause, inner) for clause in node.generators)  # type: ignore[attr-defined]
                continue
            elif kind is ast.Call:
                if self._call(node) and around:  # type: ignore[arg-type]
                    for key in around:
                        interesting[key] = True
            elif kind in _LEAVING:
                for key in around:
                    interesting[key] = True
            elif kind is ast.Attribute:
                if node.attr in ("grad", "requires_grad"):  # type: ignore[attr-defined]
                    for key in around:
                        interesting[key] = True
            elif kind is ast.Assign:
                if isinstance(node.value, (ast.Compare, ast.BoolOp, ast.UnaryOp)):  # type: ignore[attr-defined]
                    for counter, window in modulo_atoms(node.value):  # type: ignore[attr-defined]
                        self.windows.setdefault(counter, set()).add(window)
            todo.extend((child, around) for child in children(node))

    def _call(self, node: ast.Call) -> bool:
        """Note what a call says about names; whether it makes the blocks around it interesting."""
        mark = False
        func = node.func
        called = N.ref_text(func)
        if called is not None and N.MODEL_NAME.search(called.rsplit(".", 1)[-1]) and not N.OPTIMIZER_NAME.search(called):
            self.called_models.add(called)  # `encoder(x)`: a callable named like a model
        if isinstance(func, ast.Name):
            self.called_names.add(func.id)
            mark = func.id in self.local
        elif isinstance(func, ast.Attribute):
            attr = func.attr
            receiver = func.value
            if isinstance(receiver, ast.Name) and receiver.id in ("self", "cls"):
                self.called_attrs.add(attr)
            mark = attr in EVENT_ATTRS or (isinstance(receiver, ast.Name) and receiver.id == "self")
            recv = N.ref_text(receiver)
            if recv is not None:
                if attr in ("parameters", "named_parameters", "requires_grad_", "train", "eval", "state_dict", "modules", "children"):
                    self.models.add(recv)
                elif attr == "step":
                    self.stepped.add(recv)
                    args = arguments(node)
                    if "scaler" in recv.lower() and args:  # scaler.step(optimizer)
                        arg = N.ref_text(args[0].value)
                        if arg is not None:
                            self.stepped.add(arg)
                            self.zeroed.add(arg)
                elif attr == "zero_grad":
                    self.zeroed.add(recv)
        for arg in arguments(node):  # functions passed as callbacks (closures, map, Thread)
            if isinstance(arg.value, ast.Name):
                self.called_names.add(arg.value.id)
        return mark

    def evidence(self) -> tuple[frozenset[str], frozenset[str]]:
        """Texts used like models (`x.parameters()`) and like optimizers (`x.step()` and zero_grad)."""
        optimizers = {s for s in self.stepped if N.OPTIMIZER_NAME.search(s.rsplit(".", 1)[-1]) and not N.SCHEDULER_NAME.search(s)}
        optimizers |= {s for s in self.stepped & self.zeroed if not N.SCHEDULER_NAME.search(s) and s not in self.models}
        return frozenset((self.models | self.called_models) - optimizers), frozenset(optimizers)


class Interpreter:
    """Compute the training events of one module and the gradient states seen at each."""

    def __init__(self, module: ast.Module, source: str) -> None:
        self.module = module
        self.source = source  # the text `module` was parsed from
        self.text: Source = read_source(source)  # what `code()` reads nodes' text from, until forget_code()
        self._whole: str | None = None
        self._truths: dict[tuple[int, str, str, str], tuple[ast.expr, bool | None]] = {}
        self._atoms: dict[int, tuple[ast.expr, list[tuple[str, str]]]] = {}
        self.imports = N.ImportMap.of(module)
        self.table = EntityTable()
        self.backwards: dict[int, Backward] = {}
        self.steps: dict[int, Step] = {}
        self.clears: dict[int, Clear] = {}
        self.conditions: dict[int, Condition] = {}
        self.loops: dict[int, Loop] = {}
        self.functions: dict[str, _Function] = {}
        self.classes: dict[str, ClassInfo] = {}
        self.module_env: dict[str, Value] = {}
        self._minted: dict[object, Entity] = {}
        self._uid = itertools.count(1)
        self._class_self_env: dict[str, dict[str, Value]] = {}
        self._trains: dict[int, bool] = {}
        self._call_path: tuple[int, ...] = ()  # call sites being inlined: entities made inside differ per site
        self._calls: list[int] = []
        self.inlined: set[int] = set()
        self._ordinals: dict[int, int] = {}
        self.work = 0
        self.backward_calls = 0
        self.exhausted = False
        self.out_of_time = False
        self._deadline = time.perf_counter() + TIME_BUDGET
        self._akeys: dict[str, int] = {}
        self.by_akey: dict[int, list[Condition]] = {}
        self.cond_aliases: dict[str, ast.expr] = {}
        self._collect_definitions()
        scan = _Prescan(set(self.functions) | set(self.classes))
        scan.scan(module)
        self._interesting = scan.interesting
        self.called_names, self.called_attrs = scan.called_names, scan.called_attrs
        self.model_refs, self.optimizer_refs = scan.evidence()
        self.windows = {k: frozenset(v) for k, v in scan.windows.items()}

    # ------------------------------------------------------------------ definitions & evidence
    def _collect_definitions(self) -> None:
        for stmt in self._toplevel_statements(self.module.body):
            if isinstance(stmt, FUNCTIONS):
                self.functions[stmt.name] = stmt  # type: ignore[union-attr]
            elif isinstance(stmt, ast.ClassDef):
                methods = {s.name: s for s in stmt.body if isinstance(s, FUNCTIONS)}
                bases = tuple(filter(None, (self.imports.qualify(a) for a in stmt.bases)))
                self.classes[stmt.name] = ClassInfo(stmt, stmt.name, bases, methods)
        # Which local classes are nn.Modules / LightningModules (transitively).
        changed = True
        while changed:
            changed = False
            for info in self.classes.values():
                for base in info.bases:
                    last = base.rsplit(".", 1)[-1]
                    parent = self.classes.get(last)
                    is_module = last in {"Module", "LightningModule", "PreTrainedModel"} or base.endswith("nn.Module") or (
                        parent is not None and parent.is_module
                    )
                    is_lightning = last == "LightningModule" or (parent is not None and parent.is_lightning)
                    if is_module and not info.is_module:
                        info.is_module = changed = True
                    if is_lightning and not info.is_lightning:
                        info.is_lightning = changed = True
        for info in self.classes.values():
            if info.is_lightning:
                info.manual_optimization = "automatic_optimization = False" in code(info.node).replace("self.", "")

    def _toplevel_statements(self, body: Sequence[ast.AST]) -> Iterable[ast.AST]:
        """Module-level statements, looking into `if`/`try` blocks (e.g. `if __name__ == '__main__':`)."""
        for stmt in body:
            yield stmt
            if isinstance(stmt, ast.If):
                yield from self._toplevel_statements(stmt.body)
                yield from self._toplevel_statements(stmt.orelse)
            elif isinstance(stmt, _TRIES):
                yield from self._toplevel_statements(stmt.body)

    @staticmethod
    def _advance_phases(phases: frozenset[str]) -> frozenset[str]:
        return frozenset().union(*(NEXT_PHASE[p] for p in phases)) if phases else phases

    # ------------------------------------------------------------------ entities
    def mint(self, kind: Kind, name: str, key: object) -> Entity:
        if isinstance(key, tuple) and key and key[0] in ("ctor", "param"):
            key = (*key, self._call_path)  # `actor = mlp(...)`, `critic = mlp(...)`: two models
        ent = self._minted.get(key)
        if ent is None:
            ent = Entity(kind, name, next(self._uid))
            self._minted[key] = ent
            self.table.add(ent)
            if kind is Kind.OPTIMIZER:
                self.table.ownership.setdefault(ent.uid, Ownership())
        return ent

    def model_value(self, ent: Entity) -> Value:
        holder = Holder(ent.uid)
        if ent.kind is Kind.PARAM:
            return Value(entities=frozenset({ent}), params=frozenset({holder}), reach=frozenset({holder}))
        return Value(entities=frozenset({ent}), modules=frozenset({holder}))

    def entity_for_unknown_ref(self, text: str, node: object = None) -> Value | None:
        """Give a name with no known value an entity, when how it is used says what it is.

        A bare name is one object per function activation; `self.x` one per class.
        """
        scope = ("self",) if text.startswith("self.") else self._call_path
        if text in self.optimizer_refs:
            return Value(entities=frozenset({self.mint(Kind.OPTIMIZER, text, ("ref", text, scope))}))
        if text in self.model_refs:
            return self.model_value(self.mint(Kind.MODEL, text, ("ref", text, scope)))
        return None

    def all_optimizers(self) -> list[Entity]:
        return [e for e in self.table.entities.values() if e.kind is Kind.OPTIMIZER]

    def _past_deadline(self) -> bool:
        """Whether the wall-clock budget is spent; such a partial result depends on the machine's load."""
        if time.perf_counter() > self._deadline:
            self.out_of_time = True
        return self.out_of_time

    # ------------------------------------------------------------------ entry points
    def run(self) -> None:
        """Analyse the module body, then every function and method nothing in the file calls."""
        try:
            self._run()
        except BudgetExhausted:
            # A partial analysis: every state recorded so far lies on a real path, so what the rules
            # report stays true; paths not reached are simply not checked.
            self.exhausted = True

    def _run(self) -> None:
        called_names, called_attrs = self.called_names, self.called_attrs
        top = Frame(function=None, cls=None, self_value=None, depth=0, local_defs={})
        flow = Flow({}, frozenset({PathState()}))
        out = self.exec_block(self.module.body, flow, top)
        final = Flow.join([out.normal, *(f for f, _ in out.returns)])
        self.module_env = dict(final.env) if final else {}
        for name, fn in self.functions.items():
            if name not in called_names:
                self.analyse_root(fn, None)
        for info in self.classes.values():
            for mname, fn in info.methods.items():
                if mname.startswith("__") and mname != "__call__":
                    continue
                if info.is_lightning and mname == "training_step":
                    self.analyse_root(fn, info, implicit_loop=info.manual_optimization)
                elif mname not in called_attrs and id(fn) not in self.inlined:
                    # not called as `self.m()` and never reached through a known instance: the
                    # caller is elsewhere (`trainer.train_step(...)` on an object of unknown type)
                    self.analyse_root(fn, info)

    def analyse_root(self, fn: _Function, cls: ClassInfo | None, implicit_loop: bool = False) -> None:
        outer, self._call_path = self._call_path, (id(fn),)  # names of unknown origin are per function
        try:
            self._analyse_root(fn, cls, implicit_loop)
        finally:
            self._call_path = outer

    def _analyse_root(self, fn: _Function, cls: ClassInfo | None, implicit_loop: bool) -> None:
        self_value = self.self_value_for(cls) if cls else None
        env: dict[str, Value] = dict(self.class_self_env(cls)) if cls else {}
        frame = Frame(function=fn, cls=cls, self_value=self_value, depth=1, local_defs={}, active=(id(fn),))
        a = fn.args
        all_params = [*a.posonlyargs, *a.args, *a.kwonlyargs]
        for i, p in enumerate(all_params):
            pname = p.arg
            if i == 0 and cls is not None and pname in ("self", "cls"):
                continue
            env[pname] = self.entity_for_unknown_ref(pname) or OPAQUE
        flow = Flow(env, frozenset({PathState()}))
        body = fn.body
        if implicit_loop:
            loop = Loop(id(fn), fn, None)
            self.loops[loop.id] = loop
            self.run_loop(flow, frame, loop, lambda f, fr: self.exec_block(body, f, fr), None)
        else:
            self.exec_block(body, flow, frame)

    def self_value_for(self, cls: ClassInfo) -> Value:
        if cls.is_module:
            ent = self.mint(Kind.LIGHTNING if cls.is_lightning else Kind.MODEL, "self", ("self", cls.name))
            return self.model_value(ent)
        return Value(const=("instance", cls.name))

    def class_self_env(self, cls: ClassInfo) -> dict[str, Value]:
        """`self.*` attributes as `__init__` leaves them, for methods analysed on their own."""
        cached = self._class_self_env.get(cls.name)
        if cached is not None:
            return cached
        self._class_self_env[cls.name] = {}
        env: dict[str, Value] = {}
        init = cls.methods.get("__init__")
        if init is not None:
            frame = Frame(function=init, cls=cls, self_value=self.self_value_for(cls), depth=1, local_defs={}, active=(id(init),))
            fenv: dict[str, Value] = {}
            all_params = [*init.args.args, *init.args.kwonlyargs]
            for p in all_params[1:]:
                fenv[p.arg] = self.entity_for_unknown_ref(p.arg) or OPAQUE
            flow = Flow(fenv, frozenset({PathState()}))
            out = self.exec_block(init.body, flow, frame)
            final = Flow.join([out.normal, *(f for f, _ in out.returns)])
            if final:
                env = {k: v for k, v in final.env.items() if k.startswith("self.")}
        self._class_self_env[cls.name] = env
        return env

    # ------------------------------------------------------------------ statements
    def exec_block(self, body: Sequence[ast.AST], flow: Flow, frame: Frame) -> Outcome:
        out = Outcome(normal=flow)
        for stmt in body:
            if out.normal is None or not out.normal.states:
                out.normal = None
                break
            res = self.exec_stmt(stmt, out.normal, frame)
            out.normal = res.normal
            out.breaks += res.breaks
            out.continues += res.continues
            out.returns += res.returns
        return out

    def exec_stmt(self, stmt: ast.AST, flow: Flow, frame: Frame) -> Outcome:  # noqa: C901
        self.work += 1
        if self.work > WORK_BUDGET or (self.work & 255 == 0 and self._past_deadline()):
            raise BudgetExhausted
        kind = type(stmt)
        if kind in _SMALL:
            return self.exec_small(stmt, flow, frame, stmt)
        if kind is ast.If:
            return self.exec_if(stmt, flow, frame)  # type: ignore[arg-type]
        if kind in LOOPS:
            return self.exec_for(stmt, flow, frame)  # type: ignore[arg-type]
        if kind is ast.While:
            return self.exec_while(stmt, flow, frame)  # type: ignore[arg-type]
        if kind in WITHS:
            return self.exec_with(stmt, flow, frame)  # type: ignore[arg-type]
        if kind in _TRIES:
            return self.exec_try(stmt, flow, frame)  # type: ignore[arg-type]
        if kind in FUNCTIONS:
            frame.local_defs[stmt.name] = stmt  # type: ignore[attr-defined]
            return Outcome(normal=flow)
        if kind is ast.Match:
            branches = []
            for case in stmt.cases:  # type: ignore[attr-defined]
                branches.append(self.exec_block(case.body, flow.copy(), frame))
            return self._merge_outcomes(branches + [Outcome(normal=flow)])
        return Outcome(normal=flow)

    def exec_small(self, small: ast.AST, flow: Flow, frame: Frame, line: ast.AST) -> Outcome:
        if isinstance(small, ast.Expr):
            self.eval(small.value, flow, frame)
        elif isinstance(small, ast.Assign):
            value = self.eval(small.value, flow, frame)
            for target in small.targets:
                self.assign(target, value, flow, frame, small.value, line)
        elif isinstance(small, ast.AnnAssign):
            if small.value is not None:
                value = self.eval(small.value, flow, frame)
                self.assign(small.target, value, flow, frame, small.value, line)
        elif isinstance(small, ast.AugAssign):
            self.exec_augassign(small, flow, frame, line)
        elif isinstance(small, ast.Return):
            value = self.eval(small.value, flow, frame) if small.value is not None else EMPTY
            return Outcome(normal=None, returns=[(flow, value)])
        elif isinstance(small, ast.Break):
            return Outcome(normal=None, breaks=[flow])
        elif isinstance(small, ast.Continue):
            return Outcome(normal=None, continues=[flow])
        elif isinstance(small, ast.Raise):
            return Outcome(normal=None)
        elif isinstance(small, ast.Assert):
            self.eval(small.test, flow, frame)
        return Outcome(normal=flow)

    def _merge_outcomes(self, outs: list[Outcome]) -> Outcome:
        return Outcome(
            normal=Flow.join([o.normal for o in outs]),
            breaks=[b for o in outs for b in o.breaks],
            continues=[c for o in outs for c in o.continues],
            returns=[r for o in outs for r in o.returns],
        )

    # -- branches
    def condition(self, statement: ast.AST, test: ast.expr) -> Condition:
        cond = self.conditions.get(id(statement))
        if cond is None:
            alias = None
            inner = test
            if isinstance(inner, ast.Name) and inner.id in self.cond_aliases:
                # `sync = (i + 1) % N == 0` ... `if sync:`: read the test through the name
                alias, test = inner.id, self.cond_aliases[inner.id]
            cond = analyse_test(id(statement), statement, test, alias)
            cond.akey = self._akeys.setdefault(cond.key, len(self._akeys) + 1)
            self.conditions[cond.id] = cond
            self.by_akey.setdefault(cond.akey, []).append(cond)
        return cond

    def interesting(self, node: ast.AST) -> bool:
        """Does this `if` or comprehension hold anything that can change gradients or leave the block?"""
        return self._interesting.get(id(node), True)

    def exec_if(self, stmt: ast.If, flow: Flow, frame: Frame) -> Outcome:
        self.eval(stmt.test, flow, frame)
        fixed = grad_existence_test(stmt.test)
        orelse = stmt.orelse
        if fixed is not None:
            if fixed:
                return self.exec_block(stmt.body, flow, frame)
            if not orelse:
                return Outcome(normal=flow)
            return self.exec_block(orelse, flow, frame)
        if not self.interesting(stmt):
            t = self.exec_block(stmt.body, flow.copy(), frame)
            f = self.exec_block(orelse, flow.copy(), frame) if orelse else Outcome(normal=flow)
            return self._merge_outcomes([t, f])
        test = stmt.test
        negated = isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not) and not self._modulo_atoms(test)
        cond = self.condition(stmt, test.operand if negated else stmt.test)  # type: ignore[attr-defined]
        self._note_counter(cond, flow)
        tflow, fflow = self.split(flow, cond)
        if negated:
            tflow, fflow = fflow, tflow
        inner = frame if "__name__" in cond.key else replace(frame, ifs=frame.ifs + (cond.id,))
        t = self.exec_block(stmt.body, tflow, inner) if tflow is not None else Outcome(normal=None)
        if not orelse:
            f = Outcome(normal=fflow)
        elif fflow is None:
            f = Outcome(normal=None)
        else:
            f = self.exec_block(orelse, fflow, inner)
        return self._merge_outcomes([t, f])

    def _phase_truth(self, test: ast.expr, counter: str, window: str, phase: str) -> bool | None:
        """`phase_truth`, remembered: a pure function of the test, asked again for every path state."""
        key = (id(test), counter, window, phase)
        hit = self._truths.get(key)
        if hit is None:
            hit = self._truths[key] = (test, phase_truth(test, counter, window, phase))
        return hit[1]

    def _modulo_atoms(self, test: ast.expr) -> list[tuple[str, str]]:
        """`modulo_atoms`, remembered: a test is split on again for every path and loop iteration."""
        hit = self._atoms.get(id(test))
        if hit is None or hit[0] is not test:
            hit = self._atoms[id(test)] = (test, modulo_atoms(test))
        return hit[1]

    def split(self, flow: Flow, cond: Condition) -> tuple[Flow | None, Flow | None]:
        """Split a flow on a condition, keeping only the paths consistent with what they assumed."""
        t_states, f_states = [], []
        atoms = [(c, w) for c, w in self._modulo_atoms(cond.test) if c in self.windows]
        for s in flow.states:
            known = s.assumption(cond.akey)
            t_s: PathState | None = s if known is not False else None
            f_s: PathState | None = s if known is not True else None
            for counter, window in atoms[:1]:
                current = s.phase(counter, window) or ALL_PHASES
                truths = {p: self._phase_truth(cond.test, counter, window, p) for p in current}
                t_ph = frozenset(p for p, v in truths.items() if v is not False)
                f_ph = frozenset(p for p, v in truths.items() if v is not True)
                t_s = t_s.with_phase(counter, window, t_ph) if t_s is not None and t_ph else None
                f_s = f_s.with_phase(counter, window, f_ph) if f_s is not None and f_ph else None
            if t_s is not None:
                t_states.append(t_s if known is not None else t_s.assume(cond.akey, True))
            if f_s is not None:
                f_states.append(f_s if known is not None else f_s.assume(cond.akey, False))
        t = Flow(dict(flow.env), frozenset(t_states)) if t_states else None
        f = Flow(dict(flow.env), frozenset(f_states)) if f_states else None
        return t, f

    def _note_counter(self, cond: Condition, flow: Flow) -> None:
        """Record whether the test fires on the first micro-batch of a zero-based counter."""
        for name in cond.counters:
            value = self.lookup(name, flow, None)
            if value is None or value.counter is None:
                continue
            c = value.counter
            if c.zero_based and not c.incremented:
                first = truth_at_zero(cond.test, name)
                if first is not None:
                    cond.first_value = first
                    cond.counter_sources[name] = c.source
                    cond.counter_starts[name] = 0
                if first:
                    continue
            if c.start is None:
                continue
            # a counter from 1, or incremented before the test: does the first window hold N micro-batches?
            start = c.start + (1 if c.incremented else 0)
            if first_window(cond.test, name, start) is False:
                cond.short_first_window = True
                size = first_window_size(cond.test, name, start, 4)
                cond.long_first_window = size is not None and size > 4
                cond.counter_sources[name] = c.source
                cond.counter_starts[name] = start

    # -- loops
    def exec_for(self, stmt: ast.For, flow: Flow, frame: Frame) -> Outcome:
        iter_value = self.eval(stmt.iter, flow, frame)
        element = self.element_of(stmt.iter, iter_value, flow, frame)
        loop = self.loops.get(id(stmt))
        if loop is None:
            loop = Loop(id(stmt), stmt, self.loop_count(stmt.iter))
            self.loops[loop.id] = loop

        counter = self.loop_counter(stmt)
        if element.entities and not element.params and not element.reach and not element.opaque:
            # `for opt in optimizers.values(): opt.zero_grad()`: the abstract element already stands for
            # every member, so one pass over the body covers the whole loop.
            self.assign(stmt.target, element, flow, frame, stmt.iter, stmt)
            return self.exec_block(stmt.body, flow, frame)

        def body(f: Flow, fr: Frame) -> Outcome:
            self.assign(stmt.target, element, f, fr, stmt.iter, stmt, keep_phases=True)
            return self.exec_block(stmt.body, f, fr)

        out = self.run_loop(flow, frame, loop, body, None, counter)
        if stmt.orelse and out.normal is not None:
            res = self.exec_block(stmt.orelse, out.normal, frame)
            out = Outcome(res.normal, out.breaks + res.breaks, out.continues + res.continues, out.returns + res.returns)
        return Outcome(Flow.join([out.normal, *out.breaks]), returns=out.returns)

    def trains(self, node: ast.AST) -> bool:
        """Can one run of this loop issue a backward pass (directly or through a call)?"""
        key = id(node)
        if key not in self._trains:
            if isinstance(node, _COMPREHENSIONS):  # the `for` clauses, not the element
                text = " ".join(code(part) for g in node.generators for part in (g.target, g.iter, *g.ifs))
            else:
                text = code(node)
            self._trains[key] = "backward" in text or any(f"{name}(" in text for name in self.functions) or any(
                name in self.training_methods for name in _SELF_CALL.findall(text)
            )
        return self._trains[key]

    def module_text(self) -> str:
        """The file's text with whitespace runs made single spaces."""
        if self._whole is None:
            self._whole = " ".join(self.source.split())
        return self._whole

    @functools.cached_property
    def training_methods(self) -> frozenset[str]:
        """Names `self.NAME(...)` may call that can issue a backward pass: local methods that train
        (transitively), and methods defined nowhere in this file (inherited: unknown)."""
        methods: dict[str, list[str]] = {}
        for info in self.classes.values():
            for name, fn in info.methods.items():
                methods.setdefault(name, []).append(code(fn))
        whole = self.module_text()
        attributes = {name for m in _ASSIGNMENT_TARGET.finditer(whole) for name in _SELF_NAME.findall(m.group(1))}
        training = {name for name, texts in methods.items()
                    if any("backward" in t or any(f"{f}(" in t for f in self.functions) for t in texts)}
        changed = True
        while changed:
            changed = False
            for name, texts in methods.items():
                if name not in training and any(set(_SELF_CALL.findall(t)) & training for t in texts):
                    training.add(name)
                    changed = True
        unknown = {n for n in _SELF_CALL.findall(whole) if n not in methods and n not in attributes}
        return frozenset(training | unknown)

    def loop_counter(self, stmt: ast.For) -> tuple[str, bool] | None:
        """The integer counter a `for` loop advances by one per iteration, and whether it starts at 0."""
        it = stmt.iter
        if not isinstance(it, ast.Call):
            return None
        fname = N.last_name(it.func)
        args = [a for a in arguments(it) if a.keyword is None]
        target = stmt.target
        if fname == "enumerate" and isinstance(target, (ast.Tuple, ast.List)) and target.elts:
            first = target.elts[0]
            if isinstance(first, ast.Name):
                start = args[1].value if len(args) > 1 else keyword_value(it, "start")
                return first.id, start is None or is_int(start, 0)
        if fname == "range" and isinstance(target, ast.Name) and args:
            if len(args) >= 3:
                return None
            start = args[0].value if len(args) == 2 else None
            return target.id, start is None or is_int(start, 0)
        return None

    def exec_while(self, stmt: ast.While, flow: Flow, frame: Frame) -> Outcome:
        loop = self.loops.get(id(stmt))
        if loop is None:
            loop = Loop(id(stmt), stmt, None)
            self.loops[loop.id] = loop
        test = stmt.test
        infinite = type(test) is ast.Constant and test.value is True or is_int(test) and test.value != 0
        cond = None if infinite else self.condition(stmt, stmt.test)

        def body(f: Flow, fr: Frame) -> Outcome:
            self.eval(stmt.test, f, fr)
            return self.exec_block(stmt.body, f, fr)

        out = self.run_loop(flow, frame, loop, body, cond)
        normal = None if infinite else out.normal
        if stmt.orelse and normal is not None:
            res = self.exec_block(stmt.orelse, normal, frame)
            normal = res.normal
        return Outcome(Flow.join([normal, *out.breaks]), returns=out.returns)

    def run_loop(
        self,
        flow: Flow,
        frame: Frame,
        loop: Loop,
        body: Callable[[Flow, Frame], Outcome],
        cond: Condition | None,
        counter: tuple[str, bool] | None = None,
    ) -> Outcome:
        """Run a loop body to a fixed point; the loop is assumed to run at least once."""
        inner = replace(frame, loops=frame.loops + (loop.id,))
        head = flow.copy()
        if self.trains(loop.node):
            head.map(PathState.enter_loop)
        if counter is not None and counter[0] in self.windows:
            name, zero = counter
            head.map(lambda s: s.restart(name, self.windows[name], frozenset({FIRST}) if zero else None))
        breaks: list[Flow] = []
        returns: list[tuple[Flow, Value]] = []
        back: Flow | None = None
        for _ in range(MAX_LOOP_ITERATIONS):
            entry = head.copy()
            self._reset_counters(entry)
            res = body(entry, inner)
            breaks += res.breaks
            returns += res.returns
            back = Flow.join([res.normal, *res.continues])
            if back is None:
                break
            if counter is not None and counter[0] in self.windows:
                back.map(lambda s: s.advance(counter[0], self._advance_phases))
            new_head = Flow.join([head, back])
            assert new_head is not None
            if new_head.states == head.states and new_head.env == head.env:
                break
            head = new_head
        normal = back
        return Outcome(normal=normal, breaks=breaks, returns=returns)

    @staticmethod
    def _reset_counters(flow: Flow) -> None:
        for k, v in list(flow.env.items()):
            if v.counter is not None and v.counter.incremented:
                flow.env[k] = replace(v, counter=replace(v.counter, incremented=False))

    def loop_count(self, it: ast.expr) -> str | None:
        """The number of iterations, as source, when the iterable reads like a window of micro-batches."""
        if isinstance(it, ast.Call):
            fname = N.last_name(it.func)
            args = [a.value for a in arguments(it) if a.keyword is None]
            if fname == "range" and args:
                return code(args[-1]) if len(args) <= 2 else None
            if fname in ("enumerate", "tqdm", "zip") and args:
                return self.loop_count(args[0])
            if fname in ("chunk", "split", "tensor_split") and len(args) >= (1 if isinstance(it.func, ast.Attribute) else 2):
                return code(args[-1])
        return f"len({code(it)})"

    def element_of(self, it: ast.expr, value: Value, flow: Flow, frame: Frame) -> Value:
        """The abstract value of one element of an iterable."""
        if isinstance(it, ast.Call):
            fname = N.last_name(it.func)
            args = [a for a in arguments(it) if a.keyword is None]
            kwargs = {a.keyword: a.value for a in arguments(it) if a.keyword is not None}
            if fname == "enumerate" and args:
                start = args[1].value if len(args) > 1 else kwargs.get("start")
                zero = start is None or is_int(start, 0)
                inner_v = self.eval(args[0].value, flow.copy(), frame)
                first = 0 if start is None else int_value(start)
                source = code(it) if start is not None else f"enumerate({code(args[0].value)})"
                counter = Value(counter=Counter(source, zero_based=zero, start=first))
                return Value(items=(("0", counter), ("1", self.element_of(args[0].value, inner_v, flow, frame))))
            if fname == "range":
                start = args[0].value if len(args) >= 2 else None
                zero = start is None or is_int(start, 0)
                first = 0 if start is None else int_value(start)
                return Value(counter=Counter(f"range({', '.join(code(a.value) for a in args)})", zero_based=zero, start=first))
            if fname == "zip":
                return Value(items=tuple((str(i), self.element_of(a.value, self.eval(a.value, flow.copy(), frame), flow, frame)) for i, a in enumerate(args)))
            if fname in ("tqdm", "iter", "list", "tuple", "sorted", "reversed", "trange") and args:
                return self.element_of(args[0].value, self.eval(args[0].value, flow.copy(), frame), flow, frame)
            if fname == "items" and value.items:
                return Value(items=(("0", EMPTY), ("1", join([v for _, v in value.items]))))
        if value.items and not value.params:
            return join([v for _, v in value.items])
        return Value(entities=value.entities, modules=value.modules, params=value.params, reach=value.reach, opaque=value.opaque)

    # -- with / try
    def exec_with(self, stmt: ast.With, flow: Flow, frame: Frame) -> Outcome:
        inner = frame
        for item in stmt.items:
            ctx = item.context_expr
            qual = self.imports.qualify(ctx.func) if isinstance(ctx, ast.Call) else None
            if isinstance(ctx, ast.Call) and qual is not None:
                last = qual.rsplit(".", 1)[-1]
                if qual in N.NO_GRAD_CONTEXTS or last in ("no_grad", "inference_mode"):
                    inner = replace(inner, no_grad=True)
                    continue
                if last == "set_grad_enabled" and arguments(ctx) and code(arguments(ctx)[0].value) == "False":
                    inner = replace(inner, no_grad=True)
                    continue
                if last == "enable_grad":
                    inner = replace(inner, no_grad=False)
                    continue
                if last == "accumulate":
                    inner = replace(inner, accumulate_ctx=True)
                if last == "scale_loss" and arguments(ctx) and item.optional_vars is not None:  # apex.amp
                    value = self.eval(arguments(ctx)[0].value, flow, frame)
                    self.assign(item.optional_vars, value, flow, frame, ctx, stmt)
                    continue
            value = self.eval(ctx, flow, frame)
            if item.optional_vars is not None:
                self.assign(item.optional_vars, value, flow, frame, ctx, stmt)
        return self.exec_block(stmt.body, flow, inner)

    def exec_try(self, stmt: ast.Try, flow: Flow, frame: Frame) -> Outcome:
        entry = flow.copy()
        body = self.exec_block(stmt.body, flow, frame)
        outs = [body]
        if stmt.orelse and body.normal is not None:
            res = self.exec_block(stmt.orelse, body.normal, frame)
            outs[0] = Outcome(res.normal, body.breaks + res.breaks, body.continues + res.continues, body.returns + res.returns)
        for handler in stmt.handlers:
            start = Flow.join([entry, body.normal])
            if start is not None:
                start.map(PathState.exceptional)
                outs.append(self.exec_block(handler.body, start, frame))
        merged = self._merge_outcomes(outs)
        if stmt.finalbody and merged.normal is not None:
            res = self.exec_block(stmt.finalbody, merged.normal, frame)
            merged = Outcome(res.normal, merged.breaks + res.breaks, merged.continues + res.continues, merged.returns + res.returns)
        return merged

    # -- assignment
    def assign(
        self,
        target: ast.expr,
        value: Value,
        flow: Flow,
        frame: Frame,
        source: ast.AST | None,
        stmt: ast.AST,
        keep_phases: bool = False,
    ) -> None:
        if isinstance(target, (ast.Tuple, ast.List)):
            elems = target.elts
            positional = [value.item(str(i)) for i in range(len(elems))]
            for i, elem in enumerate(elems):
                # without known members, an element is some part of the value: never the objects themselves
                sub = positional[i] if all(p is not None for p in positional) else Value(reach=value.reach | value.modules, params=value.params, opaque=True)
                if isinstance(elem, ast.Starred):
                    elem = elem.value
                self.assign(elem, sub if sub is not None else value, flow, frame, source, stmt, keep_phases)
            return
        if isinstance(target, ast.Attribute) and target.attr == "grad":
            # `p.grad = None` / `p.grad = torch.zeros_like(p)` clears; anything else replaces grads.
            owner = self.eval(target.value, flow.copy(), frame)
            holders = self.grad_holders(owner)
            if not holders:
                return
            kind = self.grad_assignment_kind(source)
            if kind == "clear":
                self.record_clear(stmt, f"{code(target)} = {code(source) if source is not None else '...'}", code(target.value), holders, flow, frame)
            elif kind == "rescale":
                flow.map(lambda s: s.rescale(holders))
            else:
                flow.map(lambda s: s.clear(0, holders, record_discards=False))
            return
        if isinstance(target, ast.Attribute) and target.attr == "requires_grad":
            owner = self.eval(target.value, flow.copy(), frame)
            holders = self.holders_of_params(owner)
            flag = self.bool_literal(source)
            if flag is None and value.const in ("True", "False"):  # a helper's `requires_grad` argument
                flag = value.const == "True"
            if holders and flag is not None:
                flow.map(lambda s: s.freeze(holders, not flag))
            return
        key = N.ref_text(target)
        if key is None:
            if isinstance(target, ast.Subscript):
                self.eval(target.value, flow, frame)
            return
        if frame.no_grad:
            value = replace(value, reach=frozenset(), opaque=False) if not value.entities and not value.modules else value
        start = int_value(source)
        if value.const == 0 and start is not None:
            value = replace(value, counter=Counter(f"{key} = 0", zero_based=True, start=0))
        elif start is not None and value.counter is None:
            value = replace(value, counter=Counter(f"{key} = {code(source)}", zero_based=False, start=start))
        # Submodules assigned in an nn.Module's methods belong to `self`.
        if key.startswith("self.") and frame.cls is not None and frame.cls.is_module and frame.self_value is not None and value.modules:
            base = next(iter(frame.self_value.modules))
            path = tuple(key.split(".")[1:])
            if all(m.uid != base.uid for m in value.modules):
                value = replace(value, modules=frozenset({Holder(base.uid, path)}), entities=frozenset())
        if not value.entities and not value.modules and value.opaque:
            # `self.model = model.to(device)` with `model` of unknown origin: how `self.model` is used
            # elsewhere (`.parameters()`, `.step()`) says what it is.
            minted = self.entity_for_unknown_ref(key)
            if minted is not None:
                value = minted
        flow.env[key] = value
        if isinstance(source, (ast.Compare, ast.BoolOp, ast.UnaryOp)) and "." not in key:
            self.cond_aliases[key] = source  # type: ignore[assignment]
        if key in self.windows and not keep_phases:
            zero = value.const == 0 and is_int(source)
            flow.map(lambda s: s.restart(key, self.windows[key], frozenset({FIRST}) if zero else None))
        for ent in value.entities:
            self.table.name_after(ent.uid, key)
        for m in value.modules:
            if not m.path and not m.pseudo:
                self.table.name_after(m.uid, key)
        self.forget(key, flow)

    @staticmethod
    def grad_assignment_kind(source: ast.AST | None) -> str:
        """`p.grad = None`/zeros clears; `p.grad = g / n` rescales; anything else replaces the gradient."""
        if source is None:
            return "replace"
        src = source
        if type(src) is ast.Constant and src.value is None:
            return "clear"
        if is_number(src) and src.value == 0:  # type: ignore[attr-defined]
            return "clear"
        if isinstance(src, ast.Call) and N.last_name(src.func) in ("zeros_like", "zeros", "zero_"):
            return "clear"
        if isinstance(src, ast.BinOp) and isinstance(src.op, (ast.Div, ast.Mult)):
            return "rescale"
        if isinstance(src, ast.Call) and N.last_name(src.func) in ("div", "mul", "true_divide"):
            return "rescale"
        return "replace"

    def forget(self, name: str, flow: Flow) -> None:
        drop = [c.akey for c in self.conditions.values() if name in c.names]
        if drop:
            flow.map(lambda s: s.forget(drop))

    def exec_augassign(self, small: ast.AugAssign, flow: Flow, frame: Frame, line: ast.AST) -> None:
        target = small.target
        rhs = self.eval(small.value, flow, frame)
        if isinstance(target, ast.Attribute) and target.attr == "data" and isinstance(target.value, ast.Attribute):
            target = target.value  # `p.grad.data /= n` rescales `p.grad`
        if isinstance(target, ast.Attribute) and target.attr == "grad":
            owner = self.eval(target.value, flow.copy(), frame)
            holders = self.grad_holders(owner)
            if holders and isinstance(small.op, (ast.Div, ast.Mult)):
                flow.map(lambda s: s.rescale(holders))
            return
        key = N.ref_text(target)
        if key is None:
            return
        old = self.lookup(key, flow, frame) or EMPTY
        if isinstance(small.op, ast.Add) and is_int(small.value, 1) and key in self.windows:
            flow.map(lambda s: s.advance(key, self._advance_phases))
            new = replace(old, counter=replace(old.counter, incremented=True), const=None) if old.counter else replace(old, const=None)
            flow.env[key] = new
            self.forget(key, flow)
            return
        if isinstance(small.op, (ast.Add, ast.Sub)) and old.counter is not None and is_int(small.value):
            new = replace(old, counter=replace(old.counter, incremented=True), const=None)
        elif isinstance(small.op, ast.Div):
            new = union_as_tensor([old, rhs]).with_divisor(code(small.value))
        elif isinstance(small.op, ast.Mult):
            new = union_as_tensor([old, rhs])
            div = self.reciprocal(small.value)
            if div is not None:
                new = new.with_divisor(div)
        else:
            new = union_as_tensor([old, rhs])
        flow.env[key] = new
        self.forget(key, flow)

    # ------------------------------------------------------------------ expressions
    def lookup(self, key: str, flow: Flow, frame: Frame | None) -> Value | None:
        if key in flow.env:
            return flow.env[key]
        if key == "self" and frame is not None and frame.self_value is not None:
            return frame.self_value
        if key in self.module_env:
            return self.module_env[key]
        return None

    def eval(self, expr: ast.expr | None, flow: Flow, frame: Frame) -> Value:  # noqa: C901
        if expr is None:
            return EMPTY
        kind = type(expr)
        if kind is ast.Name:
            name = expr.id  # type: ignore[attr-defined]
            v = self.lookup(name, flow, frame)
            if v is not None:
                return v
            if name in self.imports.aliases or name in self.functions or name in self.classes or name in frame.local_defs:
                return EMPTY
            minted = self.entity_for_unknown_ref(name)
            if minted is not None:
                flow.env[name] = minted
                return minted
            return OPAQUE
        if kind is ast.Attribute:
            return self.eval_attribute(expr, flow, frame)  # type: ignore[arg-type]
        if kind is ast.Call:
            self._calls.append(id(expr))
            try:
                return self.eval_call(expr, flow, frame)  # type: ignore[arg-type]
            finally:
                self._calls.pop()
        if kind is ast.Constant:
            value = expr.value  # type: ignore[attr-defined]
            if value is None or value is True or value is False:
                return Value(const=str(value))
            return Value(const=value) if type(value) is int else EMPTY
        if kind is ast.BinOp:
            return self.eval_binop(expr, flow, frame)  # type: ignore[arg-type]
        if kind is ast.UnaryOp:
            return self.eval(expr.operand, flow, frame).as_tensor()  # type: ignore[attr-defined]
        if kind is ast.BoolOp:
            return join([self.eval(v, flow, frame) for v in expr.values])  # type: ignore[attr-defined]
        if kind is ast.Compare:
            self.eval(expr.left, flow, frame)  # type: ignore[attr-defined]
            for c in expr.comparators:  # type: ignore[attr-defined]
                self.eval(c, flow, frame)
            return EMPTY
        if kind is ast.IfExp:
            self.eval(expr.test, flow, frame)  # type: ignore[attr-defined]
            return join([self.eval(expr.body, flow, frame), self.eval(expr.orelse, flow, frame)])  # type: ignore[attr-defined]
        if kind in (ast.Tuple, ast.List, ast.Set):
            items = [(str(i), self.eval(el, flow, frame)) for i, el in enumerate(expr.elts)]  # type: ignore[attr-defined]
            vals = [v for _, v in items]
            j = join(vals) if vals else EMPTY
            return Value(entities=j.entities, modules=j.modules, params=j.params, reach=j.reach, opaque=j.opaque, divisors=j.divisors, divided_twice=j.divided_twice, items=tuple(items))
        if kind is ast.Starred:
            return self.eval(expr.value, flow, frame)  # type: ignore[attr-defined]
        if kind is ast.Dict:
            items = []
            for k_node, v_node in zip(expr.keys, expr.values):  # type: ignore[attr-defined]
                v = self.eval(v_node, flow, frame)
                k = N.literal_key(k_node) if k_node is not None else None
                items.append((k if k is not None else f"?{len(items)}", v))
            vals = [v for _, v in items]
            j = join(vals) if vals else EMPTY
            return Value(entities=j.entities, modules=j.modules, params=j.params, reach=j.reach, opaque=j.opaque, items=tuple(items))
        if kind is ast.Subscript:
            base = self.eval(expr.value, flow, frame)  # type: ignore[attr-defined]
            index = expr.slice  # type: ignore[attr-defined]
            key = None
            if type(index) not in (ast.Tuple, ast.Slice):
                key = N.literal_key(index)
                self.eval(index, flow, frame)
            if key is not None:
                item = base.item(key)
                if item is not None:
                    return item
            if base.items:
                return join([v for _, v in base.items])
            return replace(base, items=(), counter=None, const=None)
        if kind in (ast.ListComp, ast.SetComp, ast.GeneratorExp):
            return self.eval_comprehension(expr, expr.elt, flow, frame)  # type: ignore[arg-type, attr-defined]
        if kind is ast.DictComp:
            return self.eval_comprehension(expr, expr.value, flow, frame)  # type: ignore[arg-type, attr-defined]
        if kind is ast.Await:
            return self.eval(expr.value, flow, frame)  # type: ignore[attr-defined]
        if kind is ast.NamedExpr:
            v = self.eval(expr.value, flow, frame)  # type: ignore[attr-defined]
            self.assign(expr.target, v, flow, frame, expr.value, expr)  # type: ignore[attr-defined]
            return v
        if kind is ast.JoinedStr:
            for part in expr.values:  # type: ignore[attr-defined]
                if type(part) is ast.FormattedValue:
                    self.eval(part.value, flow, frame)
            return EMPTY
        return EMPTY  # lambdas, slices, literals of other types

    def eval_binop(self, expr: ast.BinOp, flow: Flow, frame: Frame) -> Value:
        left = self.eval(expr.left, flow, frame)
        right = self.eval(expr.right, flow, frame)
        result = union_as_tensor([left, right])
        op = type(expr.op)
        if op is ast.Add and (left.params or right.params):  # list(a.parameters()) + [...]
            result = replace(result, params=left.params | right.params, opaque=left.opaque or right.opaque)
        if op is ast.Div or op is ast.FloorDiv:
            if not right.reach:
                result = result.with_divisor(code(expr.right))
        elif op is ast.Mult:
            for side in (expr.left, expr.right):
                div = self.reciprocal(side)
                if div is not None:
                    result = result.with_divisor(div)
        if is_int(expr.left) and is_int(expr.right):
            result = replace(result, const=None)
        return result

    def eval_comprehension(self, expr: ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp, elt: ast.expr,
                           flow: Flow, frame: Frame) -> Value:
        generators = expr.generators
        first = generators[0]
        if self.interesting(first):
            # `[self.train_step(b) for b in loader]` is a training loop.
            loop = self.loops.get(id(first))
            if loop is None:
                loop = Loop(id(first), expr, self.loop_count(first.iter))
                self.loops[loop.id] = loop
            results: list[Value] = []

            def body(f: Flow, fr: Frame) -> Outcome:
                for clause in generators:
                    it = self.eval(clause.iter, f, fr)
                    self.assign(clause.target, self.element_of(clause.iter, it, f, fr), f, fr, clause.iter, expr)
                    for cond in clause.ifs:
                        self.eval(cond, f, fr)
                results.append(self.eval(elt, f, fr))
                return Outcome(normal=f)

            out = self.run_loop(flow.copy(), frame, loop, body, None)
            if out.normal is not None:
                flow.states = out.normal.states
            v = join(results)
            return Value(entities=v.entities, modules=v.modules, params=v.params, reach=v.reach, opaque=v.opaque, divisors=v.divisors, divided_twice=v.divided_twice)
        scratch = flow.copy()
        for clause in generators:
            it = self.eval(clause.iter, scratch, frame)
            self.assign(clause.target, self.element_of(clause.iter, it, scratch, frame), scratch, frame, clause.iter, expr)
        v = self.eval(elt, scratch, frame)
        flow.states = scratch.states
        return Value(entities=v.entities, modules=v.modules, params=v.params, reach=v.reach, opaque=v.opaque, divisors=v.divisors, divided_twice=v.divided_twice)

    def reciprocal(self, expr: ast.expr) -> str | None:
        """`1 / N` or `1.0 / N` -> `N`."""
        if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Div):
            left = expr.left
            if is_number(left) and left.value == 1:  # type: ignore[attr-defined]
                return code(expr.right)
        return None

    @staticmethod
    def bool_literal(expr: ast.AST | None) -> bool | None:
        if type(expr) is ast.Constant and type(expr.value) is bool:  # type: ignore[attr-defined]
            return expr.value  # type: ignore[attr-defined, no-any-return]
        return None

    def eval_attribute(self, expr: ast.Attribute, flow: Flow, frame: Frame) -> Value:
        key = N.ref_text(expr)
        if key is not None:
            v = self.lookup(key, flow, frame)
            if v is not None:
                return v
        base = self.eval(expr.value, flow, frame)
        attr = expr.attr
        if attr in ("data",):
            return EMPTY
        if attr in ("grad", "shape", "dtype", "device", "requires_grad", "is_cuda", "ndim"):
            return EMPTY
        inst = base.item(attr) if base.const is not None and isinstance(base.const, tuple) else None
        if inst is not None:
            return inst
        if base.modules:
            if attr in ("module", "_orig_mod"):  # DDP / torch.compile wrappers: the same parameters
                return base
            return Value(modules=frozenset(Holder(m.uid, m.path + (attr,)) for m in base.modules if not m.pseudo))
        opts = base.of_kind(Kind.OPTIMIZER)
        if opts and attr == "param_groups":
            holders = frozenset().union(*(self.table.optimizer_holders(o) for o in opts))
            return Value(params=holders)
        if key is not None and not base.entities and (base.opaque or base == EMPTY):
            minted = self.entity_for_unknown_ref(key)
            if minted is not None:
                flow.env[key] = minted
                return minted
        return Value(reach=base.reach, opaque=base.opaque, params=base.params)

    # ------------------------------------------------------------------ calls
    def args_of(self, call: ast.Call, flow: Flow, frame: Frame) -> tuple[list[Value], dict[str, Value]]:
        pos: list[Value] = []
        kw: dict[str, Value] = {}
        for a in arguments(call):
            v = self.eval(a.value, flow, frame)
            if a.keyword is not None:
                kw[a.keyword] = v
            elif a.star:
                pos.append(replace(v, items=()))
            else:
                pos.append(v)
        return pos, kw

    def eval_call(self, call: ast.Call, flow: Flow, frame: Frame) -> Value:  # noqa: C901
        func = call.func
        if isinstance(func, ast.Attribute):
            return self.eval_method_call(call, func, flow, frame)
        qual = self.imports.qualify(func) if isinstance(func, (ast.Name, ast.Attribute)) else None
        if isinstance(func, ast.Name):
            name = func.id
            bound = self.lookup(name, flow, frame)
            if bound is not None and (bound.modules or bound.entities):
                pos, kw = self.args_of(call, flow, frame)
                if bound.modules:
                    return self.forward(bound, pos, kw)
                return self.opaque_call(name, pos, kw, flow)
            local = frame.local_defs.get(name) or (self.functions.get(name) if self.lookup(name, flow, frame) is None else None)
            if local is not None:
                pos, kw = self.args_of(call, flow, frame)
                return self.inline(local, None, None, pos, kw, flow, frame)
            if name in self.classes and name not in self.imports.aliases:
                info = self.classes[name]
                pos, kw = self.args_of(call, flow, frame)
                if info.is_module:
                    return self.model_value(self.mint(Kind.LIGHTNING if info.is_lightning else Kind.MODEL, name, ("ctor", id(call))))
                return self.instantiate(info, pos, kw, flow, frame)
        if qual is None:
            callee = self.eval(func, flow, frame)
            pos, kw = self.args_of(call, flow, frame)
            if callee.modules:
                return self.forward(callee, pos, kw)
            return self.opaque_call("", pos, kw, flow)
        return self.eval_qualified_call(call, qual, flow, frame)

    def forward(self, module: Value, pos: list[Value], kw: dict[str, Value]) -> Value:
        args = union_as_tensor([*pos, *kw.values()])
        return Value(reach=args.reach | frozenset(m for m in module.modules), opaque=args.opaque)

    def eval_qualified_call(self, call: ast.Call, qual: str, flow: Flow, frame: Frame) -> Value:  # noqa: C901
        last = qual.rsplit(".", 1)[-1]
        pos, kw = self.args_of(call, flow, frame)
        display = code(call.func)
        if N.is_scaler_class(qual):
            return Value(entities=frozenset({self.mint(Kind.SCALER, display, ("ctor", id(call)))}))
        if N.is_accelerator_class(qual):
            return Value(entities=frozenset({self.mint(Kind.ACCELERATOR, display, ("ctor", id(call)))}))
        if N.is_scheduler_class(qual) and not N.is_optimizer_class(qual):
            return Value(entities=frozenset({self.mint(Kind.SCHEDULER, display, ("ctor", id(call)))}))
        if N.is_optimizer_class(qual):
            return self.new_optimizer(call, pos, kw, None)
        if qual == "torch.autograd.backward" and pos:
            self.record_backward(call, pos[0], code(arguments(call)[0].value), flow, frame, framework_scaled=False)
            return EMPTY
        if last in N.MODULE_PASSTHROUGH_FUNCS and pos and (pos[0].modules or pos[0].entities):
            return pos[0]
        if last in ("deepcopy", "copy") and pos and pos[0].modules:  # a new module with its own parameters
            return self.model_value(self.mint(Kind.MODEL, display, ("ctor", id(call))))
        if last in ("Parameter", "Variable") or (qual.startswith("torch.") and "requires_grad" in kw and self.bool_literal(keyword_value(call, "requires_grad"))):
            return self.model_value(self.mint(Kind.PARAM, display, ("param", id(call))))
        if N.is_model_constructor(qual, frozenset(n for n, c in self.classes.items() if c.is_module)):
            return self.model_value(self.mint(Kind.MODEL, display, ("ctor", id(call))))
        if last in ("chain", "list", "tuple", "filter", "sorted", "iter", "set"):
            vals = pos[1:] if last == "filter" else pos
            j = join(vals) if vals else EMPTY
            return Value(entities=j.entities, modules=j.modules, params=j.params, reach=j.reach, opaque=j.opaque, items=j.items if len(vals) == 1 else ())
        if last in ("sum", "mean", "stack", "cat", "max", "min", "abs"):
            return union_as_tensor([*pos, *kw.values()])
        if last in ("div", "true_divide") and len(pos) >= 2:
            return union_as_tensor(pos).with_divisor(code(arguments(call)[1].value))
        if qual.startswith(("torch.", "numpy.", "math.", "F.", "torch")) or last in N.HARMLESS_BUILTINS:
            if last.startswith("clip_grad") or last in ("len", "isinstance", "print", "range"):
                return EMPTY
            return union_as_tensor([*pos, *kw.values()])
        # A freeze helper we cannot see: `set_requires_grad(D, False)`, `freeze(model)`.
        lname = last.lower()
        if ("requires_grad" in lname or "freeze" in lname) and any(v.modules or v.params for v in pos):
            flag = next((self.bool_literal(a.value) for a in arguments(call) if self.bool_literal(a.value) is not None), None)
            frozen = (not flag) if flag is not None else ("unfreeze" not in lname and "freeze" in lname)
            holders = self.holders_of_modules(pos)
            if flag is not None or "freeze" in lname:
                flow.map(lambda s: s.freeze(holders, frozen))
                return EMPTY
        return self.opaque_call(last, pos, kw, flow)

    def new_optimizer(self, call: ast.Call, pos: list[Value], kw: dict[str, Value], owner_hint: Value | None) -> Value:
        params = pos[0] if pos else kw.get("params", kw.get("model_params"))
        display = code(call.func)
        ent = self.mint(Kind.OPTIMIZER, display, ("ctor", id(call)))
        own = self.table.ownership.setdefault(ent.uid, Ownership())
        holders: frozenset[Holder] = frozenset()
        unknown = True
        if params is not None:
            holders = frozenset(h for h in (params.params | (params.modules if params.modules and not params.params else frozenset())) if not h.pseudo)
            unknown = not holders or (params.opaque and not holders)
        if owner_hint is not None and not holders and owner_hint.modules:
            holders = frozenset(owner_hint.modules)
            unknown = False
        own.holders = own.holders | holders
        own.unknown = own.unknown and unknown if own.holders else unknown
        own.names = tuple(sorted({self.table.holder_name(h) for h in own.holders}))
        return Value(entities=frozenset({ent}))

    def opaque_call(self, name: str, pos: list[Value], kw: dict[str, Value], flow: Flow) -> Value:
        """A call the analysis cannot follow: it may run models it is given, and may touch grads."""
        vals = [*pos, *kw.values()]
        opts = [o for v in vals for o in v.of_kind(Kind.OPTIMIZER)]
        models = [v for v in vals if v.modules]
        # `zero_grad(self.model_params)`: a helper given a parameter collection
        param_lists = [v for v in vals if v.params and not v.modules] if N.callee_suggests_grad_effect(name) else []
        if opts or ((models or param_lists) and N.callee_suggests_grad_effect(name)):
            holders: set[Holder] = set()
            for o in opts:
                holders |= self.table.optimizer_holders(o)
            holders |= self.holders_of_modules(models)
            for v in param_lists:
                holders |= self.grad_holders(v)
            if models:
                holders |= {Holder(o.uid, (), pseudo=True) for o in self.all_optimizers()}
            flow.map(lambda s: s.clear(0, holders, record_discards=False))
        reach = frozenset().union(*(v.reach | v.modules for v in vals)) if vals else frozenset()
        params = frozenset().union(*(v.params for v in vals)) if vals else frozenset()
        return Value(reach=reach, params=params, opaque=True)

    def holders_of_modules(self, vals: Iterable[Value]) -> set[Holder]:
        out: set[Holder] = set()
        for v in vals:
            out |= {m for m in v.modules if not m.pseudo}
            out |= set(v.params)
            for _, item in v.items:
                out |= self.holders_of_modules([item])
        return out

    def holders_of_params(self, v: Value) -> set[Holder]:
        return set(v.params) | {m for m in v.modules} | {r for r in v.reach if self.table.entities.get(r.uid) and self.table.entities[r.uid].kind is Kind.PARAM}

    def grad_holders(self, v: Value) -> set[Holder]:
        """Whose `.grad` a write through these parameters reaches (`p.grad = None`, `p.grad /= n`): theirs,
        and, as for `model.zero_grad()`, whatever an optimizer of unknown parameters owns."""
        holders = self.holders_of_params(v)
        if any(not h.pseudo for h in holders):
            holders |= {Holder(o.uid, (), pseudo=True) for o in self.all_optimizers() if self.table.ownership.get(o.uid, Ownership()).unknown}
        return holders

    def eval_method_call(self, call: ast.Call, func: ast.Attribute, flow: Flow, frame: Frame) -> Value:  # noqa: C901
        attr = func.attr
        recv_node = func.value
        bound_key = N.ref_text(func)
        bound = self.lookup(bound_key, flow, frame) if bound_key else None
        if bound is not None and bound.modules:  # `self.netD(x)`: calling a stored module
            pos, kw = self.args_of(call, flow, frame)
            return self.forward(bound, pos, kw)
        qual = self.imports.qualify(func)
        # Module-level functions reached through an import alias: `torch.optim.Adam(...)`, `F.mse_loss(...)`.
        if qual is not None and qual.split(".", 1)[0] in set(self.imports.aliases.values()) | {"torch"} and N.dotted(recv_node) is not None:
            head = N.dotted(recv_node).split(".", 1)[0]  # type: ignore[union-attr]
            if head in self.imports.aliases and self.lookup(head, flow, frame) is None:
                return self.eval_qualified_call(call, qual, flow, frame)
        # Methods of the class being analysed: `self.train_step(batch)`.
        if isinstance(recv_node, ast.Name) and recv_node.id == "self" and frame.cls is not None:
            method = self.find_method(frame.cls, attr)
            if method is not None and self.lookup(f"self.{attr}", flow, frame) is None:
                pos, kw = self.args_of(call, flow, frame)
                return self.inline(method, frame.cls, frame.self_value, pos, kw, flow, frame)
            if frame.cls.is_lightning:
                if attr == "manual_backward" and arguments(call):
                    loss = self.eval(arguments(call)[0].value, flow, frame)
                    self.record_backward(call, loss, code(arguments(call)[0].value), flow, frame, framework_scaled=False)
                    return EMPTY
                if attr == "optimizers":
                    return self.lightning_optimizers(frame, flow)
                if attr in ("toggle_optimizer", "untoggle_optimizer"):
                    pos, _ = self.args_of(call, flow, frame)
                    self.lightning_toggle(attr == "toggle_optimizer", pos, flow, frame)
                    return EMPTY
        recv = self.eval(recv_node, flow, frame)
        recv_text = code(recv_node)
        # Methods of local classes called on an instance: `trainer.fit()`.
        if isinstance(recv.const, tuple) and recv.const[:1] == ("instance",):
            info = self.classes.get(str(recv.const[1]))
            method = self.find_method(info, attr) if info else None
            if method is not None and info is not None:
                pos, kw = self.args_of(call, flow, frame)
                result = self.inline(method, info, recv, pos, kw, flow, frame, instance_key=N.ref_text(recv_node))
                return result
        if attr == "backward":
            accel = recv.of_kind(Kind.ACCELERATOR)
            # `accelerator.backward(loss)`, `engine.backward(loss)`, apex's `optimizer.backward(loss)`: the loss is the argument
            by_object = accel or recv.modules or recv.of_kind(Kind.OPTIMIZER) or re.search(
                r"accelerator|engine|fabric|trainer|deepspeed", recv_text, re.I) or re.search(r"(^|[._])(optimizer|optim)$", recv_text)
            if arguments(call) and arguments(call)[0].keyword is None and by_object:
                loss = self.eval(arguments(call)[0].value, flow, frame)
                self.record_backward(call, loss, code(arguments(call)[0].value), flow, frame, framework_scaled=bool(accel) or "accelerator" in recv_text)
                return EMPTY
            self.args_of(call, flow, frame)
            inputs = keyword_value(call, "inputs")
            only = None
            if inputs is not None:  # `loss.backward(inputs=d_params)` accumulates into those alone
                only = self.holders_of_params(self.eval(inputs, flow.copy(), frame))
            self.record_backward(call, recv, self.loss_text(recv_node), flow, frame, framework_scaled=False, only=only)
            return EMPTY
        pos, kw = self.args_of(call, flow, frame)
        opts = recv.of_kind(Kind.OPTIMIZER)
        if attr in ("step", "zero_grad") and not recv.entities and not recv.modules and self._looks_like_optimizer(recv_text):
            # An optimizer the analysis did not see being built (a parameter, an attribute set elsewhere).
            key = N.ref_text(recv_node)
            scope = ("self",) if recv_text.startswith("self.") else self._call_path
            minted = Value(entities=frozenset({self.mint(Kind.OPTIMIZER, recv_text, ("ref", recv_text, scope))}))
            self.table.name_after(next(iter(minted.entities)).uid, recv_text)
            if key is not None:
                flow.env[key] = minted
            recv = minted
            opts = recv.of_kind(Kind.OPTIMIZER)
        if attr == "step":
            if recv.of_kind(Kind.SCALER) or re.search(r"scaler", recv_text, re.I):
                for o in (pos[0].of_kind(Kind.OPTIMIZER) if pos else []):
                    self.record_step(call, o, f"{recv_text}.step({code(arguments(call)[0].value)})", flow, frame)
                return EMPTY
            if opts:
                closure = arguments(call)[0].value if arguments(call) else keyword_value(call, "closure")
                if closure is not None:
                    self.run_closure(closure, flow, frame)
                for o in opts:
                    self.record_step(call, o, f"{recv_text}.step()", flow, frame)
            return EMPTY
        if attr == "optimizer_step" and pos:  # torch_xla's xm.optimizer_step(opt), Lightning hooks
            for o in pos[0].of_kind(Kind.OPTIMIZER):
                self.record_step(call, o, code(call), flow, frame)
            return EMPTY
        if attr == "zero_grad":
            if opts:
                holders: set[Holder] = set()
                for o in opts:
                    holders |= self.table.optimizer_holders(o)
                self.record_clear(call, f"{recv_text}.zero_grad()", recv_text, holders, flow, frame)
            elif recv.modules:
                holders = {m for m in recv.modules}
                holders |= {Holder(o.uid, (), pseudo=True) for o in self.all_optimizers() if self.table.ownership.get(o.uid, Ownership()).unknown}
                self.record_clear(call, f"{recv_text}.zero_grad()", recv_text, holders, flow, frame)
            elif not recv.entities:
                self.record_clear(call, f"{recv_text}.zero_grad()", recv_text, set(), flow, frame, everything=True)
            return EMPTY
        if attr in ("zero_", "fill_", "mul_") and isinstance(recv_node, ast.Attribute) and (recv_node.attr == "grad" or (recv_node.attr == "data" and isinstance(recv_node.value, ast.Attribute) and recv_node.value.attr == "grad")):
            grad_owner = recv_node.value if recv_node.attr == "grad" else recv_node.value.value  # type: ignore[attr-defined]
            owner = self.eval(grad_owner, flow.copy(), frame)
            holders = self.grad_holders(owner)
            is_zero = attr == "zero_" or (arguments(call) and code(arguments(call)[0].value) in ("0", "0.0", "0."))
            if holders and is_zero:
                stmt_text = code(call)
                self.record_clear(call, stmt_text, code(grad_owner), holders, flow, frame)
            elif holders and attr == "mul_":
                flow.map(lambda s: s.rescale(holders))
            elif holders:  # `p.grad.fill_(0.01)` replaces the gradient outright
                flow.map(lambda s: s.clear(0, holders, record_discards=False))
            return EMPTY
        if attr in ("div_",) and "grad" in recv_text:
            owner_node = recv_node
            while isinstance(owner_node, ast.Attribute) and owner_node.attr in ("grad", "data"):
                owner_node = owner_node.value
            holders = self.grad_holders(self.eval(owner_node, flow.copy(), frame))
            if holders:
                flow.map(lambda s: s.rescale(holders))
            return EMPTY
        if attr == "requires_grad_":
            flag = self.bool_literal(arguments(call)[0].value) if arguments(call) else True
            holders = self.holders_of_params(recv)
            if holders and flag is not None:
                flow.map(lambda s: s.freeze(holders, not flag))
            return recv
        if attr in ("parameters", "named_parameters") and recv.modules:
            return Value(params=frozenset(recv.modules))
        if recv.of_kind(Kind.ACCELERATOR):
            if attr == "prepare":
                if len(pos) == 1:
                    return pos[0]
                return Value(items=tuple((str(i), v) for i, v in enumerate(pos)))
            if attr == "unwrap_model" and pos:
                return pos[0]
            return EMPTY
        if recv.of_kind(Kind.SCALER):
            if attr == "scale" and pos:
                return pos[0]
            return EMPTY
        if recv.modules:
            if attr in N.MODULE_PASSTHROUGH_METHODS:
                if attr == "requires_grad_":
                    return recv
                return recv
            if attr in ("parameters", "named_parameters"):
                return Value(params=frozenset(recv.modules))
            if N.is_optimizer_class(attr):  # minGPT/nanoGPT: model.configure_optimizers(config)
                return self.new_optimizer(call, [], {}, recv)
            if attr in N.MODULE_NON_FORWARD_METHODS:
                return EMPTY
            if N.callee_suggests_grad_effect(attr) and attr not in ("forward",):
                self.opaque_call(attr, [recv, *pos], kw, flow)
                return EMPTY
            return self.forward(recv, pos, kw)
        if N.TENSOR_CUTTING_METHODS.__contains__(attr):
            if attr == "detach_":
                key = N.ref_text(recv_node)
                if key is not None:
                    flow.env[key] = EMPTY
            return EMPTY
        if attr in ("div", "true_divide", "div_") and pos:
            return union_as_tensor([recv, *pos]).with_divisor(code(arguments(call)[0].value))
        if attr in ("mul", "mul_") and arguments(call):
            div = self.reciprocal(arguments(call)[0].value)
            v = union_as_tensor([recv, *pos])
            return v.with_divisor(div) if div else v
        if attr in ("items", "values", "keys") and recv.items:
            return recv
        if opts or recv.of_kind(Kind.SCHEDULER):
            return EMPTY
        if attr in ("append", "extend", "add") and pos:
            key = N.ref_text(recv_node)
            if key is not None:
                flow.env[key] = join([recv, pos[0]])
            return EMPTY
        if attr in ("get", "pop") and recv.items and arguments(call):
            k = N.literal_key(arguments(call)[0].value)
            item = recv.item(k) if k is not None else None
            return item if item is not None else join([v for _, v in recv.items])
        if recv.opaque and not recv.reach and N.OPTIMIZER_NAME.search(attr) and N.is_optimizer_class(attr):
            return self.new_optimizer(call, pos, kw, None)
        result = union_as_tensor([recv, *pos, *kw.values()])
        if isinstance(recv_node, ast.Name) and recv_node.id in self.imports.aliases and not recv.reach:
            # A function of an imported module we know nothing about: opaque.
            return self.opaque_call(attr, pos, kw, flow)
        return result

    def _looks_like_optimizer(self, text: str) -> bool:
        if N.SCHEDULER_NAME.search(text) or re.search(r"scaler|engine|accelerator|trainer|env\b", text, re.I):
            return False
        return text in self.optimizer_refs or bool(N.OPTIMIZER_NAME.search(text.rsplit(".", 1)[-1]))

    def loss_text(self, node: ast.expr) -> str:
        """`scaler.scale(loss)` -> `loss`; `(loss / n)` -> `loss / n`."""
        node = node
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "scale" and arguments(node):
            return code(arguments(node)[0].value)
        return code(node)

    def find_method(self, info: ClassInfo | None, name: str, seen: frozenset[str] = frozenset()) -> _Function | None:
        if info is None or info.name in seen:
            return None
        if name in info.methods:
            return info.methods[name]
        for base in info.bases:
            parent = self.classes.get(base.rsplit(".", 1)[-1])
            found = self.find_method(parent, name, seen | {info.name})
            if found is not None:
                return found
        return None

    def run_closure(self, closure: ast.expr, flow: Flow, frame: Frame) -> None:
        """`optimizer.step(closure)` evaluates the closure (forward, backward) before updating."""
        if isinstance(closure, ast.Name):
            fn = frame.local_defs.get(closure.id) or self.functions.get(closure.id)
            if fn is not None:
                self.inline(fn, frame.cls, frame.self_value, [], {}, flow, frame)
        elif isinstance(closure, ast.Lambda):
            self.eval(closure.body, flow, frame)

    # -- Lightning
    def lightning_optimizers(self, frame: Frame, flow: Flow) -> Value:
        cls = frame.cls
        assert cls is not None
        method = self.find_method(cls, "configure_optimizers")
        if method is not None:
            scratch = flow.copy()
            result = self.inline(method, cls, frame.self_value, [], {}, scratch, frame)
            opts = result
            first = result.item("0")
            if first is not None and not first.of_kind(Kind.OPTIMIZER) and first.items:
                opts = first
            elif result.item("optimizer") is not None:
                opts = result.item("optimizer")  # type: ignore[assignment]
            if opts is not None and opts.of_kind(Kind.OPTIMIZER):
                return opts
        ent = self.mint(Kind.OPTIMIZER, "self.optimizers()", ("lightning", cls.name))
        return Value(entities=frozenset({ent}))

    def lightning_toggle(self, on: bool, pos: list[Value], flow: Flow, frame: Frame) -> None:
        if not pos or frame.self_value is None:
            return
        opts = pos[0].of_kind(Kind.OPTIMIZER)
        owned: set[Holder] = set()
        for o in opts:
            own = self.table.ownership.get(o.uid)
            if own is None or own.unknown:
                return
            owned |= set(own.holders)
        others = {h for o in self.all_optimizers() for h in self.table.optimizer_holders(o) if h not in owned and not h.pseudo}
        flow.map(lambda s: s.freeze(others, on))

    # -- inlining
    def inline(
        self,
        fn: _Function,
        cls: ClassInfo | None,
        self_value: Value | None,
        pos: list[Value],
        kw: dict[str, Value],
        flow: Flow,
        frame: Frame,
        instance_key: str | None = None,
    ) -> Value:
        """Run a same-file function or method at its call site, with the caller's values bound."""
        if frame.depth >= MAX_DEPTH or id(fn) in frame.active:
            return self.opaque_call(fn.name, pos, kw, flow)
        self.inlined.add(id(fn))
        with self._at_call_site(fn):
            return self._run_inlined(fn, cls, self_value, pos, kw, flow, frame, instance_key)

    @contextlib.contextmanager
    def _at_call_site(self, fn: _Function) -> Iterator[None]:
        """Entities made inside the callee belong to this call site (`mlp(...)` twice: two models)."""
        outer = self._call_path
        self._call_path = outer + (self._calls[-1] if self._calls else id(fn),)
        try:
            yield
        finally:
            self._call_path = outer

    def _run_inlined(  # noqa: C901 - binding rules for self, parameters, closures and globals
        self, fn: _Function, cls: ClassInfo | None, self_value: Value | None, pos: list[Value],
        kw: dict[str, Value], flow: Flow, frame: Frame, instance_key: str | None,
    ) -> Value:
        env: dict[str, Value] = {}
        if self_value is not None and isinstance(self_value.const, tuple) and self_value.items:
            env.update({f"self.{k}": v for k, v in self_value.items})  # a local instance: `trainer.fit()`
        elif cls is not None:
            if frame.cls is cls:  # `self.update_D()` from another method: the same `self`
                env.update({k: v for k, v in flow.env.items() if k.startswith("self.")})
            if not any(k.startswith("self.") for k in env):
                env.update(self.class_self_env(cls))
        params, kwonly, stars = parameters(fn)
        if cls is not None and params and params[0].name in ("self", "cls") and not self._is_static(fn):
            params = params[1:]
        for p, v in zip(params, pos):
            if not v.entities and not v.modules:
                # an argument of unknown origin, used in the callee like a model or an optimizer
                v = self.entity_for_unknown_ref(p.name) or v
            env[p.name] = v
        for p in [*params[len(pos):], *kwonly]:
            name = p.name
            if name in kw:
                env[name] = kw[name]
            elif p.default is not None:
                env[name] = self.eval(p.default, flow.copy(), frame)
            else:
                env[name] = self.entity_for_unknown_ref(name) or OPAQUE
        for star in stars:
            env[star] = OPAQUE
        # Globals stay visible through the caller's environment when called from module level, and a
        # nested function (a closure) sees the variables of the function that defines it.
        closure = frame.local_defs.get(fn.name) is fn
        outer_globals = {k: v for k, v in flow.env.items() if "." not in k and k not in env} if frame.function is None or closure else {}
        env.update(outer_globals)
        callee_flow = Flow(env, flow.states)
        callee = Frame(
            function=fn, cls=cls, self_value=self_value if not (self_value and isinstance(self_value.const, tuple)) or cls is None else self_value,
            depth=frame.depth + 1, local_defs={}, loops=frame.loops, ifs=frame.ifs, no_grad=frame.no_grad,
            accumulate_ctx=frame.accumulate_ctx, active=frame.active + (id(fn),),
        )
        if cls is not None and cls.is_module and (self_value is None or isinstance(self_value.const, tuple)):
            callee.self_value = self.self_value_for(cls)
        out = self.exec_block(fn.body, callee_flow, callee)
        exits = [out.normal, *(f for f, _ in out.returns)]
        final = Flow.join(exits)
        ret = join([v for _, v in out.returns]) if out.returns else EMPTY
        if final is None:
            flow.states = frozenset()
            return ret
        flow.states = final.states
        for k, v in final.env.items():
            if k.startswith("self.") and self_value is not None and not isinstance(self_value.const, tuple):
                flow.env[k] = v
            elif k.startswith("self.") and cls is not None and frame.cls is cls:
                flow.env[k] = v
            elif k in outer_globals and v is not outer_globals[k]:
                flow.env[k] = v
        if instance_key is not None and self_value is not None and isinstance(self_value.const, tuple):
            items = dict(self_value.items)
            items.update({k[5:]: v for k, v in final.env.items() if k.startswith("self.")})
            flow.env[instance_key] = replace(self_value, items=tuple(items.items()))
        return ret

    @staticmethod
    def _is_static(fn: _Function) -> bool:
        return any(N.last_name(d) == "staticmethod" for d in fn.decorator_list)

    def instantiate(self, info: ClassInfo, pos: list[Value], kw: dict[str, Value], flow: Flow, frame: Frame) -> Value:
        instance = Value(const=("instance", info.name))
        init = self.find_method(info, "__init__")
        if init is None:
            return instance
        scratch = Flow(dict(flow.env), flow.states)
        key = f"__instance_{info.name}"
        self.inline(init, info, instance, pos, kw, scratch, frame, instance_key=key)
        flow.states = scratch.states
        return scratch.env.get(key, instance)

    # ------------------------------------------------------------------ events
    def record_backward(self, call: ast.Call, loss: Value, loss_text: str, flow: Flow, frame: Frame, framework_scaled: bool,
                        only: set[Holder] | None = None) -> None:
        # Each backward makes every later one dearer; one statement can hold thousands of them
        # (`f(a.backward(), b.backward(), ...)`), so the time budget is checked here too, every 256th
        # call as between statements: the first ones always run, however long the set-up took.
        self.backward_calls += 1
        if self.backward_calls & 255 == 0 and self._past_deadline():
            raise BudgetExhausted
        ev = self.backwards.get(id(call))
        if ev is None:
            ev = Backward(self._ordinal(call), call, code(call), loss_text, loss, framework_scaled)
            self.backwards[id(call)] = ev
        else:
            ev.loss = join([ev.loss, loss])
        ev.loop_stacks.add(frame.loops)
        ev.if_stacks.add(frame.ifs)
        written: dict[Holder, bool] = {}
        reach = {h for h in loss.reach if not h.pseudo}
        if frame.no_grad:
            reach = set()
        in_scope = self.optimizers_in_scope(flow)
        unknown_opts = [o for o in in_scope if self.table.ownership.get(o.uid, Ownership()).unknown]
        if reach:
            for h in reach:
                written[h] = True
            # A loss through `model` also writes each part of it that an optimizer owns on its own
            # (`backbone_opt` on model.features, `head_opt` on model.classifier): track them apart.
            for o in in_scope:
                for h in self.table.optimizer_holders(o):
                    if not h.pseudo and h.path and any(r.uid == h.uid and h.path[: len(r.path)] == r.path for r in reach):
                        written.setdefault(h, True)
            # Optimizers whose parameters we cannot name may own what this loss reaches; a name
            # (`decoder_optimizer` next to `decoder`) says which model it most likely updates.
            for o in unknown_opts:
                owner = self.guess_owner(o, flow)
                if owner is None:
                    written[Holder(o.uid, (), pseudo=True)] = len(in_scope) == 1
                elif any(owner.overlaps(h) for h in reach):
                    written[Holder(o.uid, (), pseudo=True)] = True
        elif loss.opaque or not loss.reach:
            # Unknown reach: assume it writes the parameters of every optimizer in reach, without certainty.
            for o in in_scope:
                for h in self.table.optimizer_holders(o):
                    written[h] = False
        if only is not None:
            written = {h: c for h, c in written.items() if any(h.overlaps(o) for o in only)} if only else {}
        ev.written |= set(written)
        flow.map(lambda s: s.backward(ev.id, written))

    def guess_owner(self, opt: Entity, flow: Flow) -> Holder | None:
        """The one model in scope whose name shares a role with the optimizer's (`opt_G` and `G`)."""
        wanted = N.roles(self.table.label(opt.uid)) - {"optimizers", "optim", "opts"}
        if not wanted:
            return None
        found: set[Holder] = set()
        for key, v in flow.env.items():
            for m in v.modules:
                if not m.path and not m.pseudo and N.roles(self.table.holder_name(m)) & wanted:
                    found.add(m)
        return next(iter(found)) if len(found) == 1 else None

    def _ordinal(self, node: ast.AST) -> int:
        """A small integer per event node, in order of first meeting: deterministic across runs."""
        return self._ordinals.setdefault(id(node), len(self._ordinals) + 1)

    def optimizers_in_scope(self, flow: Flow) -> list[Entity]:
        """Optimizers the code at this point can name (its variables, `self.*`, module globals)."""
        found: dict[int, Entity] = {}

        def visit(v: Value, depth: int = 0) -> None:
            for e in v.entities:
                if e.kind is Kind.OPTIMIZER:
                    found[e.uid] = e
            if depth < 2:
                for _, item in v.items:
                    visit(item, depth + 1)

        for v in flow.env.values():
            visit(v)
        for k, v in self.module_env.items():
            if k not in flow.env:
                visit(v)
        return sorted(found.values(), key=lambda e: e.uid)

    def record_step(self, call: ast.Call, opt: Entity, text: str, flow: Flow, frame: Frame) -> None:
        ev = self.steps.get(id(call))
        key = (id(call), opt.uid)
        if ev is None or ev.optimizer.uid != opt.uid:
            ev = self.steps.get(hash(key)) if ev is not None else None
            if ev is None:
                ev = Step(id(call), call, text, opt)
                self.steps[ev.id if self.steps.get(id(call)) is None else hash(key)] = ev
        ev.incoming |= set(flow.states)
        ev.loop_stacks.add(frame.loops)
        ev.if_stacks.add(frame.ifs)
        ev.framework_gated = ev.framework_gated or frame.accumulate_ctx
        holders = self.table.optimizer_holders(opt)
        flow.map(lambda s: s.step(opt.uid, holders))

    def record_clear(
        self,
        node: ast.AST,
        text: str,
        target: str,
        holders: set[Holder],
        flow: Flow,
        frame: Frame,
        everything: bool = False,
    ) -> None:
        ev = self.clears.get(id(node))
        if ev is None:
            ev = Clear(self._ordinal(node), node, text, target, set(holders), everything)
            self.clears[id(node)] = ev
        else:
            ev.holders |= holders
        # a loop over parameters (`for p in model.parameters(): p.grad = None`) is part of the clear
        ev.loop_stacks.add(tuple(loop for loop in frame.loops if loop not in self.loops or self.trains(self.loops[loop].node)))
        stepped = frozenset().union(*(self.table.optimizer_holders(o) for o in self.all_optimizers())) if self.all_optimizers() else None
        owners: dict[Holder, frozenset[int]] = {}
        for o in self.all_optimizers():
            for h in self.table.optimizer_holders(o):
                owners[h] = owners.get(h, frozenset()) | {o.uid}
        memo: dict[tuple[str, Holder], object] = {}
        if everything:
            flow.map(lambda s: s.clear(ev.id, [h for h, _ in s.grads], stepped=stepped, owners=owners, memo=memo))
        else:
            flow.map(lambda s: s.clear(ev.id, holders, stepped=stepped, owners=owners, memo=memo))
