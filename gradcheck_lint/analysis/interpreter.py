"""Abstract interpretation of a module's training code over the gradient typestate: control flow.

The interpreter walks statements in order, carrying a *flow*: one environment of abstract values
(joined over paths: which names may be models, optimizers, tensors reaching a model) and a set of
path states (the gradient typestate, kept per path, with branch assumptions). Loops run to a fixed
point, so the path from the end of one iteration to the start of the next is checked too.

The work is split by idea: this module runs statements and branches; `expressions` evaluates
expressions and assignments; `calls` resolves calls (same-file functions are inlined, API calls go
to the catalogue of API models through `effects`); `objects` knows which objects exist and what
parameters each optimizer owns; `counters` follows loop counters and accumulation windows;
`entrypoints` decides which functions are analysed and from what context; `recorder` records events.
"""

from __future__ import annotations

import ast
import functools
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace

from . import flags, grad_mode, past_bounds, pathcond, periods, remainder_flush, type_tests
from . import names as N
from .amp import Amp
from .apimodels import Catalogue, ModelFile, catalogue_for
from .assigned_constants import AssignedConstants
from .boolparts import BoolParts
from .bound_tests import BoundTests
from .callables import Callables
from .calls import Calls
from .comprehension_loops import statement_loop
from .conditions import Condition, analyse_test
from .context_helpers import YieldContexts
from .counters import Counters, split_at_last
from .deferred import synthetic_call
from .definitions import ClassInfo, Definitions, is_property
from .effects import Effects
from .entrypoints import EntryPoints
from .events import Loop
from .expressions import Expressions, grad_assignment_kind
from .fixed_tests import FixedTests
from .flow import (
    GENERATION,
    MAX_LOOP_ITERATIONS,
    UNIT_WINDOW,
    WORK_BUDGET,
    BudgetExhausted,
    Flow,
    Frame,
    Outcome,
    rebase_graphs,
)
from .gradstate import CAP, STATE_CAP, PathState
from .gradstate import Assumption as GateAssumption
from .keepalive import KeepAlives
from .names import ImportMap
from .no_grad_results import made_without_grad
from .objects import Objects
from .one_batch import reuses_drawn_batch
from .parameter_tests import FLAG_NODES, HandedValues, reads_only_parameters
from .parts import Project
from .prescan import Prescan
from .provenance import Provenance
from .recorder import Recorder
from .relations import Relation, implied, relation
from .resets import ResetWindow, reset_window
from .returned_tests import returned_test
from .sync_choices import SyncChoice
from .syntax import (
    FUNCTIONS,
    LOOPS,
    SIMPLE_STATEMENTS,
    TESTS,
    WITHS,
    Source,
    binding_targets,
    carried_names,
    code,
    is_int,
    made_nodes,
    read_source,
    rebound_by,
    reference_aliases,
    stored_names,
)
from .unbound_names import may_raise, raising_statements
from .unit_divisors import rescales_only_by_tested
from .values import EMPTY, EntityTable, Holder, Value, truthless
from .walk import breadth_first, child_nodes, children, iter_tree, parents
from .window_arithmetic import ALL_PHASES, unit_truth, unit_window
from .worlds import Worlds

_TRIES: tuple[type, ...] = (ast.Try, getattr(ast, "TryStar", ast.Try))  # try/except* from Python 3.11
_SMALL = frozenset(SIMPLE_STATEMENTS)
_ASSIGNING = (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.NamedExpr, ast.For, ast.AsyncFor)
_ZERO = Value(const=0)  # a step count of none


