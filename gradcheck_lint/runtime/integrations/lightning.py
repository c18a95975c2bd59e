"""A Lightning callback that runs the gradient-contract guard over `trainer.fit`.

    from gradcheck_lint.runtime.integrations.lightning import GradientContractCallback
    trainer = L.Trainer(callbacks=[GradientContractCallback(mode="raise")])

Works with `lightning` (`lightning.pytorch`) and with `pytorch_lightning`.
"""

from __future__ import annotations

from typing import Any

try:
    from lightning.pytorch.callbacks import Callback
except ImportError:  # pragma: no cover - the older package name
    from pytorch_lightning.callbacks import Callback

from ..guard import Mode, guard
from .holder import GuardHolder


class GradientContractCallback(Callback, GuardHolder):
    """Check every optimizer step of `trainer.fit` against the gradient contract.

    Args:
        mode: "raise" (default: the fit stops with GradientContractError at the offending step),
            "warn", or "record" (read `report()` after the fit).
        strict: measure in-place rescaling on every parameter (see `guard`).
    """

    def __init__(self, mode: Mode = "raise", strict: bool = False) -> None:
        Callback.__init__(self)
        GuardHolder.__init__(self, mode, strict)

    def on_fit_start(self, trainer: Any, pl_module: Any) -> None:
        # the window is Lightning's to keep (accumulate_grad_batches): GL004 is inferred, not declared
        self._start(guard(pl_module, list(trainer.optimizers), mode=self.mode, strict=self.strict))

    def on_fit_end(self, trainer: Any, pl_module: Any) -> None:
        self._stop()

    def on_exception(self, trainer: Any, pl_module: Any, exception: BaseException) -> None:
        self._stop()  # hooks come off also when the fit fails (raise mode included)

    def teardown(self, trainer: Any, pl_module: Any, stage: str) -> None:
        self._stop()
