"""Print the runtime guard's overhead per training step, beside torch.autograd.detect_anomaly().

    python benchmarks/guard_overhead.py [--steps 40]

Medians over many steps of one run, per model (a small CNN and a transformer built from torch.nn),
with the guard off, on (default mode), on in strict mode (every gradient copied and measured at
each step), and with detect_anomaly() for scale. Target: default guard ≤ 1 %; strict is opt-in and
its price is what this prints.
"""

from __future__ import annotations

import argparse
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


def make_cnn() -> tuple[nn.Module, Callable[[nn.Module], torch.Tensor]]:
    model = SmallCNN()
    x, y = torch.randn(64, 3, 32, 32), torch.randint(0, 10, (64,))
    return model, lambda m: nn.functional.cross_entropy(m(x), y)


def make_transformer() -> tuple[nn.Module, Callable[[nn.Module], torch.Tensor]]:
    vocab = 8000
    model = TinyTransformer(vocab=vocab, dim=256, heads=8, layers=6)
    x, y = torch.randint(0, vocab, (8, 64)), torch.randint(0, vocab, (8, 64))
    return model, lambda m: nn.functional.cross_entropy(m(x).flatten(0, 1), y.flatten())


def step_times(model: nn.Module, loss_of: Callable[[nn.Module], torch.Tensor], steps: int, mode: str) -> list[float]:
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    times = []
    g = guard(model, opt, strict=mode == "strict") if mode in ("guard", "strict") else None
    if g:
        g.start()
    try:
        for i in range(steps + 3):
            start = time.perf_counter()
            opt.zero_grad(set_to_none=True)
            if mode == "anomaly":
                with torch.autograd.detect_anomaly(check_nan=True):
                    loss_of(model).backward()
            else:
                loss_of(model).backward()
            opt.step()
            if i >= 3:  # warm-up excluded
                times.append(time.perf_counter() - start)
    finally:
        if g:
            g.stop()
    return times


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=40)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    torch.manual_seed(0)
    torch.set_num_threads(max(1, torch.get_num_threads()))
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, {args.steps} steps per mode (medians)")
    for name, make in (("small CNN", make_cnn), ("transformer", make_transformer)):
        model, loss_of = make()
        params = sum(p.numel() for p in model.parameters())
        # interleave the modes in rounds so drift in machine load hits them alike
        results: dict[str, list[float]] = {"off": [], "guard": [], "strict": [], "anomaly": []}
        rounds = 4
        for _ in range(rounds):
            for mode in results:
                n = max(2, args.steps // rounds // (4 if mode == "anomaly" else 1))
                results[mode] += step_times(model, loss_of, n, mode)
        off = statistics.median(results["off"])
        on = statistics.median(results["guard"])
        strict = statistics.median(results["strict"])
        anomaly = statistics.median(results["anomaly"])
        print(f"{name:12s} {params / 1e6:6.2f}M params  off {off * 1e3:8.2f} ms  guard {on * 1e3:8.2f} ms "
              f"({(on / off - 1) * 100:+.2f} %)  strict {strict * 1e3:8.2f} ms ({(strict / off - 1) * 100:+.1f} %)  "
              f"detect_anomaly {anomaly * 1e3:8.2f} ms ({(anomaly / off - 1) * 100:+.1f} %)")


if __name__ == "__main__":
    main()
