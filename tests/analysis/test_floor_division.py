"""Floor division has no gradient: its result is a number, never a graph (minFM's window
`(total_batch_size + global_batch_size - 1) // global_batch_size`, read off a model built in another file,
was taken for a loss, so `loss / target_n_accum_steps` did not count as divided)."""

from __future__ import annotations

import ast

from gradcheck_lint.analysis.interpreter import Interpreter
from gradcheck_lint.engine import analyse_text

SOURCE = """\
import torch
m = torch.nn.Linear(2, 2)
x = torch.randn(2)
floored = m(x).sum() // 2
divided = m(x).sum() / 2
m(x).sum().backward()
opt = torch.optim.SGD(m.parameters(), lr=0.1)
opt.step()
"""


def _module_values() -> dict[str, object]:
    interp = Interpreter(ast.parse(SOURCE), SOURCE)
    interp.run()
    return dict(interp.module_env)


def test_floor_division_of_a_graph_is_a_number() -> None:
    env = _module_values()
    assert not env["floored"].reach  # type: ignore[attr-defined]


def test_true_division_keeps_the_graph() -> None:
    env = _module_values()
    assert env["divided"].reach  # type: ignore[attr-defined]


ANNEALED = """\
import numpy as np
import torch


def vae_loss(recon, x, mu, logvar, current_step, total_steps):
    recon_loss = torch.nn.functional.mse_loss(recon, x)
    cycle_length = total_steps // 3
    cycle_position = (current_step % cycle_length) / cycle_length
    beta = 0.05 + 0.5 * (1 + np.cos(cycle_position * np.pi))
    kld = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
    return recon_loss + beta * kld


def train(model, optimizer, dataloader, epochs, accumulation_steps):
    total_steps = epochs * ({steps})
    current_step = 0
    optimizer.zero_grad()
    for epoch in range(epochs):
        for batch_idx, (data, target) in enumerate(dataloader):
            recon, mu, logvar = model(data)
            loss = vae_loss(recon, target, mu, logvar, current_step, total_steps)
            (loss / accumulation_steps).backward()
            if (batch_idx + 1) % accumulation_steps == 0:
                optimizer.step()
                optimizer.zero_grad()
                current_step += 1
"""


def test_a_weight_annealed_over_a_count_of_steps_divides_no_loss() -> None:
    """CompressARC's VAE (lockbox 30's bug gl007-compressarc, after its opening: two certain GL003 on its buggy and its
    fixed versions): a KL weight annealed over `total_steps = epochs * (len(dataloader) // accumulation_steps)`
    optimizer steps; the loss it weights is divided by `accumulation_steps` once, at the backward."""
    for steps in ("len(dataloader) // accumulation_steps", "math.floor(len(dataloader) / accumulation_steps)"):
        source = ANNEALED.format(steps=steps).replace("import numpy", "import math\nimport numpy")
        assert [d.code for d in analyse_text(source, "train.py").diagnostics] == []
