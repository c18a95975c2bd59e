"""A Hugging Face `TrainerCallback` that runs the gradient-contract guard over `Trainer.train`.

    from gradcheck_lint.runtime.integrations.transformers import GradientContractCallback
    trainer = Trainer(model=model, args=args, train_dataset=ds, callbacks=[GradientContractCallback()])
"""

from __future__ import annotations

from typing import Any

from transformers import TrainerCallback

from ..guard import Mode, guard
from .holder import GuardHolder


class GradientContractCallback(TrainerCallback, GuardHolder):
    """Check every optimizer step of `Trainer.train` against the gradient contract.

    Args:
        mode: "raise" (default), "warn", or "record" (read `report()` after training).
        strict: measure in-place rescaling on every parameter (see `guard`).
    """

    def __init__(self, mode: Mode = "raise", strict: bool = False) -> None:
        GuardHolder.__init__(self, mode, strict)

    def on_train_begin(self, args: Any, state: Any, control: Any, model: Any = None, optimizer: Any = None,
                       **kwargs: Any) -> None:
        self._start(guard(model, [optimizer] if optimizer is not None else None, mode=self.mode, strict=self.strict,
                          accumulation_steps=getattr(args, "gradient_accumulation_steps", None)))

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._stop()
