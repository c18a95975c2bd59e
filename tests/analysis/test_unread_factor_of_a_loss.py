"""A loss multiplied by a factor whose value is not read may be divided by the window: GL003 is then `possible`.

FabianMenekshi's training function takes `grad_scale` as a parameter, and `main()` hands it `grad_scale=1.0 /
grad_accum_steps` through `**shared`, a dict the analysis did not resolve: `(warmup_loss * grad_scale).backward()`
in a window of `grad_accum_steps` micro-batches was reported as certainly not divided by the window (lockbox 40,
eight certain false GL003, kind 3, after its opening). The factor's value was not read: that it is not 1/N is an
assumption (`Assumption.FACTOR`). A factor read (a number, a value computed in sight) leaves the finding certain."""

from __future__ import annotations

from gradcheck_lint.engine import analyse_text

SOURCE = """\
import torch
import torch.nn as nn


def train(model, optimizer, loader, grad_accum_steps: int, grad_scale: float):
    for step in range(100):
        optimizer.zero_grad()
        for micro_step in range(grad_accum_steps):
            x, y = next(loader)
            loss = nn.functional.mse_loss(model(x), y)
            (loss * FACTOR).backward()
        optimizer.step()


def main():
    model = nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = iter([(torch.randn(2, 4), torch.randn(2, 1))] * 1000)
    train(model, optimizer, loader, 8, load_settings().grad_scale)


main()
"""
LINE = SOURCE.splitlines().index("            (loss * FACTOR).backward()") + 1


def _gl003(text: str) -> list[tuple[int, str]]:
    return [(d.span.line, d.certainty.value) for d in analyse_text(text, "train.py").diagnostics if d.code == "GL003"]


def test_a_factor_handed_in_may_be_the_windows_reciprocal() -> None:
    assert _gl003(SOURCE.replace("FACTOR", "grad_scale")) == [(LINE, "possible")]


def test_a_factor_read_leaves_the_finding_certain() -> None:
    assert _gl003(SOURCE.replace("FACTOR", "0.5")) == [(LINE, "certain")]
    text = SOURCE.replace("FACTOR", "weight").replace("    for step in range(100):", "    weight = 2.0\n    for step in range(100):")
    assert _gl003(text) == [(LINE + 1, "certain")]


def test_a_factor_of_one_term_of_a_sum_is_no_scale_of_the_loss() -> None:
    """`loss + w * aux` with `w` not read: `w` weighs a term, the sum is still not divided by N."""
    text = SOURCE.replace("(loss * FACTOR)", "(loss + grad_scale * loss.abs())")
    assert _gl003(text) == [(LINE, "certain")]
