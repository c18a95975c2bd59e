"""A test bound to a name (`update = (self.done + 1) % N == 0`) holds the truth it had when it was computed:
when the counter it reads moves before the name is tested (`self.done += 1; ...; if update:`), the test is
read with the counter as it was, not as it is at the `if` (a GL004 false alarm on lockbox 5's pytorch/tnt
reductions tnt_r1..r4, and a first-micro-batch step missed when the bound test is the off-by-one one)."""

from __future__ import annotations

import pytest

from gradcheck_lint.engine import analyse_text
from support import parse_expected_findings

UNIT = """\
import torch
from torch.nn.parallel import DistributedDataParallel as DDP


class Unit:
    def __init__(self, net, opt, accum):
        self.net = DDP(net)
        self.opt = opt
        self.accum = accum
        self.done = 0

    def train_step(self, batch):
        update = {test}{expect}
        loss = self.net(batch).mean() / self.accum
        loss.backward()  # expect: GL006
        self.done += 1
        if update:
            self.opt.step()
            self.opt.zero_grad()


def fit(net, opt, loader, accum):
    unit = Unit(net, opt, accum)
    for batch in loader:
        unit.train_step(batch)
"""

LOOP = """\
import torch


def fit(net, opt, loader, accum):
    seen = 0
    for batch in loader:
        {first}
        {second}
        (net(batch).mean() / accum).backward()
        if update:
            opt.step()
            opt.zero_grad()
"""

CASES = {
    # bound before the increment: `(done + 1) % N` counts this micro-batch, as the increment after it does
    "unit_counted_from_one_before_the_increment": UNIT.format(test="(self.done + 1) % self.accum == 0", expect=""),
    # `done % N == 0` bound while `done` is 0 lets the step run on the first micro-batch
    "unit_zero_based_before_the_increment": UNIT.format(test="self.done % self.accum == 0", expect="  # expect: GL004"),
    "loop_counted_from_one_before_the_increment": LOOP.format(first="update = (seen + 1) % accum == 0", second="seen += 1"),
    "loop_zero_based_before_the_increment": LOOP.format(first="update = seen % accum == 0  # expect: GL004", second="seen += 1"),
    # bound after the increment: the test reads the counter already moved
    "loop_counted_from_one_after_the_increment": LOOP.format(first="seen += 1", second="update = (seen + 1) % accum == 0  # expect: GL004"),
    "loop_counted_after_the_increment": LOOP.format(first="seen += 1", second="update = seen % accum == 0"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_bound_test_reads_the_counter_it_was_computed_with(name: str) -> None:
    text = CASES[name]
    expected = {(line, code) for line, code, _c in parse_expected_findings(text) if code in ("GL004", "GL006")}
    found = {(d.span.line, d.code) for d in analyse_text(text, "train.py").diagnostics if d.code in ("GL004", "GL006")}
    assert found == expected


def test_the_message_shows_the_test_as_written_and_the_value_it_read() -> None:
    text = CASES["unit_zero_based_before_the_increment"]
    [finding] = [d for d in analyse_text(text, "train.py").diagnostics if d.code == "GL004"]
    assert "`if self.done % self.accum == 0:` lets `self.opt.step()` run on the first micro-batch" in finding.message
    assert "`self.done` is 0 there" in finding.message


def test_a_counter_moved_in_a_loop_the_binding_is_not_in_leaves_a_plain_flag() -> None:
    # how many times the inner loop moved `seen` is unknown: the flag's test is not read at the `if`
    text = """\
import torch


def fit(net, opt, loader, accum):
    seen = 0
    for parts in loader:
        update = seen % accum == 0
        for piece in parts:
            seen += 1
            (net(piece).mean() / accum).backward()
        if update:
            opt.step()
            opt.zero_grad()
"""
    assert not [d for d in analyse_text(text, "train.py").diagnostics if d.code == "GL004"]