class Interpreter:
    """Compute the training events of one module and the gradient states seen at each."""

    def __init__(self, module: ast.Module, source: str, models: tuple[ModelFile, ...] = (), project: Project | None = None) -> None:
        self.module = module
        self._parents: dict[int, ast.AST] | None = None
        self._loop_stores: dict[int, set[str]] = {}  # id of a loop -> names it stores into (`syntax.stored_names`)
        self._loop_rebuilt: dict[int, set[str]] = {}  # id of a loop -> `rebuilt_in`
        self._loop_carried: dict[int, frozenset[str]] = {}  # id of a loop -> `carried_in`
        # id of an expression statement -> it and the `for` loop it runs (`comprehension_loops`), or None
        self._statement_loops: dict[int, tuple[ast.Expr, ast.For | ast.AsyncFor | None]] = {}
        self._made_parents: dict[int, ast.AST] = {}  # id of a node of such a loop -> the node holding it
        self._flags: dict[tuple[int, int], bool] = {}
        self._body_stores: dict[int, set[str]] = {}  # id of a `for` -> the names its body assigns (`_rebound_in`)
        self.keeping: dict[int, bool] = {}  # tests whose lasting truth a loop's new binding keeps (`lasting_tests`)
        self._parameter_tests: dict[int, bool] = {}  # `_parameter_test`, by statement
        self._writes_back: dict[int, bool] = {}  # `_writes_back_some_gradients`, by statement
        self.fixed_tests = FixedTests(self)
        self._raising: frozenset[int] | None = None  # statements that raise NameError, read on first use
        self.source = source  # the text `module` was parsed from
        self.text: Source = read_source(source)  # what `code()` reads nodes' text from, until forget_code()
        self.catalogue: Catalogue = catalogue_for(models)
        # the other files of the project, when the file is read inside it (`gradcheck_lint.project`)
        self.project = project
        self.imports = ImportMap.of(module) if project is None else project.home_imports(module)
        self.table = EntityTable()
        self.definitions = Definitions(module, self.imports, self.catalogue,
                                       foreign=None if project is None else project.home_class_resolver())
        self.functions = self.definitions.functions
        self.classes = self.definitions.classes
        scan = Prescan(module, self.catalogue, self.imports)
        self.prescan = scan
        self._own_prescan = scan  # (`prescan` is another file's while that file's code runs)
        self.called_names, self.called_attrs = scan.called_names, scan.called_attrs
        self.model_refs, self.optimizer_refs = scan.evidence()
        # texts resolved to an object by a guess, not by reading (`pair.sched` of an object built from an optimizer,
        # stepped: taken for that optimizer): what a step or clear of that text rests on (`Step.link`)
        self.assumed_links: dict[str, Provenance] = {}
        self.windows = {k: frozenset(v) for k, v in scan.windows.items()}
        self._module_constants: dict[str, int] | None = None
        self.counter_starts: dict[str, int] = {}  # a window counter's first value (`Counters.anchor`)
        self.counter_floors: dict[str, int] = {}  # a loop's counter never stands below its first value
        self.conditions: dict[int, Condition] = {}
        self._flushes: dict[int, ast.If | None] = {}  # `flushed_gate`, by statement
        self._functions_of: dict[int, list[ast.AST]] = {}  # the functions of a module, by the id of its root
        self._flushed_elsewhere: set[int] | None = None  # gates of a flush in a function of its own
        self.worlds = Worlds()  # the settings `__init__` fixed for the run being analysed (`worlds`)
        self.akeys_testing: dict[str, list[int]] = {}  # a name -> the tests (akeys) that read it
        self.akey_scopes: dict[int, set[int]] = {}  # a test (akey) -> the functions (ids; 0: the module) it is read in
        self.loops: dict[int, Loop] = {}
        self._while_read: set[int] = set()  # `while` loops whose syntax `exec_while` has read
        self.module_env: dict[str, Value] = {}
        self.cond_aliases = BoundTests()  # `sync = (i + 1) % N == 0`: the test `if sync:` reads
        # parameters of the function being inlined bound to a test the caller wrote as the argument
        # (`loss_scaler(loss, opt, update_grad=(idx + 1) % N == 0)`): a test of the parameter is that test
        self.param_tests: dict[str, ast.expr] = {}
        # ... of those, the tests handed over by a name bound to them (`update_grad=apply_update`): id -> the name
        self.handed_names: dict[int, str] = {}
        self._handed: dict[tuple[int, int], Condition] = {}
        self.flag_gates: dict[str, tuple[int, ...]] = {}  # literal flag -> accumulation gates it was set true under
        self.by_akey: dict[int, list[Condition]] = {}
        self.handed_values = HandedValues(self.akeys_testing, self.by_akey)  # what calls hand parameters tests read
        self._akeys: dict[str, int] = {}
        self._atoms: dict[str, dict[int, pathcond.Atom]] = {}  # a subject -> the atoms (by akey) tests read of it
        self._relation: dict[int, Relation] = {}  # assumption key -> its test as a comparison of two operands
        self._compared: dict[tuple[str, str], dict[int, Relation]] = {}  # operands -> assumption keys comparing them
        self._boundaries: dict[int, Condition] = {}
        self._gated_by: dict[int, int] = {}  # an `and` test of one framework object's `sync_gradients`: that object
        self._period_starts: dict[int, bool] = {}  # condition id -> it starts a window counter's period
        self._period_counters: dict[int, frozenset[str]] = {}  # id of a file's tree -> the counters it tests
        self._assigned_in: dict[int, frozenset[str]] = {}
        # (id of a call tested, id of the running class) -> (the call, the test it returns: `returned_tests`)
        self._returned_tests: dict[tuple[int, int], tuple[ast.Call, ast.expr | None]] = {}
        self.work = 0
        self.exhausted = False
        self.grad_modes = False  # a `torch.set_grad_enabled(...)` statement ran: statements check the paths' mode
        self.unreliable: set[int] = set()  # ids of the event nodes of a root the work budget cut short
        self.window_reads: set[int] = set()  # ids of calls reading an object's accumulation window (`window_size`)
        # called before each statement of the module's top-level code (`EntryPoints`: where a cut leaves findings)
        self.top_statement: Callable[[], None] | None = None
        self.work_budget = WORK_BUDGET  # statements (and backward passes) interpreted per file
        self.cut_short: str | None = None  # what the work budget left out, said for the user (see EntryPoints)
        self.objects = Objects(self)
        self.recorder = Recorder(self)
        self.effects = Effects(self)
        self.calls = Calls(self)
        self.callables = Callables(self)
        self.expressions = Expressions(self)
        self.counters = Counters(self)
        self.entrypoints = EntryPoints(self)
        self.keepalives = KeepAlives(self)
        self.amp = Amp(self)
        self.yield_contexts = YieldContexts()  # the frames a context-manager helper's `yield` is met in
        # shorthands used across the parts
        self.mint = self.objects.mint
        self.model_value = self.objects.model_value
        self.eval = self.expressions.eval
        self.assign = self.expressions.assign
        self.forward = self.objects.forward
        self.holders_of_modules = self.objects.holders_of_modules
        self.holders_of_params = self.objects.holders_of_params
        self.grad_holders = self.objects.grad_holders
        self.own = self.objects.own
        self.reciprocal = self.expressions.reciprocal
        self.loss_text = self.expressions.loss_text
        self.ref = self.expressions.ref
        self.run_closure = self.calls.run_closure
        self.invoke = self.calls.invoke
        self.configured_optimizers = self.calls.configured_optimizers
        self.toggle = self.calls.toggle
        self.lookup = self.expressions.lookup
        # id of an `a if test else b` choosing a sync-off context -> the choice
        self.sync_choices: dict[int, SyncChoice] = {}
        self.forward_sites: dict[int, ast.Call | None] = {}  # forward ordinal -> the call that ran the module
        if project is not None:
            project.attach(self)
            self.mint = project.noting_mint(self.objects.mint)  # objects made by other files' code are marked

    # ------------------------------------------------------------------ budget
    def node_made_at(self, uid: int) -> ast.AST | None:
        """The call of this file that built the entity (`EntityTable.made_at`), when it is one of this file's."""
        site = self.table.made_at.get(uid)
        if site is None:
            return None
        if self._parents is None:
            self._parents = parents(self.module)
        holder = self._parents.get(site)
        return next((n for n in ast.iter_child_nodes(holder) if id(n) == site), None) if holder is not None else None

    def parent(self, node: ast.AST) -> ast.AST | None:
        """The node that holds `node` in this module (built on first use)."""
        if self._parents is None:
            self._parents = parents(self.module)
        found = self._parents.get(id(node)) or self._made_parents.get(id(node))
        if found is None and self.project is not None:
            return self.project.parent(node)  # a node of another file of the project
        return found

    def spend(self, units: int = 1) -> None:
        """Count work (statements interpreted, backward passes recorded) and stop past the budget. Work is
        counted, never timed: where the analysis stops does not depend on the machine or its load."""
        self.work += units
        if self.work > self.work_budget:
            raise BudgetExhausted

    def run(self) -> None:
        """Analyse the module, then every function that can train and nothing reached."""
        try:
            self.entrypoints.run()
        except BudgetExhausted:
            # A partial analysis: every state recorded so far lies on a real path, so what the rules
            # report stays true; paths not reached are simply not checked.
            self.exhausted = True

    # ------------------------------------------------------------------ statements
    def exec_block(self, body: Sequence[ast.AST], flow: Flow, frame: Frame) -> Outcome:
        out = Outcome(normal=flow)
        outer, entered = frame, None
        top = self.top_statement if body is self.module.body else None
        for stmt in body:
            if out.normal is None or not out.normal.states:
                out.normal = None
                break
            if top is not None:
                top()  # what the module's earlier statements recorded is complete (`EntryPoints`)
            if self.grad_modes:
                frame = grad_mode.frame_for(out.normal, frame)
            context = _entered_by_hand(stmt)
            if context is not None:
                # `ctx.__enter__()` ... `finally: ctx.__exit__(None, None, None)`: the statements between run in the
                # context, as a `with` body does (ultralytics'
                # `sync_context = model.no_sync() if ... else nullcontext()`)
                frame, entered = self._entered(self.eval(context, out.normal, frame), frame), code(context)
                continue
            res = self.exec_stmt(stmt, out.normal, frame)
            mode = grad_mode.setting(stmt, self.imports, self.catalogue) if type(stmt) is ast.Expr else None
            if mode is not None and res.normal is not None:
                grad_mode.apply(res.normal, mode)  # `torch.set_grad_enabled(False)` on its own line: see `grad_mode`
                self.grad_modes = True
            out.normal = res.normal
            out.breaks += res.breaks
            out.continues += res.continues
            out.returns += res.returns
            if entered is not None and _exits_by_hand(stmt, entered):
                frame, entered = outer, None
        if out.normal is not None and not out.normal.states:
            # the block's last statement ended every path (a call that raises `TypeError`): the block does not fall
            # through, so what it bound is no binding of the code after it (a branch's join)
            out.normal = None
        return out

    def exec_stmt(self, stmt: ast.AST, flow: Flow, frame: Frame) -> Outcome:
        # A statement costs one unit, more where hundreds of names are in sight (joins and scans of the
        # environment grow with it: 20,000 loops of one module, each binding its own variable).
        self.work += 1 + (len(flow.env) >> 8)
        if self.work > self.work_budget:
            raise BudgetExhausted
        if self._raising is None:
            prescan = self.prescan
            self._raising = (raising_statements(self.module) if may_raise(prescan.names_read, prescan.names_bound)
                             else frozenset())
        if id(stmt) in self._raising:
            return Outcome(normal=None)  # reads a name bound nowhere: NameError ends the path (`unbound_names`)
        outer = CAP.place
        CAP.place = (stmt, frame)  # where paths dropped at the cap were (`pathcap`)
        out = self._exec_stmt(stmt, flow, frame)
        CAP.place = outer
        return out

    def _exec_stmt(self, stmt: ast.AST, flow: Flow, frame: Frame) -> Outcome:
        kind = type(stmt)
        if kind in _SMALL:
            return self.exec_small(stmt, flow, frame)
        if kind is ast.If:
            return self.exec_if(stmt, flow, frame)  # type: ignore[arg-type]
        if kind in LOOPS:
            return self.counters.exec_for(stmt, flow, frame)  # type: ignore[arg-type]
        if kind is ast.While:
            return self.exec_while(stmt, flow, frame)  # type: ignore[arg-type]
        if kind in WITHS:
            return self.exec_with(stmt, flow, frame)  # type: ignore[arg-type]
        if kind in _TRIES:
            return self.exec_try(stmt, flow, frame)  # type: ignore[arg-type]
        if kind in FUNCTIONS:
            frame.local_defs[stmt.name] = stmt
            self.entrypoints.defined_here(stmt, flow, frame)  # type: ignore[arg-type]
            return Outcome(normal=flow)
        if kind is ast.Match:
            branches = [self.exec_block(case.body, flow.copy(), frame) for case in stmt.cases]
            return Outcome.merge(branches + [Outcome(normal=flow)])
        return Outcome(normal=flow)

    def exec_small(self, small: ast.AST, flow: Flow, frame: Frame) -> Outcome:
        kind = type(small)
        if isinstance(small, ast.Expr):
            loop = self.statement_loop(small)
            if isinstance(loop, ast.For):  # `[self.update(l, o) for l, o in zip(losses, opts)]`: a `for` loop
                return self.counters.exec_for(loop, flow, frame)
            self.eval(small.value, flow, frame)
        elif kind is ast.Assign:
            value = self.eval(small.value, flow, frame)
            for target in small.targets:
                self.assign(target, value, flow, frame, small.value, small)
                self.assigned_constants.assigned(target, small.value, self.scope(frame), _assume_in(flow))
        elif kind is ast.AnnAssign:
            if small.value is not None:
                value = self.eval(small.value, flow, frame)
                self.assign(small.target, value, flow, frame, small.value, small)
                self.assigned_constants.assigned(small.target, small.value, self.scope(frame), _assume_in(flow))
        elif kind is ast.AugAssign:
            self.expressions.augassign(small, flow, frame)  # type: ignore[arg-type]
        elif kind is ast.Return:
            value = self.eval(small.value, flow, frame) if small.value is not None else EMPTY
            if frame.no_grad and small.value is not None:  # `return torch.sigmoid(t)` of a `@torch.no_grad()` function
                value = made_without_grad(value, small.value)
            return Outcome(normal=None, returns=[(flow, value)])
        elif kind is ast.Break:
            return Outcome(normal=None, breaks=[flow])
        elif kind is ast.Continue:
            return Outcome(normal=None, continues=[flow])
        elif kind is ast.Raise:
            return Outcome(normal=None)
        elif kind is ast.Assert:
            self.eval(small.test, flow, frame)
            if isinstance(small.test, ast.Constant) and not small.test.value:
                # `assert False` (an author's stop: openclip's before its epoch loop, lockbox 43) raises AssertionError
                # on every run not made with `python -O`: nothing after it runs
                return Outcome(normal=None)
        return Outcome(normal=flow)

    def statement_loop(self, stmt: ast.Expr) -> ast.For | ast.AsyncFor | None:
        """The `for` loop an expression statement runs when it is a comprehension evaluated for its
        effects (`comprehension_loops`): made once, so that it is the same loop on every pass."""
        hit = self._statement_loops.get(id(stmt))
        if hit is None or hit[0] is not stmt:
            loop = statement_loop(stmt)
            hit = self._statement_loops[id(stmt)] = (stmt, loop)
            if loop is not None:  # the loop's own nodes hang from the statement; the user's keep their parents
                own = {id(n) for n in iter_tree(stmt)}
                self._made_parents[id(loop)] = stmt
                made = [node for node in iter_tree(loop) if id(node) not in own]
                for node in made:
                    for child in children(node):
                        if id(child) not in own:
                            self._made_parents[id(child)] = node
                # their text is their unparsed form: positions borrowed from the comprehension are not a segment
                # of the file `code()` reads (a comprehension in another file of the project)
                made_nodes(made)
        return hit[1]

    # -- branches
    def condition(self, statement: ast.AST, test: ast.expr, lit: pathcond.Literal | None = None) -> Condition:
        """The condition of a branch statement; with `lit`, the test is that literal of its atom (`pathcond`)."""
        handed = self.param_tests.get(test.id) if isinstance(test, ast.Name) and self.param_tests else None
        if handed is not None:
            return self._handed_condition(statement, handed)
        cond = self.conditions.get(id(statement))
        if cond is None:
            alias = None
            if isinstance(test, ast.Name) and test.id in self.cond_aliases:
                # `sync = (i + 1) % N == 0` ... `if sync:`: read the test through the name
                alias, test = test.id, self.cond_aliases[test.id]
            cond = analyse_test(id(statement), statement, test, alias,  # type: ignore[arg-type]
                                self.prescan.sample_counters)
            self._note_reset(cond, test)
            if alias is not None:  # `bad = not isfinite(loss)` ... `if bad:`: the name's truth is the atom
                lit = pathcond.Literal(pathcond.Atom(pathcond.TRUTHY, alias), True)
            elif lit is None and not cond.moduli:
                lit = pathcond.literal(test)
                lit = lit if lit.atom.kind == pathcond.TRUTHY and lit.positive else None
            if lit is not None and lit.atom.kind != pathcond.TEXT and lit.atom.subject.isidentifier() and alias is None:
                # `grad_scaler = self.grad_scaler` ... `if grad_scaler:`: a test of the attribute, the same fact
                # as another method's test of it (under its own alias or by its full name)
                ref = self._reference_alias(statement, lit.atom.subject)
                if ref is not None:
                    lit = pathcond.Literal(pathcond.Atom(lit.atom.kind, ref, lit.atom.other), lit.positive)
                    cond.names = (cond.names - {test.id if isinstance(test, ast.Name) else ""}) | {ref}
            if lit is not None and lit.atom.kind != pathcond.TEXT:
                cond.atom, cond.polarity = lit.atom, lit.positive
                cond.key = lit.atom.key
            self._register(cond)
        return cond

    def _reference_alias(self, statement: ast.AST, name: str) -> str | None:
        """The attribute `name` stands for at `statement` (`syntax.reference_aliases` of its function)."""
        fn = self.parent(statement)
        while fn is not None and not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            fn = self.parent(fn)
        if fn is None:
            return None
        ref = reference_aliases(fn).get(name)
        return ref[0] if ref is not None and ref[1] < getattr(statement, "lineno", 0) else None

    def _handed_condition(self, statement: ast.AST, handed: ast.expr) -> Condition:
        """`if update_grad:` in a function called with `update_grad=(idx + 1) % N == 0`: the caller's test,
        read where the parameter is tested (one condition per test statement and argument)."""
        key = (id(statement), id(handed))
        cond = self._handed.get(key)
        if cond is None:
            core, negated, lit = pathcond.reading(handed, self._literal, self.counters.modulo_atoms)
            stmt = statement if isinstance(statement, ast.stmt) else ast.Expr(handed)
            alias = self.handed_names.get(id(handed))
            cond = analyse_test(-(len(self._handed) + 1) * 2**40, stmt, handed, alias)
            if alias is not None:  # the caller's `if apply_update:` and this test are one fact
                core, lit = handed, pathcond.Literal(pathcond.Atom(pathcond.TRUTHY, alias), True)
            # a window the caller's module counts, read here (a helper of another file): its phases too
            for counter, window in self.counters.modulo_atoms(handed):
                self.windows[counter] = self.windows.get(counter, frozenset()) | {window}
            self._note_reset(cond, handed)
            if lit is not None and lit.atom.kind != pathcond.TEXT and (core is handed or negated):
                # `step=(not self.multi_dataset)`: the parameter's test is the attribute's, the other way round
                cond.atom, cond.polarity, cond.key = lit.atom, lit.positive != negated, lit.atom.key
            self._handed[key] = cond
            self._register(cond)
        return cond

    def caller_condition(self, statement: ast.If, test: ast.expr, where: str,
                         reset: ResetWindow | None = None) -> Condition:
        """The condition of a caller's accumulation gate in another file (`statement`), standing for a flag
        parameter, its test read in the method (`test`, see `project.caller_gates`); `where` names the
        call that hands the flag over, `reset` the windows of the counter the caller's loop resets."""
        cond = self.conditions.get(id(statement))
        if cond is None:
            cond = analyse_test(id(statement), statement, test)
            cond.caller = where
            if reset is not None:
                self._set_reset(cond, reset)
            self._register(cond)
        return cond

    def _note_reset(self, cond: Condition, test: ast.expr) -> None:
        """A test of a counter the loop around it resets or counts down: its windows, run from the loop's
        statements (`resets`), make it a window gate whatever the counter is called."""
        if cond.moduli or cond.mentions_sync or not isinstance(test, TESTS):
            return
        found = reset_window(test, self.parent)
        if found is not None:
            self._set_reset(cond, found)

    @staticmethod
    def _set_reset(cond: Condition, reset: ResetWindow) -> None:
        cond.reset, cond.volatile = reset, True
        if reset.counter not in cond.counters:
            cond.counters = (*cond.counters, reset.counter)

    def _through_gates(self, flow: Flow | None, gates: tuple[int, ...]) -> Flow | None:
        """`flow` with its paths having taken the true arm of each gate (`flags.gates_of`)."""
        if flow is None or not gates:
            return flow
        held = [(c.akey, c.polarity) for g in gates if (c := self.conditions.get(g)) is not None]
        akeys = {k for k, _ in held}

        def through(s: PathState) -> PathState:
            kept = frozenset(a for a in s.assumptions if a.cond not in akeys)
            return s._with(assumptions=kept | {GateAssumption(k, v) for k, v in held})
        flow.map(through)
        return flow

    def akey(self, key: str) -> int:
        """The assumption key of an atom's key text (`pathcond.Atom.key`), shared by every test of it."""
        return self._akeys.setdefault(key, len(self._akeys) + 1)

    def _register(self, cond: Condition) -> None:
        cond.akey = self.akey(cond.key)
        self.conditions[cond.id] = cond
        if cond.atom is not None:
            self._atoms.setdefault(cond.atom.subject, {})[cond.akey] = cond.atom
        rel = relation(cond.test)
        if rel is not None:
            self._relation[cond.akey] = rel
            self._compared.setdefault(rel[:2], {})[cond.akey] = rel
        self.by_akey.setdefault(cond.akey, []).append(cond)
        self.akey_scopes.setdefault(cond.akey, set()).add(self._scope_id(cond.statement))
        for name in cond.names:
            keys = self.akeys_testing.setdefault(name, [])
            if cond.akey not in keys:
                keys.append(cond.akey)

    def _scope_id(self, node: ast.AST) -> int:
        """The id of the function whose own code holds `node` (0: the module's code)."""
        up: ast.AST | None = node
        while up is not None and not isinstance(up, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            up = self.parent(up)
        return id(up) if up is not None else 0

    def boundary(self, gate: int) -> Condition:
        """The condition `this micro-batch ends the window of framework object `gate`` (synthetic)."""
        cond = self._boundaries.get(gate)
        if cond is None:
            label = self.table.label(gate)
            test = ast.Name(id=f"{label}.sync_gradients", ctx=ast.Load())
            cond = Condition(id=-gate, statement=test, test=test, key=f"{label}.sync_gradients", names=frozenset(),  # type: ignore[arg-type]
                             moduli=(), counters=(), compared_to=(), mentions_sync=True, framework_gate=True,
                             framework_window=self.table.windows.get(gate), volatile=True)
            self._register(cond)
            self._boundaries[gate] = cond
        return cond

    def exec_if(self, stmt: ast.If, flow: Flow, frame: Frame) -> Outcome:
        flag = (flags.flag_test(stmt.test, frame.function or self.module, self.touches_gradients)
                or flags.held_flag(stmt.test, flow))
        if flag is not None:  # `if should_start_update:`: each path knows its flag (see `flags`)
            tflow, fflow = flags.split(flow, *flag)
            body_gates, else_gates = flags.gates_of(self.flag_gates, *flag, frame.ifs)
            tframe = replace(frame, ifs=frame.ifs + body_gates) if body_gates else frame
            fframe = replace(frame, ifs=frame.ifs + else_gates) if else_gates else frame
            # the arm a set flag takes is the gate's true arm of this iteration (its counter since reset)
            tflow = self._through_gates(tflow, body_gates)
            fflow = self._through_gates(fflow, else_gates)
            t = self.exec_block(stmt.body, tflow, tframe) if tflow is not None else Outcome(normal=None)
            f = (Outcome(normal=None) if fflow is None else self.exec_block(stmt.orelse, fflow, fframe) if stmt.orelse
                 else Outcome(normal=fflow))
            return Outcome.merge([t, f])
        if rescales_only_by_tested(stmt):  # `if D > 1: p.grad /= D`: on the other arm D is 1, as good as run
            return self.exec_block(stmt.body, flow, frame)
        if self._writes_back_some_gradients(stmt):  # `if name in saved: p.grad = saved[name]` over the parameters
            return self.exec_block(stmt.body, flow, frame)
        gates = self.expressions.gate_flags(stmt.test, flow, frame)
        fixed = self.fixed_tests.outcome(stmt.test, flow, frame)
        orelse = stmt.orelse
        if fixed is not None:
            if fixed:
                return self.exec_block(stmt.body, flow, frame)
            return self.exec_block(orelse, flow, frame) if orelse else Outcome(normal=flow)
        if self.worlds.active:  # a setting `__init__` fixed, also where the test is of no other interest
            cond, swapped = self.setting_condition(stmt)
            world = self.worlds.decide(cond.akey, cond.polarity, frame.cls, cond.atom)
            if world is not None:
                if world != swapped:
                    return self.exec_block(stmt.body, flow, frame)
                return self.exec_block(orelse, flow, frame) if orelse else Outcome(normal=flow)
        typed = type_tests.tested(stmt.test, self.imports)  # `isinstance(x, torch.Tensor)`: `x` on the other arm
        # `type(x) == np.ndarray`: `x` in the body; `not isinstance(xs[i], int)`: `xs[i]` in the `else` arm
        graphless = type_tests.graphless_subject(stmt.test, self.imports)
        instance = type_tests.instance_tested(stmt.test, self.imports)  # `isinstance(m, nn.DataParallel)`: not DDP
        if not self.prescan.interesting.get(id(stmt), True):
            ruled_out = typed is not None and type_tests.ruled_out(flow, *typed)
            body_flow = flow.copy()
            if graphless is not None and graphless[1]:
                self._narrow_graphless(body_flow, graphless[0], frame)
            if instance is not None:
                type_tests.narrow_to_instances(body_flow, *instance, self.catalogue)
            t = self.exec_block(stmt.body, body_flow, frame) if not ruled_out else Outcome(normal=None)
            other = flow.copy() if typed is not None or (graphless is not None and not graphless[1]) else flow
            if typed is not None:
                type_tests.narrow_failed(other, *typed)
            if graphless is not None and not graphless[1]:
                self._narrow_graphless(other, graphless[0], frame)
            if not orelse:
                return Outcome.merge([t, Outcome(normal=other)])
            f = self.exec_block(orelse, other.copy() if other is flow else other, frame)
            return Outcome.merge([t, f])
        cond, tflow, fflow = self.branch(stmt, stmt.test, flow, gates, frame)
        presence = flags.presence_test(stmt.test)
        if presence is not None and (presence[0] not in self.prescan.presence_tested or presence[0] not in
                                     flags.presence_flags(frame.function or self.module, self.touches_gradients)):
            presence = None
        if presence is not None:  # `if opt is not None:`: a path that knows it built `opt` (or not) takes its arm
            name, absent = presence
            tflow, fflow = flags.narrow(tflow, name, not absent), flags.narrow(fflow, name, absent)
        if typed is not None and tflow is not None and type_tests.ruled_out(tflow, *typed):
            tflow = None  # the value was found to be of none of these types by an earlier test of this path
        if typed is not None and fflow is not None:
            type_tests.narrow_failed(fflow, *typed)
        if graphless is not None and (arm := tflow if graphless[1] else fflow) is not None:
            self._narrow_graphless(arm, graphless[0], frame)
        if instance is not None and tflow is not None:
            type_tests.narrow_to_instances(tflow, *instance, self.catalogue)
        inner = frame if "__name__" in cond.key else replace(frame, ifs=frame.ifs + (cond.id,))
        t = self.exec_block(stmt.body, tflow, inner) if tflow is not None else Outcome(normal=None)
        if not orelse:
            f = Outcome(normal=fflow)
        elif fflow is None:
            f = Outcome(normal=None)
        else:
            f = self.exec_block(orelse, fflow, inner)
        return Outcome.merge([t, f])

    def _narrow_graphless(self, flow: Flow, node: ast.expr, frame: Frame) -> None:
        """On an arm where a test found `node` to be of a type that holds no graph (a number, an array): a name or a
        literal item holds none there; an item an index held in a name selects (`losses[idx]`) holds none while
        neither the container nor the index changes (`Expressions.remember_slot`)."""
        name = type_tests.held_name(node)
        if name is not None:
            type_tests.narrow_held(flow, name)
        elif isinstance(node, ast.Subscript) and type(node.slice) is ast.Name and N.ref_text(node.value) is not None:
            value = self.expressions.eval(node, flow.copy(), frame)
            if value.items:  # a container in that slot (`isinstance(xs[i], torch.Tensor)` failed on a dict of them)
                return
            self.expressions.remember_slot(node, type_tests.without_graph(value), flow, frame)

    def _writes_back_some_gradients(self, stmt: ast.If) -> bool:
        """An `if` with no `else`, in a loop over parameters, that tests which parameter this is and writes its
        gradient from something held (`for name, p in model.named_parameters(): if name in saved: p.grad =
        saved[name]`, or `.grad.copy_(saved[name])`): the loop writes back the gradients of the parameters it
        saved, and no pass of it writes none; to the gradients of the model, the loop does what the body does."""
        known = self._writes_back.get(id(stmt))
        if known is None:
            known = self._writes_back[id(stmt)] = not stmt.orelse and self._write_back_in(stmt)
        return known

    def _write_back_in(self, stmt: ast.If) -> bool:
        for node in (n for part in stmt.body for n in iter_tree(part)):
            if isinstance(node, ast.Assign) and len(node.targets) == 1:
                target, value = node.targets[0], node.value
                if not (isinstance(target, ast.Attribute) and target.attr == "grad") \
                        or grad_assignment_kind(value) != "replace":
                    continue
                if self.expressions.selective(node, target.value):
                    return True
            elif isinstance(node, ast.Expr) and isinstance(call := node.value, ast.Call) \
                    and isinstance(call.func, ast.Attribute) and call.func.attr in ("copy_", "add_") and call.args \
                    and isinstance(grad := call.func.value, ast.Attribute) and grad.attr == "grad":
                if self.expressions.selective(node, grad.value):
                    return True
        return False

    def setting_condition(self, stmt: ast.If) -> tuple[Condition, bool]:
        """The condition of an `if` as `branch` reads it, and whether its arms are the other way round
        (`if not self.use_fp16:` is a test of `self.use_fp16`)."""
        core, negated, lit = pathcond.reading(stmt.test, self._literal, self.counters.modulo_atoms)
        return self.condition(stmt, core, lit), negated

    def branch(self, node: ast.AST, test: ast.expr, flow: Flow, gates: Sequence[int] = (),
               frame: Frame | None = None) -> tuple[Condition, Flow | None, Flow | None]:
        """Split a flow at a branch (an `if`, a conditional expression) whose test was evaluated: its
        condition, the paths on which the test holds and those on which it does not (None: no path)."""
        test = self._returned(test, frame)  # `if self.__is_update_step(progress):`: the test it returns
        # `if x is not None:`, `if mode != "eval":`: a literal of an atom other tests share; `if not flag:` a
        # test of `flag`, its arms swapped
        core, negated, lit = pathcond.reading(test, self._literal, self.counters.modulo_atoms)
        if len(set(gates)) == 1 and (isinstance(core, ast.Attribute) and core.attr == "sync_gradients"
                                     or isinstance(core, ast.Call) and isinstance(core.func, ast.Attribute)
                                     and not core.args and not core.keywords):
            # `if self.accelerator.sync_gradients:` is the very boundary on which the accelerator's gated
            # `optimizer.step()` fires, whatever name the accelerator goes by where it was made: one atom; so is
            # `if engine.is_gradient_accumulation_boundary():` of DeepSpeed's gated `engine.step()`
            cond = self.boundary(gates[0])
        else:
            cond = self.condition(node, core, lit)
        if gates and not cond.framework_gate:  # `if accelerator.sync_gradients and clip:`
            if len(set(gates)) == 1:
                self._gated_by[cond.id] = gates[0]  # its `sync_gradients` operand is that object's boundary
            cond.framework_gate, cond.volatile = True, True
            cond.framework_window = next((self.table.windows.get(g) for g in gates if self.table.windows.get(g)), None)
        self.counters.note_counter(cond, flow)
        tflow, fflow = self.split(flow, cond, frame)
        return (cond, fflow, tflow) if negated else (cond, tflow, fflow)

    def _returned(self, test: ast.expr, frame: Frame | None) -> ast.expr:
        """A test that calls a function or method of the project whose `return` is a window gate or a literal of
        a shared atom (`x is None`, `x`, `x == "a"`, `hasattr`), seen as that test in the caller's terms
        (`returned_tests`); any other test as it is."""
        inner, negated = test, False
        while isinstance(inner, ast.UnaryOp) and isinstance(inner.op, ast.Not):
            inner, negated = inner.operand, not negated
        cls = frame.cls if frame is not None and isinstance(frame.cls, ClassInfo) else None
        if isinstance(inner, ast.Attribute) and isinstance(inner.value, ast.Name) and inner.value.id == "self" \
                and cls is not None and isinstance(fn := self.definitions.find_method(cls, inner.attr), (ast.FunctionDef, ast.AsyncFunctionDef)) \
                and is_property(fn):
            # `if self.sync_grad:` of `@property def sync_grad(self): return self.step % N == 0`: the test it returns
            inner = synthetic_call(inner, inner, [], [])
        if not isinstance(inner, ast.Call):
            return test
        key = (id(inner), id(cls))
        hit = self._returned_tests.get(key)
        if hit is None or hit[0] is not inner:
            found = returned_test(inner, lambda call: self._callee_of(call, cls))
            if found is not None and not self.counters.modulo_atoms(found) and not pathcond.shared_atom(found):
                # only a window gate, or an atom other tests share, is worth reading through the call: `if
                # exists(self.opt):` of `def exists(v): return v is not None` is the test `self.opt is not None`,
                # the same fact as every other test of it, decided once for the run if nothing assigns it again
                found = None
            for counter, window in self.counters.modulo_atoms(found) if found is not None else ():
                self.windows[counter] = self.windows.get(counter, frozenset()) | {window}
            hit = self._returned_tests[key] = (inner, found)
        found = hit[1]
        if found is None:
            return test
        out = ast.UnaryOp(op=ast.Not(), operand=found) if negated else found
        return ast.copy_location(out, test) if out is not found else out

    def _callee_of(self, call: ast.Call, cls: ClassInfo | None) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
        """The function of the project a call runs: `self.m(...)` as the running class resolves it, `f(...)`
        of this module or imported from another of the project."""
        func = call.func
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self":
            return self.definitions.find_method(cls, func.attr) if cls is not None else None
        if isinstance(func, ast.Name):
            fn = self.functions.get(func.id)
            if fn is None and self.project is not None:  # `from .helpers import exists`: the project's function
                qual = self.imports.qualify(func)
                found = self.project.target(qual) if qual else None
                fn = found[0] if found is not None and found[1] is None else None
            return fn
        return None

    def touches_gradients(self, name: str) -> bool:
        """A call of this name may be a training event: `zero_grad`, `step`, or a function here that reaches one."""
        return name in self.prescan.event_attrs or self.prescan.trains(name)

    def correlated(self, cond: Condition) -> bool:
        """Whether a path must remember which way it went at this test: another statement tests the
        same text, or a counter phase or framework boundary ties it to other tests."""
        if cond.volatile or cond.framework_gate:
            return True
        statement = cond.statement
        test = written = statement.test if isinstance(statement, (ast.If, ast.While)) else cond.test
        if test is not cond.test and not any(n is cond.test for n in breadth_first(test)):
            test = cond.test  # read through a call (`if not exists(self.opt):` is `self.opt is None`: `_returned`)
        if (self.prescan.tests_of(test) > 1 or self.prescan.compares_otherwise(test)
                or (cond.atom is not None and self.subjects_tested[cond.atom.subject] > 1)
                or self._invariant_flag(statement, test) or self.boolparts.shared(test)
                # (`if distributed:` of `distributed = world_size > 1`, read through the name: a part of another
                # test by that name, `if distributed and (i + 1) % N != 0:`)
                or written is not test and self.boolparts.shared(written)
                or self._counts_past_a_bound(statement, test)):
            return True
        if self._parameter_test(statement, test):
            self.handed_values.remembered(cond.akey)
            return True
        return isinstance(statement, ast.If) and self._has_flush(statement)

    def flushed_gate(self, stmt: ast.AST) -> ast.If | None:
        """The window gate whose remainder this `if` after its loop flushes (`remainder_flush`)."""
        if not isinstance(stmt, ast.If):
            return None
        key = id(stmt)
        if key not in self._flushes:
            self._flushes[key] = remainder_flush.flushed_gate(stmt, self.parent(stmt), self._passed_through) \
                or self._flushed_gate_elsewhere(stmt)
        return self._flushes[key]

    def _passed_through(self, call: ast.Call) -> ast.expr | None:
        """The argument a call hands back as it is, by the catalogue's `returns` effect (`tqdm(loader, desc=...)`
        walks the loader's items); None for another call."""
        name = self.imports.qualify(call.func)
        row = self.catalogue.call(name) if name is not None else None
        for effect in row.effects if row is not None else ():
            ref = effect.ref("value") if effect.kind == "returns" and not effect.value("unwraps") else None
            if ref is None or ref.receiver or ref.all_positional:
                continue
            for k in ref.positions:
                if k < len(call.args) and not any(isinstance(a, ast.Starred) for a in call.args[:k + 1]):
                    return call.args[k]
            for kw in call.keywords:
                if kw.arg is not None and kw.arg in ref.keywords:
                    return kw.value
        return None

    def _flushed_gate_elsewhere(self, stmt: ast.If) -> ast.If | None:
        """The gate of a flush in a function of its own, in this file or another of the project (`remainder_flush`)."""
        if remainder_flush.flush_sense(stmt.test) is None:
            return None
        chain: list[ast.AST] = []
        up: ast.AST | None = self.parent(stmt)
        while up is not None:
            chain.append(up)
            up = self.parent(up)
        scopes = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
        function = next((n for n in chain if isinstance(n, scopes)), None)
        if not chain or not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return None
        root = chain[-1]  # the module that holds it
        functions = self._functions_of.get(id(root))
        if functions is None:
            functions = self._functions_of[id(root)] = [
                n for n in iter_tree(root) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
        return remainder_flush.flushed_gate_elsewhere(stmt, function, self.parent, functions)

    def _has_flush(self, gate: ast.If) -> bool:
        """Whether an `if` after the loop of this window gate flushes its remainder: the paths must remember how
        the gate's last test went."""
        node: ast.AST | None = self.parent(gate)
        while node is not None and not isinstance(node, (ast.For, ast.FunctionDef, ast.AsyncFunctionDef, ast.Module)):
            node = self.parent(node)
        if not isinstance(node, ast.For):
            return False
        up = self.parent(node)
        block = next((b for f in ("body", "orelse", "finalbody") if isinstance(b := getattr(up, f, None), list)
                      and any(x is node for x in b)), None) if up is not None else None
        if block is None:
            return False
        after = block[next(k for k, x in enumerate(block) if x is node) + 1:]
        if any(self.flushed_gate(x) is gate for x in after if isinstance(x, ast.If)):
            return True
        if self._flushed_elsewhere is None:  # flushes in functions of their own (`remainder_flush`)
            self._flushed_elsewhere = {id(g) for x in iter_tree(self.module) if isinstance(x, ast.If)
                                       and remainder_flush.flush_sense(x.test) is not None
                                       and (g := self.flushed_gate(x)) is not None}
        return id(gate) in self._flushed_elsewhere

    def _starts_window_period(self, cond: Condition, periodic: frozenset[str]) -> bool:
        """The test holds only at the reset value of a counter the module counts a window with
        (`if self.epoch_iteration == 0:`): see `periods`."""
        found = self._period_starts.get(cond.id)
        if found is None:
            found = self._period_starts[cond.id] = any(
                c in self.windows and periods.starts_period(cond.test, c) for c in periodic)
        return found

    def _from_earlier_period(self, state: PathState, cond: Condition, frame: Frame | None) -> PathState:
        """The first micro-batch of a period: gradients of backward passes that follow the test in its
        function were left by an earlier call, of the period before; mark them carried over."""
        fn = frame.function if frame is not None else None
        if fn is None or not any(c.fresh and not c.carried for _h, c in state.grads):
            return state
        here = cond.test.lineno
        end = getattr(fn, "end_lineno", None) or here
        home = self.project.module_of_node(cond.test) if self.project is not None else None
        later = set()
        for ev in self.recorder.backwards.values():
            line = getattr(ev.node, "lineno", 0)
            if here < line <= end and fn.lineno <= line and (
                    self.project is None or self.project.module_of_node(ev.node) is home):
                later.add(ev.id)
        if not later:
            return state
        return state.carry_over(later)

    @functools.cached_property
    def boolparts(self) -> BoolParts:
        """The parts of `and`/`or` tests other tests share (`boolparts`)."""
        return BoolParts(self.module, self._akeys, self._literal, self.counters.modulo_atoms, self.akeys_testing)

    @property
    def period_counters(self) -> frozenset[str]:
        """Counters whose period start paths follow (`periods`): those this file tests, and those the file of the code
        running tests (a trainer's `if grad_accum == 0:` in another file of the project, run from this one's
        `trainer.train_loop()`: read as this file's counters only, its phase was not followed and the clear under it
        was taken to run on any micro-batch, a certain false GL002 in lockbox 37's JEN-1)."""
        home = self._tested_counters(self.module, self._own_prescan)
        running = self.project.current if self.project is not None else None
        return home if running is None else home | self._tested_counters(running.tree, self.prescan)

    def _tested_counters(self, module: ast.Module, prescan: Prescan) -> frozenset[str]:
        """The counters `module` tests; `prescan`: that module's."""
        found = self._period_counters.get(id(module))
        if found is None:
            found = self._period_counters[id(module)] = periods.tested_counters(
                module, lambda node: prescan.interesting.get(id(node), True))
        return found

    @staticmethod
    def scope(frame: Frame | None) -> int:
        """The function a name is local to (0: the module's top level)."""
        return id(frame.function) if frame is not None and frame.function is not None else 0

    @functools.cached_property
    def subjects_tested(self) -> Counter[str]:
        """Subjects (`pathcond`) by how many tests that matter read them."""
        return pathcond.subjects_tested(self.module, self._branch_matters, self._reference_alias)

    def _branch_matters(self, node: ast.AST) -> bool:
        """A branch whose arms call something that can touch gradients (a clear, a step, a function here
        that trains), or leave a loop's iteration or a function early (`continue`, `break`, `return`); not
        one that only logs, or raises on a bad configuration."""
        if not self.prescan.interesting.get(id(node), True):
            return False
        arms = [node.body, node.orelse] if isinstance(node, ast.IfExp) else [*node.body, *node.orelse]
        for arm in arms:
            for n in breadth_first(arm):
                if isinstance(n, (ast.Continue, ast.Break, ast.Return)):
                    return True
                if isinstance(n, ast.Call) and self.touches_gradients(N.last_name(n.func) or ""):
                    return True
        return False

    def _literal(self, test: ast.expr) -> pathcond.Literal | None:
        """The test as a literal of an atom that is not its own text (`x is None`, `x == "a"`, `hasattr`),
        when it has no counter the phase domain reads; else None (the test is its own atom)."""
        core = test
        while isinstance(core, ast.UnaryOp) and isinstance(core.op, ast.Not):
            core = core.operand
        if not isinstance(core, (ast.Compare, ast.Call)) or self.counters.modulo_atoms(core):
            return None
        lit = pathcond.literal(test)
        return lit if lit.atom.kind in (pathcond.NONE, pathcond.EQUALS, pathcond.HASATTR) else None

    def truth_on(self, state: PathState, akey: int) -> bool | None:
        """The truth of a test (by its assumption key) on a path: what the path assumed of it, or what a literal it
        bound the tested name to decides (`x = None` then `x is None`, in the test's own scope)."""
        known = state.assumption(akey)
        if known is not None or not state.assumptions:
            return known
        for cond in self.by_akey.get(akey, ()):
            if cond.id < 0 or cond.caller is not None:
                continue
            for scope in self.akey_scopes.get(akey, ()):
                known = self.assigned_constants.truth(cond.test, scope, state.assumption)
                if known is not None:
                    return known == cond.polarity
        return None

    def known_truth(self, state: PathState, cond: Condition, env: dict[str, Value] | None = None,
                    scope: int | None = None) -> bool | None:
        """What the path knows of the test: assumed at an earlier test of the same text, implied by what it
        assumed at a test comparing the same operands (`relations.py`), or by a literal it bound the tested
        name to in `scope` (`assigned_constants`)."""
        if not state.assumptions:
            return None
        known = state.assumption(cond.akey)
        if known is not None:
            return known == cond.polarity
        if scope is not None and cond.id >= 0 and cond.caller is None:
            known = self.assigned_constants.truth(cond.test, scope, state.assumption)
            if known is not None:
                return known
        if cond.atom is not None:  # another atom of the same subject: `x is None` known, `if x:` asked
            objects = env is not None and (v := env.get(cond.atom.subject)) is not None and truthless(v)
            for akey, atom in self._atoms[cond.atom.subject].items():
                truth = state.assumption(akey) if akey != cond.akey else None
                if truth is not None:
                    implied_truth = pathcond.implies(atom, truth, cond.atom, objects)
                    if implied_truth is not None:
                        return implied_truth == cond.polarity
            subject = env.get(cond.atom.subject) if env is not None else None
            if subject is not None and subject.choices is not None and cond.atom.kind == pathcond.EQUALS:
                # `x == "optimizer"` where `x` is one of three literals and the path knows it is not the other two
                left = pathcond.remaining(subject.choices, self._atoms[cond.atom.subject], state.assumption)
                if cond.atom.other not in left:
                    return not cond.polarity
                if left == {cond.atom.other}:
                    return cond.polarity
        rel = self._relation.get(cond.akey)
        if rel is None:
            return None
        for akey, other in self._compared[rel[:2]].items():
            truth = state.assumption(akey) if akey != cond.akey else None
            if truth is not None:
                implied_truth = implied(other, truth, rel)
                if implied_truth is not None:
                    return implied_truth
        return None

    def _invariant_flag(self, statement: ast.AST, test: ast.expr) -> bool:
        """A configuration flag tested in a loop that never assigns it (`if cfg.use_fp16:`): every
        iteration goes the same way, so a path must not take one arm and then the other."""
        cached = self._flags.get((id(statement), id(test)))
        if cached is not None:
            return cached
        found = False
        parts = _flag_parts(test)
        if parts is not None and all(isinstance(n, FLAG_NODES) for n in parts):
            names = {n.id if isinstance(n, ast.Name) else n.attr for n in parts if isinstance(n, (ast.Name, ast.Attribute))}
            node: ast.AST | None = statement
            while node is not None and not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Module)):
                node = self.parent(node)
                if isinstance(node, (ast.For, ast.AsyncFor, ast.While)):  # every enclosing loop keeps it
                    if self.stored_in(node) & names:
                        found = False
                        break
                    found = True
            if not found and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                found = self._setting_test(node, test)
        self._flags[(id(statement), id(test))] = found
        return found

    def _parameter_test(self, statement: ast.AST, test: ast.expr) -> bool:
        """A test of nothing but parameters its function never assigns (`if task_id > 0:` of
        `observe_batch(self, task_id, batch)`): the same on calls handed the same value (`parameter_tests`). Only in a
        function that may train: what one that cannot (a constructor) tests changes no path state, and it runs
        once on a stand-in path for all the caller's (`Inliner._inline`)."""
        known = self._parameter_tests.get(id(statement))
        if known is not None:
            return known
        node: ast.AST | None = statement
        while node is not None and not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Module)):
            node = self.parent(node)
        known = (isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not self.prescan.surely_inert(node.name)
                 and reads_only_parameters(node, test, self.stored_in(node)))
        self._parameter_tests[id(statement)] = known
        return known

    def _setting_test(self, method: ast.FunctionDef | ast.AsyncFunctionDef, test: ast.expr) -> bool:
        """A method's test of nothing but attributes of `self` that no method of its class other than
        `__init__` assigns (`if self.update_freq > 1:`): a setting, the same on every call of the method
        (each batch's, when a caller runs it once per batch), whatever loop calls it."""
        owner = self.parent(method)
        info = self.classes.get(owner.name) if isinstance(owner, ast.ClassDef) else None
        if info is None or info.node is not owner:
            return False
        read: set[str] = set()
        for n in _flag_parts(test) or ():
            if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name):
                if n.value.id != "self":
                    return False
                read.add(f"self.{n.attr}")
            elif isinstance(n, ast.Name) and n.id != "self":
                return False
        return bool(read) and not read & self.objects.assigned_outside_init(info)

    def _boundary_operands(self, cond: Condition) -> list[int]:
        """Assumption keys of the framework boundaries (`x.sync_gradients`) an `and` test requires: its
        true arm is on a boundary, as the step's gate will ask: the boundary of the one framework object the test
        reads (`boundary`), whatever name it goes by here (`self.accelerator` of an `accelerator` made in the
        script, vilmedic's trainer, lockbox 34), else shared by text."""
        test = cond.test
        if not (isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And)):
            return []
        gate = self._gated_by.get(cond.id)
        return [self.boundary(gate).akey if gate is not None else self._akeys.setdefault(code(v), len(self._akeys) + 1)
                for v in test.values if isinstance(v, ast.Attribute) and v.attr == "sync_gradients"]

    def direct_forward(self, holder: Holder, ordinal: int) -> bool:
        """The forward pass of this ordinal called the module itself (`vf(obs)`, `vf.forward(obs)`,
        `self.fc1(x)`), not another method of it (`self.model.norm_obs(obs)`)."""
        if ordinal in self.objects.called_whole:
            return True
        call = self.forward_sites.get(ordinal)
        func = call.func if isinstance(call, ast.Call) else None
        if func is None:
            return False
        if isinstance(func, ast.Name) or isinstance(func, ast.Attribute) and func.attr == "forward":
            return True
        return isinstance(func, ast.Attribute) and (func.attr in holder.path[-1:] or N.ref_text(func) in self.model_refs)

    def _rebound_in(self, loop: ast.For) -> set[str]:
        """Names the loop's body assigns (not its target): a counter assigned there does not only grow."""
        found = self._body_stores.get(id(loop))
        if found is None:
            found = self._body_stores[id(loop)] = {n for stmt in loop.body for n in stored_names(stmt)}
        return found

    def stored_in(self, loop: ast.AST) -> set[str]:
        found = self._loop_stores.get(id(loop))
        if found is None:
            found = self._loop_stores[id(loop)] = stored_names(loop)
        return found

    def rebuilt_in(self, loop: ast.AST) -> set[str]:
        """The names each iteration of the loop makes anew before reading them: stored or reset in it, and
        not read first (`syntax.carried_names`: a value the previous iteration left is read at the top),
        and those it empties in place (`losses.clear()` after the step: the next iteration finds nothing)."""
        found = self._loop_rebuilt.get(id(loop))
        if found is None:
            keep = self.keepalives
            found = ((self.stored_in(loop) | keep.resets_in(loop)) - carried_names(loop)) | keep.emptied_in(loop)
            self._loop_rebuilt[id(loop)] = found
        return found

    def carried_in(self, loop: ast.AST) -> frozenset[str]:
        """The names each iteration of the loop rebuilds but reads first: the previous iteration's value."""
        found = self._loop_carried.get(id(loop))
        if found is None:
            keep = self.keepalives
            made = self.stored_in(loop) | keep.resets_in(loop)
            found = frozenset((made & carried_names(loop)) - keep.emptied_in(loop))
            self._loop_carried[id(loop)] = found
        return found

    def split(self, flow: Flow, cond: Condition, frame: Frame | None = None) -> tuple[Flow | None, Flow | None]:
        """Split a flow on a condition, keeping only the paths consistent with what they assumed."""
        world = self.worlds.decide(cond.akey, cond.polarity, frame.cls if frame is not None else None, cond.atom)
        if world is not None:  # a setting `__init__` fixed: every path of this world goes one way
            return (flow.copy(), None) if world else (None, flow.copy())
        for window in cond.moduli:  # `else:` of `if N > 1:`: every `x % N` is 0, the gate's truth is known
            marker = flow.env.get(UNIT_WINDOW + window)
            truth = unit_truth(cond.test, window) if marker is not None and marker.const == "True" else None
            if truth is not None:
                return (flow.copy(), None) if truth else (None, flow.copy())
        t_states: list[PathState] = []
        f_states: list[PathState] = []
        gates = self._boundary_operands(cond)
        atoms = [(c, w) for c, w in self.counters.modulo_atoms(cond.test) if c in self.windows]
        cycling = self.counters.cycling
        if not atoms and cycling:  # `if accum_step == 1:` of `cycle(range(1, N + 1))`: its first micro-batch
            atoms = [(c, cycling[c]) for c in cond.names if c in cycling]
        # where the paths keep the phases of the counter it tests (another name's, for a name bound to a loop counter)
        places = [(c, w, self.counters.phase_place(c, w, self.lookup(c, flow, frame), self.counter_floors))
                  for c, w in atoms[:1]]
        disjuncts = self._disjunct_places(cond, atoms, flow, frame) if atoms else None
        if disjuncts is not None:
            places = []  # read part by part below
        flushed = self.flushed_gate(cond.statement) if cond.id >= 0 and cond.statement is not None else None
        flush_gate = self.conditions.get(id(flushed)) if flushed is not None else None
        sense = remainder_flush.flush_sense(cond.test) if flush_gate is not None else None
        if sense is not None:
            places = []  # the phases are the next micro-batch's; the flush counts the last one's
        remember = self.correlated(cond)
        periodic = frozenset(self.period_counters & cond.names) if frame is not None else frozenset()
        scope = self.scope(frame)
        parts = self.boolparts.of(cond)
        deciding = self.boolparts.deciding_part(cond, lambda p: bool(self.counters.modulo_atoms(p))) \
            if places and parts else None
        in_scope = self.scope(frame) if frame is not None else None
        for s in flow.states:
            known = self.known_truth(s, cond, flow.env, in_scope)
            taught = False  # decided by what the path knows of the test's parts: still this test's fact
            if known is None and sense is not None and flush_gate is not None \
                    and (last := s.assumption(flush_gate.akey)) is not None:
                known = (last == flush_gate.polarity) != sense  # a remainder is left where the last gate failed
                taught = True  # the flush's own truth on this path (a step under it runs on these micro-batches)
            if known is None and parts is not None:  # `if a and b:` after `if a and b and c:` held
                known = BoolParts.truth(s, parts)
                taught = known is not None
            at_start = None
            if periodic:  # `if i == 0:` on a path that knows whether `i` is still at its reset value
                at_start = periods.truth(s, cond.test, scope, periodic)
                if at_start is not None and known is not None and at_start != known:
                    continue  # infeasible: the path assumed the opposite
                known = at_start if at_start is not None else known
            t_s: PathState | None = s if known is not False else None
            f_s: PathState | None = s if known is not True else None
            if t_s is not None and periodic and self._starts_window_period(cond, periodic):
                t_s = self._from_earlier_period(t_s, cond, frame)
            if parts is not None:
                t_s = BoolParts.learn(t_s, parts, True) if t_s is not None else None
                f_s = BoolParts.learn(f_s, parts, False) if f_s is not None else None
            if disjuncts is not None:
                t_s, f_s, cases = self._split_disjuncts(t_s, f_s, disjuncts)
                if t_s is not None and cases:
                    t_states.extend(c.assume(cond.akey, cond.polarity) if remember and known is None else c
                                    for c in cases[1:])
                    t_s = cases[0]
            for counter, window, (key, start, cycles, floor) in places:
                current = s.phase(key, window) or ALL_PHASES
                truths = {p: self.counters.phase_truth(cond.test, counter, window, p, start, cycles, floor)
                          for p in current}
                t_ph = frozenset(p for p, v in truths.items() if v is not False)
                f_ph = frozenset(p for p, v in truths.items() if v is not True)
                t_s = t_s.with_phase(key, window, t_ph) if t_s is not None and t_ph else None
                f_s = f_s.with_phase(key, window, f_ph) if f_s is not None and f_ph else None
                if deciding is not None:  # `else:` of `if distributed and (i + 1) % N != 0:`
                    t_s, f_s, decided_arm = BoolParts.decided_by_a_part(t_s, f_s, truths, deciding, key, window)
                    if decided_arm is not None:
                        arm, decided = decided_arm
                        (t_states if arm else f_states).append(decided.assume(cond.akey, cond.polarity == arm)
                                                               if remember and known is None else decided)
            if t_s is not None and gates:  # `if accelerator.sync_gradients and clip:`: the boundary holds too
                for gate in gates:
                    t_s = t_s.assume(gate, True) if t_s.assumption(gate) is None else t_s if t_s.assumption(gate) else None
            keep = (remember or taught and sense is not None) and (known is None or taught)
            if t_s is not None:
                t_states.append(t_s.assume(cond.akey, cond.polarity) if keep else t_s)
            if f_s is not None:
                f_states.append(f_s.assume(cond.akey, not cond.polarity) if keep else f_s)
        t = Flow(dict(flow.env), frozenset(t_states)) if t_states else None
        f = Flow(dict(flow.env), frozenset(f_states)) if f_states else None
        unit = unit_window(cond.test) if isinstance(cond.test, ast.Compare) else None
        if unit is not None:  # remember in each arm whether the window size is 1 there
            window, arm = unit
            for part, truth in ((t, True), (f, False)):
                if part is not None:
                    part.env[UNIT_WINDOW + window] = Value(const=str(truth == arm))
        return t, f

    def _disjunct_places(self, cond: Condition, atoms: list[tuple[str, str]], flow: Flow, frame: Frame | None,
                         ) -> list[tuple[ast.expr, str, str, tuple[str, int, bool, int | None]]] | None:
        """`if (i + 1) % N == 0 or i + 1 == num_iters:` in `for i in range(num_iters)`: an `or` whose parts each read
        one window of the same loop counter, its window gate's and the loop's own (`last_iteration`). Each part with
        where the paths keep its window's phases; None for any other test. A path on which such a test held took one
        of its parts: at the end of a window, or at the loop's last iteration, which it then leaves."""
        test = cond.test
        if not (isinstance(test, ast.BoolOp) and isinstance(test.op, ast.Or)):
            return None
        counter = atoms[0][0]
        value = self.lookup(counter, flow, frame)
        root = value.counter.key if value is not None and value.counter is not None and value.counter.key else counter
        last = self.counters.cycling.get(root)
        if last is None:
            return None
        out = []
        for part in test.values:
            found = [(c, w) for c, w in self.counters.modulo_atoms(part) if c in self.windows]
            if found:
                if found[0][0] != counter:
                    return None
                window = found[0][1]
            elif counter in {n.id for n in iter_tree(part) if isinstance(n, ast.Name)}:
                window = last
            else:
                return None
            key, start, cycles, floor = self.counters.phase_place(counter, window, value, self.counter_floors)
            out.append((part, counter, window, (key, start, cycles or window == last, floor)))
        return out if len({w for _p, _c, w, _place in out}) > 1 else None

    def _split_disjuncts(self, t_s: PathState | None, f_s: PathState | None,
                         parts: list[tuple[ast.expr, str, str, tuple[str, int, bool, int | None]]],
                         ) -> tuple[PathState | None, PathState | None, list[PathState]]:
        """The paths of `_disjunct_places`' test: on the true side one case per part (that part held, the ones before
        it did not), each knowing its windows' phases; on the false side every part failed."""
        def narrowed(s: PathState, upto: int, held: bool) -> PathState | None:
            for j, (part, counter, window, (key, start, cycles, floor)) in enumerate(parts[:upto + 1]):
                want = held and j == upto
                current = s.phase(key, window) or ALL_PHASES
                keep = frozenset(p for p in current if self.counters.phase_truth(
                    part, counter, window, p, start, cycles, floor) is not (not want))
                if not keep:
                    return None
                s = s.with_phase(key, window, keep)
            return s

        cases = [c for k in range(len(parts)) if t_s is not None and (c := narrowed(t_s, k, True)) is not None]
        f_out = narrowed(f_s, len(parts) - 1, False) if f_s is not None else None
        return (cases[0] if cases else None), f_out, cases

    # -- loops
    def exec_while(self, stmt: ast.While, flow: Flow, frame: Frame) -> Outcome:
        loop = self.loop_for(stmt, None)
        if id(stmt) not in self._while_read:  # read from the syntax once per loop
            self._while_read.add(id(stmt))
            loop.rollout = reuses_drawn_batch(stmt, self.parent)  # runs again on the batch drawn: no window
        test = stmt.test
        infinite = type(test) is ast.Constant and test.value is True or is_int(test) and test.value != 0
        cond = None if infinite else self.condition(stmt, stmt.test)

        def body(f: Flow, fr: Frame) -> Outcome:
            self.eval(stmt.test, f, fr)
            return self.exec_block(stmt.body, f, fr)

        out = self.run_loop(flow, frame, loop, body, cond)
        normal = None if infinite else out.normal
        if stmt.orelse and normal is not None:
            normal = self.exec_block(stmt.orelse, normal, frame).normal
        return Outcome(Flow.join([normal, *out.breaks]), returns=out.returns)

    def loop_for(self, node: ast.AST, count: str | None) -> Loop:
        loop = self.loops.get(id(node))
        if loop is None:
            loop = Loop(id(node), node, count)
            self.loops[loop.id] = loop
        return loop

    def saw_backward(self, loops: tuple[int, ...]) -> None:
        """A backward pass ran inside these loops (`Counters.trains`)."""
        self.counters.reached_backward.update(loops)

    def loop_trains(self, loop_id: int) -> bool:
        loop = self.loops.get(loop_id)
        return loop is None or self.counters.trains(loop.node)

    def loop_backpropagates(self, loop_id: int) -> bool:
        """Each iteration may run a backward pass: one is written in the loop (`loop_trains`), the framework
        runs one after each call of its hook (`Loop.framework`), or one was met inside it, in a call the
        loop's text does not name as training (`train_util.train_step(x, y)`, `model.train(batch)` of a
        class whose method backpropagates)."""
        loop = self.loops.get(loop_id)
        return loop is None or loop.framework or self.counters.trains(loop.node)  # `trains`: also a backward met in it

    def run_loop(self, flow: Flow, frame: Frame, loop: Loop, body: Callable[[Flow, Frame], Outcome],
                 cond: Condition | None, counter: tuple[str, int | None] | None = None, calls: bool = False) -> Outcome:
        """Run a loop body to a fixed point; the loop is assumed to run at least once. With `calls`, the
        body is a function called once per batch: each return starts the next call."""
        # Each pass over the body costs with the gradients the path states carry (a file of thousands of
        # loops each adding a backward pass): counted, so the budget stops such a file where it stops on
        # any machine, as the wall clock once did only where the machine was slow.
        self.spend(sum(len(s.grads) for s in flow.states) >> 6)
        inner = replace(frame, loops=frame.loops + (loop.id,))
        head = flow.copy()
        if self.counters.trains(loop.node):
            head.map_quiet(PathState.enter_loop)
        if counter is not None and counter[0] in self.windows:
            name, start = counter
            self.counter_starts[name] = start or 0  # phases count from the first value (`Counters.anchor`)
            if start is not None:
                self.counter_floors[name] = start
            else:
                self.counter_floors.pop(name, None)
            cycle = self.counters.cycling.get(name)  # a cycling counter: the phases of its own window only
            # (the index of a loop left after its last iteration, `last_iteration`, restarts every window it is
            # tested in: each run of the loop starts it at its first value, and it never wraps within a run)
            windows = self.windows[name] if cycle is None or loop.last_of == cycle else frozenset({cycle})
            at_start = self.counters.phases_at(name, windows, start)
            head.map(lambda s: s.restart(name, at_start))
        if counter is not None:  # where the counter plus an offset of unknown value stands is not known
            aliases = self.counters.aliases
            for key in aliases.derived(counter[0]):
                # ... unless it goes on from where the loop's last run left it, advanced past its last iteration
                # at the back edge (`len(loader) * epoch + i`)
                if not aliases.continuing(key):
                    head.map(functools.partial(PathState.restart, counter=key, phases={}))
            aliases.unalias(head.env, counter[0])
        period = periods.key(self.scope(frame), counter[0]) if counter is not None and counter[0] in self.period_counters else None
        if period is not None:  # `for i, x in enumerate(loader)`: `i` starts its period with the loop
            first = counter[1]  # type: ignore[index]
            head.map_quiet(lambda s: periods.reset(s, period, first) if first is not None else periods.forget(s, period))
        breaks: list[Flow] = []
        returns: list[tuple[Flow, Value]] = []
        stopped: list[Flow] = []  # paths that know the `while` test is false: they leave the loop
        back: Flow | None = None
        leaving: Flow | None = None  # the paths that ended a `range(N)` loop's last iteration (`last_iteration`)
        # Step counts restart at each iteration from where they stood before the loop, not from 0: the
        # graphs of a caller a helper's loop cannot see (`d_z`, built before `_permute_dims(z)` loops)
        # still compare with the counts they were built at.
        before_loop = {k: v for k, v in head.env.items() if k.startswith(GENERATION)}
        # counters the iteration around this loop has already incremented (`self.current_step += 1`, then an inner
        # `for k, v in batch.items():`) stay incremented in its iterations, unless this loop increments them too
        kept = self.counters.incremented_before(flow, loop.node)
        for _ in range(MAX_LOOP_ITERATIONS):
            entry = head.copy()
            self.counters.reset_increments(entry, kept)
            counts = {k: v.const for k, v in entry.env.items() if k.startswith(GENERATION) and isinstance(v.const, int) and v.const}
            # graphs the loop does not rebuild (made before it, backpropagated in it) and those it does
            rebase_graphs(entry.env, counts, self.rebuilt_in(loop.node), self.direct_forward,
                          self.carried_in(loop.node))
            for key in [k for k in entry.env if k.startswith(GENERATION)]:
                entry.env[key] = before_loop.get(key, _ZERO)  # a new iteration: steps are counted from here
            self._forget_iteration(entry, loop)
            res = body(entry, inner)
            breaks += res.breaks
            returns += res.returns
            back = Flow.join([res.normal, *res.continues, *(f for f, _ in res.returns if calls)])
            if back is not None and cond is not None and type(loop.node) is ast.While:
                back = self._leave_while(back, cond, stopped)
            loop.ran = True
            if back is None or self._runs_once(loop):
                break
            loop.iterates = True
            if counter is not None and loop.last_of is not None:
                # after its last iteration the loop is left (`last_iteration`): only the others go round
                ended, back = split_at_last(back, counter[0], loop.last_of)
                leaving = Flow.join([leaving, ended]) if ended is not None else leaving
                if back is None:
                    break
            if counter is not None and counter[0] in self.windows:
                back.map(lambda s: s.advance(counter[0], self.counters.advance_phases))
            if counter is not None:  # the names bound to the counter held this iteration's value
                for key in self.counters.aliases.derived(counter[0]):
                    back.map(functools.partial(PathState.advance, counter=key, step=self.counters.advance_phases))
                self.counters.aliases.unalias(back.env, counter[0])
            if period is not None:
                back.map_quiet(lambda s: periods.advance(s, period))
            new_head = Flow.join([head, back])
            assert new_head is not None
            if new_head.env == head.env and (new_head.states == head.states or len(new_head.states) >= STATE_CAP == len(head.states)):
                # a fixed point; or the paths are at the cap on both turns: which ones the cap keeps may go on
                # changing without end, and what it drops can only hide findings
                break
            head = new_head
        if loop.last_of is not None and counter is not None and leaving is not None:
            back = leaving  # a `range(N)` loop is left after its last iteration only
        return Outcome(normal=Flow.join([back, *stopped]) if stopped else back, breaks=breaks, returns=returns)

    def _leave_while(self, back: Flow, cond: Condition, stopped: list[Flow]) -> Flow | None:
        """The paths at the end of a `while` body that know its test is false leave the loop (into
        `stopped`) instead of running the body again; the others go round."""
        if not any(s.assumptions for s in back.states):
            return back
        leaving = frozenset(s for s in back.states if self.known_truth(s, cond, back.env) is False)
        if not leaving:
            return back
        stopped.append(Flow(dict(back.env), leaving))
        staying = back.states - leaving
        return Flow(back.env, staying) if staying else None

    def _runs_once(self, loop: Loop) -> bool:
        """`for _ in range(1)`, or `range(GENER_ITERS)` with the module constant `GENER_ITERS = 1`: the
        body runs exactly once, and no second iteration sees what the first left."""
        count = loop.count
        if count is None or loop.implicit:
            return False
        return count == "1" or (count.isidentifier() and self.module_constant(count) == 1)

    def module_constant(self, name: str) -> int | None:
        """The int a module-level name is bound to once (`GENER_ITERS = 1`, also inside `if __name__ == "__main__":`)
        and never rebound anywhere."""
        if self._module_constants is None:
            top = set(map(id, _module_level_statements(self.module.body)))
            bound: dict[str, list[object]] = {}
            for node in iter_tree(self.module):
                if isinstance(node, ast.Global):
                    for n in node.names:
                        bound.setdefault(n, []).append(None)
                for t in binding_targets(node):
                    for sub in iter_tree(t):
                        if isinstance(sub, ast.Name):
                            value = node.value if isinstance(node, ast.Assign) and id(node) in top else None
                            bound.setdefault(sub.id, []).append(value)
            self._module_constants = {
                k: v[0].value for k, v in bound.items()
                if len(v) == 1 and isinstance(v[0], ast.Constant) and type(v[0].value) is int
            }
        return self._module_constants.get(name)

    def _forget_iteration(self, flow: Flow, loop: Loop) -> None:
        """What a path assumed of a test that changes from one iteration to the next is not known
        in the next: window gates, framework boundaries, tests of names the loop may assign out of sight.
        A name every binding of which is a whole assignment the interpreter runs (`plain_bindings`) is
        not among them: its assignment already forgot what was assumed before it, and what a path learnt
        after its last assignment still holds at the next test of it, in this iteration or the next
        (ParlAI's `self._number_grad_accum`, assigned before the step's test and tested again by the
        clear of the next call). A window gate's arm keeps its own test past such an assignment
        (`Expressions.forget`), so a gate is forgotten whenever the loop assigns what it reads."""
        assigned = self.assigned_in(loop.node)
        unseen = assigned - self.plain_bindings
        trains = self.counters.trains(loop.node)  # a loop over parameters leaves the window where it is
        drop = [c.akey for c in self.conditions.values()
                if (c.volatile and trains) or c.names & unseen or (c.is_accumulation_gate and c.names & assigned)]
        drop += self.boolparts.forgotten(unseen, trains)
        if drop:
            flow.forget(drop)
        if trains:
            self.amp.new_iteration(flow)

    def _counts_past_a_bound(self, statement: ast.AST, test: ast.expr, loop: ast.For | None = None) -> bool:
        """A comparison of an enclosing loop's counter (`for epoch in range(n)`, `for i, b in enumerate(...)`) with
        a bound that loop does not assign (`if epoch < args.start_epoch:`): once past the bound, later iterations
        stay past it (`lasting_tests`), so a path must remember how the test went. `loop`: that loop only."""
        while isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            test = test.operand
        rel = relation(test) if type(test) is ast.Compare else None
        if rel is None or type(statement) is not ast.If:
            return False
        node: ast.AST | None = self.parent(statement)
        while node is not None and not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Module)):
            if isinstance(node, ast.For) and (counter := past_bounds.counted_upward(node)) is not None and counter in rel[:2]:
                bound = rel[1] if rel[0] == counter else rel[0]
                if loop is not None and node is not loop:
                    return False
                return not past_bounds.names_in(bound) & (self.stored_in(node) | {counter}) \
                    and counter not in self._rebound_in(node)
            node = self.parent(node)
        return False

    def lasting_tests(self, loop: ast.For) -> dict[int, bool]:
        """The tests in this loop comparing its counter with a bound it does not assign (`_counts_past_a_bound`),
        each with the truth of its atom that, once a path found it, holds for every later iteration (`epoch <
        args.start_epoch` false: the counter only grows): kept when the loop binds its counter anew."""
        counter = past_bounds.counted_upward(loop)
        if counter is None:
            return {}
        out: dict[int, bool] = {}
        for akey, (a, b, holds) in self._relation.items():
            if counter not in (a, b):
                continue
            conds = [c for c in self.by_akey.get(akey, ()) if c.statement is not None
                     and self._counts_past_a_bound(c.statement, c.test, loop)]
            if not conds:
                continue
            lasting = past_bounds.lasting_truth((a, b, holds), counter)
            if lasting is not None:  # the test's truth; the path keeps its atom's (`polarity`)
                out[akey] = lasting == conds[0].polarity
        return out

    @functools.cached_property
    def assigned_constants(self) -> AssignedConstants:
        """Literals paths bound names to, that decide later tests of them (`assigned_constants`), in this file
        and in the files of the project whose functions it runs."""
        return AssignedConstants(self._module_holding, self._plain_bindings_of, self._branch_matters, self._akeys,
                                 self.akeys_testing, self.akey_scopes)

    def _plain_bindings_of(self, module: ast.Module) -> frozenset[str]:
        return self.plain_bindings if module is self.module else plain_bindings(module)

    def _module_holding(self, node: ast.AST) -> ast.Module:
        """The tree of the file a node is in: this one, or another of the project."""
        if self._parents is None:
            self._parents = parents(self.module)
        if self.project is not None and id(node) not in self._parents:
            foreign = self.project.module_of_node(node)
            if foreign is not None:
                return foreign.tree
        return self.module

    @functools.cached_property
    def plain_bindings(self) -> frozenset[str]:
        """`plain_bindings` of the module analysed."""
        return plain_bindings(self.module)

    def assigned_in(self, node: ast.AST) -> frozenset[str]:
        """Names (and `self.x` attributes) a loop assigns, directly or in the methods of its class."""
        found = self._assigned_in.get(id(node))
        if found is None:
            out: set[str] = set()
            for n in iter_tree(node):
                if isinstance(n, ast.Call) and isinstance(n.func, (ast.Attribute, ast.Name)):
                    receiver = n.func.value if isinstance(n.func, ast.Attribute) else None
                    if isinstance(receiver, ast.Name) and receiver.id == "self" or isinstance(n.func, ast.Name) and n.func.id in self.functions:
                        out |= self.objects.mutable_attributes  # a method it calls may change them
                for t in binding_targets(n):
                    for sub in rebound_by(t):
                        text = self.ref(sub)
                        if text is not None:
                            out.add(text)
            found = self._assigned_in[id(node)] = frozenset(out)
        return found

    # -- with / try
    def exec_with(self, stmt: ast.With, flow: Flow, frame: Frame) -> Outcome:
        inner = frame
        for item in stmt.items:
            value = self.eval(item.context_expr, flow, inner)
            if isinstance(value.const, tuple) and value.const[:1] == ("context",):
                inner = self._entered(value, inner)
                value = EMPTY
            if item.optional_vars is not None:
                self.assign(item.optional_vars, value, flow, inner, item.context_expr, stmt)
        return self.exec_block(stmt.body, flow, inner)

    def _entered(self, value: Value, frame: Frame) -> Frame:
        """The frame of code run in the context `value` (one `Value.const` of `("context", ...)`: `torch.no_grad()`,
        a framework's accumulation gate, a data-parallel model's `no_sync()`), entered from `frame`."""
        context = value.const if isinstance(value.const, tuple) and value.const[:1] == ("context",) else None
        if context is None:
            return frame
        what, uid = context[1], context[2]
        if what == "no_grad":
            return replace(frame, no_grad=True)
        if what == "enable_grad":
            return replace(frame, no_grad=False)
        if what == "gate":
            self.table.accumulating.add(uid)
            # an accumulation window of one (an `Accelerator(...)` built with no `gradient_accumulation_steps`, nor set
            # after): every micro-batch is the window's last, and `accumulate(model)` never switches sync off
            # (RIR-DM, lockbox 43; vits-accelerate, lockbox 44)
            unsynced = frozenset() if uid in self.table.windows and self.table.windows[uid] is None else context[3]
            return replace(frame, gates=frame.gates + (uid,), sync_maybe=frame.sync_maybe | unsynced)
        if what == "sync":
            wrappers, sure = context[2], context[3]
            return replace(frame, sync_off=frame.sync_off | wrappers) if sure else replace(frame, sync_maybe=frame.sync_maybe | wrappers)
        return frame

    def exec_try(self, stmt: ast.Try, flow: Flow, frame: Frame) -> Outcome:
        entry = flow.copy()
        body = self.exec_block(stmt.body, flow, frame)
        outs = [body]
        if stmt.orelse and body.normal is not None:
            outs[0] = body.then(self.exec_block(stmt.orelse, body.normal, frame))
        # a body that changed no gradient and no GradScaler record on any path that ran through it (`batch =
        # next(it)` of `try: ... except StopIteration: it = iter(loader)`) left them as they were wherever it
        # raised: the handler starts from them as they are, not as uncertain
        inert = body.normal is not None and _gradients_of(body.normal) == _gradients_of(entry)
        for handler in stmt.handlers:
            start = Flow.join([entry, body.normal])
            if start is not None:
                if not inert:
                    start.map_quiet(PathState.exceptional)
                outs.append(self.exec_block(handler.body, start, frame))
        merged = Outcome.merge(outs)
        if stmt.finalbody and merged.normal is not None:
            merged = merged.then(self.exec_block(stmt.finalbody, merged.normal, frame))
        return merged


