"""Loops and their counters: `for` loops, what one element of an iterable is, the integer counters
that advance once per iteration, and where they stand in an accumulation window (their phase)."""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Iterable
from dataclasses import replace

from . import names as N
from . import param_groups
from .anchors import Anchors
from .chunk_counts import chunk_count
from .conditions import Condition
from .conventions import convention
from .counter_aliases import CounterAliases, keyed_element
from .flow import ITERATED, Flow, Frame, Outcome
from .last_iteration import last_iteration_bound, strided_window
from .one_batch import fetches, reuses_drawn_batch
from .parts import CountersHost
from .syntax import arguments, code, int_value, is_int, keyword_value
from .values import EMPTY, OPAQUE, Counter, Holder, Kind, Value, holding, join
from .walk import breadth_first, iter_tree
from .window_arithmetic import (
    LAST,
    NEXT_PHASE,
    counter_part,
    fires_on_most,
    first_window,
    first_window_longer,
    modulo_atoms,
    phase_truth,
    position_phase,
    truth_at_zero,
)

_COMPREHENSIONS: tuple[type, ...] = (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)
_SELF_CALL = re.compile(r"\bself\.(\w+)\s*\(")
_PASS_THROUGH = ("iter", "list", "tuple", "sorted", "reversed")
# What a loop visiting the members of a collection may do to each (`Counters.visits_members`)
_MEMBER_EFFECTS = ("step", "clear", "unscale")
# the kinds of object whose `.step()`/`.zero_grad()` a members loop may call, whatever this file names its own methods
_MEMBER_KINDS = frozenset({Kind.OPTIMIZER, Kind.SCHEDULER, Kind.TOOL})
_RECEIVER_NAMED_LIKE_TRAINER = "receiver, named like a trainer"


