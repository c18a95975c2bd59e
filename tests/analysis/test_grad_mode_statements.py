"""`torch.set_grad_enabled(False)` on a line of its own switches autograd off from there on, on the paths that ran
it, across branches and iterations, until `torch.set_grad_enabled(True)` (Neural-SLAM's driver: off before the
episode loop, on around each step's training part, off again). A store there keeps no graph (GL008 silent); where
only some paths turned it off, or the flag is known only at run time, or the switch was a `with` block now left,
autograd may be on and the store is reported as before."""

import pytest

from support import lines_of

DRIVER = """
import torch


def main(args, envs, policy, loader):
    optimizer = torch.optim.Adam(policy.parameters())
    memory = torch.zeros(4, 8)
{switch_off}    for episode in range(10):
        for step in range(100):
            obs = envs.observe()
            if args.train_local:
                torch.set_grad_enabled(True)
            action = policy(obs)
            if args.train_local:
                local_loss = action.sum()
                torch.set_grad_enabled(False)
            memory[:, 4:] = policy(obs)
            torch.set_grad_enabled(True)
            optimizer.zero_grad()
            loss = policy(obs).mean()
            loss.backward()
            optimizer.step()
            torch.set_grad_enabled(False)
"""


@pytest.mark.parametrize("switch_off, reported", [
    ("    torch.set_grad_enabled(False)\n", False),
    ("    torch.set_grad_enabled(mode=False)\n", False),
    ("    torch.autograd.set_grad_enabled(False)\n", False),
    ("", True),  # the first iteration's store runs with autograd on
    ("    torch.set_grad_enabled(args.grad)\n", True),  # a flag known only at run time
    ("    with torch.set_grad_enabled(False):\n        pass\n", True),  # a block, left before the loop
], ids=["off-before-the-loop", "keyword", "autograd-module", "never-off", "run-time-flag", "with-block"])
def test_a_store_where_every_path_switched_autograd_off_keeps_no_graph(switch_off: str, reported: bool) -> None:
    text = DRIVER.format(switch_off=switch_off)
    store = 1 + text.splitlines().index("            memory[:, 4:] = policy(obs)")
    assert lines_of("GL008", text) == ([store] if reported else [])


ONE_BRANCH = """
import torch


def main(args, envs, policy):
    optimizer = torch.optim.Adam(policy.parameters())
    memory = torch.zeros(4, 8)
    for step in range(100):
        obs = envs.observe()
        if args.evaluate:
            torch.set_grad_enabled(False)
        memory[:, 4:] = policy(obs)
        optimizer.zero_grad()
        policy(obs).mean().backward()
        optimizer.step()
"""


def test_autograd_switched_off_on_some_paths_only_may_be_on() -> None:
    assert lines_of("GL008", ONE_BRANCH) == [12]
