"""GL001: an optimizer steps on gradients that an earlier step already applied."""

from __future__ import annotations

import ast
from collections.abc import Iterable

from .. import messages
from ..analysis import TrainingModel
from ..analysis.events import Step
from ..analysis.gradstate import Contribution
from ..analysis.provenance import Assumption, assumed
from ..analysis.values import Holder
from ..analysis.window_arithmetic import remainder_gate
from ..fixplan import SAFE, UNSAFE, FixPlan, InsertAfter, after_step, alone_on_line, following, is_reference, source
from ..registry import Finding, Invalid, Rule, register


@register
class MissingZeroGrad(Rule):
    code = "GL001"
    name = "missing-zero-grad"
    summary = "An optimizer steps on gradients that still hold a previous step's backward."

    VALID = (
        """
import torch
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for x in torch.randn(8, 4).split(2):
    loss = model(x).pow(2).mean()
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
""",
        """
import torch
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for x in torch.randn(8, 4).split(2):
    for p in model.parameters():
        p.grad = None
    model(x).sum().backward()
    opt.step()
""",
    )
    INVALID = (
        Invalid(
            """
import torch
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
opt.zero_grad()
for x in torch.randn(8, 4).split(2):
    loss = model(x).pow(2).mean()
    loss.backward()
    opt.step()
""",
            line=9,
            fixed="""
import torch
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
opt.zero_grad()
for x in torch.randn(8, 4).split(2):
    loss = model(x).pow(2).mean()
    loss.backward()
    opt.step()
    opt.zero_grad()
""",
            fix="safe",
        ),
        Invalid(
            """
import torch
a, b = torch.nn.Linear(4, 1), torch.nn.Linear(4, 1)
opt_a = torch.optim.SGD(a.parameters(), lr=0.1)
opt_b = torch.optim.SGD(b.parameters(), lr=0.1)
for x in torch.randn(8, 4).split(2):
    opt_a.zero_grad()
    (a(x) + b(x)).sum().backward()
    opt_a.step()
    opt_b.step()
""",
            line=10,
            fixed="""
import torch
a, b = torch.nn.Linear(4, 1), torch.nn.Linear(4, 1)
opt_a = torch.optim.SGD(a.parameters(), lr=0.1)
opt_b = torch.optim.SGD(b.parameters(), lr=0.1)
for x in torch.randn(8, 4).split(2):
    opt_a.zero_grad()
    (a(x) + b(x)).sum().backward()
    opt_a.step()
    opt_b.step()
    opt_b.zero_grad()
""",
            fix="safe",
        ),
    )

    def check(self, model: TrainingModel) -> Iterable[Finding]:
        for step in model.steps.values():
            if step.trial:
                continue  # undone by restoring the weights, or a benchmark's repeated steps: it trains nothing
            opt = step.optimizer
            holders = model.optimizer_holders(opt)
            stale = leftover = stale_holder = stale_state = None
            unconditional = not any(stack for stack in step.if_stacks)
            for state in step.states():
                held = state.held(holders)
                for holder, contribution in held:
                    stale_here = (opt.uid in contribution.consumers
                                  or model.stale_within_same_model(holder, contribution, held, holders))
                    if stale_here:
                        # the witness the finding is graded by: a certain one where any path holds one (a `try:` around
                        # the backward leaves an uncertain twin of the same contribution on the handler's path), and
                        # one this optimizer applied itself before one another optimizer applied (whether that one's
                        # loss reaches these parameters may rest on a pick by name)
                        if stale is None or _better_witness((contribution, holder), (stale, stale_holder), opt.uid,
                                                            holders):
                            stale, stale_holder, stale_state = contribution, holder, state
                        if stale.certain and opt.uid in stale.consumers:
                            break
                        continue  # another contribution held here may be a certain witness (the model's own loss)
                    if leftover is None and unconditional and self._unintended_accumulation(model, state, contribution, step):
                        leftover = contribution
                if stale is not None and stale.certain and opt.uid in stale.consumers:
                    break
            if stale is None and leftover is not None:
                backward = model.backwards[leftover.backward]
                msg, help_ = messages.skipped_step_leftover(step.call_text, backward.call_text, model.line(backward.node), model.optimizer_text(step))
                yield Finding(step.node, msg, help_, (step.provenance, leftover.provenance))
                continue
            if stale is None:
                never = self._clear_never_at_window_one(model, step, holders)
                if never is not None:
                    clear, gate, window = never
                    msg, help_ = messages.clear_gate_never_true(step.call_text, clear.call_text, model.line(clear.node), gate,
                                                                window, model.optimizer_text(step))
                    # true only where the window is set to 1, a value the file does not fix
                    yield Finding(step.node, msg, help_, (step.provenance, assumed(Assumption.CONFIG)))
                continue
            backward = model.backwards[stale.backward]
            wrong = self._wrong_clear(model, step, holders)
            partial = None
            if wrong is None and stale_holder is not None:
                partial = self._partial_clear(model, step, holders, stale_holder)
            may = model.assumed_repeated(step)
            # applied first by the step of another optimizer over some of the same parameters (InfoGAN's
            # `q_optimizer` over D's and G's), not by this one's: not for another part of the model
            firsts = [] if opt.uid in stale.consumers else [
                s for s in model.steps.values() if s.optimizer.uid in stale.consumers and s.node is not step.node
                and any(h.overlaps(x) for h in model.optimizer_holders(s.optimizer) for x in holders if not h.pseudo and not x.pseudo)]
            first = min(firsts, key=lambda s: model.order(s.node)) if firsts else None
            msg, help_ = messages.missing_zero_grad(
                step.call_text,
                backward.call_text,
                model.line(backward.node),
                model.optimizer_text(step),
                wrong_clear=wrong.call_text if wrong else None,
                wrong_clear_line=model.line(wrong.node) if wrong else None,
                partial_clear=partial[0].call_text if partial else None,
                partial_clear_line=model.line(partial[0].node) if partial else None,
                uncleared=partial[1] if partial else None,
                owned=model.owned_names(opt),
                decayed=stale.decayed,
                may=may,
                applied_by=first.call_text if first else None,
                applied_by_line=model.line(first.node) if first else None,
                closure=step.closure_evaluations,
                clear_call=model.clear_call(opt),
            )
            facts = [step.provenance, stale.provenance]
            # the gradients went stale at some step of these parameters: when one of them is only guessed to step
            # this optimizer (`pair.sched.step()` taken for `pair.optim`'s), so is the staleness
            facts += [s.link for s in model.steps.values() if s.optimizer.uid in stale.consumers]
            if stale_state is not None and model.flag_off_its_default(stale_state):
                # `if clear_grad_bef_opt: zero_grad()` of `clear_grad_bef_opt=True`: no clear only where the flag is
                # passed false, which nothing in sight does (VHL's trainer, lockbox 15)
                facts.append(assumed(Assumption.PARAMETER))
            if step.closure_evaluations == "unknown":
                facts.append(assumed(Assumption.CLASS))  # whether its step calls the closure again
            if may:
                facts.append(assumed(Assumption.CONTEXT))  # the step function is assumed to run once per batch
            if stale.decayed:
                facts.append(assumed(Assumption.INTENT))  # rescaled in place after the step: perhaps kept on purpose
            if self._clears_an_object_out_of_sight(model, step, holders):
                facts.append(assumed(Assumption.OPAQUE))  # that object may be the optimizer's model
            if wrong is not None and opt.uid not in model.table.made_at and all(h.pseudo for h in holders):
                # an optimizer known only as an attribute it is stepped through (`self._scaler.step(self.optimizer)`
                # of a helper object whose `__init__` was not read): the one cleared may be that very object
                facts.append(assumed(Assumption.ATTRIBUTE))
            if wrong is not None and any(h.pseudo for h in wrong.holders):
                # the clear is of an optimizer whose parameters are not known (darts-pt's `optimizer`, the model's
                # optimizer handed in before `model.reset_optimizer(...)` built the one its step uses, over the same
                # weights): that it clears other parameters is assumed
                facts.append(assumed(Assumption.OWNERSHIP))
            if _one_of_several(model, step):
                facts.append(assumed(Assumption.CHOICE))  # which optimizer the name holds decides what went stale
            others = [model.table.entities[u] for u in stale.consumers if u in model.table.entities]
            if opt.uid not in stale.consumers and any(p.startswith("[") for h in holders for p in h.path) \
                    and not any(h.overlaps(x) for o in others for h in model.optimizer_holders(o) for x in holders):
                # applied by another optimizer's step over other parameters, and this one's are a part of the module
                # picked by a test (CompressAI's `.quantiles`, an optimizer for each pick): whether the loss reaches
                # this pick at all is not known (it reaches the module, as far as read), as GL005 reads it
                facts.append(assumed(Assumption.PICKED))
            # a clear after this step cannot help where another optimizer's step applied them first
            yield Finding(step.node, msg, help_, tuple(facts), fix=None if stale.decayed or first else self._fix(model, step))

    @staticmethod
    def _fix(model: TrainingModel, step: Step) -> FixPlan | None:
        """Insert `opt.zero_grad()` (or the clear that clears what it steps on) right after the step (after
        `scaler.update()` when it follows)."""
        plan = after_step(model, step)
        if plan is None:
            return None
        opt_node, anchor = plan
        # an optimizer whose `zero_grad()` clears nothing its step reads (Megatron's, over DDP buffers): the
        # catalogue's clear of its model, named by the analysis's label, which may not be in scope there
        elsewhere = model.clear_call(step.optimizer)
        clear = elsewhere or f"{source(model, opt_node)}.zero_grad()"
        after = following(model, anchor)
        if after is not None and source(model, after).strip() == clear:
            return None  # already cleared right there: this fix cannot help
        holders = model.optimizer_holders(step.optimizer)
        others = [model.optimizer_holders(s.optimizer) for s in model.steps.values() if s.optimizer.uid != step.optimizer.uid]
        # Another optimizer stepping on some of these parameters would lose the gradients it needs.
        shared = any(h.overlaps(x) for hs in others for h in hs for x in holders) or bool(others and any(h.pseudo for h in holders))
        # Under an unrelated `if` (not an accumulation gate), skipped steps would still accumulate.
        gated = all(model.conditions[c].is_accumulation_gate for stack in step.if_stacks for c in stack if c in model.conditions)
        # Another step of the same optimizer in the loop (two backward-step pairs per iteration): a clear
        # after this one leaves the other pair's gradients to the next step.
        again = any(s is not step and s.optimizer.uid == step.optimizer.uid and model.in_same_loop(s.loop_stacks, step.loop_stacks)
                    for s in model.steps.values())
        # An optimizer of a class no API model describes may not clear with `zero_grad()` (a wrapper that
        # never calls `Optimizer.__init__` raises there; one that holds another optimizer clears that one),
        # nor one made out of sight (handed in as an argument, kept in an attribute): its class is unknown too.
        known = not model.unmodelled_class(step.optimizer) and step.optimizer.uid not in model.table.unknown_origin
        safe = (alone_on_line(model, anchor) and is_reference(opt_node) and gated and not shared and not again and known
                and elsewhere is None)
        return FixPlan(f"Insert `{clear}` after `{source(model, anchor)}`", (InsertAfter(anchor, clear),), SAFE if safe else UNSAFE)

    @staticmethod
    def _unintended_accumulation(model: TrainingModel, state, c, step) -> bool:
        """Gradients of an earlier iteration that skipped the step (`continue` after backward)."""
        if not (c.fresh and c.repeated) or c.rescaled:
            return False
        backward = model.backwards[c.backward]
        if backward.framework_scaled or step.framework_gated or backward.loss.divisors:
            return False
        return model.accumulation_window(state, backward, step) is False

    @staticmethod
    def _clear_never_at_window_one(model: TrainingModel, step: Step, holders):
        """Every clear of these gradients runs only when `x % N == r` for a literal r >= 1, while the step
        runs every N micro-batches: with N = 1 (a usual default) that test is never true and nothing clears."""
        if not model.trains:
            return None  # no backward pass in the file: nothing accumulates
        clears = [c for c in model.clears.values()
                  if c.everything or any(h.overlaps(x) for h in c.holders for x in holders)]
        step_windows = {w for stack in step.if_stacks for c in stack if c in model.conditions
                        for w in model.conditions[c].moduli}
        found = None
        for clear in clears:
            for stack in model.if_stacks_in_order(clear.if_stacks) or [()]:
                gate = next((g for c in stack if c in model.conditions
                             for g in [remainder_gate(model.conditions[c].test)] if g is not None), None)
                if gate is None or gate[1] not in step_windows:
                    return None  # a path clears whatever the window is
                if model.module_constant(gate[1]) not in (None, 1):
                    return None  # `N = 4` at module level, never rebound: N is not 1 in this file
                found = found or (clear, *gate)
        return found

    @staticmethod
    def _partial_clear(model: TrainingModel, step, holders, stale_holder):
        """A clear in the same loop that covers some of the stepping optimizer's parameters but not those whose
        gradients went stale (`model.zero_grad()` for an optimizer also given a loss module's weights), and the
        names of those it leaves."""
        for clear in sorted(model.clears.values(), key=lambda c: model.order(c.node)):
            if clear.everything or not clear.holders or not model.in_same_loop(clear.loop_stacks, step.loop_stacks):
                continue
            covered = [h for h in holders if not h.pseudo and any(c.overlaps(h) for c in clear.holders)]
            left = sorted({model.table.holder_name(h) for h in holders
                           if not h.pseudo and h.overlaps(stale_holder) and not any(c.overlaps(h) for c in clear.holders)})
            if covered and left:
                return clear, ", ".join(f"`{n}`" for n in left)
        return None

    @staticmethod
    def _clears_an_object_out_of_sight(model: TrainingModel, step: Step, holders: frozenset[Holder]) -> bool:
        """A clear in the step's loop whose target is the optimizer's model on some paths and, on others, a
        model whose identity was not seen made (`self.model = prune(model)`, an unread helper's result):
        that this one is not the optimizer's model, so that nothing clears its gradients there, is an
        assumption (the helper may have returned the model it was handed)."""
        unknown = model.table.unknown_origin
        for clear in model.clears.values():
            if not model.in_same_loop(clear.loop_stacks, step.loop_stacks):
                continue
            mine = [h for h in clear.holders if any(h.overlaps(x) for x in holders)]
            if mine and any(not h.pseudo and h.uid in unknown and h not in mine for h in clear.holders):
                return True
        return False

    @staticmethod
    def _wrong_clear(model: TrainingModel, step, holders):
        """A clear in the same loop that targets other parameters than the stepping optimizer's."""
        for clear in sorted(model.clears.values(), key=lambda c: model.order(c.node)):
            if clear.everything or not clear.holders:
                continue
            if any(h.overlaps(x) for h in clear.holders for x in holders):
                continue
            if model.in_same_loop(clear.loop_stacks, step.loop_stacks):
                return clear
        return None


