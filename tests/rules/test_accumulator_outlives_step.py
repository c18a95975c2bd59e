"""GL008 for an accumulator stored in a micro-batch loop whose step comes after the loop: reported when
it outlives a step (made once for the run, or reset in no loop that steps), not when each step's iteration
makes it afresh (one window's graphs, dropped at the next step: the rule's window exemption). The check
asked only whether the storing loop itself steps (lockbox 5's Fast-LLM reduction fastllm_r1f)."""

from __future__ import annotations

import pytest

from gradcheck_lint.engine import analyse_text
from support import parse_expected_findings

BUGS = {
    "list_made_once_for_the_run": """\
import torch


def fit(net, opt, loader):
    kept = []
    for chunk in loader:
        for piece in chunk:
            out = net(piece).mean()
            out.backward()
            kept.append(out)  # expect: GL008
        opt.step()
        opt.zero_grad()
""",
    "list_made_per_epoch_steps_per_chunk": """\
import torch


def fit(net, opt, loader, epochs):
    for epoch in range(epochs):
        kept = []
        for chunk in loader:
            for piece in chunk:
                out = net(piece).mean()
                out.backward()
                kept.append(out)  # expect: GL008
            opt.step()
            opt.zero_grad()
""",
    "attribute_made_in_init": """\
import torch


class Runner:
    def __init__(self, net, opt):
        self.net = net
        self.opt = opt
        self.kept = []

    def fit(self, loader):
        for chunk in loader:
            for piece in chunk:
                out = self.net(piece).mean()
                out.backward()
                self.kept.append(out)  # expect: GL008
            self.opt.step()
            self.opt.zero_grad()
""",
}

CORRECT = {
    "list_made_per_step": """\
import torch


def fit(net, opt, loader):
    for chunk in loader:
        kept = []
        for piece in chunk:
            out = net(piece).mean()
            out.backward()
            kept.append(out)
        opt.step()
        opt.zero_grad()
        print(sum(k.item() for k in kept))
""",
    "list_emptied_after_each_step": """\
import torch


def fit(net, opt, loader):
    kept = []
    for chunk in loader:
        for piece in chunk:
            out = net(piece).mean()
            out.backward()
            kept.append(out)
        opt.step()
        opt.zero_grad()
        kept.clear()
""",
    "list_local_to_a_window_helper": """\
import torch


def window(net, chunk):
    kept = []
    for piece in chunk:
        out = net(piece).mean()
        out.backward()
        kept.append(out)
    return sum(k.item() for k in kept)


def fit(net, opt, loader):
    for chunk in loader:
        window(net, chunk)
        opt.step()
        opt.zero_grad()
""",
    "attribute_reset_by_a_method_each_step": """\
import torch


class Runner:
    def __init__(self, net, opt):
        self.net = net
        self.opt = opt
        self.kept = []

    def reset(self):
        self.kept = []

    def fit(self, loader):
        for chunk in loader:
            self.reset()
            for piece in chunk:
                out = self.net(piece).mean()
                out.backward()
                self.kept.append(out)
            self.opt.step()
            self.opt.zero_grad()
""",
    "one_step_after_the_loop": """\
import torch


def task(net, opt, pieces):
    kept = []
    for piece in pieces:
        out = net(piece).mean()
        out.backward()
        kept.append(out)
    opt.step()
    opt.zero_grad()
    return kept
""",
}


def _gl008(text: str) -> tuple[set[int], set[int]]:
    expected = {line for line, code, _c in parse_expected_findings(text) if code == "GL008"}
    found = {d.span.line for d in analyse_text(text, "train.py").diagnostics if d.code == "GL008"}
    return expected, found


@pytest.mark.parametrize("name", sorted(BUGS))
def test_an_accumulator_that_outlives_a_step_is_reported(name: str) -> None:
    expected, found = _gl008(BUGS[name])
    assert expected and found == expected


@pytest.mark.parametrize("name", sorted(CORRECT))
def test_one_windows_graphs_are_not(name: str) -> None:
    expected, found = _gl008(CORRECT[name])
    assert not expected and not found


def test_the_message_names_the_loop_that_steps() -> None:
    text = BUGS["list_made_once_for_the_run"]
    [finding] = [d for d in analyse_text(text, "train.py").diagnostics if d.code == "GL008"]
    assert "the loop at line 6" in finding.message
