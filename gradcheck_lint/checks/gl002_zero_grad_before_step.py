"""GL002: gradients are cleared between the backward and the step that should apply them."""

from __future__ import annotations

from typing import Iterable

from .. import messages
from ..analysis import TrainingModel
from ..registry import Finding, Rule, register


@register
class ZeroGradBeforeStep(Rule):
    code = "GL002"
    name = "zero-grad-before-step"
    summary = "Gradients are cleared after backward() and before the step() that should use them."

    VALID = (
        """
import torch
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for x in torch.randn(8, 4).split(2):
    opt.zero_grad()
    model(x).sum().backward()
    opt.step()
""",
        """
import torch
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for i, x in enumerate(torch.randn(8, 4).split(2)):
    (model(x).sum() / 4).backward()
    if (i + 1) % 4 == 0:
        opt.step()
        opt.zero_grad()
""",
    )
    INVALID = (
        """
import torch
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for x in torch.randn(8, 4).split(2):
    model(x).sum().backward()
    opt.zero_grad()
    opt.step()
""",
        """
import torch
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for i, x in enumerate(torch.randn(8, 4).split(2)):
    (model(x).sum() / 4).backward()
    if (i + 1) % 4 == 0:
        opt.step()
    opt.zero_grad()
""",
    )

    def check(self, model: TrainingModel) -> Iterable[Finding]:
        reported: set[int] = set()
        for step in sorted(model.steps.values(), key=lambda s: model.line(s.node)):
            holders = model.optimizer_holders(step.optimizer)
            for state in step.incoming:
                gates = [c for c in model.guards(step, state) if c.is_accumulation_gate]
                for discard in sorted(state.discards):
                    if discard.clear in reported or not any(discard.holder.overlaps(h) for h in holders):
                        continue
                    clear = model.clears.get(discard.clear)
                    backward = model.backwards.get(discard.backward)
                    if clear is None or backward is None:
                        continue
                    # A clear inside a micro-batch loop whose step comes after the loop.
                    inner = any(
                        b and b[-1] not in s and any(c and c[-1] == b[-1] for c in clear.loop_stacks)
                        for b in backward.loop_stacks for s in step.loop_stacks
                    )
                    if discard.refilled and not (discard.refilled_same and (gates or inner)):
                        continue  # refilled by another backward: a by-product cleared on purpose
                    if discard.refilled and not (clear.loop_stacks & backward.loop_stacks):
                        # A clear outside the micro-batch loop drops at most a trailing partial window.
                        continue
                    reported.add(discard.clear)
                    msg, help_ = messages.zero_grad_before_step(
                        clear.call_text,
                        backward.call_text,
                        model.line(backward.node),
                        step.call_text,
                        model.line(step.node),
                        accumulation=(gates[0].key if gates else "the inner micro-batch loop") if discard.refilled else None,
                    )
                    yield Finding(clear.node, msg, help_)
