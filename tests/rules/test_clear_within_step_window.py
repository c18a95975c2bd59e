"""GL002 for a clear that runs between a backward and the step it feeds, one loop or more outside the
backward's innermost loop: `for chunks in steps: for chunk in chunks: zero_grad(); for mb in chunk:
backward()`, then one step per step. Each chunk's clear drops the micro-batches of the chunks before it
(a gap lockbox 5's NeMo-RL reduction found). A clear whose loops all hold the step starts each window."""

from __future__ import annotations

import pytest

from gradcheck_lint.engine import analyse_text
from support import parse_expected_findings

BUGS = {
    "clear_per_chunk": """\
import torch


def pump(net, opt, schedule):
    for groups in schedule:
        for group in groups:
            opt.zero_grad()  # expect: GL002
            for sample in group:
                net(sample).mean().backward()
        opt.step()
""",
    "clear_per_chunk_and_per_step": """\
import torch


def pump(net, opt, schedule):
    for groups in schedule:
        opt.zero_grad()
        for group in groups:
            opt.zero_grad()  # expect: GL002
            for sample in group:
                net(sample).mean().backward()
        opt.step()
""",
    "clear_in_a_method_called_per_chunk": """\
import torch


class Worker:
    def __init__(self, net, opt):
        self.net = net
        self.opt = opt

    def release(self):
        self.opt.zero_grad()  # expect: GL002

    def run(self, group):
        for sample in group:
            self.net(sample).mean().backward()

    def finish(self):
        self.opt.step()


def pump(net, opt, schedule):
    worker = Worker(net, opt)
    for groups in schedule:
        for group in groups:
            worker.release()
            worker.run(group)
        worker.finish()
""",
    "clear_per_chunk_gated_step": """\
import torch


def pump(net, opt, parts_of_batches, accum):
    for i, parts in enumerate(parts_of_batches):
        opt.zero_grad()  # expect: GL002
        for piece in parts:
            (net(piece).mean() / accum).backward()
        if (i + 1) % accum == 0:
            opt.step()
""",
}

CORRECT = {
    "clear_starts_each_window": """\
import torch


def pump(net, opt, loader):
    for batch in loader:
        opt.zero_grad()
        for piece in batch.split(2):
            net(piece).mean().backward()
        opt.step()
""",
    "clear_and_step_per_chunk": """\
import torch


def pump(net, opt, schedule):
    for groups in schedule:
        for group in groups:
            opt.zero_grad()
            for sample in group:
                net(sample).mean().backward()
            opt.step()
""",
    "clear_on_the_first_chunk_only": """\
import torch


def pump(net, opt, schedule):
    for groups in schedule:
        for k, group in enumerate(groups):
            if k == 0:
                opt.zero_grad()
            for sample in group:
                net(sample).mean().backward()
        opt.step()
""",
    "clear_per_epoch_gated_step_over_chunks": """\
import torch


def pump(net, opt, epochs, loader, accum):
    for epoch in range(epochs):
        opt.zero_grad()
        for i, parts in enumerate(loader):
            for piece in parts:
                (net(piece).mean() / accum).backward()
            if (i + 1) % accum == 0:
                opt.step()
                opt.zero_grad()
""",
    "ranking_passes_cleared_by_a_helper_that_also_trains": """\
import torch


class Tuner:
    def __init__(self, net, loader):
        self.net = net
        self.loader = loader

    def batch(self, opt, x, rank):
        self.net.zero_grad()
        if rank:
            self.net(x).mean().backward()  # a ranking pass: its gradients feed hooks, never a step
        else:
            self.net(x).pow(2).mean().backward()
            opt.step()

    def epoch(self, opt=None, rank=False):
        for x in self.loader:
            self.batch(opt, x, rank)

    def train(self, opt, epochs):
        for _ in range(epochs):
            self.epoch(opt)

    def prune(self, opt, rounds):
        for _ in range(rounds):
            self.epoch(rank=True)
            self.train(opt, 1)


def main(net, loader):
    tuner = Tuner(net, loader)
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    tuner.train(opt, 2)
    tuner.prune(opt, 3)
""",
    "gradients_saved_before_each_chunks_clear": """\
import torch


def pump(net, opt, schedule):
    params = list(net.parameters())
    saved = [torch.zeros_like(p) for p in params]
    for groups in schedule:
        for group in groups:
            for sample in group:
                net(sample).mean().backward()
            for i, p in enumerate(params):
                saved[i].add_(p.grad)
            opt.zero_grad()
        for i, p in enumerate(params):
            p.grad.copy_(saved[i])
            saved[i].zero_()
        opt.step()
        opt.zero_grad()
""",
}


def _gl002(text: str) -> tuple[set[int], set[int]]:
    expected = {line for line, code, _c in parse_expected_findings(text) if code == "GL002"}
    found = {d.span.line for d in analyse_text(text, "train.py").diagnostics if d.code == "GL002"}
    return expected, found


@pytest.mark.parametrize("name", sorted(BUGS))
def test_a_clear_inside_the_steps_window_is_reported(name: str) -> None:
    expected, found = _gl002(BUGS[name])
    assert expected and found == expected


@pytest.mark.parametrize("name", sorted(CORRECT))
def test_a_clear_that_starts_a_window_is_not(name: str) -> None:
    expected, found = _gl002(CORRECT[name])
    assert not expected and not found


def test_the_message_names_the_loop_whose_earlier_iterations_are_lost() -> None:
    text = BUGS["clear_per_chunk"]
    [finding] = [d for d in analyse_text(text, "train.py").diagnostics if d.code == "GL002"]
    assert "from the earlier iterations of the loop at line 6, which `opt.step()` at line 10 follows" in finding.message
    inner = text.replace("            opt.zero_grad()  # expect: GL002\n", "").replace(
        "            for sample in group:\n", "            for sample in group:\n                opt.zero_grad()\n")
    [finding] = [d for d in analyse_text(inner, "train.py").diagnostics if d.code == "GL002"]
    assert "on micro-batches where `opt.step()` at line 10 does not run" in finding.message
