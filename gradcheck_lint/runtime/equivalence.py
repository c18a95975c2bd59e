"""Check that N accumulated micro-batches give the full batch's gradient, and explain when not."""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn


@dataclass(frozen=True, slots=True)
class ParamError:
    name: str
    max_abs: float
    max_rel: float


@dataclass(frozen=True, slots=True)
class AccumulationReport:
    """Per-parameter errors of the accumulated gradient against the full-batch gradient.

    Attributes:
        ok: the gradients agree within tolerance.
        scale: least-squares factor accumulated ≈ scale × reference (N when the loss is not divided).
        cause: "unscaled-loss", "scaled-twice", "batchnorm", "dropout", "mean-of-means" or "mismatch".
        code: "GL003" when the loss is not divided by N.
    """

    n: int
    params: tuple[ParamError, ...]
    ok: bool
    scale: float
    cause: str | None
    code: str | None
    explanation: str

    @property
    def max_abs(self) -> float:
        return max((p.max_abs for p in self.params), default=0.0)

    @property
    def max_rel(self) -> float:
        return max((p.max_rel for p in self.params), default=0.0)

    def __str__(self) -> str:
        head = "accumulation matches the full batch" if self.ok else f"accumulation does not match: {self.explanation}"
        worst = sorted(self.params, key=lambda p: -p.max_rel)[:5]
        rows = "\n".join(f"  {p.name}: max abs {p.max_abs:.3g}, max rel {p.max_rel:.3g}" for p in worst)
        return f"{head} (N={self.n}, scale {self.scale:.4g})\n{rows}"


def split_batch(batch: Any, n: int) -> list[Any]:
    """Split tensors (and tuples, lists, dicts of them) into n chunks along the first dimension."""
    if isinstance(batch, torch.Tensor):
        return list(torch.tensor_split(batch, n, dim=0))
    if isinstance(batch, (list, tuple)):
        parts = [split_batch(b, n) for b in batch]
        return [type(batch)(p[i] for p in parts) if not hasattr(batch, "_fields") else type(batch)(*(p[i] for p in parts)) for i in range(n)]
    if isinstance(batch, dict):
        parts_d = {k: split_batch(v, n) for k, v in batch.items()}
        return [{k: v[i] for k, v in parts_d.items()} for i in range(n)]
    return [batch] * n


def _grads(model: nn.Module) -> dict[str, torch.Tensor]:
    return {name: (p.grad.detach().clone() if p.grad is not None else torch.zeros_like(p)) for name, p in model.named_parameters() if p.requires_grad}


def _run(model: nn.Module, batch: Any, micro_step: Callable[[nn.Module, Any, int], Any], n: int, rng: Any) -> dict[str, torch.Tensor]:
    model.zero_grad(set_to_none=True)
    torch.set_rng_state(rng)
    if n == 1:
        micro_step(model, batch, 1)
    else:
        for chunk in split_batch(batch, n):
            micro_step(model, chunk, n)
    return _grads(model)


def _compare(ref: dict[str, torch.Tensor], acc: dict[str, torch.Tensor], rtol: float, atol: float) -> tuple[list[ParamError], bool, float]:
    errors = []
    ok = True
    num = den = 0.0
    for name, r in ref.items():
        a = acc[name]
        diff = (a - r).abs()
        scale = r.abs().max().item()
        max_abs = diff.max().item() if diff.numel() else 0.0
        max_rel = max_abs / scale if scale > 0 else (0.0 if max_abs == 0 else math.inf)
        errors.append(ParamError(name, max_abs, max_rel))
        if not torch.allclose(a, r, rtol=rtol, atol=atol):
            ok = False
        num += float((a.double() * r.double()).sum())
        den += float((r.double() * r.double()).sum())
    return errors, ok, (num / den if den > 0 else 1.0)


def _neutralise(model: nn.Module, kinds: tuple[type, ...]) -> None:
    for m in model.modules():
        if isinstance(m, kinds):
            part: nn.Module = m  # (torch's types are not read: see pyproject's mypy section)
            part.eval()


_BN = (nn.modules.batchnorm._BatchNorm,)
_DROPOUT = (nn.Dropout, nn.Dropout1d, nn.Dropout2d, nn.Dropout3d, nn.AlphaDropout)


