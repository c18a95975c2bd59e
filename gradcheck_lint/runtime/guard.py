"""The guard: check the gradient contract on a real training run (assertion mode)."""

from __future__ import annotations

import functools
import os
import warnings
import weakref
from typing import Any, Callable, Literal, TypeVar

import torch

from ..diagnostics import Diagnostic, Severity, Span
from .. import messages
from .ledger import Violation
from .probe import Probe, iter_models

Mode = Literal["raise", "warn", "record"]
F = TypeVar("F", bound=Callable[..., Any])

RULE_NAMES = {
    "GL001": "missing-zero-grad",
    "GL002": "zero-grad-before-step",
    "GL003": "unscaled-accumulated-loss",
    "GL004": "accumulation-off-by-one",
    "GL005": "cross-model-grad-leak",
}


class GradientContractError(AssertionError):
    """A training step broke the gradient contract; `.diagnostics` says how and where."""

    def __init__(self, diagnostics: list[Diagnostic]) -> None:
        self.diagnostics = diagnostics
        super().__init__("\n".join(f"{d.path}:{d.line}: {d.code} {d.message}\n    help: {d.help}" for d in diagnostics))


def _receiver(step_text: str) -> str:
    """`opt_D.step()` -> `opt_D`; `scaler.step(optimizer)` -> `optimizer`."""
    text = step_text.strip()
    if "scaler" in text and ".step(" in text:
        inner = text.split(".step(", 1)[1].rsplit(")", 1)[0]
        return inner.split(",")[0].strip() or "optimizer"
    if ".step(" in text:
        return text.split(".step(", 1)[0].split("=")[-1].strip() or "optimizer"
    return "optimizer"


def to_diagnostic(v: Violation) -> Diagnostic:
    """Word a runtime violation exactly as the static analyzer words the same rule."""
    backward = v.backward.site if v.backward is not None else None
    b_text = backward.text if backward and backward.text else "backward()"
    b_line = backward.line if backward else None
    if v.code == "GL001" and v.leftover:
        msg, help_ = messages.skipped_step_leftover(v.site.text or "step()", b_text, b_line, _receiver(v.site.text))
    elif v.code == "GL001":
        msg, help_ = messages.missing_zero_grad(v.site.text or "step()", b_text, b_line, _receiver(v.site.text))
    elif v.code == "GL005":
        own = v.own_backward.site.text if v.own_backward is not None else None
        msg, help_ = messages.cross_model_grad_leak(
            v.site.text or "step()", b_text, b_line, v.param_owner or "these parameters",
            v.other_step.text if v.other_step else None, v.other_step.line if v.other_step else None,
            _receiver(v.site.text), own,
        )
    elif v.code == "GL002":
        step = v.other_step
        msg, help_ = messages.zero_grad_before_step(
            v.site.text if v.site != v.other_step else "a clear of `.grad` (`p.grad = None`, `zero_()`, `model.zero_grad()`)", b_text, b_line, step.text if step else "step()", step.line if step else None,
        )
    elif v.code == "GL003":
        step = v.other_step
        loss = b_text.split(".backward(", 1)[0].strip() if ".backward(" in b_text else "the loss"
        if loss.startswith("(") and loss.endswith(")"):
            loss = loss[1:-1]
        if v.scaled_twice:
            msg, help_ = messages.loss_scaled_twice(b_text, loss, str(v.window[0]) if v.window else "N", step.text if step else "step()", step.line if step else None)
        else:
            msg, help_ = messages.unscaled_accumulated_loss(b_text, loss, step.text if step else "step()", step.line if step else None, None)
    else:  # GL004
        first, n = v.window or (0, 0)
        msg, help_ = messages.accumulation_first_window(v.site.text or "step()", first, n)
    line = max(v.site.line, 1)
    width = len(v.site.text) + 1 if v.site.text else 1
    return Diagnostic(
        path=v.site.path, span=Span(line, 1, line, width), code=v.code, name=RULE_NAMES[v.code],
        message=msg, help=help_, severity=Severity.ERROR,
    )


