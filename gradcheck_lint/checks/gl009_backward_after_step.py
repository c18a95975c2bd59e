"""GL009: a backward pass goes through a graph whose parameters an optimizer step already changed."""

from __future__ import annotations

from collections.abc import Iterable

from .. import messages
from ..analysis import TrainingModel
from ..analysis.syntax import code
from ..registry import Finding, Rule, register


@register
class BackwardAfterStep(Rule):
    code = "GL009"
    name = "backward-after-step"
    summary = "A backward pass goes through a forward pass made before an optimizer step changed that model's parameters."

    VALID = (
        """
import torch
from torch import nn
G, D = nn.Linear(2, 4), nn.Linear(4, 1)
opt_G, opt_D = torch.optim.Adam(G.parameters()), torch.optim.Adam(D.parameters())
bce = nn.BCEWithLogitsLoss()
for real in torch.randn(8, 4, 4):
    fake = G(torch.randn(4, 2))
    opt_D.zero_grad()
    d_loss = bce(D(real), torch.ones(4, 1)) + bce(D(fake.detach()), torch.zeros(4, 1))
    d_loss.backward()
    opt_D.step()
    opt_G.zero_grad()
    g_loss = bce(D(fake), torch.ones(4, 1))
    g_loss.backward()
    opt_G.step()
""",
    )
    INVALID = (
        """
import torch
from torch import nn
G, D = nn.Linear(2, 4), nn.Linear(4, 1)
opt_G, opt_D = torch.optim.Adam(G.parameters()), torch.optim.Adam(D.parameters())
bce = nn.BCEWithLogitsLoss()
for real in torch.randn(8, 4, 4):
    fake = G(torch.randn(4, 2))
    d_fake = D(fake)
    opt_D.zero_grad()
    d_loss = bce(D(real), torch.ones(4, 1)) + bce(d_fake, torch.zeros(4, 1))
    d_loss.backward(retain_graph=True)
    opt_D.step()
    opt_G.zero_grad()
    g_loss = bce(d_fake, torch.ones(4, 1))
    g_loss.backward()
    opt_G.step()
""",
    )

    def check(self, model: TrainingModel) -> Iterable[Finding]:
        reported: set[int] = set()
        for backward in sorted(model.backwards.values(), key=lambda b: model.order(b.node)):
            if not backward.stale_graphs or id(backward.node) in reported:
                continue
            holder, site, _step_id, step_text = sorted(backward.stale_graphs)[0]
            forward = model.forward_sites.get(site)
            step = model.step_node(_step_id)
            reported.add(id(backward.node))
            msg, help_ = messages.backward_after_step(
                backward.call_text,
                model.table.holder_name(holder),
                code(forward) if forward is not None else None,
                model.line(forward) if forward is not None else None,
                step_text,
                model.line(step) if step is not None else None,
            )
            module = model.table.entities.get(holder.uid)
            stepper = next((s for s in model.steps.values() if id(s.node) == _step_id), None)
            facts = tuple(x.provenance for x in (module, stepper) if x is not None)
            yield Finding(backward.node, msg, help_, facts)