class Counters:
    """Run `for` loops; follow loop counters and their window phases."""

    def __init__(self, interp: CountersHost) -> None:
        self.interp = interp
        self._trains: dict[int, bool] = {}
        # ids of loops a backward pass ran in, however the interpreter reached it (`trains`)
        self.reached_backward: set[int] = set()
        self._truths: dict[tuple[int, str, str, str, int, bool, int | None], tuple[ast.expr, bool | None]] = {}
        self._atoms: dict[int, tuple[ast.expr, list[tuple[str, str]]]] = {}
        # (id of a test, counter, first value, question) -> answer: the window arithmetic of a test is
        # the same every time the loop's fixpoint comes back to it
        self._windows: dict[tuple[int, str, int, str], object] = {}
        self._rollouts: dict[int, bool] = {}  # id of a `for` -> whether its passes are the terms of one objective
        self._spliced: dict[int, bool] = {}  # id of a `for` -> whether each pass rebuilds the whole window's input
        # id of a `for` -> each pass steps or clears another member (`visits_members`)
        self._members: dict[int, str] = {}
        # loop counters that restart every N values (`cycle(range(1, N + 1))`) -> N, a window the module tests
        # them against: phases of that window are then exact, and `k == 1` is its first micro-batch
        self.cycling: dict[str, str] = {}
        self.aliases = CounterAliases(interp.stored_in)  # names that are a loop counter plus an offset

    # -- phases
    @functools.cached_property
    def anchors(self) -> Anchors:
        return Anchors(self.interp.module)

    def anchor(self, counter: str, window: str) -> int:
        """The value of `counter` its phases in `window` count from (`anchors`): its first value (0 for a
        hand-kept counter), or the one the module's residue tests choose; a cycling counter's own first value."""
        first = self.interp.counter_starts.get(counter, 0)
        return first if self.cycling.get(counter) == window else self.anchors.anchor(counter, window, first)

    def phases_at(self, counter: str, windows: Iterable[str], value: int | None) -> dict[str, frozenset[str] | None]:
        """The phase of `counter` in each window when it stands at `value` (a reset, a loop's first value;
        None: unknown)."""
        if value is None:
            return {w: None for w in windows}
        return {w: _at(position_phase(value - self.anchor(counter, w))) for w in windows}

    def phase_place(self, name: str, window: str, value: Value | None,
                    floors: dict[str, int]) -> tuple[str, int, bool, int | None]:
        """Where path states keep the phases a test of `name` in `window` reads, and how to read them: (that
        key, the value of `name` at which windows start, whether it cycles, the least value it takes). A
        name bound to a loop counter plus an offset (`counter_aliases`) reads the counter's phases, shifted;
        one plus an offset of unknown value, the phases of its own key, whose anchor its first test chooses."""
        c = value.counter if value is not None else None
        if c is None or c.key is None or c.key == name and c.shift == 0:
            return name, self.anchor(name, window), self.cycling.get(name) == window, floors.get(name)
        key = c.key
        if key == self.aliases.root(key):
            start = self.anchor(key, window) + c.shift
            if all(position_phase(r - start) is not None for r in self.anchors.offsets(name, window)):
                windows = self.interp.windows
                if window not in windows.get(key, ()):
                    windows[key] = windows.get(key, frozenset()) | {window}  # advanced with the loop from now on
                floor = floors.get(key)
                return key, start, False, None if floor is None else floor + c.shift
            # a residue the counter's own windows leave undecided (`global_step = i + 1` tested at `global_step %
            # N == 0`, `i`'s windows from 0): phases of the counter in windows its tests choose, kept apart
            key = self.aliases.derive(key, "*")
        anchor = self.aliases.anchor(key, window, lambda: self.anchors.anchor(name, window, 0) - c.shift)
        return key, anchor + c.shift, False, None

    @staticmethod
    def advance_phases(phases: frozenset[str]) -> frozenset[str]:
        return frozenset().union(*(NEXT_PHASE[p] for p in phases)) if phases else phases

    def phase_truth(self, test: ast.expr, counter: str, window: str, phase: str, start: int = 0,
                    cycles: bool = False, floor: int | None = None) -> bool | None:
        """`phase_truth`, remembered: a pure function of the test, asked again for every path state."""
        key = (id(test), counter, window, phase, start, cycles, floor)
        hit = self._truths.get(key)
        if hit is None or hit[0] is not test:
            hit = self._truths[key] = (test, phase_truth(test, counter, window, phase, start, cycles, floor))
        return hit[1]

    def modulo_atoms(self, test: ast.expr) -> list[tuple[str, str]]:
        """`modulo_atoms`, remembered: a test is split on again for every path and loop iteration."""
        hit = self._atoms.get(id(test))
        if hit is None or hit[0] is not test:
            hit = self._atoms[id(test)] = (test, modulo_atoms(test))
        return hit[1]

    @staticmethod
    def reset_increments(flow: Flow, kept: frozenset[str] = frozenset()) -> None:
        """A new iteration: no counter has been incremented in it yet, also the counters an object keeps
        (`self.iteration += 1` at the end of the step method the loop calls, held on the instance). `kept`: the
        counters an enclosing iteration incremented before this loop began, which this loop does not increment."""
        for k, v in list(flow.env.items()):
            if k in kept:
                continue
            fresh = _not_incremented(v, 2)
            if fresh is not v:
                flow.env[k] = fresh

    def incremented_before(self, flow: Flow, loop: ast.AST) -> frozenset[str]:
        """The plain counters (names, `self.` attributes) already incremented in this iteration of the loops around
        `loop` when it begins, that `loop`'s own body does not increment (`x += ...` of the same text)."""
        held = [k for k, v in flow.env.items() if v.counter is not None and v.counter.incremented]
        if not held:
            return frozenset()
        own = {N.ref_text(n.target) for n in iter_tree(loop) if isinstance(n, ast.AugAssign)}
        return frozenset(k for k in held if k not in own)

    def note_counter(self, cond: Condition, flow: Flow) -> None:
        """Record whether the test fires on the first micro-batch of a zero-based counter."""
        for name in cond.counters:
            value = self.interp.lookup(name, flow, None)
            if value is None or value.counter is None:
                continue
            c = value.counter
            if c.start is not None:
                start = c.start + (1 if c.incremented else 0)
                if self._ask(cond, name, start, "false_on_most"):
                    cond.false_on_most = True
                    cond.counter_sources[name] = c.source
                    cond.counter_starts[name] = start
                elif self._ask(cond, name, start, "true_on_most"):
                    cond.true_on_most = True
                    cond.counter_sources[name] = c.source
                    cond.counter_starts[name] = start
            if c.zero_based and not c.incremented:
                first = self._ask(cond, name, 0, "at_zero")
                if first is not None:
                    cond.first_value = first  # type: ignore[assignment]
                    cond.counter_sources[name] = c.source
                    cond.counter_starts[name] = 0
                if first:
                    continue
            if c.start is None:
                continue
            # a counter from 1, or incremented before the test: does the first window hold N micro-batches?
            start = c.start + (1 if c.incremented else 0)
            if self._ask(cond, name, start, "first_window") is False:
                cond.short_first_window = True
                cond.long_first_window = self._ask(cond, name, start, "longer") is True
                cond.counter_sources[name] = c.source
                cond.counter_starts[name] = start

    def _ask(self, cond: Condition, counter: str, start: int, question: str) -> object:
        """One question of window arithmetic about a test, answered once per test, counter and start."""
        key = (id(cond.test), counter, start, question)
        if key in self._windows:
            return self._windows[key]
        test = counter_part(cond.test, counter)  # `opt is not None and i % N == 0`: the modulo test
        if question == "false_on_most":
            answer: object = fires_on_most(ast.UnaryOp(op=ast.Not(), operand=test), counter, start)
        elif question == "true_on_most":
            answer = fires_on_most(test, counter, start)
        elif question == "at_zero":
            answer = truth_at_zero(test, counter)
        elif question == "first_window":
            answer = first_window(test, counter, start)
        else:
            answer = first_window_longer(test, counter, start)
        self._windows[key] = answer
        return answer

    # -- loops
    def exec_for(self, stmt: ast.For, flow: Flow, frame: Frame) -> Outcome:
        interp = self.interp
        iter_value = interp.eval(stmt.iter, flow, frame)
        read = self.element_of(stmt.iter, iter_value, flow, frame)
        element = self._member(stmt, read)
        loop = interp.loop_for(stmt, self.loop_count(stmt.iter, iter_value))
        counter = self.loop_counter(stmt, element)
        tested = last_iteration_bound(stmt)
        last = tested[0] if tested is not None and counter is not None and counter[1] == tested[1] else None
        if last is not None and counter is not None:
            # `for j in range(N): ... if j == N - 1:`: the index counts the loop's own window (`last_iteration`)
            interp.windows[counter[0]] = interp.windows.get(counter[0], frozenset()) | {last}
            self.cycling[counter[0]] = last
            loop.last_of = last
        else:
            last = None
        loop.counter = counter[0] if counter else (stmt.target.id if isinstance(stmt.target, ast.Name) else None)
        if counter is not None and counter[0] not in self.cycling:
            # a name bound to it (`global_step = start_step + i`, a helper's parameter) is still this counter
            element = keyed_element(stmt.target, element, counter[0])
        rollout = self._rollouts.get(id(stmt))
        if rollout is None:  # read from the syntax once per loop, not on every pass of the fixed point
            rollout = self._rollouts[id(stmt)] = (_reads_as_rollout(stmt.iter) or _names_tasks(stmt.target)
                                                  or _names_tasks(stmt.iter) or _refines_one_batch(stmt)
                                                  or reuses_drawn_batch(stmt, interp.parent)
                                                  or self._backpropagates_elements(stmt))
        loop.rollout = rollout
        spliced = self._spliced.get(id(stmt))
        if spliced is None:
            spliced = self._spliced[id(stmt)] = _splices_one_live(stmt)
        loop.spliced = spliced
        loop.parts = _modules_walked(element)
        members = read.entities and not read.params and not read.reach and not read.opaque
        if members or self.visits_members(stmt, element):
            # `for opt in optimizers.values(): opt.zero_grad()`: the abstract element already stands for
            # every member, so one pass over the body covers the whole loop (`visits_members`). A second loop over
            # the same members (its name already holds them) leaves what the paths know of them as it is: the
            # clear's `if opt is not None:` and the step's are one test of one member (RecStudio's trainer)
            if not self._binds_again(stmt, element, flow, frame):
                interp.assign(stmt.target, element, flow, frame, stmt.iter, stmt)
            return self._one_pass(stmt, flow, frame)

        # `for prob in memory:` over a list of graphs built before the loop (a rollout's): each iteration's element
        # is the list's as this iteration found it, a graph an earlier iteration's step made stale included
        # (`flow.rebase_graphs` marks the list, a name the loop does not assign). A list read another way (`for prob,
        # r in net.memory:`, an attribute a method stored on) is held under a key of its own for the loop's run: the
        # loop walks the object it was given, whatever the body rebinds
        container = None
        if counter is None and holding(element).built:
            container = stmt.iter.id if isinstance(stmt.iter, ast.Name) else \
                f"{ITERATED}{id(stmt)}" if N.ref_text(stmt.iter) is not None else None
        if container is not None and container.startswith(ITERATED):
            flow.env[container] = iter_value

        def body(f: Flow, fr: Frame) -> Outcome:
            now = element
            held = f.env.get(container) if container is not None else None
            if held is not None and held is not iter_value:
                now = self._member(stmt, self.element_of(stmt.iter, held, f, fr))
            lasting = interp.lasting_tests(stmt)  # `epoch < start` found false stays false (`lasting_tests`)
            saved, interp.keeping = interp.keeping, {**interp.keeping, **lasting} if lasting else interp.keeping
            try:
                interp.assign(stmt.target, now, f, fr, stmt.iter, stmt, keep_phases=True)
            finally:
                interp.keeping = saved
            return interp.exec_block(stmt.body, f, fr)

        outer, loop.over_items = loop.over_items, self._walks_items(stmt, iter_value, flow, frame)
        try:
            if counter is None:
                out = interp.run_loop(flow, frame, loop, body, None, counter)
            else:
                with self.aliases.advancing(counter[0], stmt, frame.function):
                    out = interp.run_loop(flow, frame, loop, body, None, counter)
        finally:
            loop.over_items = outer
        if container is not None and container.startswith(ITERATED):
            for f in {id(f): f for f in (flow, out.normal, *out.breaks, *(f for f, _ in out.returns)) if f}.values():
                f.env.pop(container, None)
        if stmt.orelse and out.normal is not None:
            out = out.then(interp.exec_block(stmt.orelse, out.normal, frame))
        return Outcome(Flow.join([out.normal, *out.breaks]), returns=out.returns)

    def _walks_items(self, stmt: ast.For, iter_value: Value, flow: Flow, frame: Frame) -> bool:
        """The loop walks the items of one sequence built in sight, whatever name it has by now (a list display
        handed to the function, `values` of `update([a * 1000, b * 1000])`): `for v in values`, `enumerate(values)`,
        `zip(values, names)`, or `for idx in range(n)` reading `values[idx]`. Its iterations are parts of one
        iteration of the loop around it, as those of `for v in [a, b]:` are."""
        it = stmt.iter
        if _sequence(iter_value):
            return True
        if not isinstance(it, ast.Call):
            return False
        name = N.last_name(it.func)
        args = [a.value for a in arguments(it) if a.keyword is None and not a.star]
        if name in ("enumerate", "zip", *_PASS_THROUGH) and args:
            walked = args if name == "zip" else args[:1]
            return any(isinstance(a, (ast.List, ast.Tuple)) or self._names_sequence(a, flow, frame) for a in walked)
        if name != "range" or not isinstance(stmt.target, ast.Name):
            return False
        index = stmt.target.id
        for node in (n for part in stmt.body for n in breadth_first(part)):
            if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Name) and node.slice.id == index \
                    and isinstance(node.ctx, ast.Load) and self._names_sequence(node.value, flow, frame):
                return True
        return False

    def _names_sequence(self, expr: ast.expr, flow: Flow, frame: Frame) -> bool:
        """A name (or attribute) holding a sequence built in sight: looked up, not evaluated again (a call would
        run twice)."""
        ref = N.ref_text(expr)
        return ref is not None and _sequence(self.interp.lookup(ref, flow, frame))

    def _backpropagates_elements(self, stmt: ast.For) -> bool:
        """`for loss in losses: scaler.scale(loss).backward()`: the body only backpropagates what the loop
        binds, tensors whose graphs all existed before the loop. Accumulation runs one micro-batch's forward
        and backward at a time (that is what it is for: one graph in memory); a loop that makes no forward
        pass and holds every graph at once backpropagates the terms (or separate objectives) of the batch
        they were built from, summed on purpose, not micro-batches to average."""
        catalogue = self.interp.catalogue
        backward = catalogue.named_by_effect("backward") | {"backward"}
        allowed = backward | catalogue.named_by_effect("scale")
        bound = {n.id for n in breadth_first(stmt.target) if isinstance(n, ast.Name)}
        calls = [n for part in stmt.body for n in breadth_first(part) if isinstance(n, ast.Call)]
        # statements that are calls only (nothing computed in the body), each of a backward or a loss scale
        # of what the loop binds
        return (all(isinstance(part, ast.Expr) for part in stmt.body)
                and any(N.last_name(c.func) in backward for c in calls)
                and all(N.last_name(c.func) in allowed and _names_any(c, bound) for c in calls))

    def _member(self, stmt: ast.For, element: Value) -> Value:
        """The loop variable over a collection made out of sight (`for opt in optimizers:`, `optimizers`
        returned by another file's code), when how the code uses the name says what it is: one object for
        the members of that collection (`Objects.entity_for_unknown_ref`), not the same object as the
        variable of a loop over another collection."""
        if not (isinstance(stmt.target, ast.Name) and element.opaque) or element.entities or element.modules \
                or element.reach or element.params or element.items:
            return element
        of = N.ref_text(stmt.iter)
        minted = self.interp.objects.entity_for_unknown_ref(stmt.target.id, member_of=of) if of is not None else None
        return element if minted is None else minted

    def _one_pass(self, stmt: ast.For, flow: Flow, frame: Frame) -> Outcome:
        """The loop's body run once, as the whole loop: a `continue` ends the pass, a `break` leaves
        this loop (not the one around it), and the `else:` runs when no `break` left it."""
        interp = self.interp
        out = interp.exec_block(stmt.body, flow, frame)
        normal = Flow.join([out.normal, *out.continues])
        if not stmt.orelse or normal is None:
            return Outcome(Flow.join([normal, *out.breaks]), returns=out.returns)
        rest = interp.exec_block(stmt.orelse, normal, frame)  # its `break`/`continue` are the enclosing loop's
        return Outcome(Flow.join([rest.normal, *out.breaks]), rest.breaks, rest.continues, out.returns + rest.returns)

    def _binds_again(self, stmt: ast.For, element: Value, flow: Flow, frame: Frame) -> bool:
        """The loop's names already hold what it would bind them to: a second loop over the same members
        (`for opt in optimizers:`, `for i, opt in enumerate(optimizers):` after one alike), whose tests of them
        (`if optim_idx is not None and i != optim_idx: continue`) are the first loop's tests of the same member."""
        if isinstance(stmt.target, ast.Name):
            return flow.env.get(stmt.target.id) == element
        names = [n.id for n in ast.walk(stmt.target) if isinstance(n, ast.Name)]
        bound = [n for n in names if n in flow.env]
        if not isinstance(stmt.target, ast.Tuple) or not names or len(bound) < min(2, len(names)):
            return False
        scratch = Flow(dict(flow.env), flow.states)
        self.interp.assign(stmt.target, element, scratch, frame, stmt.iter, stmt)
        if not all(_same_member(scratch.env.get(n), flow.env.get(n)) for n in bound):
            return False
        # (`for iopt, (optimizer, scheduler) in enumerate(zip(optimizers, schedulers)):` after a loop over
        # `enumerate(optimizers)`, ESPnet's trainers: the same members, with their schedulers beside them)
        flow.env.update((n, scratch.env[n]) for n in names if n not in bound and n in scratch.env)
        return True

    def visits_members(self, stmt: ast.For, element: Value) -> bool:
        """Each iteration steps or clears another member of a collection, and nothing else in the loop
        touches gradients: every such call in its body is a method of the catalogue that steps, clears or
        unscales (no backward, no function of this file that trains), called on what the loop binds (`for
        q_i in range(n): self.q_optimizers[q_i].zero_grad()`) or handed it when it is an object (`for opt
        in optimizers: scaler.step(opt)`; not `for batch in loader: trainer.step(batch)`). One abstract
        object stands for all the members (each made by the same code, or one of a collection made out of
        sight), so a second pass of a fixed point would take the next member's step for a second step of
        the first one; one pass over the body visits every member once. A loop over parameters keeps its
        own reading."""
        found = self._members.get(id(stmt))
        if found is None:
            found = self._members[id(stmt)] = self._member_calls(stmt)
        if found == "argument" and not element.entities:
            return False  # (`for batch in loader: trainer.step(batch)`; a GradScaler's `scaler.step(opt)` is "scaler")
        if found == _RECEIVER_NAMED_LIKE_TRAINER:
            # `for optimizer in self.optimizers: optimizer.step()` in a class whose own `step` trains: what the
            # loop binds is known to be optimizers (or tools), so `.step()` is theirs, not that method
            return bool(element.entities) and not element.modules and not element.params \
                and all(e.kind in _MEMBER_KINDS for e in element.entities)
        return bool(found) and not element.params

    def steps_members(self, stmt: ast.For | ast.AsyncFor) -> bool:
        """Read from the loop's text alone: each gradient call of its body steps, clears or unscales what it
        binds (`for opt in self.optimizers: if skip: continue; scaler.step(opt)`), one member per pass, so
        one run of the loop is one step of each member, not a step per iteration of a training loop."""
        found = self._members.get(id(stmt))
        if found is None:
            found = self._members[id(stmt)] = self._member_calls(stmt)
        return bool(found) and found != _RECEIVER_NAMED_LIKE_TRAINER

    def _member_calls(self, stmt: ast.For | ast.AsyncFor) -> str:
        """How the gradient calls of the loop's body reach what it binds (`visits_members`): "receiver"
        (each is a method of it), "argument" (some are handed it), "" (not every one reaches it, or one
        is not a step, clear or unscale), `_RECEIVER_NAMED_LIKE_TRAINER` (each is a method of it, one named
        like a function of this file that trains: which one it is depends on what the loop binds)."""
        interp = self.interp
        allowed = interp.catalogue.named_by_effect(*_MEMBER_EFFECTS, clears=True)
        bound = {n.id for n in breadth_first(stmt.target) if isinstance(n, ast.Name)}
        clips = interp.catalogue.named_by_effect("clip")
        updates = interp.catalogue.named_by_effect("scaler_update")
        how = ""
        ambiguous = False
        for part in stmt.body:
            for call in breadth_first(part):
                if not isinstance(call, ast.Call):
                    continue
                name = N.last_name(call.func) or ""
                if not interp.touches_gradients(name):
                    continue
                if name in clips and call.args and not interp.prescan.trains(name):
                    # `clip_grad_norm_(model.parameters(), c)` before the member's step: the member's own, or the
                    # parameters the member updates gathered first (`opt_params = [p for g in opt.param_groups ...]`,
                    # hackathon_distillation, lockbox 42): a clip steps and clears nothing
                    continue
                if name in updates and not call.args and not call.keywords and isinstance(call.func, ast.Attribute) \
                        and not _names_any(call.func.value, bound) and not interp.prescan.trains(name):
                    continue  # `scaler.update()` after the member's `scaler.step(opt)` (ESPnet's trainers)
                if name not in allowed or not isinstance(call.func, ast.Attribute):
                    return ""
                if interp.prescan.trains(name):
                    if not (isinstance(call.func.value, ast.Name) and call.func.value.id in bound):
                        return ""
                    ambiguous = True
                if _names_any(call.func.value, bound):
                    how = how or "receiver"
                elif any(_names_any(a, bound) for a in (*call.args, *call.keywords)):
                    # `scaler.step(opt)`: a GradScaler's (by its name) is handed an optimizer, not a batch
                    scaler = interp.catalogue.receiver_type(code(call.func.value)) in _SCALER_TYPES
                    how = "scaler" if scaler and how in ("", "scaler") else "argument"
                else:
                    return ""
        return _RECEIVER_NAMED_LIKE_TRAINER if ambiguous and how == "receiver" else "" if ambiguous else how

    def trains(self, node: ast.AST) -> bool:
        """Can one run of this loop issue a backward pass (directly or through a call)? Read from its text
        before it runs (a backward, a call of a function or `self` method here that trains), and known
        once a backward ran in it however it was reached: `train_util.train_step(x, y)`, a method of an
        object of a class of this file or another (`Recorder.backward` reports it, `reached_backward`)."""
        key = id(node)
        if key in self.reached_backward:
            return True
        if key not in self._trains:
            if isinstance(node, _COMPREHENSIONS):  # the `for` clauses, not the element
                text = " ".join(code(part) for g in node.generators for part in (g.target, g.iter, *g.ifs))
            elif isinstance(node, ast.comprehension):
                text = " ".join(code(part) for part in (node.target, node.iter, *node.ifs))
            else:
                text = code(node)
            self._trains[key] = "backward" in text \
                or any(f"{name}(" in text for name in self.training_functions) \
                or any(name in self.training_methods for name in _SELF_CALL.findall(text))
        return self._trains[key]

    @functools.cached_property
    def training_functions(self) -> frozenset[str]:
        """The module's functions that can issue a backward pass: those whose text names one, calls a `self` method
        that may, or calls such a function (transitively). A helper read that only sets a learning rate
        (`assign_learning_rate(param_group, lr)` in a loop over the optimizer's groups, atlas's scheduler) trains
        nothing: a loop calling it leaves the accumulation window where it is."""
        functions = self.interp.functions
        texts = {name: code(fn) for name, fn in functions.items()}
        training = {name for name, text in texts.items()
                    if "backward" in text or any(m in self.training_methods for m in _SELF_CALL.findall(text))}
        changed = True
        while changed:
            changed = False
            for name, text in texts.items():
                if name not in training and any(f"{f}(" in text for f in training):
                    training.add(name)
                    changed = True
        return frozenset(training)

    @functools.cached_property
    def training_methods(self) -> frozenset[str]:
        """Names `self.NAME(...)` may call that can issue a backward pass: local methods that train
        (transitively), and methods defined nowhere in this file (inherited: unknown)."""
        interp = self.interp
        methods: dict[str, list[str]] = {}
        for info in interp.classes.values():
            for name, fn in info.methods.items():
                methods.setdefault(name, []).append(code(fn))
        whole = " ".join(interp.source.split())
        attributes = set(interp.objects.mutable_attributes) | {
            t for info in interp.classes.values() for t in _init_attributes(info.methods.get("__init__"))}
        attributes = {a[5:] for a in attributes if a.startswith("self.")}
        training = {name for name, texts in methods.items()
                    if any("backward" in t or any(f"{f}(" in t for f in interp.functions) for t in texts)}
        changed = True
        while changed:
            changed = False
            for name, texts in methods.items():
                if name not in training and any(set(_SELF_CALL.findall(t)) & training for t in texts):
                    training.add(name)
                    changed = True
        unknown = {n for n in _SELF_CALL.findall(whole) if n not in methods and n not in attributes}
        return frozenset(training | unknown)

    def loop_counter(self, stmt: ast.For, element: Value) -> tuple[str, int | None] | None:
        """The integer counter a `for` loop advances by one per iteration, and its first value (None:
        unknown): `i` of `for i, b in enumerate(...)` (however the enumerate was stored or wrapped), `k` of `range`."""
        target = stmt.target
        if isinstance(target, (ast.Tuple, ast.List)) and target.elts:
            # `for i, batch in enumerate(loader)`, `for batch, k in zip(loader, cycle(range(1, N + 1)))`
            for position, elt in enumerate(target.elts):
                part = element.item(str(position))
                if isinstance(elt, ast.Name) and part is not None and part.counter is not None:
                    return self._counted(elt.id, part.counter)
        if isinstance(target, ast.Name) and element.counter is not None and not element.items:
            return self._counted(target.id, element.counter)
        return None

    def _counted(self, name: str, counter: Counter) -> tuple[str, int | None]:
        """A loop counter and its first value. One that cycles counts windows of its period, whatever the
        module tests it against; its phases are tracked in that window only (see `cycling`)."""
        if counter.period is None:
            self.cycling.pop(name, None)
            return name, _first_value(counter)
        windows = self.interp.windows
        windows[name] = windows.get(name, frozenset()) | {counter.period}
        self.cycling[name] = counter.period
        return name, _first_value(counter)

    # -- iterables
    def iterable(self, call: ast.Call, name: str, pos: list[Value], flow: Flow, frame: Frame) -> Value | None:
        """`range(...)` and `enumerate(...)`: iterables whose elements carry a counter, kept in values so
        that `batches = enumerate(loader)` and `progress(enumerate(loader))` still count."""
        args = [a for a in arguments(call) if a.keyword is None]
        if any(a.star for a in args):
            return None
        if name == "range" and args:
            if len(args) == 3 and is_int(args[0].value, 0) and not is_int(args[2].value, 1):
                # `range(0, n, b)`: the index takes n // b values, b apart; it counts positions in that one
                # window (`j == 0` first, `j == (n // b - 1) * b` last: `last_iteration`), never others
                window = strided_window(code(args[1].value), code(args[2].value))
                counter = Counter(code(call), zero_based=True, start=0, period=window)
                return _iterable(Value(counter=counter), None)
            if len(args) >= 3:
                return _iterable(Value(), None)
            start = args[0].value if len(args) == 2 else None
            zero = start is None or is_int(start, 0)
            first = 0 if start is None else int_value(start)
            counter = Counter(f"range({', '.join(code(a.value) for a in args)})", zero_based=zero, start=first)
            return _iterable(Value(counter=counter), _range_count(args))
        if name == "itertools.cycle" and len(args) == 1 and _is_iterable(pos[0]):
            # `cycle(range(1, N + 1))`: 1, ..., N, 1, ...: a counter whose value restarts every N
            inner = pos[0].item("elem")
            const = pos[0].const
            count = const[1] if isinstance(const, tuple) else None
            if inner is None or inner.counter is None or inner.counter.start is None or not count:
                return None
            return _iterable(Value(counter=replace(inner.counter, period=count, source=code(call))), None)
        if name == "enumerate" and args:
            start = args[1].value if len(args) > 1 else keyword_value(call, "start")
            zero = start is None or is_int(start, 0)
            first = 0 if start is None else int_value(start)
            if first is None and start is not None:
                first = _resume_offset(start)
            source = code(call) if start is not None else f"enumerate({code(args[0].value)})"
            inner = self.element_of(args[0].value, pos[0], flow, frame)
            element = Value(items=(("0", Value(counter=Counter(source, zero_based=zero, start=first))), ("1", inner)))
            return _iterable(element, self.loop_count(args[0].value, pos[0]))
        return None

    def loop_count(self, it: ast.expr, value: Value | None = None) -> str | None:
        """The number of iterations, as source, when the iterable reads like a window of micro-batches."""
        if value is not None and _is_iterable(value):
            return str(value.const[1]) if value.const[1] else None  # type: ignore[index]
        if isinstance(it, ast.Call):
            fname = N.last_name(it.func)
            args = [a for a in arguments(it) if a.keyword is None]
            if fname == "range" and args:
                return _range_count(args)
            if fname in ("enumerate", "tqdm", "zip") and args:
                return self.loop_count(args[0].value)
            chunks = chunk_count(it)
            if chunks is not None:
                return chunks  # the number of chunks
            # `x.split(k)` makes chunks of size k: how many there are is `len(...)` of them
        return f"len({code(it)})"

    def element_of(self, it: ast.expr, value: Value, flow: Flow, frame: Frame) -> Value:
        """The abstract value of one element of an iterable."""
        interp = self.interp
        if _is_iterable(value):
            return value.item("elem") or Value()
        protocol = self._protocol_element(value, flow, frame)
        if protocol is not None:
            return protocol
        if isinstance(it, ast.Call):
            fname = N.last_name(it.func)
            args = [a for a in arguments(it) if a.keyword is None]
            if fname == "zip":
                return Value(items=tuple((str(i), self.element_of(a.value, interp.eval(a.value, flow.copy(), frame), flow, frame))
                                         for i, a in enumerate(args)))
            if fname in _PASS_THROUGH and args:
                return self.element_of(args[0].value, interp.eval(args[0].value, flow.copy(), frame), flow, frame)
            if fname == "items" and value.items:
                return Value(items=(("0", EMPTY), ("1", join([v for _, v in value.items]))))
        if value.items and not value.params:
            return join([v for _, v in value.items])
        # an element of a model's output (`for pi in pred:`, the scores of a multi-scale discriminator) is a
        # slice of it: the same forward passes, with their graphs and the gradient sync they ran with (a loss
        # summed over the slices all-reduces as the output does, and keeps the graphs it was built from). Not
        # the entries of a dict read out of sight (`for key, val in metrics.items():`): code that rewrites them
        # by key in place (jukebox's `_metrics[key] = val.item()`) is not followed
        # (`for group in opt.param_groups:`: each group is still the optimizer's, `param_groups.part_of`)
        graphs = not _dict_entries(it)
        element = Value(entities=value.entities, modules=value.modules, params=value.params, reach=value.reach,
                        opaque=value.opaque, vague=value.vague, sync=value.sync,
                        built=value.built if graphs else frozenset(),
                        vague_sites=value.vague_sites if graphs else frozenset(),
                        graph=value.graph and graphs,
                        graph_assumed=value.graph_assumed)
        return param_groups.part_of(value, element)

    def _protocol_element(self, value: Value, flow: Flow, frame: Frame) -> Value | None:
        """One element of an object of a class read that says how it is iterated (`__iter__`, `__next__`,
        `__getitem__`): what `__next__` returns when `__iter__` returns the object itself (a hand-written
        batch reader, `def __next__(self): return self.next()`), else an element not known. Never the object
        itself: the members of a collection stand for one another, but a reader is not its batches (read as
        one, a loop over it was a single pass, and the clear of each epoch fell inside every window). None:
        not such an object (an `nn.Module` container's members are its parts, as before)."""
        interp = self.interp
        if value.modules or not (value.entities or isinstance(value.const, tuple)):
            return None
        info = interp.calls.class_of_instance(value)
        if info is None or info.is_module or info.api:
            return None
        find = interp.definitions.find_method
        own_iter, own_next = find(info, "__iter__"), find(info, "__next__")
        if own_iter is None and own_next is None and find(info, "__getitem__") is None:
            return None
        if own_next is not None and (own_iter is None or _returns_self(own_iter)):
            read = interp.calls.run_own_method(value, None, "__next__", flow.copy(), frame)
            if read is not None:
                return read
        return OPAQUE


