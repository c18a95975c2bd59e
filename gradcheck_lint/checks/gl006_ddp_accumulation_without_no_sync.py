"""GL006: gradient accumulation through a DDP/FSDP wrapper that all-reduces on every micro-batch."""

from __future__ import annotations

import ast
from collections.abc import Iterable

from .. import messages
from ..analysis import TrainingModel
from ..analysis.conditions import Condition
from ..analysis.events import Backward, Loop, Step
from ..analysis.gradstate import Contribution
from ..analysis.launch_kinds import ONE_PROCESS, UNUSUAL, arm_launch
from ..analysis.provenance import Assumption, Provenance, assumed
from ..analysis.sync_choices import off_when_stepping, same_names
from ..analysis.syntax import code
from ..analysis.values import Holder
from ..analysis.walk import breadth_first
from ..codemod_plans import wrap_in_no_sync
from ..diagnostics import Severity
from ..registry import Finding, Invalid, Rule, register

_Source = tuple[str | None, Condition | Loop] | None  # the window size and the gate or loop that names it


@register
class DdpAccumulationWithoutNoSync(Rule):
    code = "GL006"
    name = "ddp-accumulation-without-no-sync"
    summary = "Micro-batches accumulated through a DDP/FSDP model all-reduce their gradients every time: no_sync() is missing or comes too late."
    severity = Severity.WARNING

    VALID = (
        """
import contextlib
import torch
from torch.nn.parallel import DistributedDataParallel as DDP
model = DDP(torch.nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
accum = 4
for i, x in enumerate(torch.randn(16, 2, 4)):
    boundary = (i + 1) % accum == 0
    with (contextlib.nullcontext() if boundary else model.no_sync()):
        loss = model(x).pow(2).mean() / accum
        loss.backward()
    if boundary:
        opt.step()
        opt.zero_grad()
""",
    )
    INVALID = (
        Invalid(
            """
import torch
from torch.nn.parallel import DistributedDataParallel as DDP
model = DDP(torch.nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
accum = 4
for i, x in enumerate(torch.randn(16, 2, 4)):
    loss = model(x).pow(2).mean() / accum
    loss.backward()
    if (i + 1) % accum == 0:
        opt.step()
        opt.zero_grad()
""",
            line=9,
            fixed="""
import contextlib
import torch
from torch.nn.parallel import DistributedDataParallel as DDP
model = DDP(torch.nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
accum = 4
for i, x in enumerate(torch.randn(16, 2, 4)):
    with (contextlib.nullcontext() if (i + 1) % accum == 0 else model.no_sync()):
        loss = model(x).pow(2).mean() / accum
        loss.backward()
    if (i + 1) % accum == 0:
        opt.step()
        opt.zero_grad()
""",
            fix="unsafe",
        ),
    )

    def check(self, model: TrainingModel) -> Iterable[Finding]:
        yield from self._chosen_off_when_stepping(model)
        # one finding per backward call and place it is reported at: a helper of another file that two calls
        # of this file run (two training loops) is reported at each of them
        reported: set[tuple[int, int]] = set()
        forwards: dict[int, set[tuple[int, str, int]]] = {}  # id of a backward call -> its forwards' sync states
        # place -> a finding through a wrapper prepared in a world whose multi-process setting is off
        assumed_one_process: dict[tuple[int, int], tuple[Step, Contribution, Backward, _Source, int]] = {}
        # Sync switched off for a backward only after its forward pass: meant for a micro-batch that does
        # not step, too late to act.
        for backward in sorted(model.backwards.values(), key=lambda b: model.order(b.node)):
            # (no step in the file is needed: switching sync off for this backward says a later one steps)
            via = backward.via
            place = (id(backward.node), id(model.anchor(backward.node, via)[0]))
            if backward.sync_off_late and place not in reported and not model.one_process:
                reported.add(place)
                wrapper = min(backward.sync_off_late)
                sites = sorted(site for uid, state, site in backward.sync_forwards if uid == wrapper and state == "on")
                forward = model.forward_sites.get(sites[0]) if sites else None
                msg, help_ = messages.ddp_accumulation_without_no_sync(backward.call_text, model.table.label(wrapper), None, None, late=True,
                                                                       forward_line=model.line(forward) if forward is not None else None)
                yield Finding(backward.node, msg, help_, _wrapper_facts(model, wrapper), via=via)
        for step in sorted(model.steps.values(), key=lambda s: model.order(s.node)):
            holders = model.optimizer_holders(step.optimizer)
            for state in step.states():
                for _h, c in state.held(holders):
                    backward = model.backwards[c.backward]
                    via = backward.via
                    place = (id(backward.node), id(model.anchor(backward.node, via)[0]))
                    if place in reported or not (c.fresh and c.repeated):
                        continue
                    gated = any(model.conditions[i].is_accumulation_gate for stack in backward.if_stacks for i in stack if i in model.conditions)
                    source = model.accumulation_source(state, backward, step)
                    if source is None and not gated:
                        continue  # repeated without a window: a missing clear (GL001), not accumulation
                    loop = source[1] if source is not None and isinstance(source[1], Loop) else None
                    if loop is not None and model.terms_of_one_objective(loop, backward):
                        continue  # `for loss in losses: loss.backward()`: one batch's objective, no micro-batches
                    wrapper = self._syncing(forwards.setdefault(id(backward.node), self._forwards_at(model, backward)), model, _h)
                    if wrapper is None:
                        continue
                    if not model.wrapped_on(wrapper, state):
                        continue  # wrapped on the other arm of a test this path took (`arm_facts`)
                    if wrapper in model.table.parallelised_by and wrapper not in model.table.gated_models and model.refuses_distributed_accumulation:
                        continue  # a prepared model left out of `accumulate()`, in a script that refuses that case on several processes
                    if model.one_process:
                        # a notebook that launches no processes: its kernel is one process, so a prepared model has no
                        # DDP around it, and a DDP wrapper (orconvqa's, under `if args.local_rank != -1:` that the
                        # kernel's arguments leave off) has no other process to all-reduce with
                        continue
                    if wrapper in model.table.parallelised_by and self._launch(model, backward) == ONE_PROCESS:
                        continue  # `if accelerator.distributed_type == DistributedType.NO:`: no DDP around it there
                    if model.table.one_process_by_setting.get(wrapper) and place not in assumed_one_process:
                        # several processes only by assumption in this world: reported unless another world of the
                        # same backward reports it for sure
                        assumed_one_process[place] = (step, c, backward, source, wrapper)
                        continue
                    reported.add(place)
                    yield self._finding(model, step, c, backward, source, wrapper)
        for place, (step, c, backward, source, wrapper) in assumed_one_process.items():
            if place not in reported:
                yield self._finding(model, step, c, backward, source, wrapper)

    def _finding(self, model: TrainingModel, step: Step, c: Contribution, backward: Backward,
                 source: _Source, wrapper: int) -> Finding:
        """The finding of a backward that accumulates for `step` through `wrapper`, which syncs on every micro-batch."""
        prepared_by = model.table.parallelised_by.get(wrapper)
        by_flag = wrapper in model.sync_by_flag_method  # FSDP2: `set_requires_gradient_sync`, no `no_sync()`
        msg, help_ = messages.ddp_accumulation_without_no_sync(
            backward.call_text, model.table.label(wrapper), step.call_text, model.line(step.node),
            prepared_by=prepared_by, via=self._reached_via(model, backward, step), by_flag=by_flag)
        # (a framework-prepared model is a plain module on one process: it may have no `no_sync()`)
        fix = (wrap_in_no_sync(model, backward, step, source[1], wrapper)
               if source is not None and prepared_by is None and not by_flag else None)
        facts = (step.provenance, c.provenance, *_wrapper_facts(model, wrapper))
        if prepared_by is not None and self._launch(model, backward) == UNUSUAL:
            # in the `else` of `if accelerator.distributed_type == DistributedType.MULTI_GPU:` (codeparrot's training
            # script puts the `no_sync` backward in its body): DDP there only on a launch of another kind (MULTI_CPU)
            facts = (*facts, assumed(Assumption.LAUNCH_KIND))
        return Finding(backward.node, msg, help_, facts, fix=fix, via=backward.via)

    @staticmethod
    def _launch(model: TrainingModel, backward: Backward) -> str | None:
        """What the tests of the launch's kind around the backward (in its function) leave of it (`launch_kinds`)."""
        if backward.via:
            return None  # the backward of a helper: the tests around its call are the caller's, not read here
        return arm_launch(backward.node, model.parent, model.catalogue.launch_attributes())

    @staticmethod
    def _chosen_off_when_stepping(model: TrainingModel) -> Iterable[Finding]:
        """A sync-off context chosen by a test that holds on the micro-batch that steps (`model.no_sync if
        batch_idx % accum_grad != 0 else nullcontext` with a step on `(batch_idx + 1) % accum_grad == 0`)."""
        if not model.sync_choices:
            return
        reported: set[int] = set()
        for step in sorted(model.steps.values(), key=lambda s: model.order(s.node)):
            holders = model.optimizer_holders(step.optimizer)
            for state in step.states():
                for _h, c in state.held(holders):
                    backward = model.backwards[c.backward]
                    source = model.accumulation_source(state, backward, step) if c.fresh and c.repeated else None
                    if source is None or not isinstance(source[1], Condition):
                        continue
                    gate = source[1]
                    synced = {uid for uid, _state, _site in backward.sync_forwards}
                    for key, choice in sorted(model.sync_choices.items(), key=lambda kv: model.order(kv[1].node)):
                        if key in reported or not choice.wrappers & synced:
                            continue
                        if off_when_stepping(choice, gate.test) is not True:
                            continue
                        reported.add(key)
                        wrapper = min(choice.wrappers & synced)
                        msg, help_ = messages.ddp_no_sync_chosen_on_stepping_micro_batch(
                            choice.off_text, model.table.label(wrapper), code(choice.test), choice.off_when,
                            step.call_text, model.line(step.node), backward.call_text, model.line(backward.node))
                        # the two tests read over one counter; named alike only by their last part: an assumption
                        named = () if same_names(choice, gate.test) else (assumed(Assumption.NAME),)
                        facts = (step.provenance, *_wrapper_facts(model, wrapper), *named)
                        yield Finding(choice.node, msg, help_, facts)

    @staticmethod
    def _reached_via(model: TrainingModel, backward: Backward, step: Step) -> tuple[str, int | None] | None:
        """For a backward in a helper (`self.backward_step(loss)` called in `_run_train_epoch`'s loop), the
        call in the accumulating loop that runs it: where the reader finds the window."""
        for bstack in model.stacks_in_order(backward.loop_stacks):
            for sstack in model.stacks_in_order(step.loop_stacks):
                common = [lid for lid, other in zip(bstack, sstack) if lid == other]
                loop = model.loops.get(common[-1]) if common else None
                if loop is None or loop.implicit or any(n is backward.node for n in breadth_first(loop.node)):
                    continue
                inside = {id(n) for n in breadth_first(loop.node) if isinstance(n, ast.Call)}
                # (chains of one length in source order: a set of node tuples iterates in address order)
                for chain in sorted(backward.callers, key=lambda ch: (len(ch), [(c.lineno, c.col_offset) for c in ch])):
                    via = next((c for c in chain if id(c) in inside), None)
                    if via is not None:
                        return code(via), model.line(via)
        return None

    @staticmethod
    def _forwards_at(model: TrainingModel, backward: Backward) -> set[tuple[int, str, int]]:
        """The forward passes of every backward event of this call: a helper called once under
        `model.no_sync()` and once without (HF Trainer's `training_step`) is one call site whose sync
        is managed by its callers."""
        return {f for b in model.backwards.values() if b.node is backward.node for f in b.sync_forwards}

    @staticmethod
    def _syncing(sync_forwards: set[tuple[int, str, int]], model: TrainingModel, held: Holder) -> int | None:
        """A wrapper of the accumulated parameters (`held`) whose forward passes for this backward call
        always ran with gradient sync on. A wrapper of another model the loss went through (a GAN's
        discriminator under the generator's loss) accumulates nothing for this step."""
        states: dict[int, set[str]] = {}
        for uid, state, _site in sync_forwards:
            states.setdefault(uid, set()).add(state)
        table = model.table
        for uid, seen in sorted(states.items()):
            wrapped = table.sync_modules.get(uid)
            if seen != {"on"}:
                continue
            if not wrapped or any(m.overlaps(held) for m in wrapped):
                return uid
            # parameters of an optimizer the analysis could not read (`filter(..., vae.parameters())`): any
            # wrapper, unless another optimizer owns what it wraps (not another value of the same variable,
            # `self.optimizer` built here or handed in), or the file accumulates it in windows of its own
            # (`accelerator.accumulate(discriminator)` elsewhere: here it only feeds another model's loss)
            others = [own for other, own in table.ownership.items() if table.label(other) != table.label(held.uid)]
            if held.pseudo and uid not in table.gated_models and not all(
                    any(m.overlaps(o) for own in others for o in own.holders) for m in wrapped):
                return uid
        return None


def _wrapper_facts(model: TrainingModel, wrapper: int) -> tuple[Provenance, ...]:
    """How the analysis knows the wrapper synchronises gradients: read or modelled when it was built in
    sight (`DDP(model)`, `accelerator.prepare(model)`), assumed when known only by its name or its use."""
    ent = model.table.entities.get(wrapper)
    if ent is None:
        return (assumed(Assumption.OPAQUE),)
    api = model.catalogue.type(ent.api) if ent.api else None
    if api is not None and api.needs_process_group and model.group_out_of_sight(wrapper):
        # `DDP(model)` under `if args.local_rank != -1:` where nothing in sight starts a process group: that arm raises,
        # or the group is started out of sight
        return (ent.provenance, assumed(Assumption.PROCESS_GROUP))
    if model.table.one_process_by_setting.get(wrapper):
        # prepared in the world of `__init__` where `self.ddp` is off: DDP only if launched on several processes anyway
        return (ent.provenance, assumed(Assumption.LAUNCH))
    return (ent.provenance,)
