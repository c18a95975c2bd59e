"""Check the runtime guard on CUDA: the fixtures' verdicts equal the CPU's, and its overhead on a GPU-sized step.

    python benchmarks/gpu_check.py [--budget-seconds 420] [--pairs 30] [--skip-timing] [--skip-fixtures]

1. Verdicts. Every runnable fixture (`fixtures/**/*.py` not marked static-only) is run under the
   process-wide guard in record mode (`tests/runtime_worker.py`, as the test-suite runs them), once on
   the CPU as written and once translated to CUDA, and the (line, code) pairs each run reports are
   compared. The translation, installed in the worker before a fixture runs:
   - `torch.set_default_device("cuda")`: every tensor and module the fixture makes lands on the GPU;
   - `torch.autocast("cpu", ...)` becomes CUDA fp16 autocast, and `torch.amp.GradScaler("cpu")` a
     real CUDA GradScaler (dynamic fp16 loss scaling, inf/NaN checks, skipped steps);
   - `dist.init_process_group("gloo", ...)` becomes NCCL where NCCL is available (one rank);
   and the fixtures that use autocast run a third time with bf16 autocast (no GradScaler needed, but
   the fixtures' own scalers still run, as on a real bf16 loop that kept one).
   A fixture that fails on CUDA but not on the CPU (an explicit `device="cpu"` tensor meeting a CUDA
   one, say) is counted as "not translatable", not as a disagreement; one that fails on both alike is
   compared on what it reported before failing, as the test-suite does.
2. Overhead. A ~100M-parameter transformer (`tests/runtime_models.TinyTransformer`, dim 1024, 10
   layers) steps with AdamW under bf16 autocast (fp32 where bf16 is not supported), an unguarded model
   (A) and a guarded deep copy (B) interleaved A B, B A, with `torch.cuda.synchronize()` closing each
   step; the median of the pairs' B/A ratios minus one, and an A-vs-A control run the same way (the
   method of `guard_overhead.py`, see benchmarks/README.md).

Prints one summary line (and, above it, each disagreement). Exit 0 when every translatable fixture
agrees, 1 when one disagrees, 0 with a "no CUDA device" message when there is no GPU (nothing checked).
Meant to finish in under 8 minutes on one GPU: fixtures are skipped, and said so, once
`--budget-seconds` have gone by.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TESTS = ROOT / "tests"
WORKER = TESTS / "runtime_worker.py"
NO_CUDA = "gpu_check: no CUDA device (torch.cuda.is_available() is False): nothing was checked."


# -- the worker side: translate a CPU fixture to CUDA, then run it as the test-suite does
def _install_translation(mode: str) -> None:
    """Make the fixtures about to run use CUDA (`mode`: "fp16" or "bf16" autocast)."""
    import torch
    import torch.distributed as dist

    torch.set_default_device("cuda")
    target = torch.float16 if mode == "fp16" else torch.bfloat16
    autocast_init = torch.autocast.__init__  # `torch.amp.autocast` and `torch.cuda.amp.autocast` come here too

    def autocast(self, device_type, dtype=None, enabled=True, cache_enabled=None):  # type: ignore[no-untyped-def]
        if device_type == "cpu":
            device_type = "cuda"
        if device_type == "cuda":
            dtype = target
        return autocast_init(self, device_type, dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)

    torch.autocast.__init__ = autocast  # type: ignore[method-assign]
    scaler_init = torch.amp.GradScaler.__init__

    def scaler(self, device="cuda", *args, **kwargs):  # type: ignore[no-untyped-def]
        return scaler_init(self, "cuda" if device == "cpu" else device, *args, **kwargs)

    torch.amp.GradScaler.__init__ = scaler  # type: ignore[method-assign]
    if dist.is_available() and dist.is_nccl_available():
        init = dist.init_process_group

        def init_process_group(backend=None, *args, **kwargs):  # type: ignore[no-untyped-def]
            if backend == "gloo" or kwargs.get("backend") == "gloo":
                kwargs.pop("backend", None)
                backend = "nccl"
            return init(backend, *args, **kwargs)

        dist.init_process_group = init_process_group


def _worker(argv: list[str]) -> None:
    mode, paths = argv[0], argv[1:]
    if mode != "cpu":
        _install_translation(mode)
    sys.argv = [str(WORKER), *paths]
    sys.path.insert(0, str(TESTS))
    import runpy

    runpy.run_path(str(WORKER), run_name="__main__")  # prints the JSON and leaves with os._exit(0)


# -- the parent side
def _run(mode: str, paths: list[str], timeout: float) -> dict[str, dict[str, object]]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(TESTS), os.environ.get("PYTHONPATH", "")])}
    try:
        done = subprocess.run([sys.executable, __file__, "--worker", mode, *paths], capture_output=True, text=True,
                              env=env, timeout=timeout, cwd=ROOT)
    except subprocess.TimeoutExpired:
        return {p: {"found": [], "error": "timed out", "messages": []} for p in paths}
    lines = done.stdout.strip().splitlines()
    try:
        return json.loads(lines[-1]) if lines else {}
    except json.JSONDecodeError:
        return {p: {"found": [], "error": f"worker failed: {done.stderr.strip()[-300:]}", "messages": []} for p in paths}


def check_fixtures(budget: float) -> tuple[int, int, int, int, list[str]]:
    """(compared, agreed, not translatable, skipped for time, disagreements) over the modes."""
    sys.path.insert(0, str(TESTS))
    from support import load_fixtures, run_groups

    runnable = [f for f in load_fixtures() if not f.static_only]
    amp = [f for f in runnable if "autocast" in f.path.read_text(encoding="utf-8")]
    start = time.perf_counter()
    compared = agreed = untranslatable = skipped = 0
    disagreements: list[str] = []
    cpu: dict[str, dict[str, object]] = {}  # the CPU's verdicts, read once per fixture
    for mode, fixtures in (("fp16", runnable), ("bf16", amp)):
        for group in run_groups(fixtures):
            left = budget - (time.perf_counter() - start)
            if left <= 0:
                skipped += len(group)
                continue
            paths = [str(f.path) for f in group]
            missing = [p for p in paths if p not in cpu]
            if missing:
                cpu.update(_run("cpu", missing, left))
            gpu = _run(mode, paths, left)
            for path in paths:
                a, b = cpu.get(path), gpu.get(path)
                if a is None or b is None or a.get("error") == "timed out" or b.get("error") == "timed out":
                    skipped += 1
                    continue
                if b["error"] and not a["error"]:
                    untranslatable += 1
                    continue
                compared += 1
                found_a = sorted(map(tuple, a["found"]))  # type: ignore[arg-type]
                found_b = sorted(map(tuple, b["found"]))  # type: ignore[arg-type]
                if found_a == found_b:
                    agreed += 1
                else:
                    rel = os.path.relpath(path, ROOT)
                    disagreements.append(f"{rel} [{mode}]: CPU {found_a}, CUDA {found_b}"
                                         + (f" (CUDA error: {b['error']})" if b["error"] else ""))
    return compared, agreed, untranslatable, skipped, disagreements


def time_overhead(pairs: int) -> tuple[float, float, float, int]:
    """(guard %, control %, step ms, parameters) on a ~100M-parameter transformer."""
    import torch
    from torch import nn

    sys.path.insert(0, str(TESTS))
    from gradcheck_lint.runtime import guard
    from runtime_models import TinyTransformer

    device = "cuda"
    dtype = torch.bfloat16 if torch.cuda.is_bf16_supported() else None
    vocab = 8000
    x = torch.randint(0, vocab, (8, 256), device=device)
    y = torch.randint(0, vocab, (8, 256), device=device)

    def loss_of(m: nn.Module) -> torch.Tensor:
        if dtype is None:
            return nn.functional.cross_entropy(m(x).flatten(0, 1), y.flatten())
        with torch.autocast("cuda", dtype=dtype):
            return nn.functional.cross_entropy(m(x).flatten(0, 1).float(), y.flatten())

    def step(m: nn.Module, opt: torch.optim.Optimizer, backward: object) -> float:
        torch.cuda.synchronize()
        t = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        backward(loss_of(m))  # type: ignore[operator]
        opt.step()
        torch.cuda.synchronize()
        return time.perf_counter() - t

    def run(guarded: bool) -> tuple[float, float]:
        torch.manual_seed(0)
        a = TinyTransformer(vocab=vocab, dim=1024, heads=16, layers=10).to(device)
        b = copy.deepcopy(a)
        opt_a, opt_b = torch.optim.AdamW(a.parameters(), lr=1e-5), torch.optim.AdamW(b.parameters(), lr=1e-5)
        plain = torch.autograd.backward

        def backward_a(loss: torch.Tensor) -> None:  # torch's own backward for A, as guard_overhead.py does
            hooked = torch.autograd.backward
            torch.autograd.backward = plain  # type: ignore[assignment]
            try:
                loss.backward()
            finally:
                torch.autograd.backward = hooked  # type: ignore[assignment]

        def backward_b(loss: torch.Tensor) -> None:
            loss.backward()

        g = guard(b, opt_b) if guarded else None
        if g is not None:
            g.start()
        try:
            for _ in range(3):
                step(a, opt_a, backward_a)
                step(b, opt_b, backward_b)
            ratios, times = [], []
            for i in range(pairs):
                if i % 2 == 0:
                    ta = step(a, opt_a, backward_a)
                    tb = step(b, opt_b, backward_b)
                else:
                    tb = step(b, opt_b, backward_b)
                    ta = step(a, opt_a, backward_a)
                ratios.append(tb / ta)
                times.append(ta)
        finally:
            if g is not None:
                g.stop()
        del a, b, opt_a, opt_b
        torch.cuda.empty_cache()
        return (statistics.median(ratios) - 1) * 100, statistics.median(times) * 1e3

    params = sum(p.numel() for p in TinyTransformer(vocab=vocab, dim=1024, heads=16, layers=10).parameters())
    overhead, step_ms = run(True)
    control, _ = run(False)
    return overhead, control, step_ms, params


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--worker"]:
        _worker(argv[1:])
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--budget-seconds", type=float, default=420.0, help="time for the fixtures' runs")
    parser.add_argument("--pairs", type=int, default=30, help="interleaved pairs of the overhead run")
    parser.add_argument("--skip-timing", action="store_true")
    parser.add_argument("--skip-fixtures", action="store_true")
    args = parser.parse_args(argv)
    import torch

    if not torch.cuda.is_available():
        print(NO_CUDA)
        return 0
    start = time.perf_counter()
    parts = [f"gpu_check on {torch.cuda.get_device_name(0)}, torch {torch.__version__}:"]
    failed = False
    if not args.skip_fixtures:
        compared, agreed, untranslatable, skipped, disagreements = check_fixtures(args.budget_seconds)
        for line in disagreements:
            print(f"disagrees: {line}")
        failed = bool(disagreements)
        parts.append(f"verdicts equal on {agreed}/{compared} fixture runs (fp16 + real GradScaler, bf16, NCCL where used),"
                     f" {untranslatable} not translatable to CUDA, {skipped} skipped for time;")
    if not args.skip_timing:
        overhead, control, step_ms, params = time_overhead(args.pairs)
        parts.append(f"guard overhead {overhead:+.2f} % of a {step_ms:.1f} ms step of a {params / 1e6:.0f}M-parameter"
                     f" transformer (control A vs A {control:+.2f} %);")
    parts.append(f"{time.perf_counter() - start:.0f} s.")
    print(" ".join(parts))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