def _returns_self(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """`def __iter__(self): return self`: every return of the method gives back its first parameter."""
    if not fn.args.args:
        return False
    me = fn.args.args[0].arg
    returns = [n for n in iter_tree(fn) if isinstance(n, ast.Return)]
    return bool(returns) and all(isinstance(r.value, ast.Name) and r.value.id == me for r in returns)


def _same_member(one: Value | None, other: Value | None) -> bool:
    """Two loops bind a name alike: the same value, or the same count of members whatever the iterable's text
    (`enumerate(optimizers)` and `enumerate(zip(optimizers, schedulers))` count the same optimizers)."""
    if one == other:
        return True
    if one is None or other is None or one.counter is None or other.counter is None:
        return False
    return replace(one, counter=replace(one.counter, source="")) == replace(other, counter=replace(other.counter, source=""))


def _sequence(value: Value | None) -> bool:
    """A list or tuple built in sight: its items are known by position (`[a * 1000, b * 1000]`)."""
    return value is not None and bool(value.items) and not value.params and all(k.isdigit() for k, _ in value.items)


def _dict_entries(it: ast.expr) -> bool:
    """`d.items()`, `d.values()`: the entries of a mapping."""
    return isinstance(it, ast.Call) and isinstance(it.func, ast.Attribute) and it.func.attr in ("items", "values")


# A loop over the steps of one sequence (`range(seq_len)`, `range(T)`, `range(self.horizon)`): its
# backward passes are the terms of one objective over time, not micro-batches of one batch.
_TIME = convention("time_loop")
_MICRO = convention("micro_batch_loop")


# A loop over the transitions of an episode (`for r, prob in self.data[::-1]`, `reversed(rewards)`,
# `zip(log_probs, returns)`): a policy gradient sums its terms over time, it does not average micro-batches.
_EPISODE = convention("episode_store")


_SCALER_TYPES = frozenset({"torch.amp.GradScaler", "torch.cuda.amp.GradScaler"})


def _reads_as_rollout(it: ast.expr) -> bool:
    if isinstance(it, ast.Subscript) and isinstance(it.slice, ast.Slice) and it.slice.step is not None \
            and code(it.slice.step) == "-1":
        return True  # walked backwards through time (discounted returns)
    if isinstance(it, ast.Call) and N.last_name(it.func) in ("reversed", "zip", "enumerate"):
        args = [a for a in it.args if not isinstance(a, ast.Starred)]
        if N.last_name(it.func) == "reversed" or (args and all(_reads_as_rollout(a) or _names_episode(a) for a in args)):
            return True
    if _names_episode(it):
        return True
    if isinstance(it, (ast.Name, ast.Attribute)) and _TIME.search(code(it)):
        return True  # `for x_t in x_seq:` walks the time steps of one sequence (spikingjelly's OTTT loop)
    if isinstance(it, ast.Call) and N.last_name(it.func) == "range":
        bound = [a.value for a in arguments(it) if a.keyword is None][-1:]
        text = code(bound[0]) if bound else ""
        inner = bound[0].args[0] if bound and isinstance(bound[0], ast.Call) and N.last_name(bound[0].func) in ("len", "size") and bound[0].args else None
        name = code(inner) if inner is not None else text.removesuffix(".size(1)").removesuffix(".shape[1]")
        return bool(_TIME.search(name.split("(")[0])) and not _MICRO.search(text)
    return False


def _splices_one_live(stmt: ast.For) -> bool:
    """`for j in range(accum_freq): ... torch.cat(cached[:j] + [live] + cached[j + 1:])` (open_clip's feature
    caching, GradCache): each pass rebuilds the whole window's input, every micro-batch's cached features with
    the j-th recomputed live, so each backward is the whole window's objective with one part differentiable.
    Their gradients add up to that objective's gradient: the passes are its parts, not micro-batches whose
    mean the window should be."""
    if not isinstance(stmt.target, ast.Name):
        return False
    var = stmt.target.id
    before: set[str] = set()
    after: set[str] = set()
    for node in (n for s in stmt.body for n in breadth_first(s)):
        if not (isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Slice) and node.slice.step is None):
            continue
        lower, upper = node.slice.lower, node.slice.upper
        if lower is None and isinstance(upper, ast.Name) and upper.id == var:
            before.add(code(node.value))  # `cached[:j]`
        elif upper is None and isinstance(lower, ast.BinOp) and isinstance(lower.op, ast.Add) \
                and isinstance(lower.left, ast.Name) and lower.left.id == var \
                and isinstance(lower.right, ast.Constant) and lower.right.value == 1:
            after.add(code(node.value))  # `cached[j + 1:]`
    return bool(before & after)


