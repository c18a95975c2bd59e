"""Training events as the interpreter meets them: each backward, step and clear, the gradient state
transition it makes on every path, and what the rules later read about it."""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable
from dataclasses import replace

from . import named_tuples
from . import names as N
from .conventions import convention
from .events import Backward, Clear, Step
from .flow import (
    STALE_CARRIED,
    SYNC_SET,
    Flow,
    Frame,
    forget_null_grads,
    generation,
    generation_key,
    generations,
    null_grads,
    set_null_grads,
)
from .gradstate import UNDONE, PathState
from .parts import RecorderHost
from .provenance import weakest
from .syntax import code, keyword_value
from .trials import module_functions, steps_without_backward, undone_steps
from .values import Entity, EntityTable, Holder, Kind, Value, join
from .walk import breadth_first

_GRAPH_METHOD = convention("graph_method")


class Recorder:
    """Records backward passes, steps and clears, and applies their transitions to the flow."""

    def __init__(self, interp: RecorderHost) -> None:
        self.interp = interp
        self.table: EntityTable = interp.table
        self.backwards: dict[tuple[int, frozenset[Holder]], Backward] = {}
        self.steps: dict[int, Step] = {}
        self.clears: dict[int, Clear] = {}
        self._ordinals: dict[object, int] = {}
        self._benchmarks: dict[int, bool] = {}  # id of a loop -> it steps with nothing in it that can backpropagate
        self._functions: tuple[ast.Module, dict[str, list[ast.FunctionDef | ast.AsyncFunctionDef]]] | None = None
        self.backward_calls = 0
        self.last_update: dict[str, tuple[ast.Call, str]] = {}  # parameter set -> the last step that updated it
        self.touched: set[int] = set()  # nodes of the events the root being analysed met (see EntryPoints.root)

    def ordinal(self, node: ast.AST) -> int:
        """A small integer per event node, in order of first meeting: deterministic across runs."""
        return self._ordinals.setdefault(id(node), len(self._ordinals) + 1)

    def _ordinal_of(self, key: object) -> int:
        return self._ordinals.setdefault(key, len(self._ordinals) + 1)

    def wrote_into(self, holders: Iterable[Holder]) -> bool:
        """Whether a backward read so far wrote into any of these parameters (their gradients are not out of sight)."""
        hs = list(holders)
        return any(h.overlaps(x) for ev in self.backwards.values() for h in ev.written for x in hs)

    def _updated_whole(self, part: Holder, optimizers: list[Entity]) -> bool:
        """Whether one of these optimizers updates every parameter of `part` (it holds `part` or a module it is in)."""
        return any(h.uid == part.uid and not h.pseudo and part.path[: len(h.path)] == h.path
                   for o in optimizers for h in self.table.optimizer_holders(o))

    def all_optimizers(self) -> list[Entity]:
        return [e for e in self.table.entities.values() if e.kind is Kind.OPTIMIZER]

    # -- backward
    def backward(self, call: ast.Call, loss: Value, loss_text: str, flow: Flow, frame: Frame, framework_scaled: bool,
                 only: set[Holder] | None = None, window: str | None = None, assumed: bool = False,
                 call_text: str | None = None, windowed: bool = False, by_name: bool = False,
                 guessed: bool = False) -> None:
        """A backward pass of `loss`: every parameter set it reaches gets a contribution on every path
        (`call_text`: how messages quote the call, when not as written: a schedule's, `forward_backward_func(...)`;
        `windowed`: the call runs a whole window of micro-batches itself, as a schedule does; `by_name`: the call is
        taken for a backward by its name only, so the graph it proves `loss` holds is assumed; `guessed`: the call is
        read as a backward only by assumption (what a library's `optim.step(loss)` does), so are the gradients it writes)."""
        # Each backward makes every later one dearer; one statement can hold thousands of them
        # (`f(a.backward(), b.backward(), ...)`), so each counts as work, as a statement does.
        self.backward_calls += 1
        self.touched.add(id(call))
        self.interp.spend()
        self.interp.saw_backward(frame.loops)  # every loop around it trains, however it reached this call
        self.interp.keepalives.consumed(loss)
        if not frame.no_grad:
            self.interp.keepalives.proven(loss, code(call), by_name)
        written: dict[Holder, bool] = {}
        reach = {h for h in loss.reach if not h.pseudo}
        if frame.no_grad:
            reach = set()
        in_scope = self.optimizers_in_scope(flow, frame)
        unknown_opts = [o for o in in_scope if self.table.ownership_unknown(o.uid)]
        if reach:
            # A loss whose graph can only come from one model, through a method of it the analysis did not read
            # (`model.encoder(x)` of a model handed in): for the backward to run at all the graph is that model's,
            # so it writes some of its parameters: those of an optimizer that updates all of that part (not of
            # optimizers of parts of it, `self.G` and `self.D` of a GAN module's unread `self.d_loss(x)`). Inferred,
            # not read: the loss's provenance says so, and what is found on it is `possible`
            # (one model, and one part of it: a vague reach of `self.actorcritic.actor` and `.critic`, two parts an
            # unread forward returned together, says the graph is of one or the other, not which)
            sole = len({h.uid for h in reach}) == 1 and reach <= loss.vague and _one_part(reach)
            for h in reach:
                written[h] = h not in loss.vague or sole and self._updated_whole(h, in_scope)
            # A loss through `model` also writes each part of it that an optimizer owns on its own
            # (`backbone_opt` on model.features, `head_opt` on model.classifier): track them apart.
            for o in in_scope:
                for h in self.table.optimizer_holders(o):
                    if not h.pseudo and h.path:
                        for r in reach:
                            if r.uid == h.uid and h.path[: len(r.path)] == r.path:
                                written.setdefault(h, r not in loss.vague)
            # Optimizers whose parameters we cannot name may own what this loss reaches; a name
            # (`decoder_optimizer` next to `decoder`) says which model it most likely updates.
            for o in unknown_opts:
                owner = self.guess_owner(o, flow, frame)
                if owner is None:
                    written[Holder(o.uid, (), pseudo=True)] = len(in_scope) == 1
                elif any(owner.overlaps(h) for h in reach):
                    written[Holder(o.uid, (), pseudo=True)] = True
        elif loss.opaque or not loss.reach:
            # Unknown reach: assume it writes the parameters of every optimizer in reach, without certainty,
            # unless only one optimizer is in reach: the backward is for it (`loss = self.compute_loss(batch)`).
            sole = len(in_scope) == 1
            for o in in_scope:
                for h in self.table.optimizer_holders(o):
                    written[h] = sole and not loss.kept
        if only is not None:
            written = {h: c for h, c in written.items() if any(h.overlaps(o) for o in only)} if only else {}
        # One event per call site, chain of calls that reached it, and set of parameters written: a helper
        # called for two models is two backward passes, and so is a helper called twice in a row for one
        # model (`backward_D(D, real, fake1)`, then `backward_D(D, real, fake2)`: two losses summed into one
        # step, not a micro-batch accumulated from an earlier iteration).
        key = (id(call), frozenset(written), self.interp.calls.call_path)
        ev = self.backwards.get(key)
        if ev is None:
            # `retain_graph=` anything but a literal False or None (`retain_graph=retainGraph`): kept
            retain = keyword_value(call, "retain_graph")
            kept = retain is not None and not (isinstance(retain, ast.Constant) and retain.value in (False, None))
            ev = Backward(self._ordinal_of(key), call, call_text or code(call), loss_text, loss, framework_scaled, framework_assumed=assumed, framework_window=window,
                          retain_graph=kept, windowed=windowed)
            self.backwards[key] = ev
        else:
            ev.loss = join([ev.loss, loss])
        ev.loop_stacks.add(frame.loops)
        ev.if_stacks.add(frame.ifs)
        ev.callers.add(self.interp.calls.enclosing_calls())
        if guessed:
            written = dict.fromkeys(written, False)
        ev.written |= set(written)
        ev.amp_scaled = ev.amp_scaled or loss.amp
        # wrappers one of whose forwards behind this loss ran with sync off: DDP prepared this backward then (the
        # latest forward decides); an older forward with sync on is behind a value carried into it (HF Trainer's
        # `self._past` handed back as `mems`), whose graph an earlier backward already went through
        prepared_off = {uid for uid, state, _site, _flags in loss.sync if state == "off"}
        for uid, state, site, flag_sets in loss.sync:
            if state == "on" and self._forward_ruled_out(site, flow):
                continue  # a forward of the other arm of a test this path took the other way (see `_forward_ruled_out`)
            if self._wrapper_ruled_out(uid, flow):
                continue  # a wrapper built in the other arm of a setting this path took the other way
            if self._sync_at_backward(uid):  # FSDP: what the backward runs under decides, not its forward
                state = "off" if uid in frame.sync_off else "maybe" if uid in frame.sync_maybe else "on"
                ev.sync_forwards.add((uid, state, site))
                continue
            ev.sync_forwards.add((uid, state, site))
            later = flow.env.get(f"{SYNC_SET}{uid}")
            if uid in prepared_off:
                continue
            if state == "on" and (uid in frame.sync_off or uid in frame.sync_maybe) or isinstance(getattr(later, "const", None), int) and later.const > flag_sets:  # type: ignore[union-attr]
                ev.sync_off_late.add(uid)  # switched (off) after the forward that decides it
        self.interp.amp.backward(call, written, loss.amp, flow, frame.ifs)
        # A graph built by a forward pass before a step updated that module's parameters in place.
        for holder, before, site in loss.built:
            if not self._builds_graph(holder, site):
                continue
            # (another method of the module, not read, runs its parameters by its name only: `forward_flops`)
            called = self.interp.direct_forward(holder, site)
            seen = dict(before)  # a count of -1: stale already when the current loop iteration began
            now = dict(generations(flow.env, holder))
            for key in now.keys() | {k for k, c in seen.items() if c < 0}:
                if now.get(key, 0) > seen.get(key, 0) and key in self.last_update:
                    step_call, step_text = self.last_update[key]
                    graph = (holder, site, id(step_call), step_text)
                    ev.stale_graphs.add(graph)
                    if seen.get(key) != STALE_CARRIED:
                        ev.firm_graphs.add(graph)
                    if site not in loss.vague_sites and called:
                        ev.read_graphs.add(graph)
        # (a backward through a whole module refills what a clear dropped in the parts it holds, also where this
        # path's value of the module did not list them: `EntityTable.parts`)
        refills = frozenset(p for h in written if not h.path and not h.pseudo
                            for p in self.table.parts.get(h.uid, ()) if p not in written)
        flow.map_gradients(lambda s: s.backward(ev.id, written, refills),
                           ("backward", ev.id, frozenset(written.items()), refills))
        # which parameters still have no gradient is known only where what the loss reaches is (a loss of a value
        # the analysis could not see through, of attributes set out of sight, may reach any of them)
        complete = not (loss.vague or loss.vague_sites or by_name or assumed or guessed or frame.no_grad
                        or any(h.pseudo for h in written))
        forget_null_grads(flow.env, [*written, *refills] if complete else None,
                          lambda h: self.table.parts.get(h.uid, ()) if not h.path else ())
        held = flow.env.get(loss_text) if loss_text.isidentifier() else None
        if held is not None and not frame.no_grad:
            self.interp.keepalives.proven_by_backward(loss_text, held, flow, by_name)  # and what it was made of
            item = self.interp.keepalives.item_backpropagated(loss_text, held, flow)
            if item is not None:  # `loss = output["loss"]; loss.backward()`: through that item of `output`
                self._container_holds_graph(item, flow, by_name)
        if held is not None and (not held.graph or held.graph_assumed and not by_name) and not frame.no_grad:
            flow.env[loss_text] = replace(held, graph=True, graph_assumed=by_name)  # backpropagated: it holds a graph
        elif not frame.no_grad and not loss_text.isidentifier():
            self._container_holds_graph(loss_text, flow, by_name)

    def _forward_ruled_out(self, site: int, flow: Flow) -> bool:
        """The forward pass of this ordinal ran in an arm of an `if` whose test every path reaching here took
        the other way: the loss joined after `if i % N == 0: out = model(x)` / `else: with model.no_sync():
        out = model(x)` holds both forwards, yet a backward under the same test's `no_sync()` arm comes from
        the second only (SimpleAICV's fixed loop)."""
        return self._ruled_out(self.interp.forward_sites.get(site), flow)

    def _wrapper_ruled_out(self, uid: int, flow: Flow) -> bool:
        """The data-parallel wrapper was built in an arm of an `if` whose test every path reaching here took the
        other way: `configure()` wraps the model in DDP under `else:` of `if args.ds_config:` and in a DeepSpeed
        engine under its `if`; `step()` calls `model.backward(loss)` under `if args.ds_config:` again, a setting
        nothing assigns during the run (`pathcond`), so the model there is the engine, whose forward ran through
        the joined value of both."""
        return self._ruled_out(self.interp.node_made_at(uid), flow)

    def _ruled_out(self, node: ast.AST | None, flow: Flow) -> bool:
        """`node` runs only in arms of tests that every path of `flow` took the other way."""
        interp = self.interp
        states = flow.states
        if node is None or not states:
            return False
        arms: list[tuple[int, bool]] = []  # (assumption key, the test's truth the forward needs)
        while node is not None and not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Module)):
            parent = interp.parent(node)
            if isinstance(parent, ast.If):
                # (read as a branch that matters reads it, also where the test held no training event)
                cond, swapped = interp.setting_condition(parent)
                holds = any(node is s for s in parent.body) != swapped
                arms.append((cond.akey, cond.polarity == holds))
            node = parent
        return bool(arms) and all(any(s.assumption(akey) not in (None, needed) for akey, needed in arms)
                                  for s in states)

    def _sync_at_backward(self, uid: int) -> bool:
        """The wrapper's sync control is read at backward time (its catalogue row says `decided_at = "backward"`)."""
        ent = self.table.entities.get(uid)
        row = self.interp.catalogue.method(ent.api, "no_sync") if ent is not None and ent.api else None
        return row is not None and any(e.kind == "sync" and e.value("decided_at") == "backward" for e in row.effects)

    def _builds_graph(self, holder: Holder, site: int) -> bool:
        """The forward pass of this ordinal surely ran the module's parameters: the module itself
        (`D(x)`, `D.forward(x)`), or a method that is a forward or a loss of its own (`self.gen.forward_a(z)`,
        `netD.netG_adv_loss(fake)`); not a helper that may use none (`self.model.norm_obs(obs)`)."""
        if self.interp.direct_forward(holder, site):
            return True
        call = self.interp.forward_sites.get(site)
        func = call.func if isinstance(call, ast.Call) else None
        return isinstance(func, ast.Attribute) and bool(_GRAPH_METHOD.search(func.attr))

    def _container_holds_graph(self, loss_text: str, flow: Flow, by_name: bool) -> None:
        """`output["loss"].backward()`: the dict (or object) `output` holds a graph through that item, so
        storing `output` across iterations keeps it (`outputs.append(output)`), until the item is
        replaced by a value without one (`output["loss"] = output["loss"].detach()`)."""
        try:
            node = ast.parse(loss_text, mode="eval").body
        except SyntaxError:
            return
        if not (isinstance(node, (ast.Subscript, ast.Attribute)) and isinstance(node.value, ast.Name) and node.value.id != "self"):
            return
        base, item = node.value.id, N.ref_text(node)
        container = flow.env.get(base)
        if item is None or container is None or container.graph or container.entities or container.modules:
            return
        # the item itself, in a container built in sight (`losses.total_loss` of a named tuple): unpacked
        # (`..., total = losses`), it is the value backpropagated
        key = (N.literal_key(node.slice) if isinstance(node, ast.Subscript)
               else named_tuples.field_key(container, node.attr))
        items = tuple((k, replace(v, graph=True, graph_assumed=by_name) if k == key else v) for k, v in container.items)
        flow.env[base] = replace(container, graph=True, graph_assumed=by_name, items=items)
        self.interp.keepalives.item_graphs[base] = item

    def guess_owner(self, opt: Entity, flow: Flow, frame: Frame | None = None) -> Holder | None:
        """The one model in scope whose name shares a role with the optimizer's (`opt_G` and `G`)."""
        wanted = N.roles(self.table.label(opt.uid)) - {"optimizers", "optim", "opts"}
        if not wanted:
            return None
        found: set[Holder] = set()
        for v in self._in_sight(flow, frame):
            for m in v.modules:
                if not m.path and not m.pseudo and N.roles(self.table.holder_name(m)) & wanted:
                    found.add(m)
        return next(iter(found)) if len(found) == 1 else None

    def guess_stepped(self, opt: Entity, flow: Flow) -> frozenset[Holder]:
        """The model an optimizer handed in as a plain name (`call_optimize(self, data, model, optimizer)`)
        most likely steps: the one model in sight that no other optimizer owns (`model`, next to
        `self.discriminator`, which `self.optimizer_d` steps). Only graphs built before the step read it.
        An attribute (`self.actor_opt`) is left alone: it is often built for a part of a model."""
        label = self.table.label(opt.uid)
        if not label.isidentifier():
            return frozenset()
        models: set[Holder] = set()
        for v in self._in_sight(flow):
            models |= {m for m in v.modules if not m.path and not m.pseudo}
        owned: set[Holder] = set()
        for o in self.optimizers_in_scope(flow):
            if o.uid != opt.uid:
                owned |= {h for h in self.table.optimizer_holders(o) if not h.pseudo}
        free = {m for m in models if not any(m.overlaps(h) for h in owned)}
        return frozenset(free) if len(free) == 1 and owned else frozenset()

    def _in_sight(self, flow: Flow, frame: Frame | None = None) -> list[Value]:
        """The values the code here can name: its variables, then what a nested function sees of its
        definer (`frame`'s closure), then the module globals neither shadows."""
        module_env = self.interp.module_env
        closure = frame.closure_env if frame is not None and frame.closure_env else {}
        return [*flow.env.values(), *(v for k, v in closure.items() if k not in flow.env),
                *(v for k, v in module_env.items() if k not in flow.env and k not in closure)]

    def one_optimizer(self, in_scope: list[Entity], flow: Flow, frame: Frame | None = None) -> bool:
        """The optimizers the code here can name are one object at run time: one of them, or the alternatives
        of one name that every name holding an optimizer may be (`optimizer = SGD(...)` or `AdamW(...)` on
        exclusive branches of a builder), never two names that may hold different ones (`opt_G`, `opt_D`)."""
        if len(in_scope) <= 1:
            return len(in_scope) == 1
        every = frozenset(o.uid for o in in_scope)
        alone = True

        def visit(v: Value, depth: int = 0) -> None:
            nonlocal alone
            held = {e.uid for e in v.entities if e.kind is Kind.OPTIMIZER}
            if held and held != every:
                alone = False
            if depth < 2:
                for _, item in v.items:
                    visit(item, depth + 1)

        for v in self._in_sight(flow, frame):
            visit(v)
        return alone

    def optimizers_in_scope(self, flow: Flow, frame: Frame | None = None) -> list[Entity]:
        """Optimizers the code at this point can name (its variables, `self.*`, module globals)."""
        found: dict[int, Entity] = {}
        seen: set[tuple[int, int]] = set()  # (value, depth): one value held under many names is read once

        def visit(v: Value, depth: int = 0) -> None:
            key = (id(v), depth)
            if key in seen:
                return
            seen.add(key)
            if v.entities:
                for e in v.of_kind(Kind.OPTIMIZER):
                    found[e.uid] = e
            if depth < 2:
                for _, item in v.items:
                    visit(item, depth + 1)

        for v in self._in_sight(flow, frame):
            visit(v)
        if not found:
            # none in sight: an optimizer attribute the class never sets (its base class, out of sight,
            # does: `self.optimizers.step()` of a torchtitan engine), named like one and used in this file
            for text in sorted(self.interp.optimizer_refs):
                if text.startswith("self.") and text.count(".") == 1 and text not in flow.env:
                    minted = self.interp.objects.entity_for_unknown_ref(text)
                    if minted is not None:
                        visit(minted)
        return sorted(found.values(), key=lambda e: e.uid)

    # -- step
    def step(self, call: ast.Call, opt: Entity, text: str, flow: Flow, frame: Frame, framework_gated: bool = False,
             context_window: str | None = None, closure_evaluations: str | None = None) -> None:
        """`opt` applies the gradients of its parameters on every path reaching the call."""
        self.touched.add(id(call))
        ev = self.steps.get(id(call))
        key = (id(call), opt.uid)
        if ev is None or ev.optimizer.uid != opt.uid:
            ev = self.steps.get(hash(key)) if ev is not None else None
            if ev is None:
                ev = Step(id(call), call, text, opt)
                self.steps[ev.id if self.steps.get(id(call)) is None else hash(key)] = ev
        ev.incoming |= set(flow.states)
        for s in flow.states:
            ev.ifs_of.setdefault(s, set()).add(frame.ifs)
        ev.loop_stacks.add(frame.loops)
        ev.if_stacks.add(frame.ifs)
        ev.framework_gated = ev.framework_gated or framework_gated
        trial = self.trial(call, frame)
        ev.trial = ev.trial or trial
        ev.context_window = ev.context_window or context_window
        ev.closure_evaluations = ev.closure_evaluations or closure_evaluations
        receiver = N.ref_text(call.func.value) if isinstance(call.func, ast.Attribute) else None
        link = self.interp.assumed_links.get(receiver) if receiver is not None else None
        if link is not None:  # `pair.sched.step()`: `pair.sched` taken for an optimizer by a guess
            ev.link = weakest((ev.link, link))
        holders = self.table.optimizer_holders(opt)
        consumer = UNDONE if trial else opt.uid
        flow.map_gradients(lambda s: s.step(consumer, holders), ("step", consumer, frozenset(holders)))

    def trial(self, call: ast.Call, frame: Frame) -> bool:
        """The step does not train (`trials`): a later statement restores the weights it changed, or its
        loop never backpropagates and steps the same optimizer on every iteration (a benchmark)."""
        if id(call) in undone_steps(self.interp.module):
            return True
        loop = self.interp.loops.get(frame.loops[-1]) if frame.loops else None
        if loop is None or loop.implicit or not self._benchmark(loop.node):
            return False
        if not _written_in(call, loop.node) and not self._in_called_function(call, loop.node):
            # reached through a call the loop makes (`for _ in range(n): trainer.step()` running `Trainer.step`,
            # which backpropagates): the loop's `.step()` is that method, named like an optimizer's, not one
            return False
        bound = {n.id for t in _loop_targets(loop.node) for n in breadth_first(t) if isinstance(n, ast.Name)}
        return not any(isinstance(n, ast.Name) and n.id in bound for n in breadth_first(call))  # `for opt in opts: opt.step()` trains

    def _benchmark(self, loop: ast.AST) -> bool:
        found = self._benchmarks.get(id(loop))
        if found is None:
            interp = self.interp
            defined = set(interp.functions) | set(interp.classes)
            found = self._benchmarks[id(loop)] = steps_without_backward(loop, interp.imports.aliases, defined,
                                                                        self._module_functions())
        return found

    def _module_functions(self) -> dict[str, list[ast.FunctionDef | ast.AsyncFunctionDef]]:
        """The module-level functions by name, and names bound to one of them wrapped (`trials.module_functions`)."""
        if self._functions is None or self._functions[0] is not self.interp.module:
            self._functions = (self.interp.module, module_functions(self.interp.module, self.interp.imports.aliases))
        return self._functions[1]

    def _in_called_function(self, call: ast.Call, loop: ast.AST) -> bool:
        """`call` is written in a function of the module that the loop calls by name (whose body
        `steps_without_backward` read with the loop's)."""
        called = {n.func.id for n in breadth_first(loop) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
        return any(_written_in(call, fn) for name, fns in self._module_functions().items() if name in called
                   for fn in fns)

    def updated(self, opt: Entity, call: ast.Call, flow: Flow) -> None:
        """The step changed the parameters of `opt` in place: graphs built before it are stale (not after a
        step a later statement undoes)."""
        if id(call) in undone_steps(self.interp.module):
            return
        holders = self.table.optimizer_holders(opt)
        if all(h.pseudo for h in holders):
            holders = self.guess_stepped(opt, flow)
        for h in holders:
            if not h.pseudo and not null_grads(flow.env, h):
                # (a parameter whose `.grad` is None is skipped by every torch optimizer: unchanged)
                key = generation_key(h)
                flow.env[key] = Value(const=generation(flow.env, key) + 1)
                self.last_update[key] = (call, self.steps_text(call, opt))

    def steps_text(self, call: ast.Call, opt: Entity) -> str:
        for ev in self.steps.values():
            if ev.node is call and ev.optimizer.uid == opt.uid:
                return ev.call_text
        return code(call)

    # -- clear
    def clear(self, node: ast.AST, text: str, target: str, holders: set[Holder], flow: Flow, frame: Frame,
              everything: bool = False, target_assumed: bool = False) -> None:
        """Gradients of `holders` (or of everything, when the target is unknown) are cleared; `target_assumed`:
        `holders` stand for a target the analysis could not make out."""
        self.touched.add(id(node))
        ev = self.clears.get(id(node))
        if ev is None:
            ev = Clear(self.ordinal(node), node, text, target, set(holders), everything, target_assumed=target_assumed)
            self.clears[id(node)] = ev
        else:
            ev.holders |= holders
            ev.target_assumed = ev.target_assumed or target_assumed
        # a loop over parameters (`for p in model.parameters(): p.grad = None`) is part of the clear
        ev.loop_stacks.add(tuple(loop for loop in frame.loops if self.interp.loop_trains(loop)))
        ev.if_stacks.add(frame.ifs)
        optimizers = self.all_optimizers()
        stepped = frozenset().union(*(self.table.optimizer_holders(o) for o in optimizers)) if optimizers else None
        owners: dict[Holder, frozenset[int]] = {}
        for o in optimizers:
            for h in self.table.optimizer_holders(o):
                owners[h] = owners.get(h, frozenset()) | {o.uid}
        memo: dict[tuple[str, Holder], object] = {}
        self.interp.amp.cleared(holders, flow)
        # the clear of an optimizer whose parameters are not known, the only one in sight: what its steps applied
        # (recorded in the holders the backward passes reached, `self.model` of an unread class) are its parameters
        in_scope = self.optimizers_in_scope(flow, frame)
        consumed = frozenset(h.uid for h in holders if h.pseudo and len(in_scope) == 1 and in_scope[0].uid == h.uid
                             and self.table.ownership_unknown(h.uid))
        transition: Callable[[PathState], PathState]
        if everything:
            transition = lambda s: s.clear(ev.id, [h for h, _ in s.grads], stepped=stepped, owners=owners, memo=memo)
        else:
            transition = lambda s: s.clear(ev.id, holders, stepped=stepped, owners=owners, memo=memo,
                                           consumed_by=consumed)
        flow.map_gradients(transition, ("clear", ev.id, everything, None if everything else frozenset(holders), stepped,
                                        frozenset(owners.items()), consumed))
        if everything or target_assumed or not _sets_none(node):
            forget_null_grads(flow.env, None if everything or target_assumed else holders)
        else:
            set_null_grads(flow.env, (h for h in holders if not h.pseudo))


def _sets_none(node: ast.AST) -> bool:
    """The clear sets `.grad` to None: `zero_grad()` (its default since torch 2.0), `zero_grad(set_to_none=True)`,
    `p.grad = None`; not `zero_grad(set_to_none=False)`, `p.grad.zero_()` or anything else (zeros: a step with
    momentum or weight decay still moves the parameters)."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "zero_grad":
        given = next((k.value for k in node.keywords if k.arg == "set_to_none"), None)
        if given is None:
            return not node.args
        return isinstance(given, ast.Constant) and given.value is True
    return isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and node.value.value is None


def _loop_targets(node: ast.AST) -> list[ast.AST]:
    """What a loop binds on each iteration (a `while` binds nothing)."""
    return [node.target] if isinstance(node, (ast.For, ast.AsyncFor)) else []


def _written_in(node: ast.AST, scope: ast.AST) -> bool:
    """`node` is part of `scope`'s text."""
    first, last = getattr(scope, "lineno", 0), getattr(scope, "end_lineno", None) or 0
    if not first <= getattr(node, "lineno", -1) <= last:
        return False
    return any(n is node for n in breadth_first(scope))


def _one_part(parts: set[Holder]) -> bool:
    """These parts of one model are one part and the modules around it (every path a prefix of the longest)."""
    longest = max((h.path for h in parts), key=len)
    return all(longest[: len(h.path)] == h.path for h in parts)
