"""A slot of a buffer that outlives the loop (`losses[idx] = loss`) keeps that iteration's graph, as
`losses.append(loss)` does (allenai/open-instruct's reward-modeling metric buffers, GL008)."""

from __future__ import annotations

import pytest

from gradcheck_lint.engine import analyse_text


def codes(text: str) -> set[tuple[int, str]]:
    return {(d.span.line, d.code) for d in analyse_text(text, "train.py").diagnostics}


LOOP = """\
import torch

model = torch.nn.Linear(4, 1)
optimizer = torch.optim.AdamW(model.parameters())
losses = torch.zeros(100)
for idx, x in enumerate(torch.randn(100, 8, 4)):
{reset}    loss = model(x).pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses[idx] = {stored}
print(losses.mean())
"""


def test_a_graph_stored_in_a_slot_of_a_long_lived_buffer_is_kept_alive() -> None:
    assert (11, "GL008") in codes(LOOP.format(reset="", stored="loss"))


@pytest.mark.parametrize("reset,stored", [("", "loss.detach()"), ("", "loss.item()"),
                                          ("    losses = torch.zeros(100)\n", "loss")])
def test_a_value_without_graph_or_a_buffer_made_each_iteration_is_not(reset: str, stored: str) -> None:
    assert not any(code == "GL008" for _line, code in codes(LOOP.format(reset=reset, stored=stored)))