def _refines_one_batch(stmt: ast.For) -> bool:
    """`for it in range(n_iters_per_batch): if it == 0: ... else: ...` (ReStyle's encoder refining its own
    output): iterations over one batch, the first one special, none fetching data or indexing by the
    counter. Their backward passes are the terms of one objective, summed on purpose, not micro-batches."""
    if not (isinstance(stmt.iter, ast.Call) and N.last_name(stmt.iter.func) == "range" and isinstance(stmt.target, ast.Name)):
        return False
    var = stmt.target.id
    uses = tests = 0
    for node in (n for s in stmt.body for n in breadth_first(s)):
        if fetches(node):
            return False  # `x, y = next(it)`, `get_batch()`: a new micro-batch each time
        if isinstance(node, ast.Name) and node.id == var:
            uses += 1
        elif isinstance(node, ast.Compare) and len(node.ops) == 1:
            sides = [node.left, node.comparators[0]]
            if any(isinstance(s, ast.Name) and s.id == var for s in sides):
                if not any(isinstance(s, ast.Constant) and s.value in (0, 1) for s in sides):
                    return False  # `micro_step == accum - 1`: the last micro-batch of a window
                tests += 1
    return tests > 0 and uses == tests  # the counter is read only to single out the first iterations


# The tasks of a meta-batch (`for task_batch in batch`, `for task in tasks`): meta-learning sums (or
# averages, by its own convention) the task losses; it is not accumulation over micro-batches.
_TASK = convention("task_loop")
_RESUME_POINT = convention("resume_point")


