"""What the framework callbacks share: a guard started at the run's start, stopped at its end (also
when it fails), and its report kept after it stops. Imports no framework."""

from __future__ import annotations

from ..guard import Mode, guard
from ..report import Report


class GuardHolder:
    """Holds the guard of one training run at a time."""

    def __init__(self, mode: Mode = "raise", strict: bool = False) -> None:
        self.mode: Mode = mode
        self.strict = strict
        self._guard: guard | None = None
        self._last: Report = Report()
        self._last_steps = 0

    def _start(self, g: guard) -> None:
        self._stop()
        g.start()
        self._guard = g

    def _stop(self) -> None:
        g, self._guard = self._guard, None
        if g is not None:
            g.stop()
            self._last, self._last_steps = g.report(), g.steps_checked()

    def report(self) -> Report:
        """What the guard found during the current (or last) run."""
        return self._guard.report() if self._guard is not None else self._last

    def steps_checked(self) -> int:
        """How many optimizer steps the guard checked during the current (or last) run."""
        return self._guard.steps_checked() if self._guard is not None else self._last_steps
