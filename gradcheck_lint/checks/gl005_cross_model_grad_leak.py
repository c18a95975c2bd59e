"""GL005: one model's optimizer steps on gradients another model's loss wrote into it."""

from __future__ import annotations

import re
from collections.abc import Iterable

from .. import messages
from ..analysis import TrainingModel
from ..analysis.gradstate import UNDONE
from ..analysis.issued_for import issued_for_other_model
from ..analysis.names import roles
from ..analysis.provenance import Assumption, assumed
from ..registry import Finding, Invalid, Rule, register


@register
class CrossModelGradLeak(Rule):
    code = "GL005"
    name = "cross-model-grad-leak"
    summary = "A backward reaches another model's parameters and that model's optimizer steps on them."

    VALID = (
        """
import torch
from torch import nn
G, D = nn.Linear(2, 4), nn.Linear(4, 1)
opt_G = torch.optim.Adam(G.parameters())
opt_D = torch.optim.Adam(D.parameters())
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
        Invalid(
            """
import torch
from torch import nn
G, D = nn.Linear(2, 4), nn.Linear(4, 1)
opt_G = torch.optim.Adam(G.parameters())
opt_D = torch.optim.Adam(D.parameters())
bce = nn.BCEWithLogitsLoss()
for real in torch.randn(8, 4, 4):
    fake = G(torch.randn(4, 2))
    opt_G.zero_grad()
    g_loss = bce(D(fake), torch.ones(4, 1))
    g_loss.backward()
    opt_G.step()
    d_loss = bce(D(real), torch.ones(4, 1)) + bce(D(fake.detach()), torch.zeros(4, 1))
    d_loss.backward()
    opt_D.step()
    opt_D.zero_grad()
""",
            line=16,
        ),
    )

    def check(self, model: TrainingModel) -> Iterable[Finding]:
        for step in sorted(model.steps.values(), key=lambda s: model.order(s.node)):
            opt = step.optimizer
            holders = model.optimizer_holders(opt)
            leak = None
            for state in sorted(step.states(), key=lambda s: len(s.grads)):
                held = state.held(holders)
                for holder, c in held:
                    if UNDONE in c.consumers:
                        continue  # applied by a step that trains nothing (`trials`): no other model's step used them
                    if (c.consumers and opt.uid not in c.consumers and not c.live and c.certain and not holder.pseudo
                            and not model.stale_within_same_model(holder, c, held, holders)
                            and not all(any(s.node is step.node for s in model.steps_of(u)) for u in c.consumers)
                            and not all(u in model.table.entities and model.optimizer_holders(model.table.entities[u]) == holders
                                        for u in c.consumers)
                            and not model.exclusive(model.backwards[c.backward].node, step.node)):
                        # (two optimizers of exactly the same parameters, such as a DeepSpeed engine and the
                        # optimizer it wraps, are one model's: no other model's loss is involved)
                        # (an optimizer built afresh on each call of a helper is one optimizer of the code:
                        # its earlier instance stepping these gradients is GL001's stale gradient, not a leak)
                        loss = model.backwards[c.backward].loss_text
                        named = re.fullmatch(r"[A-Za-z_][\w.]*", loss) is not None
                        if named and roles(loss) & roles(model.table.holder_name(holder)):
                            continue  # the loss is named for this model too: a joint objective
                        own = next((model.backwards[o.backward] for _h, o in held if o.fresh and o.backward != c.backward), None)
                        leak = (holder, c, own)
                        break
                if leak:
                    break
            if leak is None:
                issued = next(filter(None, (issued_for_other_model(model, step, state, holders) for state in
                                            sorted(step.states(), key=lambda s: len(s.grads)))), None)
                if issued is not None:
                    msg, help_ = messages.backward_issued_for_other_model(
                        step.call_text, issued.other.call_text, model.line(issued.other.node), model.table.holder_name(issued.holder),
                        issued.clear.call_text, model.line(issued.clear.node), issued.own.call_text, model.line(issued.own.node),
                        model.optimizer_text(step), discarded=issued.discarded)
                    facts = [step.provenance, issued.clear.provenance]
                    if not issued.discarded:
                        facts.append(assumed(Assumption.INTENT))  # the pass may be meant to train this model too
                    yield Finding(step.node, msg, help_, tuple(facts))
                continue
            holder, c, own = leak
            backward = model.backwards[c.backward]
            other_uid = min(c.consumers)
            other_steps = model.steps_of(other_uid)
            other = other_steps[0] if other_steps else None
            msg, help_ = messages.cross_model_grad_leak(
                step.call_text,
                backward.call_text,
                model.line(backward.node),
                model.table.holder_name(holder),
                other.call_text if other else None,
                model.line(other.node) if other else None,
                model.optimizer_text(step),
                own.call_text if own else None,
            )
            others = [model.table.entities[u].provenance for u in sorted(c.consumers) if u in model.table.entities]
            yield Finding(step.node, msg, help_, (step.provenance, c.provenance, *others))
