"""What a method of an object the analysis knows nothing of returns holds its arguments' graphs only by assumption
(`calls`: `Value.vague_sites`), unless the method is a tensor's (an operator of PyTorch's autograd table, or a
conversion). HuGProject's agent stores `done = terminated or truncated` of `env.step(action)` (booleans) into a NumPy
buffer every step: a certain GL008 said the buffer kept the action's graph (lockbox 38, kind 3)."""

from __future__ import annotations

import pytest

from gradcheck_lint.engine import analyse_text

LOOP = """\
import torch


def run(env, buffer, n_steps):
    policy = torch.nn.Linear(3, 2)
    opt = torch.optim.Adam(policy.parameters())
    for step in range(n_steps):
        action = policy(torch.randn(3))
        flag = {call}
        buffer.append(flag)
        loss = -action.sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
"""


@pytest.mark.parametrize(("call", "possible"), [
    ("env.step(action)", True),  # an object out of sight: what its method returns is not read
    ("env.evaluate(action, 0.5)", True),
    ("env.mul(action)", False),  # a tensor operation on a receiver of unknown origin: the graph is carried
    ("env.sub(action)", False),
    ("env.to(action.device) + action", False),
    ("action.sum()", False),
])
def test_a_graph_through_a_method_of_an_unknown_object_is_assumed(call: str, possible: bool) -> None:
    found = [(d.code, d.possible) for d in analyse_text(LOOP.format(call=call), "train.py").diagnostics]
    assert found == [("GL008", possible)]
