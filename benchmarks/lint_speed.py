"""How fast `gradlint` lints trees: cold, warm (cache), one process and N, against TorchFix and ruff.

    python benchmarks/lint_speed.py DIR... [--generate N] [--repeat R] [--jobs N]
    python benchmarks/lint_speed.py --change-one 2000 [--repeat R]

For every tree (each DIR, and with `--generate N` two generated trees of N and 4N files) it prints
files per second for:
- cold: `gradlint` with an empty cache directory (it fills it), `--jobs N`;
- warm: the same command again, answered from that cache;
- `--no-cache --jobs 1` and `--no-cache --jobs N`;
- `torchfix DIR` and `ruff check --select ALL --no-cache DIR`, when those commands are installed
  (found on PATH, or given with `--torchfix` / `--ruff`);
then the ratios the performance issue sets as targets, each marked met or missed. Every figure is the
median of `--repeat` rounds (each round runs every mode once, so drift in the machine's speed hits
them alike) of the real command in a subprocess; peak memory is the largest resident set of any process
of the run. Nothing here is asserted anywhere: the figures are for reading. These runs inherit
PYTHONDONTWRITEBYTECODE as set (this project's machine sets it: every run then compiles gradlint's modules,
about 0.18 s of a cold run's serial start-up); `--bytecode-cache` runs them with the cache on, as an installed
package has it.

`--change-one N` times the edit loop instead: a generated project of N files (`pyproject.toml` at its
root; training scripts import a shared `common/losses.py` and one layer module each, so the project
reading follows them) is linted once to fill the cache; then, in rounds, the warm run with nothing
changed (the control) and the run after one file was edited (a comment line appended: new bytes), for
each kind of file: a training script, a layer module one training script imports, a library module
nothing imports, and the shared helper every training script imports (the worst case: every script
that read it is checked again). The target: under 1 s warm after a one-file change. These runs have
Python's bytecode cache on (in a temporary directory), as an installed package has it; a machine with
PYTHONDONTWRITEBYTECODE set would otherwise compile all of gradlint's modules on every run
(`--no-bytecode-cache` keeps that setting, to compare with figures taken that way).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))


@dataclass
class Timing:
    seconds: float
    peak_mb: float
    exit_code: int
    cpu: float = float("nan")  # user + system seconds of the command and its children


# Runs the command and reports its children's peak RSS. A separate small process, because a child's
# peak RSS starts from the RSS of the process that forked it, and this one has imported a lot.
_LAUNCHER = """
import resource, subprocess, sys
code = subprocess.call(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
print(usage.ru_maxrss, code, usage.ru_utime + usage.ru_stime)
"""


def run(cmd: list[str], cwd: Path | None = None, env: dict[str, str] | None = None) -> Timing:
    """Run `cmd`; return its wall time, CPU time and the peak RSS of its largest process (through a launcher)."""
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", _LAUNCHER, *cmd], cwd=cwd, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    try:
        rss, code, cpu = proc.stdout.split()
        return Timing(seconds, int(rss) / 1024, int(code), float(cpu))  # kB on Linux
    except ValueError:
        return Timing(seconds, float("nan"), proc.returncode)


def count(tree: Path) -> tuple[int, int]:
    """Files gradlint would check (scripts and notebooks) and their lines."""
    from gradcheck_lint.config import Settings
    from gradcheck_lint.discovery import iter_python_files

    files = list(iter_python_files([str(tree)], Settings.default(root=str(tree))))
    lines = 0
    for f in files:
        try:
            with open(f, "rb") as fh:
                lines += fh.read().count(b"\n")
        except OSError:
            pass
    return len(files), lines


LIBRARY_MODULE = '''\
"""Generated library module {i}: layers and helpers, no training step."""
import math

import torch
from torch import nn


class Block{i}(nn.Module):
    def __init__(self, dim: int = {dim}, hidden: int = {hidden}) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, hidden)
        self.fc2 = nn.Linear(hidden, dim)
        self.scale = 1.0 / math.sqrt(hidden)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.fc1(self.norm(x))
        h = torch.nn.functional.gelu(h) * self.scale
        return x + self.fc2(h)


def build_{i}(depth: int = {depth}) -> nn.Sequential:
    layers = []
    for k in range(depth):
        layers.append(Block{i}())
        if k % 2:
            layers.append(nn.Dropout(0.1))
    return nn.Sequential(*layers)


def count_parameters_{i}(model: nn.Module) -> int:
    total = 0
    for p in model.parameters():
        if p.requires_grad:
            total += p.numel()
    return total
'''


def generate(directory: Path, files: int) -> Path:
    """A tree like a project: a quarter training scripts (the differential grammar), the rest library code."""
    import loopgen

    programs = loopgen.all_programs()
    directory.mkdir(parents=True, exist_ok=True)
    for i in range(files):
        package = directory / f"pkg{i % 10}"
        package.mkdir(exist_ok=True)
        if i % 4 == 0:
            text = programs[(i * 7919) % len(programs)].render()
            name = f"train_{i}.py"
        else:
            text = textwrap.dedent(LIBRARY_MODULE).format(i=i, dim=16 + i % 7, hidden=64 + i % 5, depth=2 + i % 4) * 3
            name = f"layers_{i}.py"
        (package / name).write_text(text, encoding="utf-8")
    return directory


TRAIN_SCRIPT = '''\
"""Generated training script {i}."""
import torch

from common.losses import compute_loss, log_step
from pkg{pkg}.layers_{j} import build_{j}

model = build_{j}()
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
accum = {accum}


def train(batches):
    model.train()
    for step, (x, y) in enumerate(batches):
        loss = compute_loss(model, x, y) / accum
        loss.backward()
        if (step + 1) % accum == 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            opt.zero_grad()
            log_step(step, loss)


if __name__ == "__main__":
    train([(torch.randn(4, {dim}), torch.randn(4, {dim})) for _ in range(8)])
'''

COMMON_LOSSES = '''\
"""Shared helpers of the generated project."""
import torch


def compute_loss(model, x, y):
    out = model(x)
    return torch.nn.functional.mse_loss(out, y)


def log_step(step, loss):
    if step % 100 == 0:
        print(step, float(loss))
'''


def generate_project(directory: Path, files: int) -> dict[str, Path]:
    """A project of `files` files whose training scripts import shared and layer modules; returns one
    file of each kind (`train`, `imported_layer`, `library`, `shared`)."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "pyproject.toml").write_text("[project]\nname = 'generated'\n", encoding="utf-8")
    (directory / "common").mkdir(exist_ok=True)
    (directory / "common" / "__init__.py").write_text("", encoding="utf-8")
    shared = directory / "common" / "losses.py"
    shared.write_text(COMMON_LOSSES, encoding="utf-8")
    kinds: dict[str, Path] = {"shared": shared}
    for k in range(10):
        (directory / f"pkg{k}").mkdir(exist_ok=True)
        (directory / f"pkg{k}" / "__init__.py").write_text("", encoding="utf-8")
    for i in range(files - 12):
        package = directory / f"pkg{i % 10}"
        if i % 4 == 0:  # imports the layer module written next (i + 10 sits in the same package)
            j = i + 10
            path = package / f"train_{i}.py"
            path.write_text(TRAIN_SCRIPT.format(i=i, pkg=i % 10, j=j, accum=2 + i % 3, dim=16 + j % 7), encoding="utf-8")
            kinds.setdefault("train", path)
            kinds.setdefault("imported_layer", package / f"layers_{j}.py")
        else:
            path = package / f"layers_{i}.py"
            path.write_text(textwrap.dedent(LIBRARY_MODULE).format(i=i, dim=16 + i % 7, hidden=64 + i % 5, depth=2 + i % 4),
                            encoding="utf-8")
            if i % 4 == 1:
                kinds.setdefault("library", path)
    return kinds


def installed_env(tmp: str, bytecode: bool) -> dict[str, str]:
    """The environment of a timed run: no cache directory forced on it and, with `bytecode`, Python's
    bytecode cache on (kept under `tmp`, out of the source tree), as in an installed package (pip
    compiles it at install). Without it, a machine with PYTHONDONTWRITEBYTECODE set (this project's
    is) compiles every one of gradlint's modules on every run: about half of a warm run's CPU."""
    env = {k: v for k, v in os.environ.items() if k != "GRADLINT_CACHE_DIR"}
    if bytecode:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = os.path.join(tmp, "pycache")
    return env


_PYCACHE: list[tempfile.TemporaryDirectory[str]] = []


def timed_env(entry: list[str], args: argparse.Namespace) -> dict[str, str]:
    """The environment of the cold, warm and `--no-cache` runs: as this process has it, less GRADLINT_CACHE_DIR;
    with `--bytecode-cache`, Python's bytecode cache on (`installed_env`), gradlint's modules compiled once
    before the first timed run, as an installed package has them (pip compiles them at install)."""
    if not args.bytecode_cache:
        return {k: v for k, v in os.environ.items() if k != "GRADLINT_CACHE_DIR"}
    if not _PYCACHE:
        _PYCACHE.append(tempfile.TemporaryDirectory(prefix="gradlint-bench-pycache-"))
    env = installed_env(_PYCACHE[0].name, True)
    run([*entry, "--version"], env=env)
    return env


def load_average() -> str:
    try:
        return f"{os.getloadavg()[0]:.1f}"
    except OSError:
        return "?"


def change_one(files: int, args: argparse.Namespace) -> None:
    """The edit loop on a generated project of `files` files: warm runs after a one-file change."""
    script = Path(sys.executable).with_name("gradlint")
    entry = [str(script)] if script.exists() else [sys.executable, "-m", "gradcheck_lint"]
    with tempfile.TemporaryDirectory(prefix="gradlint-bench-project-") as tmp:
        env = installed_env(tmp, not args.no_bytecode_cache)
        tree = Path(tmp) / "project"
        kinds = generate_project(tree, files)
        cache = str(Path(tmp) / "cache")
        cmd = [*entry, "--exit-zero", "--isolated", "--jobs", str(args.jobs), "--cache-dir", cache, str(tree)]
        n, lines = count(tree)
        print(f"\n## one-file change in a generated project ({n} files, {lines:,} lines), `--jobs {args.jobs}`, "
              f"bytecode cache {'off (PYTHONDONTWRITEBYTECODE as set)' if args.no_bytecode_cache else 'on'}")
        run([*entry, "--version"], env=env)  # compiles the package once, as its installation would
        first = run(cmd, env=env)
        print(f"cold (fills the cache): {first.seconds:.2f} s ({first.cpu:.2f} s CPU)")
        runs: dict[str, list[Timing]] = {}
        for round_ in range(args.repeat):
            print(f"  round {round_ + 1}: load average {load_average()}", flush=True)
            runs.setdefault("nothing changed (control)", []).append(run(cmd, env=env))
            for kind, path in kinds.items():
                with open(path, "a", encoding="utf-8") as fh:
                    fh.write(f"# edit {round_}\n")
                runs.setdefault(f"one {kind.replace('_', ' ')} file changed", []).append(run(cmd, env=env))
        print("| run | wall s (median) | min | max | CPU s (median) |\n|---|---|---|---|---|")
        for label, ts in runs.items():
            wall = [t.seconds for t in ts]
            print(f"| {label} | {statistics.median(wall):.2f} | {min(wall):.2f} | {max(wall):.2f} | "
                  f"{statistics.median(t.cpu for t in ts):.2f} |")
        for label, ts in runs.items():
            wall = statistics.median(t.seconds for t in ts)
            print(f"- {label}: {wall:.2f} s (target < 1 s: {'met' if wall < 1 else 'missed'})")


def versus_ruff(tree: Path, args: argparse.Namespace) -> None:
    """The library-tree targets, interleaved: per round ruff (A), gradlint cold (B), ruff again (A'),
    gradlint warm (B'), the order reversed every other round; the medians of the per-round ratios B/A,
    B'/A' and, as the noise floor, A'/A (ruff against itself). Wall and CPU (user + system) seconds."""
    ruff = tool("ruff", args.ruff)
    if not ruff:
        print("ruff not found: --vs-ruff skipped")
        return
    files, lines = count(tree)
    script = Path(sys.executable).with_name("gradlint")
    entry = [str(script)] if script.exists() else [sys.executable, "-m", "gradcheck_lint"]
    env = timed_env(entry, args)
    ruff_cmd = [ruff, "check", "--select", "ALL", "--no-cache", "--exit-zero", "-q", "--isolated", str(tree)]
    print(f"\n## {tree} against ruff, interleaved ({files} files, {lines:,} lines), `--jobs {args.jobs}`, {args.repeat} rounds"
          f"{', bytecode cache on' if args.bytecode_cache else ''}")
    ratios: dict[str, list[tuple[float, float]]] = {"cold / ruff": [], "warm / ruff": [], "control: ruff / ruff": []}
    for round_ in range(args.repeat):
        cache = tempfile.mkdtemp(prefix="gradlint-bench-cache-")
        gradlint = [*entry, "--exit-zero", "--isolated", "--jobs", str(args.jobs), "--cache-dir", cache, str(tree)]
        if round_ % 2 == 0:
            a, b = run(ruff_cmd), run(gradlint, env=env)
            a2, b2 = run(ruff_cmd), run(gradlint, env=env)
        else:  # B before A; the cold run must still come before the warm one
            b = run(gradlint, env=env)
            a = run(ruff_cmd)
            b2 = run(gradlint, env=env)
            a2 = run(ruff_cmd)
        shutil.rmtree(cache, ignore_errors=True)
        for label, x, y in (("cold / ruff", b, a), ("warm / ruff", b2, a2), ("control: ruff / ruff", a2, a)):
            ratios[label].append((x.seconds / y.seconds, x.cpu / y.cpu))
        print(f"  round {round_ + 1}: ruff {a.seconds:.2f} s ({a.cpu:.2f} CPU), cold {b.seconds:.2f} s ({b.cpu:.2f}), "
              f"ruff {a2.seconds:.2f} s ({a2.cpu:.2f}), warm {b2.seconds:.2f} s ({b2.cpu:.2f})", flush=True)
    print("| ratio | median (wall) | range (wall) | median (CPU) |\n|---|---|---|---|")
    for label, rs in ratios.items():
        wall = [r[0] for r in rs]
        print(f"| {label} | {statistics.median(wall):.2f} | {min(wall):.2f}-{max(wall):.2f} | "
              f"{statistics.median(r[1] for r in rs):.2f} |")
    cold, warm = statistics.median(r[0] for r in ratios["cold / ruff"]), statistics.median(r[0] for r in ratios["warm / ruff"])
    print(f"\n- cold / ruff {cold:.2f} (target <= 2: {'met' if cold <= 2 else 'missed'}); "
          f"warm / ruff {warm:.2f} (target <= 1: {'met' if warm <= 1 else 'missed'})")


def tool(name: str, given: str | None) -> str | None:
    return given or shutil.which(name)


def measure(tree: Path, args: argparse.Namespace) -> None:
    files, lines = count(tree)
    # The installed `gradlint` command (what users, CI and the pre-commit hook run); `python -m
    # gradcheck_lint` gets a row of its own: on CPython <= 3.12 the two can differ by a second on the
    # same tree (see `_MODULE_NOTE`).
    script = Path(sys.executable).with_name("gradlint")
    entry = [str(script)] if script.exists() else [sys.executable, "-m", "gradcheck_lint"]
    gradlint = [*entry, "--exit-zero", "--isolated"]
    as_module = [sys.executable, "-m", "gradcheck_lint", "--exit-zero", "--isolated"]
    jobs = args.jobs
    env = timed_env(entry, args)
    print(f"\n## {tree}  ({files} files, {lines:,} lines){', bytecode cache on' if args.bytecode_cache else ''}", flush=True)
    torchfix = tool("torchfix", args.torchfix)
    if torchfix and files > args.torchfix_max_files:
        print(f"(torchfix skipped: more than --torchfix-max-files={args.torchfix_max_files} files)")
        torchfix = None
    ruff = tool("ruff", args.ruff)
    cold_label, many_label = f"gradlint cold (--jobs {jobs})", f"gradlint --no-cache --jobs {jobs}"
    module_label = f"python -m gradcheck_lint --no-cache --jobs {jobs}"
    print(f"gradlint = `{' '.join(entry)}`")
    runs: dict[str, list[Timing]] = {}
    # Rounds of every mode in turn, so that drift in the machine's speed (a shared machine) hits all
    # modes alike; TorchFix, which takes minutes, runs in the first round only.
    for round_ in range(args.repeat):
        cache = tempfile.mkdtemp(prefix="gradlint-bench-cache-")
        plan: list[tuple[str, list[str], dict[str, str] | None]] = [
            (cold_label, [*gradlint, "--jobs", str(jobs), "--cache-dir", cache, str(tree)], env),
            ("gradlint warm (cache)", [*gradlint, "--jobs", str(jobs), "--cache-dir", cache, str(tree)], env),
            ("gradlint --no-cache --jobs 1", [*gradlint, "--no-cache", "--jobs", "1", str(tree)], env),
            (many_label, [*gradlint, "--no-cache", "--jobs", str(jobs), str(tree)], env),
            (module_label, [*as_module, "--no-cache", "--jobs", str(jobs), str(tree)], env),
        ]
        if ruff:
            plan.append(("ruff check --select ALL", [ruff, "check", "--select", "ALL", "--no-cache", "--exit-zero", "-q",
                                                     "--isolated", str(tree)], None))
        if torchfix and round_ == 0:
            plan.append(("torchfix", [torchfix, str(tree)], None))
        for label, cmd, environ in plan:
            runs.setdefault(label, []).append(run(cmd, None, environ))
        shutil.rmtree(cache, ignore_errors=True)
    med = {label: Timing(statistics.median(t.seconds for t in ts), max(t.peak_mb for t in ts), ts[-1].exit_code)
           for label, ts in runs.items()}
    print("| run | wall s (median) | files/s | peak MB |\n|---|---|---|---|")
    for label, t in med.items():
        print(f"| {label} | {t.seconds:.2f} | {files / t.seconds:,.0f} | {t.peak_mb:.0f} |")
    print()
    cold, warm, one, many = med[cold_label], med["gradlint warm (cache)"], med["gradlint --no-cache --jobs 1"], med[many_label]
    verdict = lambda ok: "met" if ok else "missed"
    speedup = one.seconds / many.seconds
    print(f"- --jobs {jobs} vs --jobs 1: {speedup:.2f}x (target >= 1.7x on a tree large enough to matter: {verdict(speedup >= 1.7)})")
    if "torchfix" in med:
        ratio = med["torchfix"].seconds / cold.seconds
        print(f"- cold vs TorchFix: {ratio:.1f}x faster (target >= 20x on training-script trees: {verdict(ratio >= 20)})")
    if "ruff check --select ALL" in med:
        rf = med["ruff check --select ALL"]
        print(f"- cold / ruff: {cold.seconds / rf.seconds:.2f} (target <= 2 on library trees: {verdict(cold.seconds <= 2 * rf.seconds)})")
        print(f"- warm / ruff: {warm.seconds / rf.seconds:.2f} (target <= 1: {verdict(warm.seconds <= rf.seconds)})")
    gap = med[module_label].seconds - many.seconds
    if sys.version_info < (3, 13) and abs(gap) > 0.1 * many.seconds:
        print(f"- `python -m` vs the command: {gap:+.2f} s. {_MODULE_NOTE}")


# CPython 3.11/3.12 allocates the frames' data stack in 16 KiB chunks and unmaps a chunk as soon as
# its first frame returns, so a hot call that lands on a chunk boundary costs an mmap and a munmap
# each time (python/cpython#142183, fixed by a cached chunk in 3.13 and 3.14). The analysis runs from
# a frame that opens a chunk of its own (`gradcheck_lint/framestack.py`), so where the boundaries fall
# no longer depends on the entry point; a gap between `python -m` and the command means that broke.
_MODULE_NOTE = ("The analysis should start at the same place of a frame-stack chunk from either entry point "
                "(gradcheck_lint/framestack.py, python/cpython#142183): `strace -c -f -e trace=mmap,munmap` "
                "on both shows whether one of them thrashes.")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("trees", nargs="*", type=Path)
    parser.add_argument("--generate", type=int, default=0, metavar="N", help="also lint generated trees of N and 4N files")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count())
    parser.add_argument("--torchfix", default=None, help="the torchfix command (default: found on PATH)")
    parser.add_argument("--torchfix-max-files", type=int, default=400, help="skip TorchFix on larger trees (it takes minutes)")
    parser.add_argument("--ruff", default=None, help="the ruff command (default: found on PATH)")
    parser.add_argument("--vs-ruff", action="store_true",
                        help="only the interleaved cold/warm against ruff ratios (median of ratios, A-vs-A control)")
    parser.add_argument("--change-one", type=int, default=0, metavar="N",
                        help="time warm runs after a one-file change in a generated project of N files")
    parser.add_argument("--no-bytecode-cache", action="store_true",
                        help="--change-one: leave PYTHONDONTWRITEBYTECODE as set (every run compiles gradlint's modules)")
    parser.add_argument("--bytecode-cache", action="store_true",
                        help="cold, warm and --vs-ruff runs: with Python's bytecode cache on, as an installed package "
                             "has it (by default they leave PYTHONDONTWRITEBYTECODE as set, as the figures in "
                             "benchmarks/README.md were taken: with it set, every run compiles gradlint's modules)")
    args = parser.parse_args()
    if not args.trees and not args.generate and not args.change_one:
        parser.error("give a tree to lint, --generate N or --change-one N")
    print(f"python {sys.version.split()[0]}, {args.jobs} jobs, median of {args.repeat}")
    for tree in args.trees:
        (versus_ruff if args.vs_ruff else measure)(tree, args)
    if args.generate:
        with tempfile.TemporaryDirectory(prefix="gradlint-bench-tree-") as tmp:
            for n in (args.generate, 4 * args.generate):
                measure(generate(Path(tmp) / f"generated_{n}", n), args)
        print("\nPeak memory should be about the same for N and 4N files (results are kept per file, "
              "files are read one by one and analysed a few at a time).")
    if args.change_one:
        change_one(args.change_one, args)


if __name__ == "__main__":
    main()