def _at(phase: str | None) -> frozenset[str] | None:
    return frozenset({phase}) if phase is not None else None


def _first_value(counter: Counter) -> int | None:
    return 0 if counter.zero_based else counter.start


def _resume_offset(start: ast.expr) -> int | None:
    """`enumerate(loader, start=start_step + 1)`: on a fresh run the resume point is 0, so the counter
    starts at the constant added to it."""
    if isinstance(start, ast.BinOp) and isinstance(start.op, ast.Add):
        for const, other in ((start.right, start.left), (start.left, start.right)):
            if isinstance(const, ast.Constant) and isinstance(const.value, int) and not isinstance(const.value, bool) \
                    and isinstance(other, (ast.Name, ast.Attribute)) and _RESUME_POINT.search(code(other)):
                return const.value
    return None


def _names_tasks(node: ast.expr) -> bool:
    return any(isinstance(n, ast.Name) and _TASK.search(n.id) or isinstance(n, ast.Attribute) and _TASK.search(n.attr)
               for n in breadth_first(node))


def _names_episode(it: ast.expr) -> bool:
    return isinstance(it, (ast.Name, ast.Attribute)) and bool(_EPISODE.search(code(it)))


def _names_any(node: ast.AST, names: set[str]) -> bool:
    """The expression reads one of these names (`scaler.step(opt)`, `self.optimizers[i].zero_grad()`)."""
    return any(isinstance(n, ast.Name) and n.id in names for n in breadth_first(node))