def _better_witness(candidate: tuple[Contribution, Holder], current: tuple[Contribution, Holder | None], opt: int,
                    holders: frozenset[Holder]) -> bool:
    """`candidate` grades a missing clear better than `current`: certain before uncertain, then applied by the stepping
    optimizer itself before applied by another one, then written into exactly the parameters it updates before into
    a whole module they are a part of."""
    def rank(c: Contribution, h: Holder | None) -> tuple[bool, bool, bool]:
        return c.certain, opt in c.consumers, h in holders
    return rank(*candidate) > rank(*current)


def _one_of_several(model: TrainingModel, step: Step) -> bool:
    """The step's receiver is one of several optimizers, not each of them in turn: the same call steps another
    optimizer on other paths (`optimizerB = optimizers[change(m)]`, a key the analysis cannot evaluate), and no
    `for` loop around it walks them (`for opt in optimizers: opt.step()` steps every one). Which one it is, and so
    which earlier step already applied the gradients, is not known (pytorch-dual-learning, lockbox 21)."""
    if not any(s.node is step.node and s.optimizer.uid != step.optimizer.uid for s in model.steps.values()):
        return False
    call = step.node
    receiver = call.func.value if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) else None
    if not isinstance(receiver, ast.Name):
        return False
    up = model.parent(call)
    while up is not None and not isinstance(up, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Module)):
        if isinstance(up, (ast.For, ast.AsyncFor)) and any(
                isinstance(n, ast.Name) and n.id == receiver.id for n in ast.walk(up.target)):
            return False
        up = model.parent(up)
    # bound to an item picked by a computed key (not a helper's own optimizer, made anew in each calling context)
    return up is not None and any(
        isinstance(n, ast.Assign) and isinstance(n.value, ast.Subscript) and not isinstance(n.value.slice, ast.Constant)
        and any(isinstance(t, ast.Name) and t.id == receiver.id for t in n.targets) for n in ast.walk(up))
