"""Fuzz the static analyzer for a long time and count what happened; save a minimal reproducer per bug.

    python benchmarks/fuzz.py [--examples N] [--seed S] [--out DIR] [--hang-seconds T] [--cli]

The generators are the ones of tests/test_fuzz.py (tests/fuzzing.py), run for many more examples:
`programs` (generated training code), `grammar` and `nodes` (hypothesmith programs spliced with
training code), `mutants` (fixtures mutated, given to check_source as text) and `files` (the same,
written to disk and read by check_file). N examples are shared evenly between them.

Per generator it prints: programs tried, analysed (the semantic model was built and the rules ran),
stopped by the analysis budget, GL000 for a syntax error, GL000 for another reason, skipped (no
`backward`, so never parsed beyond syntax), internal errors, hangs, and the longest time for one file.
An internal error (an exception the engine turned into a GL000, or any other broken contract) and a
hang are bugs: each distinct one is minimised (lines, then tokens) and saved under DIR.
"""

from __future__ import annotations

import argparse
import ast
import collections
import os
import re
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import hypothesmith  # noqa: E402
from hypothesis import HealthCheck, Phase, given, seed, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import gradcheck_lint.analysis.model as model_module  # noqa: E402
import gradcheck_lint.engine as engine  # noqa: E402
from fuzzing import (  # noqa: E402
    INTERNAL_ERROR,
    contract_violations,
    mutate,
    mutation_steps,
    spliced_programs,
    training_programs,
)
from gradcheck_lint import check_file, check_source  # noqa: E402
from gradcheck_lint.analysis import TrainingModel  # noqa: E402
from gradcheck_lint.registry import all_rules  # noqa: E402
from support import AnalysisHang, hang_guard, load_fixtures  # noqa: E402

KINDS = ("programs", "grammar", "nodes", "mutants", "files")


class _Probe:
    """What the last analysis did: whether the rules ran, whether the budget stopped it."""

    reached = False
    exhausted = False


class _CountingInterpreter(model_module.Interpreter):  # type: ignore[misc, valid-type]
    """The interpreter, remembering whether its budget ran out."""

    def run(self) -> None:
        super().run()
        _Probe.exhausted = self.exhausted


class _CountingModel(TrainingModel):
    """The semantic model, remembering that it was built (the rules run next)."""

    def __init__(self, module: ast.Module, source: str) -> None:
        super().__init__(module, source)
        _Probe.reached = True


@dataclass
class Tally:
    """Counts for one generator."""

    tried: int = 0
    analysed: int = 0
    exhausted: int = 0
    syntax: int = 0
    other_gl000: int = 0
    skipped: int = 0
    internal: int = 0
    hangs: int = 0
    max_seconds: float = 0.0  # wall clock, the time a user waits
    max_cpu: float = 0.0  # CPU time of this process, steadier on a shared machine
    slowest: bytes = b""
    findings: collections.Counter[str] = field(default_factory=collections.Counter)
    reasons: collections.Counter[str] = field(default_factory=collections.Counter)


@dataclass
class Bug:
    """One distinct internal error or hang, with the input that showed it first."""

    key: str
    kind: str
    source: bytes
    detail: str
    count: int = 1


def gl000_reason(message: str) -> str:
    """Group GL000 messages by their reason, without paths or positions."""
    text = message.split(" ", 1)[-1].replace("; it was not analysed.", "")
    text = re.sub(r"\d+", "N", text)
    return text.split(":")[0].split("(")[0].split(";")[0].strip()


def analyse(kind: str, data: bytes, tally: Tally, bugs: dict[str, Bug], hang_seconds: float) -> None:
    """Check one input, count the outcome, and keep the first input of every distinct bug."""
    _Probe.reached = _Probe.exhausted = False
    tally.tried += 1
    start, cpu = time.perf_counter(), time.process_time()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "fuzzed.py")
        text = data.decode("utf-8", errors="surrogateescape")
        try:
            with hang_guard(hang_seconds):
                if kind == "files":
                    with open(path, "wb") as fh:
                        fh.write(data)
                    diags = check_file(path)
                else:
                    diags = check_source(text, path)
        except AnalysisHang:
            tally.hangs += 1
            record(bugs, Bug("hang", kind, data, f"no answer after {hang_seconds:.0f} s"))
            return
        except Exception as exc:
            tally.internal += 1
            record(bugs, Bug(f"raised {type(exc).__name__}", kind, data, traceback.format_exc()))
            return
    elapsed = time.perf_counter() - start
    tally.max_cpu = max(tally.max_cpu, time.process_time() - cpu)
    if elapsed > tally.max_seconds:
        tally.max_seconds, tally.slowest = elapsed, data
    problems = contract_violations(diags, path)
    if problems:
        tally.internal += 1
        key, detail = explain(text, problems)
        record(bugs, Bug(key, kind, data, detail))
        return
    gl000 = [d for d in diags if d.code == "GL000"]
    if gl000:
        if "syntax error" in gl000[0].message:
            tally.syntax += 1
        else:
            tally.other_gl000 += 1
            tally.reasons[gl000_reason(gl000[0].message)] += 1
    elif _Probe.reached:
        tally.analysed += 1
        tally.exhausted += _Probe.exhausted
    else:
        tally.skipped += 1
    tally.findings.update(d.code for d in diags if d.code != "GL000")