def _gradients_of(flow: Flow) -> frozenset[tuple[object, object]]:
    """What the paths of `flow` hold of gradients and of GradScaler records."""
    return frozenset((s.grads, s.amp) for s in flow.states)


def _entered_by_hand(stmt: ast.AST) -> ast.expr | None:
    """`ctx.__enter__()` as a statement: the context it enters (`ctx`)."""
    if type(stmt) is ast.Expr and type(stmt.value) is ast.Call and type(stmt.value.func) is ast.Attribute \
            and stmt.value.func.attr == "__enter__" and not stmt.value.args:
        return stmt.value.func.value
    return None


def _exits_by_hand(stmt: ast.AST, context: str) -> bool:
    """The statement leaves the context entered by hand (`ctx.__exit__(...)`, or a `try` whose `finally` does)."""
    def exits(s: ast.AST) -> bool:
        return type(s) is ast.Expr and type(s.value) is ast.Call and type(s.value.func) is ast.Attribute \
            and s.value.func.attr == "__exit__" and code(s.value.func.value) == context
    if exits(stmt):
        return True
    return type(stmt) is ast.Try and any(exits(s) for s in stmt.finalbody)


def _whole_target(target: ast.expr, sub: ast.expr) -> bool:
    """`sub` is `target` itself or an element of it unpacked (`a, (b, c) = ...`), not the container of an
    item stored (`x` of `x[k] = v`)."""
    if target is sub:
        return True
    if isinstance(target, ast.Starred):
        return _whole_target(target.value, sub)
    return isinstance(target, (ast.Tuple, ast.List)) and any(_whole_target(e, sub) for e in target.elts)


