"""Correct idioms found as false alarms on unseen code (imaginaire, pytorch_GAN_zoo), each with the
bug next to it that must still be reported."""

from __future__ import annotations

from gradcheck_lint.engine import analyse_text


def codes(text: str) -> list[tuple[int, str]]:
    return sorted((d.span.line, d.code) for d in analyse_text(text, "train.py").diagnostics)


SKIP = """\
import torch


def train(model, loader, scaler, skip_grad):
    opt = torch.optim.Adam(model.parameters())
    for x in loader:
        opt.zero_grad(set_to_none=True)
        scaler.scale(model(x).mean()).backward()
        scaler.unscale_(opt)
        total_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        if {test}:
            opt.zero_grad(set_to_none=True)
            scaler.step(opt)
            scaler.update()
            {leave}
        scaler.step(opt)
        scaler.update()
"""


def test_a_branch_that_empties_the_step_on_a_large_norm_and_leaves_is_deliberate() -> None:
    """imaginaire's trainer: `if torch.isfinite(norm) and norm > clip: if skip_grad: zero_grad(); step(); break`."""
    assert codes(SKIP.format(test="skip_grad", leave="continue")) == []
    assert codes(SKIP.format(test="torch.isfinite(total_norm) and total_norm > 10", leave="continue")) == []


def test_a_clear_before_the_step_that_does_not_leave_is_still_gl002() -> None:
    assert codes(SKIP.format(test="skip_grad", leave="pass")) == [(12, "GL002")]


TERMS = """\
import torch


def invert(netG, extractors, targets, steps):
    z = torch.randn(4, 8, requires_grad=True)
    opt = torch.optim.Adam([z])
    for _ in range(steps):
        opt.zero_grad()
        out = netG(z)
        for i in range(len(extractors)):
            loss = ((extractors[i](out) - targets[i]) ** 2).mean()
            loss.backward({retain})
        opt.step()
"""


def test_loss_terms_that_share_one_graph_are_one_objective() -> None:
    """pytorch_GAN_zoo's inspirational generation: one generator output, one loss per feature extractor."""
    assert codes(TERMS.format(retain="retain_graph=i != len(extractors) - 1")) == []


def test_a_loop_of_backward_passes_without_a_shared_graph_accumulates() -> None:
    text = TERMS.replace("        out = netG(z)\n", "").replace("extractors[i](out)", "extractors[i](netG(z))")
    assert codes(text.format(retain="")) == [(11, "GL003")]
