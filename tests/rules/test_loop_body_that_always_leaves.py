"""GL008 is about graphs kept across the iterations of a loop. A loop whose body always leaves after its first pass
(`total_loss += loss` then `break`, an OpenFL task runner's shape) keeps one graph, made afresh at each call: nothing
grows. A `break` taken only on some iterations, or a total kept across the calls, still grows."""

import textwrap

from gradcheck_lint import check_source
from gradcheck_lint.config import Settings

RUNNER = """
import torch

model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
{outside}

def train_epoch(loader):
    {inside}
    for x in loader:
        opt.zero_grad()
        loss = model(x).pow(2).mean()
        loss.backward()
        opt.step()
        total_loss += loss
{leave}
    return total_loss


for epoch in range(3):
    print(float(train_epoch([torch.randn(2, 4)] * 4)))
"""


def _gl008(outside: str, inside: str, leave: str) -> list[int]:
    text = textwrap.dedent(RUNNER.format(outside=outside, inside=inside, leave=leave))
    return [d.span.line for d in check_source(text, "runner.py", settings=Settings.default()) if d.code == "GL008"]


def test_a_body_that_always_breaks_keeps_one_graph() -> None:
    assert _gl008("", "total_loss = 0", "        break") == []


def test_a_break_on_some_iterations_only_still_keeps_many() -> None:
    assert _gl008("", "total_loss = 0", "        if float(loss) < 0.01:\n            break") == [15]


def test_a_total_kept_across_calls_still_grows() -> None:
    assert _gl008("total_loss = 0", "global total_loss", "        break") == [15]


SKIPPING = """
import torch

model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)


def train_step(loader, batch_num):
    total_loss = 0
    for idx, x in enumerate(loader):
        if idx < batch_num:
            continue
        opt.zero_grad()
        loss = model(x).pow(2).mean()
        loss.backward()
        opt.step()
        total_loss += loss
{leave}
    return total_loss


for b in range(4):
    print(float(train_step([torch.randn(2, 4)] * 4, b)))
"""


def _skipping(leave: str) -> list[int]:
    text = textwrap.dedent(SKIPPING.format(leave=leave))
    return [d.span.line for d in check_source(text, "runner.py", settings=Settings.default()) if d.code == "GL008"]


def test_a_loop_that_goes_round_only_before_keeping_keeps_one_graph() -> None:
    # OpenFL's vertical-FL step: earlier batches skipped with `continue`, the one it trains on followed by `break`
    assert _skipping("        break") == []


def test_a_loop_that_goes_round_after_keeping_still_keeps_many() -> None:
    assert _skipping("") == [17]
