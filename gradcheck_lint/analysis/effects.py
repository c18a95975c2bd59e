"""Apply the effects of an API model row (see `apimodels`) at one call site.

The catalogue says *what* a call does (`backward` of argument 0, divided by the accelerator's window;
`step` of argument 0; `clear` of the receiver...); this module turns each effect into the gradient
typestate transition and the abstract value the interpreter carries on.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable
from dataclasses import replace

from . import arm_facts
from .apimodels import ArgRef, Effect
from .callsite import CallSite, literal_bool
from .conditions import Condition
from .deferred import defer, may_make_context, synthetic_call
from .flow import ANY_WRAPPER, SYNC_OFF, Flow, Frame, literal_generation
from .names import ref_text
from .parts import EffectsHost
from .pathcond import ENABLED_QUERY
from .provenance import MODELLED, Assumption, assumed
from .required_settings import requires_part
from .schedules import schedule
from .switches import runs_of, setting_literal, setting_name
from .syntax import arguments, code, is_infinity, keyword_value
from .values import (
    EMPTY,
    OPAQUE,
    PRESENT,
    Entity,
    Holder,
    Kind,
    Value,
    blank,
    criterion_result,
    join,
    present,
    union_as_tensor,
)
from .walk import breadth_first

KIND_OF = {"model": Kind.MODEL, "optimizer": Kind.OPTIMIZER, "scheduler": Kind.SCHEDULER, "tool": Kind.TOOL,
           "tensor": Kind.PARAM, "loss": Kind.LOSS}
_UNKNOWN = object()


def _unknown(value: Value) -> bool:
    """Nothing is known of what it is (a parameter, data from outside, what an unreadable call made of no model):
    that a backward of it proves it a tensor with a graph rests on the call's name alone."""
    return blank(replace(value, opaque=False, graph=False, graph_assumed=False, present=False))


