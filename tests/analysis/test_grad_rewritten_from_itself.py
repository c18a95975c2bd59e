"""An in-place write of `.grad` computed from that same `.grad` (`p.grad.copy_(p.grad.float())`, a clamp, a
division) keeps the backward's gradients: a clear after it still discards them before the step (GL002), and
a window never cleared still accumulates (GL001). The copy was taken for a replacement that ended the
backward's gradients, so it hid the clear that followed (lockbox 5's Fast-LLM reduction fastllm_fsdp_r2)."""

from __future__ import annotations

import pytest

from gradcheck_lint.engine import analyse_text
from support import parse_expected_findings

BUGS = {
    "copy_then_zero_before_gated_step": """\
import torch


def run(net, opt, batches, accum):
    for i, batch in enumerate(batches):
        (net(batch).mean() / accum).backward()
        for p in net.parameters():
            p.grad.copy_(p.grad.float())
            p.grad.zero_()  # expect: GL002
        if (i + 1) % accum == 0:
            opt.step()
            opt.zero_grad()
""",
    "clamped_copy_then_zero_before_step": """\
import torch


def run(net, opt, batches):
    for batch in batches:
        opt.zero_grad()
        net(batch).mean().backward()
        for p in net.parameters():
            p.grad.copy_(torch.clamp(p.grad, -1.0, 1.0))
            p.grad.zero_()  # expect: GL002
        opt.step()
""",
    "copied_back_never_cleared": """\
import torch


def run(net, opt, batches):
    for batch in batches:
        net(batch).mean().backward()
        for p in net.parameters():
            p.grad.copy_(p.grad.clamp(-1.0, 1.0))
        opt.step()  # expect: GL001
""",
}

CORRECT = {
    "clamped_copy_then_step": """\
import torch


def run(net, opt, batches):
    for batch in batches:
        opt.zero_grad()
        net(batch).mean().backward()
        for p in net.parameters():
            p.grad.copy_(p.grad.clamp(-1.0, 1.0))
        opt.step()
""",
    "divided_by_the_window_through_a_copy": """\
import torch


def run(net, opt, batches, accum):
    for i, batch in enumerate(batches):
        net(batch).mean().backward()
        if (i + 1) % accum == 0:
            for p in net.parameters():
                p.grad.copy_(p.grad / accum)
            opt.step()
            opt.zero_grad()
""",
    "saved_cleared_and_written_back": """\
import torch


def run(net, opt, batches):
    params = list(net.parameters())
    for batch in batches:
        opt.zero_grad()
        net(batch).mean().backward()
        saved = [p.grad.clone() for p in params]
        for p in params:
            p.grad.zero_()
        net(batch).pow(2).mean().backward()
        for i, p in enumerate(params):
            p.grad.copy_(saved[i])
        opt.step()
""",
}


def _found(text: str, codes: set[str]) -> tuple[set[tuple[int, str]], set[tuple[int, str]]]:
    expected = {(line, code) for line, code, _c in parse_expected_findings(text) if code in codes}
    found = {(d.span.line, d.code) for d in analyse_text(text, "train.py").diagnostics if d.code in codes}
    return expected, found


@pytest.mark.parametrize("name", sorted(BUGS))
def test_a_copy_of_the_gradients_into_themselves_keeps_them(name: str) -> None:
    expected, found = _found(BUGS[name], {"GL001", "GL002"})
    assert expected and found == expected


@pytest.mark.parametrize("name", sorted(CORRECT))
def test_rewritten_or_restored_gradients_that_reach_the_step_are_silent(name: str) -> None:
    expected, found = _found(CORRECT[name], {"GL001", "GL002", "GL003"})
    assert not expected and not found