# What a configuration-flag test is made of: names, attributes, constants, `not`, `and`/`or`, comparisons.
def _flag_parts(test: ast.expr) -> list[ast.AST] | None:
    """The nodes of a test a flag is read from: the whole test, except that a type test of an object
    (`isinstance(self.optimizer, torch.optim.LBFGS)`) reads only the object, its class being a name of the
    module. None when a type test names its class otherwise (`isinstance(x, get_cls())`)."""
    out: list[ast.AST] = []
    todo: list[ast.AST] = [test]
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "isinstance" \
                and len(node.args) == 2 and not node.keywords:
            kinds = node.args[1].elts if isinstance(node.args[1], ast.Tuple) else [node.args[1]]
            if not all(N.dotted(k) is not None for k in kinds):
                return None
            todo.append(node.args[0])
            continue
        out.append(node)
        todo.extend(child_nodes(node))
    return out


def _module_level_statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """The statements a module runs itself, in its body and in the blocks of its `if`, `with` and `try` statements
    (`if __name__ == "__main__": num_epochs = 1`), not in functions or classes."""
    for stmt in body:
        yield stmt
        if isinstance(stmt, (ast.If, ast.With, ast.AsyncWith, ast.Try)):
            for block in (getattr(stmt, f, None) for f in ("body", "orelse", "finalbody")):
                if isinstance(block, list):
                    yield from _module_level_statements(block)
            for handler in getattr(stmt, "handlers", ()):
                yield from _module_level_statements(handler.body)


def _assume_in(flow: Flow) -> Callable[[int], None]:
    """Make every path of `flow` assume a fact (by its assumption key)."""
    return lambda akey: flow.map_quiet(lambda s: s.assume(akey, True))


def plain_bindings(module: ast.Module) -> frozenset[str]:
    """Names (and attributes, `self.n`) that the module binds only by whole assignments to that very
    text (`n = ...`, `n += 1`, `self.n = (self.n + 1) % k`, a `for` target): each, when it runs, forgets
    what paths assumed of the tests reading it. Not a container an item is stored into (`d[k] = v`), a
    walrus or comprehension target, or a name declared `global`/`nonlocal` (bound from other scopes)."""
    whole: set[str] = set()
    other: set[str] = set()
    for n in iter_tree(module):
        if isinstance(n, (ast.Global, ast.Nonlocal)):
            other.update(n.names)
            continue
        targets = binding_targets(n)
        direct = isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.For, ast.AsyncFor))
        for t in targets:
            for sub in rebound_by(t):
                text = N.ref_text(sub)
                if text is None:
                    continue
                if direct and isinstance(sub, (ast.Name, ast.Attribute)) and _whole_target(t, sub):
                    whole.add(text)
                else:
                    other.add(text)
    return frozenset(whole - other)
