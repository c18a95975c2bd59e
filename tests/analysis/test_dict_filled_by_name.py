"""A dict of optimizers filled key by key in a loop (`optimizers[name] = AdamW(...)`, mLoRA's adapters,
lockbox 3) holds those optimizers under keys the analysis does not know: `optimizers[other]` is any of them.
And a list or comprehension of losses hands their graphs on to what sums them (`sum([...])`)."""

from __future__ import annotations

from gradcheck_lint import check_source

ADAPTERS = """\
import torch
from torch import nn


def get_optimizers(names, params):
    optimizers = {}
    for name in names:
        optimizers[name] = torch.optim.AdamW(params[name])
    return optimizers


def train(model, batches, names, params, accumulation_step):
    all_optimizers = get_optimizers(names, params)
    step = 0
    for x, y in batches:
        {clear_top}
        step += 1
        loss = nn.functional.mse_loss(model(x), y) / accumulation_step
        loss.backward()
        if step % accumulation_step == 0:
            for name in names:
                all_optimizers[name].step()
                {clear_after}
"""

CLEAR = "for name in names:\n            all_optimizers[name].zero_grad()"


def _found(source: str) -> list[tuple[str, int]]:
    return [(d.code, d.span.line) for d in check_source(source, "mlora.py")]


def test_a_clear_of_every_adapter_on_every_micro_batch_is_gl002() -> None:
    assert _found(ADAPTERS.replace("{clear_top}", CLEAR).replace("{clear_after}", "")) == [("GL002", 17)]


def test_the_clear_after_each_step_is_silent() -> None:
    assert _found(ADAPTERS.replace("{clear_top}", "").replace("{clear_after}", "all_optimizers[name].zero_grad()")) == []


SUMMED = """\
import torch
from torch import nn

critic = nn.Linear(4, 1)
actor = nn.Linear(4, 4)
critic_opt = torch.optim.Adam(critic.parameters())
actor_opt = torch.optim.Adam(actor.parameters())
for obs in batches:
    values = [critic(actor(o)) for o in obs]
    critic_loss = sum([(v - 1) ** 2 for v in values]).mean()
    critic_opt.zero_grad()
    critic_loss.backward(retain_graph=True)
    critic_opt.step()
    actor_loss = -{summed}
    actor_opt.zero_grad()
    actor_loss.backward()
    actor_opt.step()
"""


def test_a_sum_over_a_list_of_outputs_keeps_their_graphs() -> None:
    assert _found(SUMMED.replace("{summed}", "sum([v.mean() for v in values])")) == [("GL009", 16)]
    assert _found(SUMMED.replace("{summed}", "torch.stack(values).mean()")) == [("GL009", 16)]
    assert _found(SUMMED.replace("{summed}", "sum([v.detach().mean() for v in values])")) == []
