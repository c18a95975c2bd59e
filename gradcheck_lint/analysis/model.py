"""The semantic model of one file's training steps, computed once and read by every rule."""

from __future__ import annotations

import ast
import os
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from ..diagnostics import Span
from . import arm_facts, remainder_flush
from .apimodels import ModelFile
from .conditions import Condition
from .events import Backward, Clear, Loop, Step
from .flow import forget_transitions, literal_generations
from .gradstate import CAP, Contribution, PathState
from .hook_clears import hook_clears
from .interpreter import Interpreter
from .losshooks import framework_divided_returns, unnormalised_losses
from .names import NON_FINITE
from .pathcap import paths_left_out
from .process_groups import started_in_sight
from .purpose import Purposes
from .sync_choices import SyncChoice
from .syntax import Source, code, parameters
from .values import Entity, EntityTable, Holder

if TYPE_CHECKING:
    from ..project import Evidence, ProjectView


class FileLine(int):
    """A line number of another file of the project: an int for ordering, `where` (`losses.py:42`) for messages."""

    where: str

    def __new__(cls, line: int, where: str) -> FileLine:
        made = super().__new__(cls, line)
        made.where = where
        return made


class TrainingModel:
    """Training events of a module (backward, step, clear) and the gradient states seen at each."""

    def __init__(self, module: ast.Module, source: str, models: tuple[ModelFile, ...] = (), *,
                 hooks_only: bool = False, project: ProjectView | None = None, notebook: bool = False) -> None:
        """`hooks_only`: the file calls no backward and no step of its own (the prefilter says so), so
        only what the class definitions say is read: loss hooks the framework trains on. `notebook`: the
        source is a notebook's code cells, run in its kernel's one process unless it launches others."""
        self.module = module
        interp = Interpreter(module, source, models, project)
        self.project = project
        # entities made by code of another file of the project (a fact read through a call into it)
        self.made_elsewhere: set[int] = project.made_elsewhere if project is not None else set()
        self.source: Source = interp.text
        CAP.reset()
        forget_transitions()  # results of another file's analysis (its ids) must not be reused
        if not hooks_only:
            interp.run()
        # how many times path states were dropped at the cap while analysing this file (benchmarks read it),
        # and where, for a notice to the user (None: no path dropped)
        self.cap_hits = CAP.hits
        self.paths_left_out: str | None = paths_left_out({i: loop.node for i, loop in interp.loops.items()},
                                                         lambda node: _file_of(project, node))
        CAP.reset()
        self.table: EntityTable = interp.table
        self._generations = literal_generations()  # of the tests' literals, as the analysis left them (`arm_facts`)
        self._truth_on = interp.truth_on  # a test's truth on a path (`arm_facts`)
        self.catalogue = interp.catalogue
        recorder = interp.recorder
        # keyed by the events' own ids, which is what path states refer to
        self.backwards: dict[int, Backward] = {ev.id: ev for ev in recorder.backwards.values()}
        self.steps: dict[int, Step] = recorder.steps
        self.clears: dict[int, Clear] = {ev.id: ev for ev in recorder.clears.values()}
        self.conditions: dict[int, Condition] = interp.conditions
        self.loops: dict[int, Loop] = interp.loops
        # each loop's and condition's rank in the order the analysis met it (their ids are their nodes' addresses)
        self._ranks: dict[str, dict[int, int]] = {}
        self.forward_sites: dict[int, ast.Call | None] = interp.forward_sites
        self.sync_choices: dict[int, SyncChoice] = interp.sync_choices
        self.keepalives = list(interp.keepalives.events.values())
        self.amp_misuses = list(interp.amp.misuses.values())
        # id of a clip -> (optimizer uid, step call) of the steps it bounded whole
        self.clips_complete_for: dict[int, set[tuple[int, ast.Call]]] = interp.amp.complete_for
        self.unnormalised_losses = unnormalised_losses(interp)
        self.framework_divided_returns = framework_divided_returns(interp)
        self.hook_clears = hook_clears(interp)
        # wrappers whose API switches sync with `set_requires_gradient_sync`, not `no_sync()` (FSDP2's modules)
        cat = interp.catalogue
        self.sync_by_flag_method: set[int] = {
            e.uid for e in interp.table.entities.values()
            if e.api and cat.method(e.api, "no_sync") is None and cat.method(e.api, "set_requires_gradient_sync") is not None}
        self.by_akey: dict[int, list[Condition]] = interp.by_akey
        self.flag_defaults: dict[int, bool] = _flag_defaults(interp, self.conditions.values())
        # The wall-clock budget is gone: the work budget is counted, so a result never depends on load.
        self.out_of_time: bool = False
        # What the work budget left out of the analysis, for a notice to the user (None: all analysed).
        self.cut_short: str | None = interp.cut_short
        self.unreliable: set[int] = interp.unreliable  # findings anchored at these nodes are dropped (engine)
        self.window_reads: set[int] = interp.window_reads  # calls reading an object's accumulation window
        self.refuses_distributed_accumulation: bool = interp.prescan.refuses_distributed_accumulation
        # a notebook that starts no processes runs in one: a framework's `prepare` wraps nothing in DDP there
        self.one_process: bool = notebook and not interp.table.launches_processes
        self._group_started: bool | None = None
        self._group_out: dict[int, bool] = {}  # `group_out_of_sight`, by wrapper uid (GL006 asks at every step)
        self.module_constant = interp.module_constant  # the int a module-level name is bound to once (`N = 4`)
        self.parent = interp.parent  # one map of the module's nodes to their parents, built on first use
        self.flushed_gate = interp.flushed_gate  # the window gate whose remainder an `if` flushes (`remainder_flush`)
        self.qualify = interp.imports.qualify  # `nn.Linear` -> `torch.nn.Linear`, by the module's imports
        self.class_defs: dict[str, ast.ClassDef] = {c.name: c.node for c in interp.classes.values()}
        # loops that time a layer or probe its memory on constant data rather than train (`purpose.py`)
        self.purposes = Purposes(module, interp.parent, interp.imports, interp.catalogue, interp.forward_sites)

    def untied_flush(self, stmt: ast.AST) -> bool:
        """An `if` after a gate's loop that steps the window's remainder by a count not read as the gate's
        (`remainder_flush.untied_flush`)."""
        return self.flushed_gate(stmt) is None and remainder_flush.untied_flush(stmt, self.parent(stmt))

    def group_out_of_sight(self, wrapper: int) -> bool:
        """A data-parallel wrapper this file builds under a test (`if args.local_rank != -1: model = DDP(model)`),
        where no code in sight starts a process group: the arm that builds it raises, or the group is started out of
        sight (`process_groups`). One built on every path says the script runs distributed."""
        known = self._group_out.get(wrapper)
        if known is None:
            site = self.table.made_at.get(wrapper)
            call = next((n for n in ast.walk(self.module) if id(n) == site), None) if site is not None else None
            if call is None or not self._under_a_test(call):
                known = False
            else:
                if self._group_started is None:
                    self._group_started = started_in_sight(self.source.text, self.project)
                known = not self._group_started
            self._group_out[wrapper] = known
        return known

    def _under_a_test(self, node: ast.AST) -> bool:
        up = self.parent(node)
        while up is not None and not isinstance(up, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Module)):
            if isinstance(up, (ast.If, ast.IfExp)):
                return True
            up = self.parent(up)
        return False

    @property
    def trains(self) -> bool:
        """The file issues a backward pass and a step: only then can gradients accumulate into a step
        (the prefilter's premise; a loss hook alone is read from the class definitions)."""
        return bool(self.backwards) and bool(self.steps)

    def span(self, node: ast.AST) -> Span:
        """Where a node is (CPython's parser records it; columns are converted to characters); a node
        of another file of the project (see `is_foreign`) has its span in that file."""
        if self.project is not None:
            module = self.project.module_of_node(node)
            if module is not None:
                return module.source.span(node)
        return self.source.span(node)

    def source_of(self, node: ast.AST) -> Source:
        """The text the node was parsed from: this file's, or another project file's."""
        if self.project is not None:
            module = self.project.module_of_node(node)
            if module is not None:
                return module.source
        return self.source

    def is_foreign(self, node: ast.AST) -> bool:
        """The node is in another file of the project (code reached through an import)."""
        return self.project is not None and self.project.is_foreign(node)

    def anchor(self, node: ast.AST, via: tuple[ast.Call, ...] = ()) -> tuple[ast.AST, tuple[Evidence, ...]]:
        """Where a finding at `node` is reported in this file, and the places in other files it rests on
        (`via`: the calls that ran it, outermost first, when known)."""
        if self.project is None:
            return node, ()
        return self.project.anchor(node, via)

    def line(self, node: ast.AST) -> int:
        """The node's first line (in another file of the project: a `FileLine` naming that file)."""
        if self.project is not None:
            module = self.project.module_of_node(node)
            if module is not None:
                return FileLine(node.lineno, f"{self.project.evidence(module, node).shown}:{node.lineno}")
        return node.lineno

    @staticmethod
    def order(node: ast.AST) -> tuple[int, int, int, int]:
        """A key putting nodes in source order (an enclosing node before the nodes it starts with)."""
        line = getattr(node, "lineno", -1)
        return line, getattr(node, "col_offset", -1), -(getattr(node, "end_lineno", None) or line), -(getattr(node, "end_col_offset", None) or 0)

    # -- helpers shared by the rules
    def wrapped_on(self, uid: int, state: PathState) -> bool:
        """Whether the model may be a data-parallel wrapper on this path: not where the path took none of the
        arms a framework wrapped it on (`arm_facts`)."""
        return not arm_facts.contradicted(self.table.wrapped_under.get(uid), lambda akey: self._truth_on(state, akey),
                                          lambda akey: self._generations.get(akey, 0))

    def optimizer_holders(self, opt: Entity) -> frozenset[Holder]:
        return self.table.optimizer_holders(opt)

    def unmodelled_class(self, opt: Entity) -> bool:
        """The optimizer was built in sight from a class no API model describes: its `zero_grad()` may
        not clear what its `step()` applies, or may not work at all."""
        return opt.uid in self.table.unmodelled_class

    def clear_call(self, opt: Entity) -> str | None:
        """How to clear what `opt` steps on, when its own `zero_grad()` does not (a Megatron optimizer steps on the
        buffers of the models it was built over, which only `model.zero_grad_buffer()` clears): the catalogue's
        clearing method of a model it owns (None: `zero_grad()` of the optimizer clears them)."""
        row = self.catalogue.method(opt.api, "zero_grad") if opt.api else None
        if row is None or any(e.kind == "clear" for e in row.effects):
            return None
        own = self.table.ownership.get(opt.uid)
        for holder in sorted(own.holders if own is not None else (), key=lambda h: (h.uid, h.path)):
            ent = self.table.entities.get(holder.uid)
            whole = ent is not None and ent.api and not holder.path
            method = self.catalogue.clearing_method(ent.api) if ent is not None and whole else None
            if method is not None:
                return f"{self.table.label(holder.uid)}.{method}()"
        return None

    def owned_names(self, opt: Entity) -> str:
        own = self.table.ownership.get(opt.uid)
        if own is None or not own.holders:
            return f"`{self.table.label(opt.uid)}`'s parameters"
        return ", ".join(f"`{n}`" for n in own.names)

    def exclusive(self, a: ast.AST, b: ast.AST) -> bool:
        """`a` and `b` sit in opposite arms of two tests of the same text (`if args.deepspeed:` ... `else:`,
        `if use_amp:` in a helper and `elif use_amp:` ... `else:` in its caller): a flag fixed for the run."""
        first, second = self._branches(a), self._branches(b)
        return any(key in second and second[key] != arm for key, arm in first.items())

    def _branches(self, node: ast.AST) -> dict[str, bool]:
        out: dict[str, bool] = {}
        child: ast.AST = node
        parent = self.parent(child)
        while parent is not None and not isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Module)):
            if isinstance(parent, ast.If) and child is not parent.test:
                out.setdefault(ast.dump(parent.test), child in parent.body)
            child, parent = parent, self.parent(parent)
        return out

    def optimizer_text(self, step: Step) -> str:
        """The optimizer as the step call names it (`self.discriminator.optimizer` of
        `self.discriminator.optimizer.step()`, `opt` of `scaler.step(opt)`), else its label."""
        func = step.node.func
        if isinstance(func, ast.Attribute) and func.attr == "step":
            if step.node.args and "scaler" in code(func.value).lower() and isinstance(step.node.args[0], (ast.Name, ast.Attribute)):
                return code(step.node.args[0])  # `scaler.step(optimizer)`
            if not step.node.args and isinstance(func.value, (ast.Name, ast.Attribute)):
                return code(func.value)
        return self.table.label(step.optimizer.uid)

    def steps_of(self, uid: int) -> list[Step]:
        return sorted((s for s in self.steps.values() if s.optimizer.uid == uid), key=lambda s: self.order(s.node))

    def flag_off_its_default(self, state: PathState) -> bool:
        """This path takes a flag parameter off its literal default (`clear_grad_bef_opt=True` taken false) in a
        function whose callers in sight never pass it so: that the flag is ever so is an assumption."""
        return any(a.value != self.flag_defaults.get(cond.id, a.value)
                   for a in state.assumptions for cond in self.by_akey.get(a.cond, ()))

    def guards(self, step: Step, state: PathState) -> list[Condition]:
        """Conditions of this path that the step depends on: enclosing ifs and earlier `continue` guards."""
        enclosing = {c for stack in step.ifs_of.get(state, step.if_stacks) for c in stack}
        out = []
        for a in sorted(state.assumptions):
            for cond in self.by_akey.get(a.cond, ()):
                if cond.id in enclosing or (cond.early_exit and (cond.moduli or cond.reset)):
                    out.append(cond)
                    break
        return out

    def micro_batch_stride(self, gate: Condition, backward: Backward) -> str | None:
        """The modulus of another test of the window gate's counter that the backward runs under (`if i %
        batch_size == 0:` around `loss.backward()`, with the step under `if i % 32 == 0:`): the counter counts
        iterations of which one in `stride` is a micro-batch, so the window holds `N / stride` micro-batches,
        not N. None when every micro-batch advances the counter."""
        if not gate.moduli or not gate.counters:
            return None
        counted = set(gate.counters)
        for stack in self.if_stacks_in_order(backward.if_stacks):
            for cid in stack:
                other = self.conditions.get(cid)
                if other is not None and other is not gate and other.key != gate.key and other.moduli \
                        and counted & set(other.counters):
                    return other.moduli[0]
        return None

    def accumulation_window(self, state: PathState, backward: Backward, step: Step) -> str | None | bool:
        """The window size if accumulation into this step is intended (a gated step, or backward in an
        inner loop of micro-batches), as source text or None when unnamed; False when not intended."""
        found = self.accumulation_source(state, backward, step)
        return False if found is None else found[0]

    def accumulation_source(self, state: PathState, backward: Backward, step: Step) -> tuple[str | None, Condition | Loop] | None:
        """The window size (as in `accumulation_window`) and the gate or micro-batch loop that names it."""
        for cond in self.guards(step, state):
            if cond.is_accumulation_gate and not any(cond.id in s for s in backward.if_stacks):
                return cond.window, cond
        for bstack in self.stacks_in_order(backward.loop_stacks):
            for sstack in self.stacks_in_order(step.loop_stacks):
                if len(bstack) > len(sstack) and bstack[: len(sstack)] == sstack:
                    loop = self.loops[bstack[len(sstack)]]
                    if loop.rollout or backward.retain_graph:
                        return None, loop  # terms of one objective over time: summed on purpose, no window
                    # a loop over model parts (one head each): the micro-batch loop, if any, is further in
                    inner = next((self.loops[i] for i in bstack[len(sstack):]
                                  if not self._walks_reached_parts(self.loops[i], backward)), None)
                    if inner is None:
                        return None, loop  # losses of one batch, one per part: summed on purpose, no window
                    return inner.count, inner
        return None

    def skipped_only_if_not_finite(self, step: Step, around: Iterable[tuple[int, ...]]) -> bool:
        """Every `if` the step sits under, and the event with the `around` condition stacks does not, tests
        whether the gradients (or the loss) are finite (`if math.isnan(grad_norm): log() else: opt.step()`): a
        step skipped there drops a broken window on purpose, as a GradScaler skips an overflowed one; the
        gradients the skipped step leaves are no accumulation window (GL002 reads such skips so too)."""
        outer = {c for stack in around for c in stack}
        tests = [self.conditions.get(c) for stack in step.if_stacks for c in stack if c not in outer]
        return bool(tests) and all(c is not None and NON_FINITE.search(code(c.test)) is not None for c in tests)

    @staticmethod
    def terms_of_one_objective(loop: Loop, backward: Backward) -> bool:
        """The loop's backward passes are terms of one objective, not micro-batches: steps of one sequence,
        passes through one retained graph, or losses of one batch each through a module of its own (a loop
        over task heads: a pass writes its head, which no other pass of the loop writes)."""
        return loop.rollout or backward.retain_graph or TrainingModel._walks_reached_parts(loop, backward)

    @staticmethod
    def _walks_reached_parts(loop: Loop, backward: Backward) -> bool:
        """The loop walks over modules the backward's loss reaches (`for head in heads: head(h)...backward()`)."""
        return any(p.overlaps(r) for p in loop.parts for r in backward.loss.reach)

    def stacks_in_order(self, stacks: Iterable[tuple[int, ...]]) -> list[tuple[int, ...]]:
        """Loop stacks (the loops around an event, outermost first) in the order the analysis met their loops.
        A loop's id is its node's address: a set of stacks iterates, and stacks sort as they are, in another
        order in each process, so the first that fits must be taken from here."""
        return self._in_met_order(stacks, "loops", self.loops)

    def if_stacks_in_order(self, stacks: Iterable[tuple[int, ...]]) -> list[tuple[int, ...]]:
        """Condition stacks (the `if`s around an event) in the order the analysis met their conditions."""
        return self._in_met_order(stacks, "conditions", self.conditions)

    def _in_met_order(self, stacks: Iterable[tuple[int, ...]], kind: str, met: dict[int, Any]) -> list[tuple[int, ...]]:
        rank = self._ranks.get(kind)
        if rank is None or len(rank) != len(met):
            rank = self._ranks[kind] = {key: n for n, key in enumerate(met)}
        return sorted(stacks, key=lambda stack: [rank.get(key, len(rank)) for key in stack])

    def step_node(self, call_id: int) -> ast.AST | None:
        for step in self.steps.values():
            if id(step.node) == call_id:
                return step.node
        return None

    def assumed_repeated(self, step: Step) -> bool:
        """The step runs in no loop of the code: only in the per-call loop assumed for a step function."""
        stacks = step.loop_stacks
        return any(stacks) and all(all(self.loops[i].implicit for i in stack if i in self.loops) for stack in stacks)

    def applied_within_same_model(self, holder: Holder, consumers: frozenset[int]) -> bool:
        """Every optimizer that applied these gradients updates another part of the same model."""
        if not consumers or holder.pseudo:
            return False
        for uid in consumers:
            ent = self.table.entities.get(uid)
            if ent is None:
                return False
            hs = self.table.optimizer_holders(ent)
            if not hs or any(h.pseudo or h.uid != holder.uid for h in hs):
                return False
        return True

    def stale_within_same_model(self, holder: Holder, c: Contribution, held: list[tuple[Holder, Contribution]],
                                holders: frozenset[Holder]) -> bool:
        """Gradients another part of the same model's optimizer applied are this loss's, left over: stale
        (GL001), not another model's (GL005). Not so when another backward wrote fresh gradients into this
        holder since and this one's write is its only one here: two optimizers of the parts of one module
        (a LightningModule holding a generator and a discriminator), the generator's loss applied by its
        optimizer, then the discriminator's own loss on top of it. `holders`: the stepping optimizer's."""
        if c.live or not self.applied_within_same_model(holder, c.consumers):
            return False
        if any(h == holder and o.backward == c.backward and o != c and (o.fresh or o.live) for h, o in held):
            return True  # the same backward line wrote here again: an older pass of this step's own loss
        entities = self.table.entities
        if all(u in entities and self.optimizer_holders(entities[u]) == holders for u in c.consumers):
            return True  # applied by an optimizer of exactly these parameters: one model's (as GL005 reads it)
        return not any(h == holder and o.backward != c.backward and o.fresh for h, o in held)

    def same_block(self, *nodes: ast.AST) -> bool:
        """The nodes are statements (or in statements) of one block, none under an `if` or loop the others
        are not in."""
        def block(node: ast.AST) -> tuple[int, str]:
            child, parent = node, self.parent(node)
            while parent is not None:
                for name in ("body", "orelse", "finalbody", "handlers"):
                    if any(child is s for s in getattr(parent, name, None) or ()):
                        return id(parent), name
                child, parent = parent, self.parent(parent)
            return 0, ""
        return len({block(n) for n in nodes}) == 1

    def in_same_loop(self, a: set[tuple[int, ...]], b: set[tuple[int, ...]]) -> bool:
        return any(x and y and x[-1] in y for x in a for y in b) or any(x and y and y[-1] in x for x in a for y in b)


def _file_of(project: ProjectView | None, node: ast.AST) -> str | None:
    """The other file of the project `node` is in, relative to the checked file's directory (None: this file)."""
    module = project.module_of_node(node) if project is not None else None
    if module is None or project is None:
        return None
    return os.path.relpath(module.path, os.path.dirname(project.abs)).replace(os.sep, "/")


def _flag_defaults(interp: Interpreter, conditions: Iterable[Condition]) -> dict[int, bool]:
    """Condition id -> the default of the flag it tests: `if clear_grad_bef_opt:` (or `if not ...:`) of a parameter
    the enclosing function gives a literal True or False default."""
    out: dict[int, bool] = {}
    for cond in conditions:
        negated = isinstance(cond.test, ast.UnaryOp) and isinstance(cond.test.op, ast.Not)
        test = cond.test.operand if negated else cond.test
        if not isinstance(test, ast.Name):
            continue
        node: ast.AST | None = cond.statement
        while node is not None and not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            node = interp.parent(node)
        if node is None:
            continue
        positional, kwonly, _stars = parameters(node)
        for param in (*positional, *kwonly):
            if param.name == test.id and isinstance(param.default, ast.Constant) and type(param.default.value) is bool:
                out[cond.id] = param.default.value
    return out