class guard:  # noqa: N801 - used like `torch.no_grad`
    """Check the gradient contract of a training run, as a context manager or a decorator.

    Args:
        models: the model(s) trained: a module, a list, or a dict name -> module (names appear in
            messages). Optional: optimizers alone are enough.
        optimizers: the optimizer(s) whose steps are checked: one, a list, or a dict.
        accumulation_steps: N micro-batches per step, if the loop accumulates; enables GL004.
        mode: "raise" (default) raises GradientContractError at the offending step, "warn" warns,
            "record" only collects diagnostics for `report()`.
        strict: also measure in-place rescaling (`p.grad /= N`) of every parameter on every device
            at each step. The default measures it on a few small CPU parameters only, which costs no
            device sync; strict copies 64 fixed elements of every large gradient (all of a small one)
            after each backward pass and compares them at each step, with a few device syncs per step
            and device (its price is measured in benchmarks/guard_overhead.py).

    Raises:
        GradientContractError: in raise mode, from the `step()` (or the clear) that broke the contract.
    """

    def __init__(
        self,
        models: Any = None,
        optimizers: Any = None,
        *,
        accumulation_steps: int | None = None,
        mode: Mode = "raise",
        strict: bool = False,
    ) -> None:
        if mode not in ("raise", "warn", "record"):
            raise ValueError(f"mode must be 'raise', 'warn' or 'record', not {mode!r}")
        # held weakly: a guard kept around (a decorator, a fixture) must not keep a model alive
        self._models = [(name, weakref.ref(m)) for name, m in iter_models(models)]
        self._optimizers = [weakref.ref(o) for o in _as_list(optimizers)]
        self.accumulation_steps = accumulation_steps
        self.mode: Mode = mode
        self.strict = strict
        self._diagnostics: list[Diagnostic] = []
        self._probe: Probe | None = None
        self._global = False

    # -- context manager / decorator
    def __enter__(self) -> "guard":
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __call__(self, fn: F) -> F:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with self:
                return fn(*args, **kwargs)

        return wrapper  # type: ignore[return-value]

    def start(self, process_wide: bool = False) -> None:
        if self._probe is not None:
            raise RuntimeError("this guard is already active")
        probe = Probe(self._collect, self.accumulation_steps, strict=self.strict)
        try:
            probe.open()
            for name, ref in self._models:
                model = ref()
                if model is not None:
                    probe.watch_model(model, name)
            for oref in self._optimizers:
                opt = oref()
                if opt is not None:
                    probe.watch_optimizer(opt)
            if process_wide:
                probe.watch_all_optimizers()
        except BaseException:
            probe.close()
            raise
        self._probe = probe
        self._global = process_wide

    def stop(self) -> None:
        probe, self._probe = self._probe, None
        if probe is not None:
            probe.close()

    # -- results
    def _collect(self, violations: list[Violation], probe: Probe) -> None:
        diags = [to_diagnostic(v) for v in violations]
        self._diagnostics.extend(diags)
        if self.mode == "raise":
            raise GradientContractError(diags)
        if self.mode == "warn":
            for d in diags:
                warnings.warn_explicit(f"{d.code} {d.message}", GradientContractWarning, d.path, d.line)

    def report(self) -> list[Diagnostic]:
        """Diagnostics collected so far (all modes)."""
        return list(self._diagnostics)


class GradientContractWarning(UserWarning):
    """Issued by a guard in warn mode."""


def _as_list(objs: Any) -> list[torch.optim.Optimizer]:
    if objs is None:
        return []
    if isinstance(objs, torch.optim.Optimizer):
        return [objs]
    if isinstance(objs, dict):
        return list(objs.values())
    return list(objs)


_PROCESS_GUARD: guard | None = None


def enable(mode: Mode = "raise", strict: bool = False) -> guard:
    """Check every optimizer's steps in this process, with no change to the training code."""
    global _PROCESS_GUARD
    if _PROCESS_GUARD is None:
        g = guard(mode=mode, strict=strict)
        g.start(process_wide=True)
        _PROCESS_GUARD = g
    return _PROCESS_GUARD


def disable() -> list[Diagnostic]:
    """Stop the process-wide guard; return what it recorded."""
    global _PROCESS_GUARD
    g, _PROCESS_GUARD = _PROCESS_GUARD, None
    if g is None:
        return []
    g.stop()
    return g.report()


def enable_from_environment() -> guard | None:
    """`GRADLINT_GUARD=1` (or `raise`, `warn`, `record`) turns the process-wide guard on;
    `GRADLINT_GUARD_STRICT=1` makes it strict."""
    value = os.environ.get("GRADLINT_GUARD", "").strip().lower()
    if value in ("", "0", "false", "off", "no"):
        return None
    mode: Mode = value if value in ("raise", "warn", "record") else "raise"  # type: ignore[assignment]
    strict = os.environ.get("GRADLINT_GUARD_STRICT", "").strip().lower() not in ("", "0", "false", "off", "no")
    return enable(mode, strict=strict)

