"""Run and judge the generated programs of `loopgen` and `loopgen_contract`, three ways.

A program is linted statically, executed under the process-wide runtime guard (record mode), and its
final parameters are compared with its spec's reference implementation. `Judgement.disagreements`
lists every way the three verdicts differ from one another and from the spec's own `Verdict`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

import loopgen
import loopgen_contract
from loopgen import Verdict


class Spec(Protocol):
    """What the runner needs of a generated program's spec."""

    kind: str
    compared: tuple[str, ...]  # the names of the modules whose final parameters are compared

    def verdict(self) -> Verdict: ...
    def render(self) -> str: ...
    def describe(self) -> str: ...
    def setup_source(self) -> str: ...  # builds the reference's models and data, as the program does
    def reference(self, ns: dict[str, Any]) -> None: ...  # trains them as intended, with autograd.grad


def sets_up_a_process_group(spec: Spec) -> bool:
    """Whether the program makes a gloo process group (DDP): it then runs in a process of its own."""
    return spec.kind == "ddp_accum"


@dataclass
class Outcome:
    """What happened when a program ran: the numbers against the reference, and the guard's codes."""

    matches_reference: bool
    guard_codes: set[str] = field(default_factory=set)
    guard_messages: list[str] = field(default_factory=list)
    error: str = ""


def _fresh_framework_state() -> None:
    """Forget Accelerate's process-wide singletons, so each program's Accelerator is its own."""
    import sys

    state = sys.modules.get("accelerate.state")
    if state is not None:
        state.AcceleratorState._reset_state(True)
        state.GradientState._reset_state()


def run(spec: Spec, path: str) -> Outcome:
    """Execute the program saved at `path` under the runtime guard and compare with the reference: here,
    or, for a program that makes a process group, in a forked child under a time limit (see own_process)."""
    if sets_up_a_process_group(spec):
        import own_process

        return own_process.call(run_here, spec, path, True, what=f"the program of {spec.describe()}")
    return run_here(spec, path)


# The namespaces of the programs run in a process of their own, kept until it leaves with os._exit: freeing
# one frees DDP's reducer and its gloo group, whose destructor joins a gloo thread that may be waiting for
# the GIL to free a finished all-reduce (seen with gdb: 1 hang in about 1,100 programs run here under load)
_KEPT: list[dict[str, Any]] = []


def run_here(spec: Spec, path: str, keep_namespace: bool = False) -> Outcome:
    """Execute the program saved at `path` in this process, under the guard, and compare with the reference
    (with `keep_namespace`, the program's objects are never freed: for a process that ends with os._exit)."""
    import runpy
    import warnings

    import torch

    from gradcheck_lint.runtime.guard import guard

    _fresh_framework_state()
    g = guard(mode="record")
    g.start(process_wide=True)
    error = ""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ns = runpy.run_path(path, run_name="__main__")
    except Exception as exc:
        ns, error = {}, f"{type(exc).__name__}: {exc}"
    finally:
        g.stop()
        _fresh_framework_state()
    if keep_namespace:
        _KEPT.append(ns)
    diags = [d for d in g.report() if d.path == path]
    codes, messages = {d.code for d in diags}, [f"{d.line}: {d.code} {d.message}" for d in diags]
    if error:
        return Outcome(False, codes, messages, error)
    ref_ns: dict[str, Any] = {}
    exec(compile(spec.setup_source(), "<reference setup>", "exec"), ref_ns)
    spec.reference(ref_ns)
    same = all(
        torch.allclose(p, q, rtol=1e-10, atol=1e-12)
        for name in spec.compared
        for p, q in zip(ns[name].parameters(), ref_ns[name].parameters())
    )
    return Outcome(same, codes, messages)


@dataclass
class Judgement:
    """The three verdicts on one program, and the spec's own."""

    spec: Spec
    source: str
    verdict: Verdict
    static_codes: set[str]
    outcome: Outcome

    @property
    def numerically_buggy(self) -> bool:
        return not self.outcome.matches_reference

    @property
    def numbers_agree(self) -> bool:
        """The run did what the spec says: raised as designed, or trained to the expected numbers."""
        if self.verdict.raises or self.outcome.error:
            return bool(self.verdict.raises) and self.verdict.raises in self.outcome.error
        return self.verdict.numbers == "any" or self.numerically_buggy == self.verdict.numbers_differ

    def disagreements(self) -> list[str]:
        """Every way the verdicts differ; empty when static, runtime and the numbers all agree."""
        out: list[str] = []
        if self.outcome.error and not self.verdict.raises:
            return [f"the program crashed: {self.outcome.error}"]
        if not self.numbers_agree:
            if self.verdict.raises:
                out.append(f"the program should raise {self.verdict.raises!r} but "
                           + (f"raised {self.outcome.error}" if self.outcome.error else "ran to the end"))
            else:
                out.append(f"spec says the numbers differ={self.verdict.numbers_differ} but they differ={self.numerically_buggy}")
        if not self.verdict.admits(self.static_codes):
            out.append(f"static {sorted(self.static_codes)} vs expected {sorted(self.verdict.expected)}"
                       f" (tolerated {sorted(self.verdict.tolerated)})")
        if not self.verdict.admits_at_runtime(self.outcome.guard_codes):
            out.append(f"guard {sorted(self.outcome.guard_codes)} vs expected {sorted(self.verdict.expected - self.verdict.blind)}"
                       f" (tolerated {sorted(self.verdict.tolerated)}, runtime-blind {sorted(self.verdict.blind)})")
        return out

    def report(self) -> str:
        lines = [self.spec.describe(), *self.disagreements(), "--- source", self.source.rstrip()]
        if self.outcome.guard_messages:
            lines += ["--- guard", *self.outcome.guard_messages]
        return "\n".join(lines)


def judge(spec: Spec, directory: str, name: str = "program") -> Judgement:
    """Render, lint, run and compare one program (files go to `directory`)."""
    import os

    from gradcheck_lint import check_source

    source = spec.render()
    path = os.path.join(directory, f"{name}.py")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(source)
    static = {d.code for d in check_source(source, path)}
    return Judgement(spec, source, spec.verdict(), static, run(spec, path))


def every_program() -> list[Any]:
    """Every program of both grammars: the accumulation contract's and GL006-GL010's."""
    return [*loopgen.all_programs(), *loopgen_contract.all_programs()]
