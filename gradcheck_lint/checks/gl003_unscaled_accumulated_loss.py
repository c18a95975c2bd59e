"""GL003: several micro-batches accumulate into one step and the loss is not divided by their number."""

from __future__ import annotations

import re
from typing import Iterable

from .. import messages
from ..analysis import TrainingModel
from ..registry import Finding, Rule, register

_PER_SAMPLE = re.compile(r"size\(|\.shape|numel|len\(|batch|\bbs\b|bsz|sample|token|count|num_el", re.I)
_ACCUM_NAME = re.compile(r"acc|micro|grad_?steps|update_freq|iters_to_accumulate|n_?steps|num_?steps|chunks|split", re.I)
_IDENT = re.compile(r"[A-Za-z_]\w*")
_GENERIC = frozenset({"self", "args", "config", "cfg", "len", "opt", "hparams"})


def divides_by_window(divisors: frozenset[str], window: str | None) -> bool:
    """Tell whether one of the divisors applied to a loss can be the accumulation window size."""
    for d in divisors:
        if window is not None:
            if d == window:
                return True
            shared = set(_IDENT.findall(d)) & set(_IDENT.findall(window)) - _GENERIC
            if shared:
                return True
        if _ACCUM_NAME.search(d):
            return True
        if _PER_SAMPLE.search(d):
            continue  # a per-sample normalisation, not the window
        if d.replace(".", "", 1).isdigit() and window is not None and window.replace(".", "", 1).isdigit():
            if float(d) == float(window):
                return True
            continue
        return True  # an unknown divisor may well be N: stay silent
    return False


@register
class UnscaledAccumulatedLoss(Rule):
    code = "GL003"
    name = "unscaled-accumulated-loss"
    summary = "Backward passes accumulate into one step and the loss is not divided (exactly once) by the number of micro-batches."

    VALID = (
        """
import torch
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
accum = 4
for i, x in enumerate(torch.randn(16, 4).split(2)):
    loss = model(x).pow(2).mean() / accum
    loss.backward()
    if (i + 1) % accum == 0:
        opt.step()
        opt.zero_grad()
""",
        """
import torch
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for batch in torch.randn(16, 8, 4):
    for micro in batch.chunk(4):
        (model(micro).pow(2).mean() / 4).backward()
    opt.step()
    opt.zero_grad()
""",
    )
    INVALID = (
        """
import torch
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
accum = 4
for i, x in enumerate(torch.randn(16, 4).split(2)):
    loss = model(x).pow(2).mean()
    loss.backward()
    if (i + 1) % accum == 0:
        opt.step()
        opt.zero_grad()
""",
    )

    def check(self, model: TrainingModel) -> Iterable[Finding]:
        reported: set[int] = set()
        for step in sorted(model.steps.values(), key=lambda s: model.line(s.node)):
            holders = model.optimizer_holders(step.optimizer)
            for state in step.incoming:
                for _h, c in state.held(holders):
                    if not (c.fresh and c.repeated) or c.rescaled or c.backward in reported:
                        continue
                    backward = model.backwards[c.backward]
                    if backward.framework_scaled or step.framework_gated:
                        continue
                    window = model.accumulation_window(state, backward, step)
                    if window is False:
                        continue
                    named = window if isinstance(window, str) else None
                    twice = sorted(d for d in backward.loss.divided_twice if divides_by_window(frozenset({d}), named))
                    if twice:
                        msg, help_ = messages.loss_scaled_twice(
                            backward.call_text, backward.loss_text, twice[0], step.call_text, model.line(step.node)
                        )
                    elif divides_by_window(backward.loss.divisors, named):
                        continue
                    else:
                        msg, help_ = messages.unscaled_accumulated_loss(
                            backward.call_text, backward.loss_text, step.call_text, model.line(step.node), named
                        )
                    reported.add(c.backward)
                    yield Finding(backward.node, msg, help_)
