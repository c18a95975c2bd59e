"""Print the runtime guard's overhead per training step, measured with the modes interleaved.

    python benchmarks/guard_overhead.py [--pairs 60] [--min-seconds 20] [--runs 3] [--strict] [--models cnn,transformer,gan]
        [--models cnn-lr: the small CNN with a StepLR scheduler stepped after each step]
        [--threads N] [--own-steps 100] [--own-warmup 100]

`gan` is a loop, not one model: a small MLP GAN (0.17M parameters) with two Adam optimizers and an
accumulation window of 2 for each (`GanLoop`), an iteration of about 4 ms on an idle core; its A and B
are built alike from one seed, and its own time is timed per iteration (`loop_self_time`).

In ONE process, an unguarded model (A) and a guarded deep copy of it (B), each with its own AdamW,
are stepped alternately in pairs (A then B, then B then A for the next pair, ...), so machine drift
and cache effects land on both alike. Each pair gives the ratio B/A; the figure is the median of
those ratios minus one, per run; two such medians are printed, of the wall times and of the CPU times of
the training thread (`time.thread_time`: autograd runs its CPU work on the calling thread), which the
other processes of a loaded machine disturb much less. A run has at least `--pairs` pairs, and more until it lasted
`--min-seconds`: 60 pairs of the small CNN take a second, and on a shared machine their median
moved by several percent from run to run (the transformer's 60 pairs take about 14 s). Both call `loss.backward()`; for A's
call `torch.autograd.backward` is torch's own (as it was before the guard started), so A pays nothing for
B's guard, and B is not charged for `Tensor.backward`'s own preamble (before 2026-11-26's fifth session A
called torch's function directly, and that preamble counted as the guard's). A control run pits A against an unguarded
copy (A vs A): its spread is the noise floor of this machine. The guard's own time is also measured
directly, timed from the inside over `--own-steps` steps of a guarded model (median per step) after
`--own-warmup` guarded steps (the guard's start-up): its
`zero_grad` and `torch.autograd.backward` wrappers minus the torch functions they call, and its step
pre- and post-hooks; printed with each model's line, as a share of the step and per entry point, and
the share and the median of the steps on cycles the guard verifies (read between steps: `_verifying`).

Two processes (one per mode) were tried first: an A-vs-A control then differed by +30 %, so the two
models always share the process.

glibc's allocator: by default the script re-runs itself with `MALLOC_MMAP_THRESHOLD_`,
`MALLOC_TRIM_THRESHOLD_` and `MALLOC_TOP_PAD_` set high (`--system-malloc` keeps glibc's defaults).
With the defaults, the CNN's 4 MB activations are mapped and unmapped, or the heap trimmed, on some
steps and not others, as glibc's dynamic thresholds move: one `zero_grad` took 1 ms where it takes
45 µs, the step 12.4 ms in one process and 7.7 ms in the next, and an A-vs-A control's median moved
between -2.5 % and +2.1 % (2026-11-26, seventh session). With the allocator held still, the step
takes 7.7 ms and the control stays within ±0.3 %. It does not change what the guard does; it makes
the step shorter, so the guard's share comes out larger, not smaller. Production setups often
replace glibc's allocator (jemalloc, tcmalloc) for the same reason.
"""

from __future__ import annotations

import argparse
import copy
import os
import statistics
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from gradcheck_lint.runtime import (
    guard,
    torch_patches,
)
from runtime_models import SmallCNN, TinyTransformer

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


def make_cnn_lr() -> tuple[nn.Module, LossOf]:
    """The small CNN, its optimizer stepped through an LR scheduler (`SCHEDULED`): torch's `LRScheduler`
    wraps `optimizer.step`, one more frame between the step hooks and the loop's call."""
    return make_cnn()


MODELS = {"cnn": ("small CNN", make_cnn), "transformer": ("transformer", make_transformer),
          "cnn-lr": ("CNN + StepLR", make_cnn_lr)}
SCHEDULED = {make_cnn_lr}  # a `StepLR` per optimizer, stepped after each optimizer step (`one_step`)


