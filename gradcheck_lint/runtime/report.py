"""The guard's report: one finding per code and place, however many steps showed it.

A `Finding` is a plain, frozen record (no torch objects), so other runtime monitors can produce
findings of their own and merge them into a guard's report through `FindingLog.add`.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from typing import overload


@dataclass(frozen=True, slots=True)
class Finding:
    """One broken rule at one place of the user's code.

    Attributes:
        code: the rule's code (`GL001`).
        name: the rule's name (`missing-zero-grad`).
        path: the source file the finding anchors to.
        line: its line (from 1).
        col: its character column (from 1), the start of the anchoring call.
        message: the sentence the static analyzer uses for the same rule.
        help: how to fix it.
        steps: how many optimizer steps showed it.
        first_step: the step (counted from 1, per optimizer) that first showed it.
        optimizer: the name of that optimizer in the user's code (`opt_D`), "" if unknown.
        subsumed_by: a key naming the precise finding this one is a vaguer sighting of (a clear the
            guard saw only by its effect, at a step where it could not find the call): a report that
            also holds a finding of the same code and optimizer with this `refines` key shows one
            line, the precise one, counting the steps of both. "" when it is not vague.
        refines: the key a vague finding may name in `subsumed_by` (GL002: the backward pass's line).
    """

    code: str
    name: str
    path: str
    line: int
    col: int
    message: str
    help: str
    steps: int = 1
    first_step: int = 1
    optimizer: str = ""
    subsumed_by: str = ""
    refines: str = ""

    @property
    def key(self) -> tuple[str, str, int, int]:
        """What makes two findings the same: code and place."""
        return (self.code, self.path, self.line, self.col)

    @property
    def location(self) -> str:
        """`path:line:col`, the path relative to the working directory when under it, as `gradlint` prints it."""
        return f"{display_path(self.path)}:{self.line}:{self.col}"

    def format(self) -> str:
        """`path:line:col: CODE message [N steps, first at step K of `opt`]`."""
        steps = f"{self.steps} step{'s' if self.steps != 1 else ''}"
        of = f" of `{self.optimizer}`" if self.optimizer else ""
        return f"{self.location}: {self.code} {self.message} [{steps}, first at step {self.first_step}{of}]"


def display_path(path: str) -> str:
    """`path` relative to the working directory when it lies under it, else as it is."""
    if not path or not os.path.isabs(path):
        return path
    try:
        rel = os.path.relpath(path)
    except ValueError:  # another drive (Windows)
        return path
    return path if rel == os.pardir or rel.startswith(os.pardir + os.sep) else rel


class Report(Sequence[Finding]):
    """The findings of a guard, in the order they first happened."""

    def __init__(self, findings: Sequence[Finding] = (), steps_checked: int | None = None) -> None:
        self._findings = tuple(findings)
        self.steps_checked = steps_checked  # None: not counted (a report merged by hand)

    @overload
    def __getitem__(self, i: int) -> Finding: ...
    @overload
    def __getitem__(self, i: slice) -> Sequence[Finding]: ...
    def __getitem__(self, i: int | slice) -> Finding | Sequence[Finding]:
        return self._findings[i]

    def __len__(self) -> int:
        return len(self._findings)

    def __iter__(self) -> Iterator[Finding]:
        return iter(self._findings)

    def __repr__(self) -> str:
        return f"Report({list(self._findings)!r})"

    @property
    def codes(self) -> set[str]:
        return {f.code for f in self._findings}

    def summary(self) -> str:
        """One line: how many findings of which codes, or that the contract held."""
        if not self._findings:
            if self.steps_checked == 0:
                return "gradlint guard: no optimizer step ran, so the gradient contract was not checked."
            return "gradlint guard: the gradient contract held on every step."
        codes = ", ".join(sorted(self.codes))
        n = len(self._findings)
        return f"gradlint guard: {n} problem{'s' if n != 1 else ''} found ({codes})."

    def __str__(self) -> str:
        return "\n".join([*(f.format() for f in self._findings), self.summary()])


class FindingLog:
    """Collects findings, merging repeats of the same code and place into one with a step count."""

    def __init__(self) -> None:
        self._by_key: dict[tuple[str, str, int, int], Finding] = {}
        self._last_step: dict[tuple[str, str, int, int], object] = {}

    def add(self, finding: Finding, step: object = None) -> Finding:
        """Record a finding seen at `step` (any hashable token naming one optimizer step; None: a new
        step each call). Returns the merged finding."""
        key = finding.key
        old = self._by_key.get(key)
        if old is None:
            merged = finding
        elif step is not None and self._last_step.get(key) == step:
            return old  # the same step shows it twice (two backward passes): counted once
        else:
            merged = replace(old, steps=old.steps + finding.steps)
        self._by_key[key] = merged
        self._last_step[key] = step
        return merged

    def report(self, steps_checked: int | None = None) -> Report:
        """The findings in the order they first happened, a vague sighting folded into its precise finding."""
        findings = list(self._by_key.values())
        precise = {(f.code, f.optimizer, f.refines): i for i, f in enumerate(findings) if f.refines and not f.subsumed_by}
        out: list[Finding | None] = list(findings)
        for i, f in enumerate(findings):
            j = precise.get((f.code, f.optimizer, f.subsumed_by)) if f.subsumed_by else None
            if j is None:
                continue
            into = out[j]
            assert into is not None
            # one line: the precise one, with the steps of both, from the earliest of them
            out[j] = replace(into, steps=into.steps + f.steps, first_step=min(into.first_step, f.first_step))
            out[i] = None
        return Report([f for f in out if f is not None], steps_checked)