def _modules_walked(element: Value) -> frozenset[Holder]:
    """The modules an element of a loop over modules is (`head` of `zip(heads, targets)`)."""
    out = set(element.modules)
    for _, item in element.items:
        out |= item.modules
    return frozenset(out)


def _iterable(element: Value, count: str | None) -> Value:
    return Value(const=("iterable", count or ""), items=(("elem", element),))


def _is_iterable(value: Value) -> bool:
    return isinstance(value.const, tuple) and value.const[:1] == ("iterable",)


def _range_count(args: list) -> str | None:
    """`range(n)` -> `n`; `range(1, 3)` -> `2`; `range(a, b)` -> `b - a`; with a step: unknown."""
    if len(args) == 1:
        return code(args[0].value)
    if len(args) == 2:
        lo, hi = args[0].value, args[1].value
        if is_int(lo) and is_int(hi):
            return str(hi.value - lo.value)
        if is_int(lo, 0):
            return code(hi)
        low = code(lo)
        if isinstance(hi, ast.BinOp) and isinstance(hi.op, ast.Add) and code(hi.left) == low:  # range(a, a + n)
            return code(hi.right)
        if isinstance(hi, ast.BinOp) and isinstance(hi.op, ast.Add) and is_int(hi.right) and is_int(lo):  # range(1, n + 1)
            return code(hi.left) if hi.right.value == lo.value else f"{code(hi)} - {low}"
        return f"{code(hi)} - {low}"
    return None