def _scheduler(make: Callable[..., Any], opt: torch.optim.Optimizer) -> Any:
    return torch.optim.lr_scheduler.StepLR(opt, step_size=1000, gamma=0.9) if make in SCHEDULED else None


class GanLoop:
    """One iteration of a small MLP GAN with gradient accumulation and two optimizers (about 4 ms here):
    the discriminator's window of `accum` micro-batches (real vs detached fakes), its step, then the
    generator's window (its loss also writes the discriminator's gradients, which the next iteration's
    `opt_D.zero_grad()` clears), its step. A correct loop: the guard must stay silent on it."""

    def __init__(self, seed: int = 0, accum: int = 2, batch: int = 64, noise: int = 32, width: int = 256, data: int = 64) -> None:
        torch.manual_seed(seed)
        self.G = nn.Sequential(nn.Linear(noise, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU(), nn.Linear(width, data))
        self.D = nn.Sequential(nn.Linear(data, width), nn.LeakyReLU(0.2), nn.Linear(width, width), nn.LeakyReLU(0.2),
                               nn.Linear(width, 1))
        self.opt_G = torch.optim.Adam(self.G.parameters(), lr=2e-4, betas=(0.5, 0.999))
        self.opt_D = torch.optim.Adam(self.D.parameters(), lr=2e-4, betas=(0.5, 0.999))
        self.accum = accum
        self.real = torch.randn(accum, batch, data)
        self.z = torch.randn(accum, batch, noise)
        self.ones, self.zeros = torch.ones(batch, 1), torch.zeros(batch, 1)

    def step(self, backward: Callable[[torch.Tensor], None],
             clear: Callable[[torch.optim.Optimizer], None] | None = None) -> tuple[float, float]:
        """One iteration; its wall time and the CPU time of this thread (autograd runs CPU work on it).
        `clear`: calls each `zero_grad(set_to_none=True)` (`SelfTimer.clear`), else the loop does."""
        bce = nn.functional.binary_cross_entropy_with_logits
        cpu, start = time.thread_time(), time.perf_counter()
        if clear is None:
            self.opt_D.zero_grad(set_to_none=True)
        else:
            clear(self.opt_D)
        for k in range(self.accum):
            fake = self.G(self.z[k]).detach()
            d_loss = (bce(self.D(self.real[k]), self.ones) + bce(self.D(fake), self.zeros)) / self.accum
            backward(d_loss)
        self.opt_D.step()
        if clear is None:
            self.opt_G.zero_grad(set_to_none=True)
        else:
            clear(self.opt_G)
        for k in range(self.accum):
            g_loss = bce(self.D(self.G(self.z[k])), self.ones) / self.accum
            backward(g_loss)
        self.opt_G.step()
        return time.perf_counter() - start, time.thread_time() - cpu


LOOPS = {"gan": ("MLP GAN, 2 optimizers, accumulation 2", GanLoop)}


Result = tuple[tuple[float, float], int]  # (median B/A - 1 in % by wall time, by this thread's CPU time), pairs


def _medians(ratios: list[tuple[float, float]]) -> tuple[float, float]:
    return ((statistics.median(r[0] for r in ratios) - 1) * 100, (statistics.median(r[1] for r in ratios) - 1) * 100)


def run_loop_pairs(make: Callable[[], GanLoop], pairs: int, guarded: bool, strict: bool,
                   min_seconds: float = 0.0) -> Result:
    """`run_pairs` for a loop of several models and optimizers: A and B built alike from one seed."""
    loop_a, loop_b = make(), make()
    plain_backward = torch.autograd.backward

    def backward_a(loss: torch.Tensor) -> None:
        hooked = torch.autograd.backward
        torch.autograd.backward = plain_backward  # type: ignore[assignment]
        try:
            loss.backward()
        finally:
            torch.autograd.backward = hooked  # type: ignore[assignment]

    def backward_b(loss: torch.Tensor) -> None:
        loss.backward()

    g = guard({"G": loop_b.G, "D": loop_b.D}, [loop_b.opt_G, loop_b.opt_D], strict=strict) if guarded else None
    if g is not None:
        g.start()
    try:
        for _ in range(3):
            loop_a.step(backward_a)
            loop_b.step(backward_b)
        ratios = []
        start = time.perf_counter()
        i = 0
        while i < pairs or time.perf_counter() - start < min_seconds:
            if i % 2 == 0:
                a = loop_a.step(backward_a)
                b = loop_b.step(backward_b)
            else:
                b = loop_b.step(backward_b)
                a = loop_a.step(backward_a)
            ratios.append((b[0] / a[0], b[1] / max(a[1], 1e-9)))
            i += 1
    finally:
        if g is not None:
            g.stop()
            assert len(g.report()) == 0, str(g.report())
    return _medians(ratios), len(ratios)


class SelfTimer:
    """The guard's own time per iteration, timed from the outside so that the guard sees the frames it
    sees in a real loop (a timing wrapper between the user's call and the guard's entry point would
    change them): each `zero_grad(set_to_none=True)` and `loss.backward()` call is timed from the loop,
    minus the torch function the guard calls (the optimizer class's `zero_grad`, `torch.autograd.backward`
    as the guard holds it); the step hooks are timed between hooks of the benchmark's own around the
    guard's (a global pre-hook and a per-optimizer one added after the guard's; a per-optimizer
    post-hook added before the guard's and a global one). The same is measured unguarded first, with the
    same timing hooks (two step intervals, as guarded), and its median (the timers, torch's loop over the
    hooks and `Tensor.backward`'s preamble) is taken off each entry point."""

    KEYS = ("zero_grad", "backward", "step")

    def __init__(self, opts: list[torch.optim.Optimizer]) -> None:
        self.opts = opts
        self.clock = time.perf_counter
        self.spent = dict.fromkeys(self.KEYS, 0.0)
        self.inner = dict.fromkeys(self.KEYS, 0.0)
        self.mark = 0.0
        self.saved: list[tuple[Any, str, Any]] = []
        self.handles: list[Any] = []

    def _timed(self, fn: Callable[..., Any], key: str) -> Callable[..., Any]:
        clock, inner = self.clock, self.inner

        def call(*args: Any, **kwargs: Any) -> Any:
            start = clock()
            try:
                return fn(*args, **kwargs)
            finally:
                inner[key] += clock() - start

        return call

    def patch_classes(self) -> None:
        """Before the guard starts: it binds the optimizer class's `zero_grad` when it wraps it."""
        for cls in {type(o) for o in self.opts}:
            self.saved.append((cls, "zero_grad", cls.__dict__.get("zero_grad")))
            cls.zero_grad = self._timed(cls.zero_grad, "zero_grad")  # type: ignore[method-assign]

    def _open(self) -> None:
        self.mark = self.clock()

    def _close(self) -> None:
        self.spent["step"] += self.clock() - self.mark

    def hooks_before_guard(self) -> None:
        from torch.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook

        self.handles.append(register_optimizer_step_pre_hook(lambda *_a: self._open()))
        self.handles.append(register_optimizer_step_post_hook(lambda *_a: self._close()))
        for o in self.opts:
            self.handles.append(o.register_step_post_hook(lambda *_a: self._open()))

    def hooks_after_guard(self) -> list[Any]:
        """The per-optimizer pre-hooks that close the guard's pre-hook interval; also registered for the
        unguarded floor (then removed before the guard starts, and registered again after it), so that the
        floor holds the same two timed intervals per step as the guarded steps."""
        added = [o.register_step_pre_hook(lambda *_a: self._close()) for o in self.opts]
        self.handles.extend(added)
        return added

    def clear(self, opt: torch.optim.Optimizer) -> None:
        start = self.clock()
        opt.zero_grad(set_to_none=True)
        self.spent["zero_grad"] += self.clock() - start

    def backward(self, loss: torch.Tensor) -> None:
        start = self.clock()
        loss.backward()
        self.spent["backward"] += self.clock() - start

    def reset(self) -> None:
        for k in self.KEYS:
            self.spent[k] = self.inner[k] = 0.0

    def own(self) -> dict[str, float]:
        return {k: self.spent[k] - self.inner[k] for k in self.KEYS}

    def restore(self) -> None:
        for h in self.handles:
            h.remove()
        for owner, name, original in self.saved:
            if original is None:
                delattr(owner, name)
            else:
                setattr(owner, name, original)


OWN_WARMUP = 100  # guarded iterations not timed (`--own-warmup`): past GL008's first tags and the first verified cycles


def _self_time(opts: list[torch.optim.Optimizer], start_guard: Callable[[], Any], iterate: Callable[[SelfTimer], float],
               steps: int) -> tuple[dict[str, float], float]:
    """`SelfTimer` over `steps` iterations, unguarded then guarded: {entry point: median µs} and the
    median iteration in ms (guarded). The first `OWN_WARMUP` guarded iterations are not timed: they hold
    the guard's start-up (the first `TAG_ALL` passes of each backward line tagged for GL008, the first
    `VERIFY_ALL` cycles verified), not its cost per step; of the steady cycles timed then, the median is
    one not sampled (the sampled ones, one in 8 to one in 64 as the schedule thins out, show in the
    interleaved ratios; a mean of the totals, tried, is dominated by preemption on a loaded machine).
    (Before 2026-11-30 the timing started after 3 iterations: with 200 timed steps of the CNN, the 64 tagged passes and the first 8 cycles were a
    third of them, and the median fell near the edge between the two kinds of step.)"""
    timer = SelfTimer(opts)
    timer.patch_classes()
    timer.hooks_before_guard()
    floor_hooks = timer.hooks_after_guard()  # (until 2026-11-30 the floor had one step interval, the guard two)
    base: dict[str, list[float]] = {k: [] for k in SelfTimer.KEYS}
    per_step: dict[str, list[float]] = {k: [] for k in (*SelfTimer.KEYS, "total")}
    verified: list[float] = []  # the totals of the iterations a replayed cycle verified (`_verifying`)
    times = []
    plain_backward = torch.autograd.backward
    try:
        torch.autograd.backward = timer._timed(plain_backward, "backward")  # type: ignore[assignment]
        try:
            for i in range(steps // 2 + 3):  # unguarded: the timers' own cost and torch's preamble
                timer.reset()
                iterate(timer)
                if i >= 3:
                    for k, v in timer.own().items():
                        base[k].append(v)
        finally:
            torch.autograd.backward = plain_backward  # type: ignore[assignment]
        floor = {k: statistics.median(v) for k, v in base.items()}
        for h in floor_hooks:
            h.remove()
        g = start_guard()
        try:
            timer.hooks_after_guard()
            torch_backward = torch_patches._ORIGINAL_BACKWARD
            torch_patches._ORIGINAL_BACKWARD = timer._timed(torch_backward, "backward")  # type: ignore[arg-type]
            try:
                for i in range(steps + OWN_WARMUP):
                    timer.reset()
                    checked = _verifying(g)
                    t = iterate(timer)
                    if i >= OWN_WARMUP:
                        own = {k: v - floor[k] for k, v in timer.own().items()}
                        own["total"] = sum(own.values())
                        for k, v in own.items():
                            per_step[k].append(v)
                        if checked:
                            verified.append(own["total"])
                        times.append(t)
            finally:
                torch_patches._ORIGINAL_BACKWARD = torch_backward
        finally:
            g.stop()
    finally:
        timer.restore()
    out = {k: statistics.median(v) * 1e6 for k, v in per_step.items()}
    out["verified"] = statistics.median(verified) * 1e6 if verified else float("nan")
    out["verified_share"] = len(verified) / max(len(times), 1)
    return out, statistics.median(times) * 1e3


def _verifying(g: Any) -> bool:
    """The guard's steady loop is on a cycle it verifies (`replay.py`: the first 8 replayed, then ever more
    sparsely, down to one in 64 on average), as the iteration starts. The own-code figure is a median, so it is a cycle not verified; the verified
    ones cost several of those each (benchmarks/README.md, branch rt14), printed apart. (Private state,
    read with defaults: the script also measures older packages.)"""
    replay = getattr(getattr(g, "_probe", None), "_replay", None)
    return bool(getattr(replay, "verify", False))


def loop_self_time(make: Callable[[], GanLoop], steps: int, strict: bool) -> tuple[dict[str, float], float]:
    """`guard_self_time` for a loop (`SelfTimer`): the guard's own time per iteration."""
    loop = make()

    def start() -> Any:
        g = guard({"G": loop.G, "D": loop.D}, [loop.opt_G, loop.opt_D], strict=strict)
        g.start()
        return g

    return _self_time([loop.opt_G, loop.opt_D], start, lambda t: loop.step(t.backward, t.clear)[0], steps)


def one_step(model: nn.Module, opt: torch.optim.Optimizer, loss_of: LossOf, backward: Callable[..., None],
             sched: Any = None) -> tuple[float, float]:
    cpu, start = time.thread_time(), time.perf_counter()
    opt.zero_grad(set_to_none=True)
    backward(loss_of(model))
    opt.step()
    if sched is not None:
        sched.step()
    return time.perf_counter() - start, time.thread_time() - cpu


def run_pairs(make: Callable[[], tuple[nn.Module, LossOf]], pairs: int, guarded: bool, strict: bool,
              min_seconds: float = 0.0) -> Result:
    """Median over pairs of (B step time / A step time) - 1, in percent, and the number of pairs:
    at least `pairs`, more until the pairs took `min_seconds`."""
    torch.manual_seed(0)
    model_a, loss_of = make()
    model_b = copy.deepcopy(model_a)
    opt_a = torch.optim.AdamW(model_a.parameters(), lr=1e-4)
    opt_b = torch.optim.AdamW(model_b.parameters(), lr=1e-4)
    sched_a, sched_b = _scheduler(make, opt_a), _scheduler(make, opt_b)
    plain_backward = torch.autograd.backward  # torch's own, saved before any guard starts

    def backward_a(loss: torch.Tensor) -> None:
        # through `Tensor.backward` as B, with torch's own `torch.autograd.backward` for this call
        # (calling `plain_backward(loss)` directly counted Tensor.backward's preamble as the guard's)
        guarded = torch.autograd.backward
        torch.autograd.backward = plain_backward  # type: ignore[assignment]
        try:
            loss.backward()
        finally:
            torch.autograd.backward = guarded  # type: ignore[assignment]

    def backward_b(loss: torch.Tensor) -> None:
        loss.backward()  # through the guard's wrapper when it is on

    g = guard(model_b, opt_b, strict=strict) if guarded else None
    if g is not None:
        g.start()
    try:
        for _ in range(3):  # warm-up
            one_step(model_a, opt_a, loss_of, backward_a, sched_a)
            one_step(model_b, opt_b, loss_of, backward_b, sched_b)
        ratios = []
        start = time.perf_counter()
        i = 0
        while i < pairs or time.perf_counter() - start < min_seconds:
            if i % 2 == 0:
                a = one_step(model_a, opt_a, loss_of, backward_a, sched_a)
                b = one_step(model_b, opt_b, loss_of, backward_b, sched_b)
            else:
                b = one_step(model_b, opt_b, loss_of, backward_b, sched_b)
                a = one_step(model_a, opt_a, loss_of, backward_a, sched_a)
            ratios.append((b[0] / a[0], b[1] / max(a[1], 1e-9)))
            i += 1
    finally:
        if g is not None:
            g.stop()
            assert len(g.report()) == 0, str(g.report())
    return _medians(ratios), len(ratios)


def guard_self_time(make: Callable[[], tuple[nn.Module, LossOf]], steps: int, strict: bool) -> tuple[dict[str, float], float]:
    """The guard's own time per step (`SelfTimer`): {entry point: median µs} and the median step in ms.
    Entry points: its `zero_grad` wrapper and its `torch.autograd.backward` wrapper (each minus the
    torch function it calls), its step pre- and post-hooks, and their sum."""
    torch.manual_seed(0)
    model, loss_of = make()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    sched = _scheduler(make, opt)
    clock = time.perf_counter

    def start() -> Any:
        g = guard(model, opt, strict=strict)
        g.start()
        return g

    def iterate(timer: SelfTimer) -> float:
        begin = clock()
        timer.clear(opt)
        timer.backward(loss_of(model))
        opt.step()
        if sched is not None:
            sched.step()
        return clock() - begin

    return _self_time([opt], start, iterate, steps)


ALLOCATOR_ENV = {"MALLOC_MMAP_THRESHOLD_": "1000000000", "MALLOC_TRIM_THRESHOLD_": "1000000000",
                 "MALLOC_TOP_PAD_": "100000000"}


def main() -> None:
    if "--system-malloc" not in sys.argv and any(os.environ.get(k) != v for k, v in ALLOCATOR_ENV.items()):
        # glibc reads these at start-up only: run again with them set (see the module's docstring)
        os.execve(sys.executable, [sys.executable, *sys.argv], {**os.environ, **ALLOCATOR_ENV})
    parser = argparse.ArgumentParser()
    parser.add_argument("--pairs", type=int, default=60)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--strict", action="store_true", help="measure strict mode instead of the default guard")
    parser.add_argument("--models", default="cnn,transformer,gan")
    parser.add_argument("--no-control", action="store_true", help="skip the A-vs-A control runs")
    parser.add_argument("--min-seconds", type=float, default=20.0,
                        help="keep adding pairs until a run lasted this long (a fast model gets more pairs)")
    parser.add_argument("--own-steps", type=int, default=100, help="steps timed from the inside (median per step)")
    parser.add_argument("--own-warmup", type=int, default=100,
                        help="guarded steps run before those timed from the inside (the guard's start-up)")
    parser.add_argument("--system-malloc", action="store_true",
                        help="keep glibc's allocator defaults (noisier: see the module's docstring)")
    parser.add_argument("--threads", type=int, default=0,
                        help="torch's intra-op threads (0: torch's default); 1 keeps a small step measurable on a loaded machine")
    args = parser.parse_args()
    globals()["OWN_WARMUP"] = args.own_warmup
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    warnings.simplefilter("ignore")
    mode = "strict" if args.strict else "default"
    allocator = "glibc defaults" if args.system_malloc else "glibc thresholds held still"
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, {args.pairs} interleaved pairs per run, "
          f"{args.runs} runs, guard mode: {mode}, allocator: {allocator}")
    for key in args.models.split(","):
        if key in LOOPS:
            name, make_loop = LOOPS[key]
            probe_loop = make_loop()
            params = sum(p.numel() for m in (probe_loop.G, probe_loop.D) for p in m.parameters())
            pairs_of: Callable[..., Result] = run_loop_pairs
            self_time: Callable[..., tuple[dict[str, float], float]] = loop_self_time
            make: Callable[..., object] = make_loop
        else:
            name, make = MODELS[key]
            params = sum(p.numel() for p in make()[0].parameters())  # type: ignore[index]
            pairs_of, self_time = run_pairs, guard_self_time  # type: ignore[assignment]
        guarded, control = [], []
        for _ in range(args.runs):  # guard and control runs interleaved: drift lands on both
            guarded.append(pairs_of(make, args.pairs, True, args.strict, args.min_seconds))
            if not args.no_control:
                control.append(pairs_of(make, args.pairs, False, False, args.min_seconds))
        line = (f"{name:12s} {params / 1e6:5.2f}M params  guard wall/cpu "
                + ", ".join(f"{w:+.2f}/{c:+.2f} %" for (w, c), _n in guarded)
                + " (" + ", ".join(str(n) for _r, n in guarded) + " pairs)")
        if control:
            line += "  | control A vs A " + ", ".join(f"{w:+.2f}/{c:+.2f} %" for (w, c), _n in control)
        own, step_ms = self_time(make, max(args.own_steps, args.pairs // 2), args.strict)
        line += (f"  | guard's own code {own['total']:.0f} µs of a {step_ms:.1f} ms step "
                 f"({own['total'] / 1e3 / step_ms * 100:.2f} %: zero_grad {own['zero_grad']:.0f}, "
                 f"backward {own['backward']:.0f}, step hooks {own['step']:.0f} µs; "
                 f"verified cycles: {own['verified_share'] * 100:.0f} % of the steps, {own['verified']:.0f} µs each)")
        print(line, flush=True)


if __name__ == "__main__":
    main()