def explain(text: str, problems: list[str]) -> tuple[str, str]:
    """Key a broken contract by the exception's type and innermost frame, found by re-running unguarded."""
    try:
        model = TrainingModel(ast.parse(text), text)
        for rule_cls in all_rules().values():
            for finding in rule_cls().check(model):
                model.span(finding.node)
    except Exception as exc:
        frame = traceback.extract_tb(exc.__traceback__)[-1]
        where = f"{Path(frame.filename).name}:{frame.lineno}"
        return f"{type(exc).__name__} at {where}", traceback.format_exc()
    return problems[0][:120], "\n".join(problems)


def record(bugs: dict[str, Bug], bug: Bug) -> None:
    """Count a bug; keep the first input that showed it."""
    if bug.key in bugs:
        bugs[bug.key].count += 1
    else:
        bugs[bug.key] = bug


def still_fails(bug: Bug, hang_seconds: float) -> Callable[[bytes], bool]:
    """The predicate a reduction keeps: the same bug shows on the smaller input."""

    def check(data: bytes) -> bool:
        tally, found = Tally(), {}  # type: ignore[var-annotated]
        analyse(bug.kind, data, tally, found, hang_seconds)
        return bug.key in found

    return check


def minimise(data: bytes, fails: Callable[[bytes], bool], seconds: float = 120.0) -> bytes:
    """Delta-debug an input: drop chunks of lines, then of tokens, while the bug still shows."""
    deadline = time.monotonic() + seconds
    for split in (lambda b: b.splitlines(keepends=True), lambda b: re.findall(rb"\w+|\s+|.", b, re.S)):
        parts = split(data)
        chunk = max(1, len(parts) // 2)
        while chunk >= 1 and time.monotonic() < deadline:
            i, shrunk = 0, False
            while i < len(parts) and time.monotonic() < deadline:
                candidate = parts[:i] + parts[i + chunk:]
                if candidate and fails(b"".join(candidate)):
                    parts, shrunk = candidate, True
                else:
                    i += chunk
            if not shrunk:
                chunk //= 2
        data = b"".join(parts)
    return data


def strategy(kind: str, fixtures: list[bytes]) -> st.SearchStrategy[bytes]:
    """The generator of one kind, as bytes."""
    if kind == "programs":
        return training_programs().map(str.encode)
    if kind == "grammar":
        return spliced_programs(hypothesmith.from_grammar()).map(lambda s: s.encode("utf-8", "surrogatepass"))
    if kind == "nodes":
        return spliced_programs(hypothesmith.from_node()).map(lambda s: s.encode("utf-8", "surrogatepass"))
    return st.tuples(st.integers(0, len(fixtures) - 1), mutation_steps()).map(lambda a: mutate(fixtures[a[0]], a[1]))


def run_kind(kind: str, n: int, seed_value: int, fixtures: list[bytes], bugs: dict[str, Bug], hang_seconds: float,
             keep: list[bytes]) -> Tally:
    """Run one generator for n examples."""
    tally = Tally()

    @seed(seed_value)
    @settings(max_examples=n, database=None, deadline=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(strategy(kind, fixtures))
    def body(data: bytes) -> None:
        analyse(kind, data, tally, bugs, hang_seconds)
        if kind in ("mutants", "files") and len(keep) < 400:
            keep.append(data)
        if tally.tried % 250 == 0:
            print(f"  {kind}: {tally.tried}/{n}", file=sys.stderr, flush=True)

    body()
    return tally


def run_cli(mutants: list[bytes]) -> str:
    """Run `gradlint` on a directory of mutants; report its exit code and whether it kept its contract."""
    with tempfile.TemporaryDirectory() as tmp:
        for k, data in enumerate(mutants):
            Path(tmp, f"mutant_{k:04d}.py").write_bytes(data)
        start = time.perf_counter()
        res = subprocess.run([sys.executable, "-m", "gradcheck_lint", "--format", "json", tmp],
                             capture_output=True, text=True, timeout=3600)
        elapsed = time.perf_counter() - start
    internal = res.stdout.count(INTERNAL_ERROR)
    traceback_seen = "Traceback" in res.stderr
    return (f"gradlint on a directory of {len(mutants)} mutants: exit {res.returncode}, {elapsed:.1f} s, "
            f"internal errors {internal}, traceback {'yes' if traceback_seen else 'no'}")


def main() -> None:
    """Parse the arguments, fuzz, print the table and save the reproducers."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--examples", type=int, default=5000, help="examples in all, shared between the generators")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=None, help="directory for reproducers (default: a new temporary one)")
    parser.add_argument("--hang-seconds", type=float, default=120.0, help="an input that takes longer is a hang")
    parser.add_argument("--kinds", default=",".join(KINDS), help=f"generators to run, from {','.join(KINDS)}")
    parser.add_argument("--cli", action="store_true", help="also run gradlint on a directory of 400 mutants")
    args = parser.parse_args()
    kinds = [k for k in args.kinds.split(",") if k]
    unknown = set(kinds) - set(KINDS)
    if unknown:
        parser.error(f"unknown kinds {sorted(unknown)}")
    engine.TrainingModel = _CountingModel  # type: ignore[misc]
    model_module.Interpreter = _CountingInterpreter  # type: ignore[misc]
    fixtures = [f.path.read_bytes() for f in load_fixtures()]
    out = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="gradlint-fuzz-"))
    out.mkdir(parents=True, exist_ok=True)
    bugs: dict[str, Bug] = {}
    tallies: dict[str, Tally] = {}
    keep: list[bytes] = []
    start = time.perf_counter()
    cpu = time.process_time()
    for kind in kinds:
        tallies[kind] = run_kind(kind, max(1, args.examples // len(kinds)), args.seed, fixtures, bugs,
                                 args.hang_seconds, keep)
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu

    header = ("generator", "tried", "analysed", "budget", "GL000 syntax", "GL000 other", "skipped", "internal", "hangs", "max s/file", "max CPU s/file")
    rows = [(k, t.tried, t.analysed, t.exhausted, t.syntax, t.other_gl000, t.skipped, t.internal, t.hangs, f"{t.max_seconds:.2f}", f"{t.max_cpu:.2f}")
            for k, t in tallies.items()]
    total = Tally()
    for t in tallies.values():
        for name in ("tried", "analysed", "exhausted", "syntax", "other_gl000", "skipped", "internal", "hangs"):
            setattr(total, name, getattr(total, name) + getattr(t, name))
        total.max_seconds = max(total.max_seconds, t.max_seconds)
        total.max_cpu = max(total.max_cpu, t.max_cpu)
        total.findings.update(t.findings)
        total.reasons.update(t.reasons)
    rows.append(("all", total.tried, total.analysed, total.exhausted, total.syntax, total.other_gl000, total.skipped,
                 total.internal, total.hangs, f"{total.max_seconds:.2f}", f"{total.max_cpu:.2f}"))
    print(f"seed {args.seed}, {total.tried} programs, {wall:.0f} s wall, {cpu:.0f} s CPU")
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for row in rows:
        print("| " + " | ".join(str(c) for c in row) + " |")
    print("findings of the analysed programs: " + ", ".join(f"{c} {n}" for c, n in sorted(total.findings.items())))
    print("GL000 other reasons: " + "; ".join(f"{r} ({n})" for r, n in total.reasons.most_common()))
    for kind, t in tallies.items():
        slowest = out / f"slowest-{kind}.py"
        slowest.write_bytes(t.slowest)
        lines = len(t.slowest.splitlines())
        print(f"slowest {kind}: {t.max_seconds:.2f} s, {lines} lines, saved as {slowest}")
    if args.cli and keep:
        print(run_cli(keep))
    print(f"distinct bugs: {len(bugs)}; reproducers in {out}")
    for n, bug in enumerate(bugs.values(), 1):
        small = minimise(bug.source, still_fails(bug, args.hang_seconds)) if bug.key != "hang" else bug.source
        stem = out / f"bug{n:02d}-{re.sub(r'[^A-Za-z0-9]+', '-', bug.key)[:60]}"
        Path(f"{stem}.py").write_bytes(small)
        Path(f"{stem}.original.py").write_bytes(bug.source)
        Path(f"{stem}.txt").write_text(f"{bug.key} ({bug.count} inputs, generator {bug.kind})\n\n{bug.detail}\n")
        print(f"  {bug.key}: {bug.count} inputs ({bug.kind}); minimal reproducer {stem}.py ({len(small)} bytes)")
    sys.exit(1 if bugs else 0)


if __name__ == "__main__":
    main()
