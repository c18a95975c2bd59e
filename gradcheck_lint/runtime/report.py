"""The guard's report: one finding per code and place, however many steps showed it.

A `Finding` is a plain, frozen record (no torch objects), so other runtime monitors can produce
findings of their own and merge them into a guard's report through `FindingLog.add`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Iterator, Sequence, overload


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

    @property
    def key(self) -> tuple[str, str, int, int]:
        """What makes two findings the same: code and place."""
        return (self.code, self.path, self.line, self.col)

    def format(self) -> str:
        """`path:line:col: CODE message [N steps, first at step K of `opt`]`."""
        steps = f"{self.steps} step{'s' if self.steps != 1 else ''}"
        of = f" of `{self.optimizer}`" if self.optimizer else ""
        return f"{self.path}:{self.line}:{self.col}: {self.code} {self.message} [{steps}, first at step {self.first_step}{of}]"


class Report(Sequence[Finding]):
    """The findings of a guard, in the order they first happened."""

    def __init__(self, findings: Sequence[Finding] = ()) -> None:
        self._findings = tuple(findings)

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

    def report(self) -> Report:
        return Report(list(self._by_key.values()))
