"""Run generated training loops through the static analyzer, the runtime guard and the numbers.

Usage: python benchmarks/differential.py [--examples N] [--seed S] [--all] [--save DIR]

Draws N programs from the grammars of `tests/loopgen.py` (GANs and single-model loops, GL001-GL005)
and `tests/loopgen_contract.py` (GL006-GL010) in three equal parts, the last capped at the size of its
grammar (`--all` runs every program of both), and prints, per rule, how often the static analyzer
and the runtime guard report it when the program has that bug (recall; the guard's counts leave out
programs whose spec says the guard cannot observe the bug) and when it does not (false alarms), plus
how often the numerical ground truth (or the failure PyTorch raises by design) agrees with the spec.
Disagreeing programs are written to --save (default: a temporary directory) with a report each.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
import warnings
from collections import Counter

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))

import loopgen_run

RULES = ["GL001", "GL002", "GL003", "GL004", "GL005", "GL007", "GL008", "GL009", "GL010"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--all", action="store_true", help="every program of the grammar")
    parser.add_argument("--save", default=None, help="directory for the programs that disagree")
    args = parser.parse_args()
    warnings.simplefilter("ignore")

    programs = loopgen_run.every_program()
    if not args.all:
        rng = random.Random(args.seed)
        gans = [p for p in programs if p.kind == "gan"]
        singles = [p for p in programs if p.kind == "single"]
        contract = [p for p in programs if p.kind not in ("gan", "single")]
        third = min(len(contract), args.examples // 3)
        half = min(len(gans), (args.examples - third) // 2)
        programs = (rng.sample(contract, third) + rng.sample(gans, half)
                    + rng.sample(singles, min(len(singles), args.examples - third - half)))
    save = args.save or tempfile.mkdtemp(prefix="gradlint-differential-")
    os.makedirs(save, exist_ok=True)
    work = tempfile.mkdtemp(prefix="gradlint-programs-")

    has, seen = Counter[str](), Counter[str]()
    static_hit, guard_hit = Counter[str](), Counter[str]()
    clean = Counter[str]()
    static_fa, guard_fa = Counter[str](), Counter[str]()
    numbers_agree = 0
    correct = correct_static_clean = correct_guard_clean = 0
    crashed = disagreeing = 0
    start = time.perf_counter()
    for i, spec in enumerate(programs):
        j = loopgen_run.judge(spec, work, f"p{i}")
        if j.outcome.error and not j.verdict.raises:
            crashed += 1
        numbers_agree += j.numbers_agree
        if not j.verdict.buggy:
            correct += 1
            correct_static_clean += not j.static_codes
            correct_guard_clean += not j.outcome.guard_codes
        for rule in RULES:
            if rule in j.verdict.expected:
                has[rule] += 1
                static_hit[rule] += rule in j.static_codes
                if rule not in j.verdict.blind:
                    seen[rule] += 1
                    guard_hit[rule] += rule in j.outcome.guard_codes
            elif rule not in j.verdict.tolerated:
                clean[rule] += 1
                static_fa[rule] += rule in j.static_codes
                guard_fa[rule] += rule in j.outcome.guard_codes
        if j.disagreements():
            disagreeing += 1
            with open(os.path.join(save, f"p{i}.txt"), "w", encoding="utf-8") as fh:
                fh.write(j.report() + "\n")
    elapsed = time.perf_counter() - start

    def pct(a: int, b: int) -> str:
        return f"{100 * a / b:6.2f} % ({a}/{b})" if b else "     n/a"

    n = len(programs)
    kinds = Counter(p.kind for p in programs)
    print(f"programs: {n} ({', '.join(f'{k} {v}' for k, v in sorted(kinds.items()))}), "
          f"{elapsed:.0f} s, {1000 * elapsed / max(n, 1):.0f} ms each")
    print(f"numbers (or the designed failure) agree with the spec: {pct(numbers_agree, n)}; programs that crashed: {crashed}")
    print(f"correct programs: {correct}; static silent on {pct(correct_static_clean, correct)}, "
          f"guard silent on {pct(correct_guard_clean, correct)}")
    print(f"{'rule':6} {'buggy':>6} {'static recall':>24} {'guard recall':>24} {'static false alarms':>24} {'guard false alarms':>24}")
    for rule in RULES:
        print(f"{rule:6} {has[rule]:6d} {pct(static_hit[rule], has[rule]):>24} {pct(guard_hit[rule], seen[rule]):>24} "
              f"{pct(static_fa[rule], clean[rule]):>24} {pct(guard_fa[rule], clean[rule]):>24}")
    print(f"programs with any disagreement: {pct(disagreeing, n)}; reports in {save}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