def verify_accumulation(
    model: nn.Module,
    batch: Any,
    micro_step: Callable[[nn.Module, Any, int], Any],
    n: int,
    *,
    rtol: float = 1e-4,
    atol: float = 1e-6,
) -> AccumulationReport:
    """Compare the gradient of `batch` with the gradient accumulated over `n` micro-batches of it.

    Args:
        model: the model; it is never modified (the check runs on a deep copy, RNG state restored).
        batch: one full batch: a tensor, or a tuple/list/dict of tensors split along dim 0.
        micro_step: the training code's own micro-step, `micro_step(model, micro_batch, n)`: forward,
            loss (scaled as the training code scales it, e.g. `/ n`) and `backward()`.
        n: the number of micro-batches per optimizer step.

    Returns:
        An AccumulationReport with per-parameter errors and, on mismatch, the likely cause.
    """
    if n < 1:
        raise ValueError("n must be at least 1")
    rng = torch.get_rng_state()
    try:
        work = copy.deepcopy(model)
        ref = _run(work, batch, micro_step, 1, rng)
        acc = _run(work, batch, micro_step, n, rng)
        errors, ok, scale = _compare(ref, acc, rtol, atol)
        cause = code = None
        explanation = "the accumulated gradient equals the full-batch gradient"
        if not ok:
            cause, code, explanation = _explain(work, batch, micro_step, n, rng, scale, rtol, atol)
    finally:
        torch.set_rng_state(rng)
    return AccumulationReport(n, tuple(errors), ok, scale, cause, code, explanation)


def _explain(work: nn.Module, batch: Any, micro_step: Callable[[nn.Module, Any, int], Any], n: int, rng: Any,
             scale: float, rtol: float, atol: float) -> tuple[str, str | None, str]:
    if n > 1 and abs(scale - n) / n < 0.05:
        return ("unscaled-loss", "GL003",
                f"the accumulated gradient is {scale:.3g}x the full-batch gradient (N={n}): the loss is not divided "
                f"by N before backward() (GL003); use `(loss / {n}).backward()`.")
    if n > 1 and abs(scale - 1 / n) * n < 0.05:
        return ("scaled-twice", None,
                f"the accumulated gradient is 1/{n} of the full-batch gradient: the loss is divided by N twice "
                f"(or by N and again by the number of micro-batches).")
    for kinds, name, why in (
        (_BN, "batchnorm", "BatchNorm layers in train mode normalise each micro-batch with its own statistics"),
        (_DROPOUT, "dropout", "dropout draws different masks for the full batch and for the micro-batches"),
    ):
        if any(isinstance(m, kinds) and m.training for m in work.modules()):
            probe = copy.deepcopy(work)
            _neutralise(probe, kinds)
            ref = _run(probe, batch, micro_step, 1, rng)
            acc = _run(probe, batch, micro_step, n, rng)
            _, ok, _ = _compare(ref, acc, rtol, atol)
            if ok:
                return (name, None, f"the mismatch comes from {why}; with them in eval mode the gradients agree. "
                        "This is expected of accumulation, not a bug in the loop.")
    sizes = {int(c.shape[0]) for c in _tensors(split_batch(batch, n))}
    if len(sizes) > 1 or _has_token_mask(batch):
        return ("mean-of-means", None,
                "micro-batches hold different numbers of samples or tokens, and a per-micro-batch mean loss divided "
                "by N is a mean of means: weight each micro-batch by its share of the tokens instead.")
    return ("mismatch", None, f"the accumulated gradient differs from the full-batch gradient (scale {scale:.3g}); "
            "check for state carried between micro-batches.")


def _tensors(chunks: list[Any]) -> list[torch.Tensor]:
    out = []
    for c in chunks:
        if isinstance(c, torch.Tensor):
            out.append(c)
        elif isinstance(c, (list, tuple)) and c and isinstance(c[0], torch.Tensor):
            out.append(c[0])
        elif isinstance(c, dict):
            first = next((v for v in c.values() if isinstance(v, torch.Tensor)), None)
            if first is not None:
                out.append(first)
    return out


def _has_token_mask(batch: Any) -> bool:
    return isinstance(batch, dict) and any(k in batch for k in ("attention_mask", "loss_mask", "mask"))
