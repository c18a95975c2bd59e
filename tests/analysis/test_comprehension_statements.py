"""A comprehension written as a statement runs its element once per element of its iterables, exactly as
the `for` loop it stands for (`analysis.comprehension_loops`): its calls of this file's methods, its steps
and clears are training events of a loop. The list the statement builds is thrown away; a comprehension
whose value is used keeps its reading as a value."""

from __future__ import annotations

import pytest

from gradcheck_lint import check_source


def codes(text: str) -> list[tuple[int, str]]:
    return sorted((d.line, d.code) for d in check_source(text))


# An ensemble of value heads updated one by one, then a policy loss built earlier through the heads is
# backpropagated: the heads' steps changed the weights its graph saved (GL009 on line 14).
AGENT = """\
import torch
from torch import nn


class Learner:
    def __init__(self):
        self.policy = nn.Linear(3, 2)
        self.heads = nn.ModuleList([nn.Linear(5, 1) for _ in range(3)])
        self.policy_optim = torch.optim.SGD(self.policy.parameters(), lr=0.1)
        self.head_optims = [torch.optim.SGD(h.parameters(), lr=0.1) for h in self.heads]

    def fit(self, loss, optim):
        optim.zero_grad()
        loss.backward()
        optim.step()

    def learn(self, stream):
        for state, ret in stream:
            act = self.policy(state)
            pi_loss = -torch.stack([h(torch.cat([state, act], 1)) for h in self.heads]).mean()
            head_losses = [(h(torch.cat([state, act.detach()], 1)) - ret).abs().mean() for h in self.heads]
{updates}
            self.fit(pi_loss, self.policy_optim)
"""

FOR_LOOP = """\
            for hl, ho in zip(head_losses, self.head_optims):
                self.fit(hl, ho)"""

STATEMENTS = {
    "list": "            [self.fit(hl, ho) for hl, ho in zip(head_losses, self.head_optims)]",
    "set": "            {self.fit(hl, ho) for hl, ho in zip(head_losses, self.head_optims)}",
    "dict": "            {k: self.fit(hl, ho) for k, (hl, ho) in enumerate(zip(head_losses, self.head_optims))}",
    "filtered": "            [self.fit(hl, ho) for hl, ho in zip(head_losses, self.head_optims) if hl.requires_grad]",
    "consumed-generator": "            list(self.fit(hl, ho) for hl, ho in zip(head_losses, self.head_optims))",
    "any": "            any(self.fit(hl, ho) for hl, ho in zip(head_losses, self.head_optims))",
    "list-of-map": "            list(map(self.fit, head_losses, self.head_optims))",
}


def test_the_for_loop_finds_the_stale_policy_graph() -> None:
    assert codes(AGENT.format(updates=FOR_LOOP)) == [(14, "GL009")]


@pytest.mark.parametrize("statement", STATEMENTS.values(), ids=list(STATEMENTS))
def test_a_comprehension_statement_is_read_as_that_for_loop(statement: str) -> None:
    assert codes(AGENT.format(updates=statement)) == codes(AGENT.format(updates=FOR_LOOP)) == [(14, "GL009")]


# the correct order: the heads are updated first, the policy's loss is built through them afterwards
AGENT_CORRECT = AGENT.replace(
    "            pi_loss = -torch.stack([h(torch.cat([state, act], 1)) for h in self.heads]).mean()\n", ""
).replace(
    "            self.fit(pi_loss, self.policy_optim)",
    "            pi_loss = -torch.stack([h(torch.cat([state, act], 1)) for h in self.heads]).mean()\n"
    "            self.fit(pi_loss, self.policy_optim)",
)


@pytest.mark.parametrize("statement", STATEMENTS.values(), ids=list(STATEMENTS))
def test_heads_updated_before_the_policy_forward_is_silent(statement: str) -> None:
    assert "pi_loss = -torch" in AGENT_CORRECT
    assert codes(AGENT_CORRECT.format(updates=statement)) == []


def test_a_generator_expression_alone_runs_nothing() -> None:
    """`(f(x) for x in xs)` as a statement makes a generator nobody iterates: no update ran."""
    lazy = "            (self.fit(hl, ho) for hl, ho in zip(head_losses, self.head_optims))"
    assert codes(AGENT.format(updates=lazy)) == []


# Clears written as a comprehension statement clear every optimizer of the list on each iteration
CLEARS = """\
import torch
from torch import nn

encoder, decoder = nn.Linear(4, 4), nn.Linear(4, 4)
optims = [torch.optim.SGD(encoder.parameters(), lr=0.1), torch.optim.SGD(decoder.parameters(), lr=0.1)]
for x in torch.randn(10, 2, 4):
{clear}
    decoder(encoder(x)).pow(2).mean().backward()
    [o.step() for o in optims]
"""


def test_clears_and_steps_in_comprehension_statements_are_a_training_loop() -> None:
    assert codes(CLEARS.format(clear="    [o.zero_grad() for o in optims]")) == []


def test_steps_in_a_comprehension_statement_without_clears_apply_stale_gradients() -> None:
    assert codes(CLEARS.format(clear="    pass")) == [(9, "GL001")]


def test_a_comprehension_statement_in_another_file_of_the_project_is_read_from_that_file(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The loop made for a comprehension in a helper of another file takes its text from the loop itself, not
    from the file being checked at its borrowed line numbers: TextClassificationBenchmark's `utils.clip_gradient`
    (its comprehension far below the end of a short `main.py`) was an internal error (IndexError, GL000)."""
    from gradcheck_lint.api import check_file
    from support import project_tree

    helper = "\n" * 40 + (
        "def clip_gradient(optimizer, grad_clip):\n"
        "    [p.grad.data.clamp_(-grad_clip, grad_clip) for group in optimizer.param_groups for p in group['params']]\n")
    main = (
        "import torch\n"
        "import utils\n"
        "model = torch.nn.Linear(4, 1)\n"
        "optimizer = torch.optim.Adam(model.parameters())\n"
        "for x in loader:\n"
        "    model(x).sum().backward()\n"
        "    utils.clip_gradient(optimizer, 1.0)\n"
        "    optimizer.step()\n")
    root = project_tree(tmp_path / "p", {"utils.py": helper, "main.py": main})
    found = check_file(str(root / "main.py"))
    assert [(d.code, d.span.line) for d in found] == [("GL001", 8)]