class Effects:
    """The interpreter's side of the catalogue: each effect kind as a transition."""

    def __init__(self, interp: EffectsHost) -> None:
        self.interp = interp
        self.table = interp.table
        self.catalogue = interp.catalogue

    def apply(self, effects: Iterable[Effect], site: CallSite, flow: Flow, frame: Frame) -> Value:
        result = EMPTY
        for effect in effects:
            out = self._when(effect, site, flow, frame)
            if out is not None:
                result = out
        return result

    def _when(self, effect: Effect, site: CallSite, flow: Flow, frame: Frame) -> Value | None:
        """Run the effect when its `when` argument holds (or its `unless` argument does not): always, never, or
        on the paths where it does (and only when its `given` argument is passed)."""
        if not site.happens(effect):
            return None
        ref = effect.when if effect.when is not None else effect.unless
        if ref is None:
            return self._one(effect, site, flow, frame)
        found = site.arg(ref)
        if found is None:
            return self._one(effect, site, flow, frame)  # not given: the API's default is to do it
        value, node = found
        flag = literal_bool(node)
        none = isinstance(node, ast.Constant) and node.value is None
        if effect.unless is not None:  # turned round: a literal True turns it off, `None` is the API's default
            if flag is True or value.const == "True":
                return None
            if flag is False or none or node is None:
                return self._one(effect, site, flow, frame)
        else:
            if flag is False or value.const == "False" or none:
                return None
            if flag is True or node is None:
                return self._one(effect, site, flow, frame)
        cond = self.interp.condition(node, node)
        taken, skipped = self.interp.split(flow, cond)
        inner = replace(frame, ifs=frame.ifs + (cond.id,))
        if effect.unless is not None:  # the paths where the test is false: no enclosing `if` of that test
            taken, skipped, inner = skipped, taken, frame
        out = None
        if taken is not None:
            out = self._one(effect, site, taken, inner)
        merged = Flow.join([taken, skipped])
        if merged is not None:
            flow.env, flow.states = merged.env, merged.states
        return out

    def _one(self, effect: Effect, site: CallSite, flow: Flow, frame: Frame) -> Value | None:
        """The effect's transition: one per kind the schema names (`apimodels.EFFECTS`), from `TRANSITIONS`."""
        return TRANSITIONS[effect.kind](self, effect, site, flow, frame)

    # -- the transitions of `TRANSITIONS`, each called with (effect, site, flow, frame)
    def _set_attribute(self, effect: Effect, site: CallSite, flow: Flow, frame: Frame) -> Value | None:
        # `self.add_module("discriminator", discriminator)` in a class: as `self.discriminator = discriminator`.
        # On a model value (`model.add_module("features", ...)`) the part stays a path of that model.
        named, found = site.arg(effect.ref("name")), site.arg(effect.ref("value"))
        node = named[1] if named is not None else None
        owner = site.arg(effect.ref("owner")) if effect.ref("owner") is not None else None
        owner_node = owner[1] if owner is not None else site.receiver_node
        if found is not None and isinstance(owner_node, ast.Name) and owner_node.id == "self" \
                and isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.isidentifier():
            flow.env[f"self.{node.value}"] = found[0]
        elif found is not None and owner is not None and owner[0].modules and found[0].modules:
            # `setattr(student, name, approx_mod)` on a model: whatever the name, the module is a part of it now
            self.interp.expressions.insert_module(owner_node, found[0], flow, frame)
        return EMPTY

    def _clone(self, effect: Effect, site: CallSite, flow: Flow, frame: Frame) -> Value | None:
        found = site.arg(effect.ref("value"))
        if found is not None and found[0].modules:
            ent = self.interp.mint(Kind.MODEL, code(site.call.func), ("ctor", id(site.call)), api="torch.nn.Module")
            # a copy of the class of what it copies (not of `copy.deepcopy`), whose `forward` is known only as
            # far as the original's is (`objects._forward_known`)
            originals = frozenset(e for e in found[0].entities if e.kind is Kind.MODEL)
            self.table.copies[ent.uid] = originals
            qualified = {self.table.classes.get(e.uid, "") for e in originals}
            self.table.classes.pop(ent.uid, None)
            if len(qualified) == 1 and (one := next(iter(qualified))):
                self.table.classes[ent.uid] = one
            value = self.interp.model_value(ent)
            self.fresh(value, flow)
            return value
        return found[0] if found else EMPTY

    def _gate_flag(self, site: CallSite) -> Value:
        """A method telling whether this micro-batch steps (DeepSpeed's `engine.is_gradient_accumulation_boundary()`): a
        test reading it is the owner's boundary, as a read of Accelerate's `sync_gradients` is."""
        owner = site.owner.uid if site.owner else 0
        if owner:
            self.interp.expressions.note_flag(owner)
        return Value(const=("gate_flag", owner))

    def _gate(self, effect: Effect, site: CallSite, flow: Flow, frame: Frame) -> Value | None:
        # `accelerator.accumulate(model)` also switches the model's gradient sync off on micro-batches that do not step
        models = frozenset(e.uid for v in site.values(effect.ref("model")) for e in v.entities if e.kind is Kind.MODEL)
        self.table.gated_models |= models
        if not models & self.table.sync_capable and (not models or models & self.table.unknown_origin):
            models |= {ANY_WRAPPER}  # `accumulate(model)` of a model handed in: it may be any prepared one
        return Value(const=("context", "gate", site.owner.uid if site.owner else 0, models))

    def _grad_hook(self, effect: Effect, site: CallSite, flow: Flow, frame: Frame) -> Value | None:
        # `p.register_post_accumulate_grad_hook(fn)`: each backward pass that writes `p` runs `fn`
        found = site.arg(effect.ref("hook"))
        given = self.interp.callables.given(found[1], frame) if found is not None else None
        for v in site.values(effect.ref("target")):
            holders = self.interp.holders_of_modules([v]) | self.interp.holders_of_params(v)
            self.table.hooked_after_accumulation |= holders  # read or not, the hook may step there
            if given is not None:
                self.interp.callables.hook(given, holders, v, flow)
        return EMPTY

    def _hook_grads(self, effect: Effect, site: CallSite, flow: Flow, frame: Frame) -> Value | None:
        """The target's gradients may be rescaled in place (a hook, `scale_grads_(model, 1 / n)`); an optimizer's
        target is every parameter it steps (`optimizer.multiply_grads(1 / sample_size)` of fairseq's optimizers)."""
        for v in site.values(effect.ref("target")):
            self.table.hooked |= self.interp.holders_of_modules([v]) | self.interp.holders_of_params(v)
            for opt in v.of_kind(Kind.OPTIMIZER):
                self.table.rescaled_by_optimizer |= self.table.optimizer_holders(opt)
        return EMPTY

    def restore_grads(self, effect: Effect, site: CallSite, flow: Flow, frame: Frame) -> None:
        """Gradients saved before are written back (`pgd.restore_grad()` after the clears of its attack passes): the
        target's discards are refilled; a call that names no model (the helper keeps it) refills every model's."""
        values = site.values(effect.ref("target"))
        holders = self.interp.holders_of_modules(values)
        for v in values:
            holders |= self.interp.holders_of_params(v)
        flow.hand_written(lambda s: s.refill(holders or None))

    def _unscale(self, effect: Effect, site: CallSite, flow: Flow, frame: Frame) -> Value | None:
        found = site.arg(effect.ref("optimizer"))
        opts = self._optimizers(found[0]) if found else []
        if found is None and effect.value("all_if_absent"):  # `accelerator.unscale_gradients()`: every optimizer
            opts = list(self.interp.recorder.all_optimizers())
        if opts:  # where its scaler is off, `unscale_` returns at once
            self._where_on(site, flow, frame, lambda on: self.interp.amp.unscale(site.call, opts, on, frame.ifs))
        return EMPTY

    def _grad_norm(self, effect: Effect, site: CallSite, flow: Flow, frame: Frame) -> Value | None:
        """A norm of gradients (`get_total_norm(grads)`, `torch.linalg.norm(p.grad)`) reads them; a norm of
        anything else is a tensor computed from it (`torch.norm(model.weight)` in a loss keeps its graph)."""
        found = site.arg(effect.ref("tensors"))
        if found is not None and found[1] is not None:
            holders = self.interp.calls.grads_listed(found[1], flow, frame)
            if holders:
                self.interp.amp.touched(site.call, holders, "norm_before_unscale", flow, frame.ifs)
                return EMPTY
        return union_as_tensor([*site.pos, *site.kw.values()]) if effect.value("tensor_otherwise") else EMPTY

    def _scale(self, effect: Effect, site: CallSite, flow: Flow, frame: Frame) -> Value | None:
        found = site.arg(effect.ref("value"))
        setting = self._undecided_setting(site)
        self._where_on(site, flow, frame, lambda f: self.interp.amp.scaled_here(f, setting))
        return replace(found[0], amp=True) if found else EMPTY

    def _where_on(self, site: CallSite, flow: Flow, frame: Frame, apply: Callable[[Flow], None]) -> None:
        """Apply a method's transition to the paths on which its receiver, an object built switched by a setting
        (`GradScaler(enabled=use_amp)`), is on; a path that did not know the setting goes both ways and remembers
        which, as it remembers the object's own answer (`scaler.is_enabled()`) where a test asks it (`switches`)."""
        switch = self._switch(site)
        if switch is None:
            apply(flow)
            return
        setting, queried = switch
        asked = self.interp.akey(queried) if queried else 0
        if isinstance(setting, bool):  # built on or off: every path knows
            on, off = runs_of(flow.states, lambda s: setting, 0, True, asked)
        else:
            world = self.interp.worlds.decide(setting.akey, setting.polarity, frame.cls, setting.atom)
            on, off = runs_of(flow.states, lambda s: world if world is not None else self.interp.known_truth(
                s, setting, flow.env), setting.akey, setting.polarity, asked)
        part = Flow(flow.env, frozenset(on))
        apply(part)
        flow.states = part.states | frozenset(off)

    def _undecided_setting(self, site: CallSite) -> str | None:
        """The receiver is on as far as the analysis can tell, yet may be off on a run: the name of the setting that
        says so. Known only as what its name says (`scaler = manager.scaler`: how it was built is not read): "";
        built in another function switched by a setting no test here is related to (`GradScaler(enabled=args.amp)`
        in the manager's `__init__`, `_switch` found none): that setting's name, "amp". None otherwise (a setting of
        the function that scales, `GradScaler(enabled=use_amp)` beside `if args.unscale:`, is in sight: the run
        where it is on and the test off is one the code allows)."""
        ents = site.receiver.entities if site.receiver is not None else frozenset()
        if all(e.provenance.assumed for e in ents):
            return ""  # (no object at all: a call read as a scale by its name)
        found = [x for e in ents if (x := self.table.switches.get(e.uid)) is not None]
        if not found or self._switch(site) is not None:
            return None
        here = self._function_of(site.call)
        names = {setting_name(x[0]) for x in found if literal_bool(x[0]) is None and self._function_of(x[1]) is not here}
        return names.pop() if len(names) == 1 and len(found) == len(ents) and None not in names else None

    def _function_of(self, node: ast.AST) -> ast.AST | None:
        up = self.interp.parent(node)
        while up is not None and not isinstance(up, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Module)):
            up = self.interp.parent(up)
        return up

    def _switch(self, site: CallSite) -> tuple[Condition | bool, str] | None:
        """Whether the receiver, an object built switched by a setting (`GradScaler(enabled=use_amp)`), is on: built
        on or off (a bool), or as the setting's condition says; with the text of the object's own answer
        (`scaler.is_enabled()`) when a test that matters asks it. None: on, as far as the analysis can tell."""
        ents = site.receiver.entities if site.receiver is not None else frozenset()
        found = [x for e in ents if (x := self.table.switches.get(e.uid)) is not None]
        if not found or len(found) != len(ents) or len({code(x[0]) for x in found}) != 1:
            return None  # built on, out of sight, or several objects of different settings
        expr, made_at = found[0]
        tested = self.interp.subjects_tested
        queried = f"{site.receiver_text}.{ENABLED_QUERY}()"
        queried = queried if tested[queried] else ""
        constant = literal_bool(expr)
        if constant is not None:
            return (constant, queried) if queried or not constant else None
        lit = setting_literal(expr, made_at, self.interp.parent)
        if (lit is None or not tested[lit.atom.subject]) and not queried:
            return None  # a setting no test that matters reads: the run where it is on holds every misuse there is
        return self.interp.condition(made_at, expr, lit), queried

    def _toggle(self, effect: Effect, site: CallSite, flow: Flow, frame: Frame) -> Value | None:
        found = site.arg(effect.ref("optimizer"))
        if found is not None:
            self.interp.toggle(bool(effect.value("on", True)), found[0], flow, frame)
        return EMPTY

    def _parameters(self, effect: Effect, site: CallSite, flow: Flow, frame: Frame) -> Value | None:
        base = site.receiver if site.receiver is not None else (site.pos[0] if site.pos else EMPTY)
        if base.modules or base.params:
            return Value(params=frozenset(base.modules) | base.params)
        opts = base.of_kind(Kind.OPTIMIZER)
        if opts:  # `amp.master_params(optimizer)`: the parameters it updates, as `optimizer.param_groups` reads
            return Value(params=frozenset().union(*(self.table.optimizer_holders(o) for o in opts)))
        return EMPTY

    def _add_params(self, effect: Effect, site: CallSite, flow: Flow, frame: Frame) -> Value | None:
        # `opt.add_param_group({"params": [p], "lr": 1e-3})`: the group's `params` item (or a bare collection)
        found, owner = site.arg(effect.ref("params")), site.arg(effect.ref("optimizer"))
        if found is not None and owner is not None:
            key = effect.value("key")
            added = (found[0].item(str(key)) if key else None) or found[0]
            for opt in self._optimizers(owner[0]):
                self.interp.objects.add_owned(opt, added)
        return EMPTY

    def _detach(self, effect: Effect, site: CallSite, flow: Flow, frame: Frame) -> Value | None:
        if site.attr.endswith("_") and site.receiver_node is not None:
            key = self.interp.ref(site.receiver_node)
            if key is not None:
                flow.env[key] = EMPTY  # `x.detach_()`: the name holds a detached tensor from now on
                walked = self._walked_by(key, frame)
                if walked is not None and walked in flow.env:
                    # `for h in H: h.detach_()`: each item of `H` is detached in place (GRU4Rec's hidden states)
                    flow.env[walked] = _without_graphs(flow.env[walked])
        # an object on every path (`loss.item()`, `x.detach()`): a part of a forward's result that is one holds no
        # graph (`return loss, loss.item()`: the number the caller logs, DARTS' separate loss)
        return PRESENT

    def _walked_by(self, name: str, frame: Frame) -> str | None:
        """The collection whose items the innermost loop binds to `name` (`for h in H:`), by its reference."""
        loop = self.interp.loops.get(frame.loops[-1]) if frame.loops else None
        node = loop.node if loop is not None else None
        if not isinstance(node, (ast.For, ast.AsyncFor)) or not isinstance(node.target, ast.Name) \
                or node.target.id != name:
            return None
        return self.interp.ref(node.iter) if isinstance(node.iter, (ast.Name, ast.Attribute)) else None

    def _no_grad(self, effect: Effect, site: CallSite, flow: Flow, frame: Frame) -> Value | None:
        found = site.arg(effect.ref("flag"))
        if found is not None and literal_bool(found[1]) is not False:
            return EMPTY  # `set_grad_enabled(True)` or a flag only known at run time
        return Value(const=("context", "no_grad", 0))

    def _forward(self, effect: Effect, site: CallSite, flow: Flow, frame: Frame) -> Value | None:
        found = site.arg(effect.ref("module"))
        module = found[0] if found else EMPTY
        if not module.modules and found is not None:
            # `checkpoint(fn, x)`, `checkpoint(lambda t: block(t), x)`: a function of this file runs on the rest
            given = self.interp.callables.given(found[1], frame)
            if given is not None:
                rest = [v for a, v in zip(site.call.args, site.pos) if a is not found[1]]
                return self.interp.callables.call(given, rest, site.kw, flow, frame)
        rest = [v for v in site.pos if v is not module] if site.receiver is None else site.pos
        if module.modules:
            return self.interp.forward(module, rest, site.kw, flow, frame)
        operands = [*site.pos, *site.kw.values()]
        return criterion_result(operands) if module.of_kind(Kind.LOSS) else union_as_tensor(operands)

    def _number(self, effect: Effect, site: CallSite, flow: Flow, frame: Frame) -> Value | None:
        """`float(loss)`, `int(n)`: a Python number, no graph, same counter and divisors."""
        operands = [*site.pos, *site.kw.values()]
        number = union_as_tensor(operands) if operands else EMPTY
        return Value(divisors=number.divisors, counter=number.counter, const=number.const, present=True)

    def _join(self, effect: Effect, site: CallSite, flow: Flow, frame: Frame) -> Value | None:
        """`itertools.chain(G.parameters(), D.parameters())`: both parameter sets."""
        return join([*site.pos, *site.kw.values()]) if site.pos or site.kw else EMPTY

    def _tensor(self, effect: Effect, site: CallSite, flow: Flow, frame: Frame) -> Value | None:
        operands = [*site.pos, *site.kw.values()]
        if site.receiver is not None and effect.kind in ("tensor", "nonlinear"):
            operands.insert(0, site.receiver)
        out = union_as_tensor(operands)
        # `loss, items = compute_loss(pred, targets)` of the YOLOv5 family returns `loss * bs`
        out = replace(out, summed=True) if effect.kind == "summed" and out is not EMPTY else out
        # a tensor a catalogue row computes is one (a helper a name heuristic reads so may return None)
        return present(out) if site.certain else out

    def _nonlinear(self, effect: Effect, site: CallSite, flow: Flow, frame: Frame) -> Value | None:
        """`F.log_softmax(logits / temperature)`, `(x / n).exp()`: a factor of the operands does not come out as a
        factor of the result, so what they were divided or multiplied by is no scale of it (of a loss made from it)."""
        out = self._tensor(effect, site, flow, frame)
        if out is None or not (out.divisors or out.multipliers or out.shares or out.divided_twice):
            return out
        none = frozenset[str]()
        return replace(out, divisors=none, divided_twice=none, multipliers=none, shares=none, unread_factors=none)

    def _run_own(self, effect: Effect, site: CallSite, flow: Flow, frame: Frame) -> Value | None:
        """`worker.start()` of a `threading.Thread` subclass: its `run()`, as the thread will call it."""
        if site.receiver is None:
            return EMPTY
        return self.interp.calls.run_own_method(site.receiver, site.receiver_node, str(effect.value("method")), flow,
                                                frame) or EMPTY

    def _defer(self, effect: Effect, site: CallSite, flow: Flow, frame: Frame) -> Value | None:
        found = site.arg(effect.ref("function"))
        func = found[1] if found is not None else None
        if isinstance(func, ast.Attribute) and may_make_context(self.catalogue, func.attr) and self.interp.calls.makes_context(
                self.interp.eval(func.value, flow, frame), func.value, func.attr, flow):
            rest = [a for a in site.call.args if a is not func]
            keywords = [k for k in site.call.keywords if k.value is not func]
            return defer(self.interp.calls.eval_call(synthetic_call(site.call, func, rest, keywords), flow, frame))
        # `partial(train_step, model)`: nothing runs until it is called (`callables.Bound`); until then what
        # it is made from, as any unmodelled call
        made = self.interp.objects.opaque_call(code(site.call.func), site.pos, site.kw, flow)
        if found is None or func is None:
            return made
        rest = [v for a, v in zip(site.call.args, site.pos) if a is not func]
        keywords = {k: v for k, v in site.kw.items()
                    if any(kw.arg == k and kw.value is not func for kw in site.call.keywords)}
        return self.interp.callables.bind(site.call, func, found[0], rest, keywords, frame, made)

    def _invoke(self, effect: Effect, site: CallSite, flow: Flow, frame: Frame) -> Value | None:
        if effect.value("processes") == "several":
            self.table.launches_processes = True
        found = site.arg(effect.ref("function"))
        if found is not None and isinstance(found[1], ast.Name):
            self.interp.invoke(found[1].id, flow, frame)
        return EMPTY

    # -- objects
    def construct(self, effect: Effect, site: CallSite, flow: Flow) -> Value:
        api = self.catalogue.canonical(_variant(effect, site.call) or str(effect.value("type")))
        kind = KIND_OF.get(self.catalogue.kind(api) or "", Kind.TOOL)
        display = code(site.call.func)
        key = self.interp.objects.leaf_key(site.call) if kind is Kind.PARAM else ("ctor", id(site.call))
        # (`configured`: a class a configuration chooses, `hydra.utils.instantiate(cfg.optim, params=...)`, taken for `type`)
        provenance = (assumed(Assumption.CLASS) if effect.value("configured")
                      else MODELLED if site.certain else assumed(Assumption.NAME))
        ent = self.interp.mint(kind, display, key, api=api, provenance=provenance)
        if kind is Kind.OPTIMIZER and not site.certain:  # a class known by its name alone
            self.table.unmodelled_class.add(ent.uid)
        if kind is Kind.MODEL and self.interp.objects.sync_wrappers(Value(entities=frozenset({ent}))):
            # `if args.distributed: model = DDP(model)`: a wrapper on these paths only (`arm_facts`)
            self.table.wrapped_on_paths(ent.uid, arm_facts.literals_of(flow.states, literal_generation))
        switch = site.arg(effect.ref("enabled"))
        if switch is not None and switch[1] is not None:
            expr = switch[1]
            if switch[0].const in ("True", "False") and not isinstance(expr, ast.Constant):
                # `GradScaler(enabled=amp_enabled)` with `amp_enabled` False on every run (a set no run fills):
                # built off, as a literal would say
                expr = ast.copy_location(ast.Constant(value=switch[0].const == "True"), expr)
            self.table.switches[ent.uid] = (expr, site.call)
        window = effect.ref("window")
        if window is not None:
            found = site.arg(window)
            self.table.windows[ent.uid] = self.window_text(found)
        if effect.value("loss_scaler"):  # (whether a type's backward uses it is that type's row: `amp`)
            scales, setting = _loss_scaler(str(effect.value("loss_scaler")), site.call)
            if scales:
                self.table.loss_scalers[ent.uid] = setting
        model = site.arg(effect.ref("model"))
        if kind is Kind.OPTIMIZER:
            params = site.arg(effect.ref("params"))
            given = params[0] if params else None
            inner = given.of_kind(Kind.OPTIMIZER) if given is not None and not given.params else []
            if inner:  # `OptimWrapper(SGD(...))`: the wrapper updates the parameters of the optimizer it owns
                self.table.wraps[ent.uid] = frozenset(o.uid for o in inner)
                given = Value(params=frozenset().union(*(self.table.optimizer_holders(o) for o in inner)))
            self.interp.own(ent, given, model[0] if model else None)
            flow.renew(frozenset({ent.uid}))  # a new optimizer: no AMP stage of one made here before
        if kind in (Kind.SCHEDULER, Kind.TOOL):
            wrapped = frozenset(o.uid for v in site.pos + list(site.kw.values()) for o in v.of_kind(Kind.OPTIMIZER))
            if wrapped:
                self.table.wraps[ent.uid] = wrapped
        if model is not None and model[0].modules:
            value = Value(entities=frozenset({ent}), modules=model[0].modules)
        elif kind in (Kind.MODEL, Kind.PARAM):
            value = self.interp.model_value(ent)
        else:
            value = Value(entities=frozenset({ent}))
        if effect.value("fresh"):
            self.fresh(value, flow)
        if effect.value("parameter_free"):
            self.table.parameter_free.add(ent.uid)
        if effect.value("in_place") and model is not None and model[1] is not None:
            # `fully_shard(model)`: FSDP2 changes the module's class in place and returns it; the name
            # given now holds the wrapper, as after `model = fully_shard(model)`
            key = ref_text(model[1])
            if key is not None and key in flow.env:
                flow.env[key] = value
                self.table.name_after(ent.uid, key)
        if kind is Kind.MODEL and model is None:
            # `nn.Sequential(body, head)`, `nn.ModuleList([a, b])`: the new module holds the ones it is given
            held = frozenset(h for v in [*site.pos, *site.kw.values()] for h in self.interp.holders_of_modules([v]) if not h.pseudo)
            if held:
                value = Value(entities=value.entities, modules=value.modules | held, items=_children(effect, site))
        shape = effect.value("tuple")
        if shape:
            parts = []
            for i, part in enumerate(str(shape).split(",")):
                if part == "optimizer":
                    # `engine, optimizer, _, _ = deepspeed.initialize(...)`: the wrapped optimizer of the same
                    # parameters; its `backward(loss)` and `step()` are a plain optimizer's, not the engine's.
                    # Its class is chosen by the configuration (a ZeRO optimizer clears the gradients in its
                    # own `step()`, a plain one does not): what its methods do is an assumption
                    opt = self.interp.mint(Kind.OPTIMIZER, f"{display}()[{i}]", ("ctor-part", id(site.call), i),
                                           api="torch.optim.Optimizer", provenance=assumed(Assumption.CLASS))
                    self.interp.own(opt, None, model[0] if model else None)
                    member = Value(entities=frozenset({opt}))
                else:
                    member = value if part == "self" else OPAQUE
                parts.append((str(i), member))
            return Value(items=tuple(parts))
        # (a class the catalogue models, constructed: an object, never None, and none but the one made; a class known
        # by its name only may be a factory that returns None, or anything else)
        return replace(present(value), objects_only=True) if site.certain else value

    def window_text(self, found: tuple[Value, ast.expr | None] | None) -> str | None:
        """The accumulation window an argument configures: its source, None when it is 1 or absent."""
        if found is None:
            return None
        value, node = found
        for e in value.in_order():  # `gradient_accumulation_plugin=GradientAccumulationPlugin(num_steps=4)`
            if e.uid in self.table.windows:
                return self.table.windows[e.uid]
        if node is None or (isinstance(node, ast.Constant) and node.value in (1, None)):
            return None
        return code(node)

    def returns(self, effect: Effect, site: CallSite, flow: Flow) -> Value:
        ref = effect.ref("value")
        if ref is not None and ref.all_positional:
            vals = site.values(ref)
            result = vals[0] if len(vals) == 1 else Value(items=tuple((str(i), v) for i, v in enumerate(vals))) if vals else EMPTY
        else:
            found = site.arg(ref)
            result = found[0] if found else EMPTY
        if effect.value("unwraps"):
            # `accelerator.unwrap_model(model)`: the module inside the DDP wrapper (as `model.module`)
            result = replace(result, entities=frozenset(e for e in result.entities if e.uid not in self.table.sync_capable))
        if site.owner is not None and site.owner.kind is Kind.TOOL:
            # `accelerator.prepare(model, optimizer)`: its steps now follow the accelerator's gates
            owners = frozenset({site.owner.uid} | {e.uid for e in (site.receiver.entities if site.receiver else ())
                                                  if e.kind is Kind.TOOL and e.api == site.owner.api})
            attributes = effect.value("optimizer_attributes")
            for v in [result, *(item for _, item in result.items)]:
                for o in v.of_kind(Kind.OPTIMIZER):
                    self.table.prepared[o.uid] = self.table.prepared.get(o.uid, frozenset()) | owners
                    if attributes:
                        self.table.closed_attributes[o.uid] = frozenset(str(attributes).split("|"))
            context = effect.value("data_parallel")
            if context and (part := effect.value("unless_requires")) and self._required(site.call, str(part), site):
                context = None  # the code before it cannot run without that part (a DeepSpeed plugin: no DDP)
            if context:
                # and the models it is given are DDP (or FSDP) wrappers when the script is launched on several
                # processes (also those of a list passed starred, whose positions are unknown: `prepare(*parts)`)
                off = self.interp.worlds.multi_process_off()
                paths = arm_facts.literals_of(flow.states, literal_generation)  # on these paths only (`arm_facts`)
                for v in [result, *(item for _, item in result.items), *site.pos]:
                    for m in v.of_kind(Kind.MODEL):
                        self.table.wrapped_on_paths(m.uid, paths)
                        self.table.sync_capable.add(m.uid)
                        self.table.parallelised_by.setdefault(m.uid, (code(site.call.func), context.replace("{owner}", site.receiver_text)))
                        if self.interp.worlds.active:  # (one object of several worlds: off only if off in each)
                            marks = self.table.one_process_by_setting
                            if off is None:
                                marks[m.uid] = None
                            else:  # prepared in a world whose multi-process setting is off: one process, by its name
                                marks.setdefault(m.uid, off)
        return result

    def _required(self, call: ast.Call, part: str, site: CallSite) -> bool:
        """Every path to `call` ran code that raises unless its receiver's `part` is present (`required_settings`)."""
        node: ast.AST | None = call
        while node is not None and not isinstance(node, ast.stmt):
            node = self.interp.parent(node)
        return node is not None and requires_part(node, self.interp.parent, f"{site.receiver_text}.{part}")

    def fresh(self, value: Value, flow: Flow) -> None:
        """New parameters hold no gradient, whatever an earlier object made at this site held. For a leaf
        tensor, that is also one the same call made on another call path: the paths of the two arms of
        an `if` around two calls of the helper meet again in one variable, which then names both."""
        holders = set(value.modules) | set(value.params)
        holders |= self.interp.objects.leaves_made_alike(set(value.params))
        if holders:
            flow.hand_written(lambda s: s.clear(0, holders, record_discards=False))

    # -- gradient events
    def backward(self, effect: Effect, site: CallSite, flow: Flow, frame: Frame) -> None:
        ref = effect.ref("loss") or ArgRef(receiver=True)
        found = site.arg(ref)
        if found is None:
            return
        loss, node = found
        loss_text = self.interp.loss_text(node) if node is not None else "loss"
        scaled, window, assumed = False, None, False
        scales = effect.value("scales", "none")
        if scales == "framework":
            scaled = True
        elif scales == "window":
            configured = self.table.windows.get(site.owner.uid, _UNKNOWN) if site.owner is not None else _UNKNOWN
            if configured is _UNKNOWN:
                scaled = assumed = True  # built where the analysis cannot see: it may well divide
                window = self._window_read_here(site.owner)
            elif configured is not None:
                scaled, window = True, str(configured)
        if effect.value("amp") == "owner" and site.owner is not None and site.owner.uid in self.table.loss_scalers:
            # the framework multiplies the loss by its GradScaler's scale before backpropagating it
            how = str(effect.value("unscale_with", "")).replace("{owner}", site.receiver_text)
            self.interp.amp.scaled_by_framework(site.call, flow, self.table.loss_scalers[site.owner.uid], how)
            loss = replace(loss, amp=True)
        only = None
        inputs = site.arg(effect.ref("inputs"))
        if inputs is not None:  # `loss.backward(inputs=d_params)` accumulates into those alone
            only = self.interp.holders_of_params(inputs[0])
        # a backward by its name: `something.backward(y)` of an object not made out (no API model, no known
        # receiver), or `x.backward(y)` of an `x` nothing is known of (a parameter, taken for a tensor because of
        # the call: a NumPy network's `model.backward(Y)` is shaped as a tensor's backward with a gradient). A bare
        # `x.backward()` (`output["loss"].backward()` of what an unread `training_step` returned) is a tensor's
        by_name = site.owner is None and (not site.certain or _unknown(loss) and bool(site.call.args))
        self.interp.recorder.backward(site.call, loss, loss_text, flow, frame, scaled, only, window, assumed,
                                      by_name=by_name)
        self.interp.callables.run_grad_hooks(only if only is not None else loss.reach, flow, frame)
        _spent(node, site.call, flow)

    def _window_read_here(self, owner: Entity | None) -> str | None:
        """For a framework object built out of sight (`accelerator = train_util.prepare_accelerator(args)`),
        the window setting this file reads from a configuration under the constructor's own keyword
        (`args.gradient_accumulation_steps`): what it was most likely configured with. The keyword comes
        from the catalogue (the construct effect's `window`); only those named for accumulation."""
        if owner is None or not owner.api:
            return None
        row = self.interp.catalogue.call(owner.api)
        keywords = {k for e in (row.effects if row else ()) if e.kind == "construct" and e.ref("window")
                    for k in e.ref("window").keywords if "accum" in k and "plugin" not in k}  # type: ignore[union-attr]
        if not keywords:
            return None
        found = [(n.lineno, n.col_offset, f"{n.value.id}.{n.attr}") for n in breadth_first(self.interp.module)
                 if type(n) is ast.Attribute and n.attr in keywords and type(n.value) is ast.Name]
        return min(found)[2] if found else None

    def _optimizers(self, value: Value) -> list[Entity]:
        opts = value.of_kind(Kind.OPTIMIZER)
        for e in value.in_order():
            for uid in sorted(self.table.wraps.get(e.uid, ())):
                o = self.table.entities.get(uid)
                if o is not None and o not in opts:
                    opts.append(o)
        return opts

    def _gate_for(self, opts: list[Entity], effect: Effect, frame: Frame) -> int | None:
        """The framework object whose window boundaries this step or clear waits for, if any."""
        if effect.value("gated"):
            for o in opts:
                # the engine gates its own step, on the window of a configuration the analysis saw or could
                # not see; built with no configuration at all, it steps on every micro-batch (a window of 1)
                return o.uid if self.table.windows.get(o.uid, _UNKNOWN) is not None else None
        for o in opts:
            owners = self.table.prepared.get(o.uid, frozenset())
            if not owners and len(frame.gates) == 1:
                # an optimizer prepared out of sight (`self.optimizer`), stepped under the one
                # `accelerator.accumulate(...)` here: prepared by that accelerator, as the context requires
                owners = frozenset(frame.gates)
            for owner in sorted(owners, key=lambda uid: (uid not in frame.gates, uid)):
                if (owner in frame.gates or owner in self.table.accumulating) \
                        and self.table.windows.get(owner, _UNKNOWN) is not None:
                    return owner
        return None

    def _gated(self, gate: int | None, flow: Flow, frame: Frame, call: ast.AST) -> tuple[Flow, Flow | None, Frame]:
        """Split off the micro-batches where the gate's window has not ended: nothing happens on them."""
        if gate is None:
            return flow, None, frame
        if self._in_boundary_arm(call, self.table.windows.get(gate)):
            return flow, None, frame
        cond = self.interp.boundary(gate)
        taken, skipped = self.interp.split(flow, cond)
        return taken or Flow(dict(flow.env), frozenset()), skipped, replace(frame, ifs=frame.ifs + (cond.id,))

    def _in_boundary_arm(self, call: ast.AST, window: str | None) -> bool:
        """`call` runs only where the code's own counter ends a window of the framework's size (HF Trainer's
        `if total_batched_samples % args.gradient_accumulation_steps == 0 or <last batch>:` around the prepared
        optimizer's step, outside `accelerator.accumulate`): each iteration counts one micro-batch for both, so
        the framework's window ends there too, not on micro-batches of its own."""
        if window is None:
            return False
        size = window.rpartition(".")[2]
        node, holder = call, self.interp.parent(call)
        while holder is not None and not isinstance(holder, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            if isinstance(holder, ast.If) and any(node is s for s in holder.body):
                cond = self.interp.condition(holder, holder.test)
                if cond.counters and not cond.true_on_most and not cond.short_first_window \
                        and any(m == window or m.rpartition(".")[2] == size for m in cond.moduli):
                    return True
            node, holder = holder, self.interp.parent(holder)
        return False

    def step(self, effect: Effect, site: CallSite, flow: Flow, frame: Frame) -> Value:
        """A step, and what it returns: what its closure returned (`distance = optimizer.step(closure)`, the loss
        tensor the closure backpropagated, its graph kept), else nothing of interest."""
        returned: list[Value] = []
        self._step(effect, site, flow, frame, returned)
        return returned[0] if returned else EMPTY

    def _step(self, effect: Effect, site: CallSite, flow: Flow, frame: Frame, returned: list[Value]) -> None:
        found = site.arg(effect.ref("optimizer"))
        opts = self._optimizers(found[0]) if found else []
        first = site.call.args[0] if site.call.args and effect.ref("closure") is not None else None
        if isinstance(first, ast.Constant) and isinstance(first.value, str):
            return  # `optimizer.step("disc")`: a keyed multi-optimizer steps one part the analysis cannot name
        if first is not None and site.pos and site.pos[0].reach and not isinstance(first, ast.Lambda) \
                and not (isinstance(first, ast.Name) and (first.id in frame.local_defs or first.id in self.interp.functions)):
            # `optim.step(loss)`: a wrapper that clears, back-propagates `loss` and steps (tianshou, RL libraries); of a
            # class no API model describes, only by assumption (torchopt's `MetaSGD.step(loss)` differentiates with
            # `torch.autograd.grad` and writes no `.grad`)
            for o in opts:
                holders = set(self.table.optimizer_holders(o))
                flow.hand_written(lambda s, hs=holders: s.clear(0, hs, record_discards=False))
            guessed = not opts or any(o.uid in self.table.unknown_origin or o.uid in self.table.unmodelled_class
                                      or not o.api or o.api == "torch.optim.Optimizer" for o in opts)
            self.interp.recorder.backward(site.call, site.pos[0], code(first), flow, frame, False, guessed=guessed)
            effect = Effect(effect.kind, tuple((k, r) for k, r in effect.refs if k != "closure"), effect.values, effect.when,
                            effect.given)
        closure = site.arg(effect.ref("closure"))
        again = None
        if closure is not None and closure[1] is not None and opts:
            value = self.interp.run_closure(closure[1], flow, frame)
            if value is not None:
                returned.append(value)
            again = self._evaluates_again(effect, opts) if value is not None else None
            if again is not None:
                self._evaluate_again(again, site, closure[1], opts, self._step_text(site, effect), flow, frame)
        if not opts:
            return
        gate = self._gate_for(opts, effect, frame)
        taken, skipped, inner = self._gated(gate, flow, frame, site.call)
        text = self._step_text(site, effect)
        # the window of an accumulation context entered here (not of an engine that gates its own step)
        window = self.table.windows.get(gate) if gate is not None and not effect.value("gated") and gate in frame.gates else None
        for o in opts:
            self.interp.recorder.step(site.call, o, text, taken, inner, framework_gated=gate is not None, context_window=window)
            self.interp.recorder.updated(o, site.call, taken)
            self.interp.amp.step(site.call, o, bool(effect.value("unscales")), taken, inner.ifs)
            if effect.value("clears"):
                holders = set(self.table.optimizer_holders(o))
                self.interp.recorder.clear(site.call, text, self.table.label(o.uid), holders, taken, inner)
        merged = Flow.join([taken, skipped])
        if merged is not None:
            flow.env, flow.states = merged.env, merged.states

    def _evaluates_again(self, effect: Effect, opts: list[Entity]) -> str | None:
        """Whether the step may call its closure more than once: "several" when the catalogue says its
        class does (L-BFGS: again after each inner update), "unknown" when a stepping optimizer's class is
        not known (made out of sight, or of a class no API model describes); None when it calls it once."""
        if effect.value("evaluations") == "several":
            return "several"
        table = self.table
        if any(o.uid in table.unknown_origin or o.uid in table.unmodelled_class for o in opts):
            return "unknown"
        return None

    def _evaluate_again(self, again: str, site: CallSite, closure: ast.expr, opts: list[Entity], text: str,
                        flow: Flow, frame: Frame) -> None:
        """An inner update on what the first evaluation left, then the closure once more (what L-BFGS
        does up to `max_iter` times in one `step(closure)`): a closure that does not clear first adds the
        new evaluation to the gradients the inner update already applied. For an optimizer of unknown
        class only some paths evaluate again (the class decides), and the step says so."""
        twice = flow.copy() if again == "unknown" else flow
        for o in opts:
            self.interp.recorder.step(site.call, o, text, twice, frame, closure_evaluations=again)
        self.interp.run_closure(closure, twice, frame)
        if twice is not flow:
            merged = Flow.join([flow, twice])
            if merged is not None:
                flow.env, flow.states = merged.env, merged.states

    @staticmethod
    def _step_text(site: CallSite, effect: Effect) -> str:
        """`opt.step()` (whatever closure it is given) when the receiver steps; else the call itself."""
        ref = effect.ref("optimizer")
        if site.receiver_node is not None and ref is not None and ref.receiver:
            return f"{site.receiver_text}.{site.attr}()"
        return " ".join(code(site.call).split())

    def clear(self, effect: Effect, site: CallSite, flow: Flow, frame: Frame) -> None:
        found = site.arg(effect.ref("target"))
        if found is None:
            return
        value, node = found
        target = code(node) if node is not None else site.receiver_text
        text = f"{target}.{site.attr}()" if site.attr else code(site.call)
        opts = self._optimizers(value)
        if opts:
            holders: set[Holder] = set()
            for o in opts:
                holders |= self.table.optimizer_holders(o)
            gate = self._gate_for(opts, effect, frame)
            taken, skipped, inner = self._gated(gate, flow, frame, site.call)
            self.interp.recorder.clear(site.call, text, target, holders, taken, inner)
            merged = Flow.join([taken, skipped])
            if merged is not None:
                flow.env, flow.states = merged.env, merged.states
        elif value.modules:
            holders = set(value.modules)
            holders |= {Holder(o.uid, (), pseudo=True) for o in self.interp.recorder.all_optimizers()
                        if self.table.ownership_unknown(o.uid)}
            self.interp.recorder.clear(site.call, text, target, holders, flow, frame)
        elif not value.entities:
            self.interp.recorder.clear(site.call, text, target, set(), flow, frame, everything=True)

    def window_read(self, site: CallSite) -> Value:
        """An object's accumulation window read (`window_size`): a number, remembered by its call."""
        self.interp.window_reads.add(id(site.call))
        return EMPTY

    def sync(self, effect: Effect, site: CallSite, flow: Flow) -> Value:
        """Gradient sync of a data-parallel wrapper switched: a context (`no_sync()`), or a call that sets
        it (`set_requires_gradient_sync(False)`); the context's value says which wrappers and how sure."""
        found = site.arg(effect.ref("model"))
        wrappers = self.interp.objects.sync_wrappers(found[0]) if found else []
        if not wrappers and found is not None and site.owner is not None:
            # `fabric.no_backward_sync(model)`, `accelerator.no_sync(model)`: the framework wrapped it
            wrappers = sorted(e.uid for e in found[0].entities if e.kind is Kind.MODEL)
            self.table.wrapped_everywhere(wrappers)
        if not wrappers:
            return EMPTY
        value = site.arg(effect.ref("value"))
        if value is not None:  # `model.set_requires_gradient_sync(flag)`: off from now on when the flag is False
            flag = literal_bool(value[1])
            for uid in wrappers:
                flow.env[f"{SYNC_OFF}{uid}"] = Value(const=None if flag is None else str(not flag))
            return EMPTY
        enabled = site.arg(effect.ref("enabled"))
        sure = enabled is None or literal_bool(enabled[1]) is True
        if enabled is not None and literal_bool(enabled[1]) is False:
            return EMPTY
        return Value(const=("context", "sync", frozenset(wrappers), sure))

    def clip(self, effect: Effect, site: CallSite, flow: Flow, frame: Frame) -> None:
        """A clip of the gradients of some parameters (or of an optimizer's): what AMP stage they are in matters."""
        opts: list[Entity] = []
        found = site.arg(effect.ref("optimizer"))
        if found is not None:
            opts = self._optimizers(found[0])
        params = site.arg(effect.ref("params"))
        bound = site.arg(effect.ref("limit"))
        if bound is not None and is_infinity(bound[1]):
            # `clip_grad_norm_(model.parameters(), float("inf"))`: the usual way to measure the norm; nothing is cut
            if params is not None:
                holders = self.interp.holders_of_params(params[0]) | self.interp.holders_of_modules([params[0]])
                if holders:
                    self.interp.amp.touched(site.call, holders, "norm_before_unscale", flow, frame.ifs)
            return
        if not opts and params is not None:
            holders = self.interp.holders_of_params(params[0]) | self.interp.holders_of_modules([params[0]])
            opts = self.interp.amp.owners(holders, flow)
        if opts:
            self.interp.amp.clip(site.call, opts, bool(effect.value("unscales")), flow, frame.ifs)

    def freeze(self, effect: Effect, site: CallSite, flow: Flow) -> None:
        targets = site.values(effect.ref("target"))
        holders: set[Holder] = set()
        for v in targets:
            holders |= self.interp.holders_of_modules([v]) | self.interp.holders_of_params(v)
        frozen = effect.value("frozen")
        if not holders:
            self._new_leaf(effect, site, flow, frozen)
            return
        if frozen is None:
            found = site.arg(effect.ref("flag"))
            if found is None:
                frozen = False  # `requires_grad_()`: requires_grad=True
            else:
                flag = literal_bool(found[1])
                if flag is None and found[0].const in ("True", "False"):  # a helper's `requires_grad` argument
                    flag = found[0].const == "True"
                if flag is None:
                    return
                frozen = not flag
        flow.map(lambda s: s.freeze(holders, bool(frozen)))

    def _new_leaf(self, effect: Effect, site: CallSite, flow: Flow, frozen: object) -> None:
        """`x = latents.detach().clone().requires_grad_()` (or `True`): a tensor of no model made a leaf
        that requires grad, new each time this runs, with no gradient yet; the call and the name hold it."""
        receiver = site.receiver
        if receiver is None or receiver.entities or receiver.modules or receiver.params or site.attr != "requires_grad_":
            return
        found = site.arg(effect.ref("flag"))
        if frozen is not None or found is not None and literal_bool(found[1]) is not True:
            return
        leaf = self.interp.model_value(self.interp.mint(Kind.PARAM, code(site.call.func), ("param", id(site.call)), api="torch.Tensor"))
        self.fresh(leaf, flow)
        site.receiver = leaf  # what the call returns (`returns self`)
        key = self.interp.ref(site.receiver_node) if isinstance(site.receiver_node, ast.Name) else None
        if key is not None:
            flow.env[key] = leaf

    def arithmetic(self, kind: str, effect: Effect, site: CallSite) -> Value:
        found = site.arg(effect.ref("by"))
        base = site.receiver if site.receiver is not None else (site.pos[0] if site.pos else EMPTY)
        operands = [base, *site.pos] if site.receiver is not None else list(site.pos)
        result = union_as_tensor(operands)
        if found is None:
            return result
        by, node = found
        if kind == "divide":
            if node is None or found[0] is site.receiver:
                window = self.table.windows.get(site.owner.uid) if site.owner is not None else None
                return result.with_divisor(window) if window else result
            return result.with_divisor(code(node)) if not by.reach else result
        divisor = self.interp.reciprocal(node) if node is not None else None
        return result.with_divisor(divisor) if divisor else result


def _children(effect: Effect, site: CallSite) -> tuple[tuple[str, Value], ...]:
    """The submodules a new container holds by index or key (its row's `children`), when every one is a
    module seen: `critics[0]` of `critics = nn.ModuleList([q1, q2])` is `q1`, whose parameters are its own,
    not the whole list. None when one is not seen as a module, a key is not a literal (`{f"q{i}": ...}`),
    or the positions are unknown (`nn.Sequential(*layers)` of a list built out of sight): any index is then
    the whole container, as before."""
    ref = effect.ref("children")
    if ref is None:
        return ()
    if ref.all_positional:
        unnamed = [a for a in arguments(site.call) if a.keyword is None]
        children: list[Value] = []
        for a, v in zip(unnamed, site.pos):
            spread = v.spread() if a.star else [v]
            if spread is None:
                return ()
            children += spread
        items = tuple((str(i), v) for i, v in enumerate(children))
    else:
        found = site.arg(ref)
        items = found[0].items if found is not None else ()
    if not items or any(k.startswith("?") or not v.modules or any(h.pseudo for h in v.modules) for k, v in items):
        return ()
    return items


_Transition = Callable[[Effects, Effect, CallSite, Flow, Frame], "Value | None"]


def _then_nothing(method: Callable[[Effects, Effect, CallSite, Flow, Frame], None]) -> _Transition:
    """A transition of the flow alone: the call's value is nothing of interest."""
    def transition(self: Effects, effect: Effect, site: CallSite, flow: Flow, frame: Frame) -> Value | None:
        method(self, effect, site, flow, frame)
        return EMPTY
    return transition


# Effect kind -> its transition: what the call does to the flow, and the value it returns (None: the
# flow's names were updated in place). The keys are the schema's effects, no more, no fewer
# (tests/analysis/test_effect_transitions.py).
TRANSITIONS: dict[str, _Transition] = {
    "construct": lambda self, effect, site, flow, frame: self.construct(effect, site, flow),
    "returns": lambda self, effect, site, flow, frame: self.returns(effect, site, flow),
    "join": Effects._join,
    "clone": Effects._clone,
    "backward": _then_nothing(Effects.backward),
    "schedule": _then_nothing(lambda self, effect, site, flow, frame: schedule(self.interp, effect, site, flow, frame)),
    "step": lambda self, effect, site, flow, frame: self.step(effect, site, flow, frame),
    "clear": _then_nothing(Effects.clear),
    "gate": Effects._gate,
    "gate_flag": lambda self, effect, site, flow, frame: self._gate_flag(site),
    # a store sets the window (`expressions._api_attribute_store`); read, it is a number
    "set_window": lambda self, effect, site, flow, frame: EMPTY,
    # read by the checks, at the tests of it (`launch_kinds`); read, it is a value of an enum
    "launch_kind": lambda self, effect, site, flow, frame: EMPTY,
    # a number, remembered where it is read: a loop `for _ in range(<it>)` spans one window (`Interpreter.window_reads`)
    "window_size": lambda self, effect, site, flow, frame: self.window_read(site),
    "sync": lambda self, effect, site, flow, frame: self.sync(effect, site, flow),
    "hook_grads": Effects._hook_grads,
    "restore_grads": _then_nothing(Effects.restore_grads),
    "grad_hook": Effects._grad_hook,
    "unscale": Effects._unscale,
    "scaler_update": _then_nothing(lambda self, effect, site, flow, frame: self.interp.amp.updated(flow)),
    "clip": _then_nothing(Effects.clip),
    "grad_norm": Effects._grad_norm,
    "scale": Effects._scale,
    "freeze": lambda self, effect, site, flow, frame: self.freeze(effect, site, flow),
    "toggle": Effects._toggle,
    "parameters": Effects._parameters,
    "add_params": Effects._add_params,
    "optimizers": lambda self, effect, site, flow, frame: self.interp.configured_optimizers(frame, flow, effect.value("configured_by", "")),
    "detach": Effects._detach,
    "no_grad": Effects._no_grad,
    "enable_grad": lambda self, effect, site, flow, frame: Value(const=("context", "enable_grad", 0)),
    "forward": Effects._forward,
    "divide": lambda self, effect, site, flow, frame: self.arithmetic("divide", effect, site),
    "multiply": lambda self, effect, site, flow, frame: self.arithmetic("multiply", effect, site),
    "tensor": Effects._tensor,
    "nonlinear": Effects._nonlinear,
    "constant": Effects._tensor,
    "measures": lambda self, effect, site, flow, frame: EMPTY,
    "summed": Effects._tensor,
    "number": Effects._number,
    "inert": lambda self, effect, site, flow, frame: EMPTY,
    "invoke": Effects._invoke,
    "defer": Effects._defer,
    "run_own": Effects._run_own,
    "set_attribute": Effects._set_attribute,
}


def _spent(node: ast.expr | None, call: ast.Call, flow: Flow) -> None:
    """After a backward pass that frees its graph, the loss it ran on cannot be backpropagated again: a later
    backward of the same name runs on a loss made anew. What it was divided by is forgotten, so that a loss held
    by an object that outlives the call (`ctx.loss_task /= ctx.grad_accum_count; ctx.loss_task.backward()` in a
    hook run once per batch, the loss rebuilt by another hook out of sight) is not read as divided again by the
    next call (FederatedScope)."""
    key = ref_text(node) if node is not None else None
    value = flow.env.get(key) if key is not None else None
    if value is None or not (value.divisors or value.divided_twice or value.multipliers):
        return
    retain = keyword_value(call, "retain_graph")
    if retain is not None and not (isinstance(retain, ast.Constant) and retain.value in (False, None)):
        return  # the graph is kept for another backward pass of the same loss
    flow.env[key] = replace(value, divisors=frozenset(), divided_twice=frozenset(), multipliers=frozenset(),
                            unread_factors=frozenset())


def _without_graphs(value: Value) -> Value:
    """`value` with no autograd graph in it or in its items (each detached in place)."""
    return replace(value, built=frozenset(), graph=False, kept=frozenset(),
                   items=tuple((k, _without_graphs(v)) for k, v in value.items))


def _loss_scaler(spec: str, call: ast.Call) -> tuple[bool, str | None]:
    """Whether an object built by `call` scales the loss in its backward (`loss_scaler = "keyword=literal|..."`),
    and the setting that decides when that is not written in the call: passed one of the literals, surely (None);
    another literal, no; a setting (`mixed_precision=args.mixed_precision`), its name; nothing, or `None`, the
    keyword's own name (the launch configuration decides: `accelerate launch --mixed_precision fp16`)."""
    keyword, _, literals = spec.partition("=")
    value = next((k.value for k in call.keywords if k.arg == keyword), None)
    if value is None or isinstance(value, ast.Constant) and value.value is None:
        return True, keyword
    if isinstance(value, ast.Constant):
        return str(value.value) in literals.split("|"), None
    return True, setting_name(value) or keyword


def _variant(effect: Effect, call: ast.Call) -> str | None:
    """The type a construct makes when the call passes one of its `variant` keywords (a value other than `None`;
    `keyword:literal=type`: that literal, `Fabric(devices=1)`)."""
    spec = effect.value("variant")
    if not spec:
        return None
    passed = {k.arg: k.value for k in call.keywords
              if k.arg and not (isinstance(k.value, ast.Constant) and k.value.value is None)}
    for pair in str(spec).split(";"):
        keyword, _, made = pair.partition("=")
        name, colon, literal = keyword.partition(":")
        value = passed.get(name.strip())
        if value is None:
            continue
        if not colon or (isinstance(value, ast.Constant) and str(value.value) == literal.strip()):
            return made.strip()
    return None