def _init_attributes(init: ast.AST | None) -> set[str]:
    out: set[str] = set()
    if init is None:
        return out
    for node in breadth_first(init):
        if isinstance(node, ast.Assign):
            for t in node.targets:
                text = N.ref_text(t)
                if text is not None:
                    out.add(text)
    return out


def _not_incremented(value: Value, depth: int) -> Value:
    """`value` with no counter marked incremented in this iteration, in its items down to `depth` levels."""
    out = value
    if value.counter is not None and value.counter.incremented:
        out = replace(out, counter=replace(value.counter, incremented=False))
    if depth > 0 and value.items:
        items = tuple((key, _not_incremented(item, depth - 1)) for key, item in value.items)
        if any(a is not b for (_, a), (_, b) in zip(items, value.items)):
            out = replace(out, items=items)
    return out


def split_at_last(flow: Flow, counter: str, window: str) -> tuple[Flow | None, Flow | None]:
    """The paths at the end of an iteration of a `range(N)` loop whose index counts `window`: (those at its last
    position, which leave the loop; the others, which run another iteration). A path whose position is not
    known is in both."""
    leaving, going = [], []
    for s in flow.states:
        phase = s.phase(counter, window)
        if phase is None or LAST in phase:
            leaving.append(s if phase is None else s.with_phase(counter, window, frozenset({LAST})))
        if phase is None or phase - {LAST}:
            going.append(s if phase is None else s.with_phase(counter, window, phase - {LAST}))
    return (Flow(flow.env, frozenset(leaving)) if leaving else None,
            Flow(flow.env, frozenset(going)) if going else None)
