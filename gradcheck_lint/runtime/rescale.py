"""Measure in-place rescaling of gradients (`p.grad /= N`) against a snapshot taken after backward."""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:
    from .observed import _Observed

SENTINEL_MAX_NUMEL = 4096
MAX_SENTINELS = 16
STRICT_SAMPLES = 64  # elements per large parameter compared in strict mode


def rescale_factor(obs: _Observed, snap: torch.Tensor | None) -> float | None:
    """The uniform factor `.grad` was multiplied by in place since its snapshot `snap` (taken by
    `obs` after the last backward pass); None if not uniform."""
    param = obs.param()
    if param is None or snap is None or param.grad is None or (obs.sample is None and param.grad.shape != snap.shape):
        return None
    now = obs.view(param.grad)
    if now.shape == snap.shape and torch.equal(now, snap):
        return 1.0  # untouched since the backward pass: one comparison instead of a measurement
    return uniform_factor([(now, snap)])


def uniform_factor(pairs: list[tuple[torch.Tensor, torch.Tensor]]) -> float | None:
    """The one factor every (now, before) pair was multiplied by, or None (not uniform, or nothing
    to compare). Pairs are concatenated per device: a few device syncs per step, not per parameter."""
    by_device: dict[torch.device, tuple[list[torch.Tensor], list[torch.Tensor]]] = {}
    for now, before in pairs:
        nows, befores = by_device.setdefault(now.device, ([], []))
        nows.append(now.reshape(-1).float())
        befores.append(before.reshape(-1).float())
    factors: list[float] = []
    for nows, befores in by_device.values():
        now, before = torch.cat(nows), torch.cat(befores)
        mask = before != 0
        if not bool(mask.any()):
            continue
        ratios = now[mask] / before[mask]
        r = float(ratios.mean())
        if not bool(torch.allclose(ratios, torch.full_like(ratios, r), rtol=1e-4, atol=0.0)):
            return None
        factors.append(r)
    if not factors or any(abs(f - factors[0]) > 1e-4 * abs(factors[0]) for f in factors):
        return None
    return factors[0]
