"""GL004: the accumulation step condition fires on the first micro-batch of a zero-based counter."""

from __future__ import annotations

from typing import Iterable

import libcst as cst

from .. import messages
from ..analysis import TrainingModel
from ..analysis.conditions import code
from ..registry import Finding, Rule, register


@register
class AccumulationOffByOne(Rule):
    code = "GL004"
    name = "accumulation-off-by-one"
    summary = "The step condition fires on the first micro-batch of a zero-based counter."

    VALID = (
        """
import torch
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for i, x in enumerate(torch.randn(16, 4).split(2)):
    (model(x).sum() / 4).backward()
    if (i + 1) % 4 == 0:
        opt.step()
        opt.zero_grad()
""",
        """
import torch
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for i, x in enumerate(torch.randn(16, 4).split(2), start=1):
    (model(x).sum() / 4).backward()
    if i % 4 == 0:
        opt.step()
        opt.zero_grad()
""",
    )
    INVALID = (
        """
import torch
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for i, x in enumerate(torch.randn(16, 4).split(2)):
    (model(x).sum() / 4).backward()
    if i % 4 == 0:
        opt.step()
        opt.zero_grad()
""",
    )

    def check(self, model: TrainingModel) -> Iterable[Finding]:
        reported: set[int] = set()
        for step in sorted(model.steps.values(), key=lambda s: model.line(s.node)):
            holders = model.optimizer_holders(step.optimizer)
            for state in step.incoming:
                for cond in model.guards(step, state):
                    value = state.assumption(cond.akey)
                    if cond.id in reported:
                        continue
                    fires_first = cond.first_value is not None and cond.first_value == value
                    if not fires_first and not (cond.short_first_window and value is True):
                        continue
                    if not isinstance(cond.statement, cst.If) or not cond.moduli:
                        continue
                    accumulating = any(
                        c.fresh and (c.repeated or not any(cond.id in s for s in model.backwards[c.backward].if_stacks))
                        for _h, c in state.held(holders)
                    )
                    if not accumulating:
                        continue
                    reported.add(cond.id)
                    counter = next(iter(cond.counter_sources))
                    msg, help_ = messages.accumulation_off_by_one(
                        code(cond.test), counter, cond.counter_sources[counter], step.call_text,
                        start=cond.counter_starts.get(counter, 0), fires_first=fires_first,
                    )
                    yield Finding(cond.test, msg, help_)
