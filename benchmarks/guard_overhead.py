"""Print the runtime guard's overhead per training step, measured with the modes interleaved.

    python benchmarks/guard_overhead.py [--pairs 60] [--runs 3] [--strict] [--models cnn,transformer]

In ONE process, an unguarded model (A) and a guarded deep copy of it (B), each with its own AdamW,
are stepped alternately in pairs (A then B, then B then A for the next pair, ...), so machine drift
and cache effects land on both alike. Each pair gives the ratio B/A; the figure is the median of
those ratios minus one, per run. A's backward is torch's own (`torch.autograd.backward` as it was
before the guard started), so A pays nothing for B's guard. A control run pits A against an unguarded
copy (A vs A): its spread is the noise floor of this machine. The guard's own time is also measured
directly (its backward wrapper and step hooks, timed from the inside; the zero_grad wrapper is not
counted), and printed with each model's line.

Two processes (one per mode) were tried first: an A-vs-A control then differed by +30 %, so the two
models always share the process.
"""

from __future__ import annotations

import argparse
import copy
import statistics
import sys
import time
import warnings
from pathlib import Path
from typing import Callable

import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from runtime_models import SmallCNN, TinyTransformer  # noqa: E402

from gradcheck_lint.runtime import guard  # noqa: E402
from gradcheck_lint.runtime import probe as probe_module  # noqa: E402

LossOf = Callable[[nn.Module], torch.Tensor]


def make_cnn() -> tuple[nn.Module, LossOf]:
    model = SmallCNN()
    x, y = torch.randn(64, 3, 32, 32), torch.randint(0, 10, (64,))
    return model, lambda m: nn.functional.cross_entropy(m(x), y)


def make_transformer() -> tuple[nn.Module, LossOf]:
    vocab = 8000
    model = TinyTransformer(vocab=vocab, dim=256, heads=8, layers=6)
    x, y = torch.randint(0, vocab, (8, 64)), torch.randint(0, vocab, (8, 64))
    return model, lambda m: nn.functional.cross_entropy(m(x).flatten(0, 1), y.flatten())


MODELS = {"cnn": ("small CNN", make_cnn), "transformer": ("transformer", make_transformer)}


def one_step(model: nn.Module, opt: torch.optim.Optimizer, loss_of: LossOf, backward: Callable[..., None]) -> float:
    start = time.perf_counter()
    opt.zero_grad(set_to_none=True)
    backward(loss_of(model))
    opt.step()
    return time.perf_counter() - start


def run_pairs(make: Callable[[], tuple[nn.Module, LossOf]], pairs: int, guarded: bool, strict: bool) -> float:
    """Median over pairs of (B step time / A step time) - 1, in percent."""
    torch.manual_seed(0)
    model_a, loss_of = make()
    model_b = copy.deepcopy(model_a)
    opt_a = torch.optim.AdamW(model_a.parameters(), lr=1e-4)
    opt_b = torch.optim.AdamW(model_b.parameters(), lr=1e-4)
    plain_backward = torch.autograd.backward  # torch's own, saved before any guard starts

    def backward_a(loss: torch.Tensor) -> None:
        plain_backward(loss)

    def backward_b(loss: torch.Tensor) -> None:
        loss.backward()  # through the guard's wrapper when it is on

    g = guard(model_b, opt_b, strict=strict) if guarded else None
    if g is not None:
        g.start()
    try:
        for _ in range(3):  # warm-up
            one_step(model_a, opt_a, loss_of, backward_a)
            one_step(model_b, opt_b, loss_of, backward_b)
        ratios = []
        for i in range(pairs):
            if i % 2 == 0:
                a = one_step(model_a, opt_a, loss_of, backward_a)
                b = one_step(model_b, opt_b, loss_of, backward_b)
            else:
                b = one_step(model_b, opt_b, loss_of, backward_b)
                a = one_step(model_a, opt_a, loss_of, backward_a)
            ratios.append(b / a)
    finally:
        if g is not None:
            g.stop()
            assert len(g.report()) == 0, str(g.report())
    return (statistics.median(ratios) - 1) * 100


def guard_self_time(make: Callable[[], tuple[nn.Module, LossOf]], steps: int, strict: bool) -> tuple[float, float]:
    """(median µs per step spent in the guard's own code, median step ms), timed from the inside."""
    torch.manual_seed(0)
    model, loss_of = make()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    spent = [0.0]
    wrapped = []
    for name in ("before_backward", "after_backward", "_before_step", "_after_step"):
        original = getattr(probe_module.Probe, name)

        def timed(self, *args, _original=original, **kwargs):  # type: ignore[no-untyped-def]
            start = time.perf_counter()
            try:
                return _original(self, *args, **kwargs)
            finally:
                spent[0] += time.perf_counter() - start

        wrapped.append((name, original))
        setattr(probe_module.Probe, name, timed)
    per_step, step_times = [], []
    try:
        with guard(model, opt, strict=strict):
            for i in range(steps + 3):
                spent[0] = 0.0
                t = one_step(model, opt, loss_of, lambda loss: loss.backward())
                if i >= 3:
                    per_step.append(spent[0])
                    step_times.append(t)
    finally:
        for name, original in wrapped:
            setattr(probe_module.Probe, name, original)
    return statistics.median(per_step) * 1e6, statistics.median(step_times) * 1e3


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pairs", type=int, default=60)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--strict", action="store_true", help="measure strict mode instead of the default guard")
    parser.add_argument("--models", default="cnn,transformer")
    parser.add_argument("--no-control", action="store_true", help="skip the A-vs-A control runs")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    mode = "strict" if args.strict else "default"
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, {args.pairs} interleaved pairs per run, "
          f"{args.runs} runs, guard mode: {mode}")
    for key in args.models.split(","):
        name, make = MODELS[key]
        params = sum(p.numel() for p in make()[0].parameters())
        guarded = [run_pairs(make, args.pairs, True, args.strict) for _ in range(args.runs)]
        line = f"{name:12s} {params / 1e6:5.2f}M params  guard " + ", ".join(f"{r:+.2f} %" for r in guarded)
        if not args.no_control:
            control = [run_pairs(make, args.pairs, False, False) for _ in range(args.runs)]
            line += "  | control A vs A " + ", ".join(f"{r:+.2f} %" for r in control)
        own, step_ms = guard_self_time(make, max(10, args.pairs // 2), args.strict)
        line += f"  | guard's own code {own:.0f} µs of a {step_ms:.1f} ms step ({own / 1e3 / step_ms * 100:.2f} %)"
        print(line, flush=True)


if __name__ == "__main__":
    main()
