"""A Hugging Face `TrainerCallback` that runs the gradient-contract guard over `Trainer.train`.

    from gradcheck_lint.runtime.integrations.transformers import GradientContractCallback
    trainer = Trainer(model=model, args=args, train_dataset=ds, callbacks=[GradientContractCallback()])
"""

from __future__ import annotations

from typing import Any

from transformers import TrainerCallback

from ..guard import Mode, guard
from ..report import Report


class GradientContractCallback(TrainerCallback):  # type: ignore[misc]
    """Check every optimizer step of `Trainer.train` against the gradient contract.

    Args:
        mode: "raise" (default), "warn", or "record" (read `report()` after training).
        strict: measure in-place rescaling on every parameter (see `guard`).
    """

    def __init__(self, mode: Mode = "raise", strict: bool = False) -> None:
        self.mode: Mode = mode
        self.strict = strict
        self._guard: guard | None = None
        self._last: Report = Report()
        self._last_steps = 0

    def on_train_begin(self, args: Any, state: Any, control: Any, model: Any = None, optimizer: Any = None,
                       **kwargs: Any) -> None:
        self._stop()
        g = guard(model, [optimizer] if optimizer is not None else None, mode=self.mode, strict=self.strict,
                  accumulation_steps=getattr(args, "gradient_accumulation_steps", None))
        g.start()
        self._guard = g

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._stop()

    def _stop(self) -> None:
        g, self._guard = self._guard, None
        if g is not None:
            g.stop()
            self._last, self._last_steps = g.report(), g.steps_checked()

    def report(self) -> Report:
        """What the guard found during the current (or last) training run."""
        return self._guard.report() if self._guard is not None else self._last

    def steps_checked(self) -> int:
        """How many optimizer steps the guard checked during the current (or last) run."""
        return self._guard.steps_checked() if self._guard is not None else self._last_steps
