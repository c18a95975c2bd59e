"""The guard: check the gradient contract on a real training run (assertion mode)."""

from __future__ import annotations

import functools
import os
import warnings
import weakref
from collections.abc import Callable
from typing import Any, Literal, TypeVar

import torch

from .evidence import Violation
from .probe import Probe, iter_models
from .report import Finding, FindingLog, Report
from .suppress import FindingFilter
from .wording import to_finding

Mode = Literal["raise", "warn", "record"]
F = TypeVar("F", bound=Callable[..., Any])

class GradientContractError(AssertionError):
    """A training step broke the gradient contract; `.findings` says how and where."""

    def __init__(self, findings: list[Finding]) -> None:
        self.findings = findings
        super().__init__("\n".join(f"{f.location}: {f.code} {f.message}\n    help: {f.help}" for f in findings))

    @property
    def diagnostics(self) -> list[Finding]:
        """The same as `findings` (the name this attribute had first)."""
        return self.findings


class guard:
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
        verify_every_cycle: check every call on the full path, on every cycle: no sampling of the
            `.grad` reads, the loss factors or GL008's tags (the rule documents say what sampling
            gives up). None (the default): on when the environment variable
            `GRADLINT_VERIFY_EVERY_CYCLE` is set to `1`. It costs several times the default's time per
            call (benchmarks/README.md).

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
        verify_every_cycle: bool | None = None,
    ) -> None:
        if mode not in ("raise", "warn", "record"):
            raise ValueError(f"mode must be 'raise', 'warn' or 'record', not {mode!r}")
        # held weakly: a guard kept around (a decorator, a fixture) must not keep a model alive
        self._models = [(name, weakref.ref(m)) for name, m in iter_models(models)]
        self._optimizers = [weakref.ref(o) for o in _as_list(optimizers)]
        self.accumulation_steps = accumulation_steps
        self.mode: Mode = mode
        self.strict = strict
        self.verify_every_cycle = _flag("GRADLINT_VERIFY_EVERY_CYCLE") if verify_every_cycle is None else verify_every_cycle
        self._log = FindingLog()
        self._filter = FindingFilter()
        self._steps_checked = 0
        self._probe: Probe | None = None
        self._global = False

    # -- context manager / decorator
    def __enter__(self) -> guard:
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
        probe = Probe(self._collect, self.accumulation_steps, strict=self.strict, finding_sink=self._collect_finding,
                      verify_every_cycle=self.verify_every_cycle)
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
            self._steps_checked += probe.steps_checked()

    def steps_checked(self) -> int:
        """How many optimizer steps (LBFGS: closure evaluations) the guard has checked."""
        return self._steps_checked + (self._probe.steps_checked() if self._probe is not None else 0)

    # -- results
    def _collect(self, violations: list[Violation], optimizer: str, step: object) -> None:
        new: list[Finding] = []
        kept: list[Finding] = []
        for v in violations:
            finding = to_finding(v, optimizer)
            if not self._filter.keeps(finding):
                continue  # suppressed in the source, or left out by the settings, as `gradlint` does
            kept.append(finding)
            if self._log.add(finding, step).steps == 1:
                new.append(finding)
        if self.mode == "raise" and kept:
            raise GradientContractError(kept)
        if self.mode == "warn":
            for f in new:  # once per code and place
                warnings.warn_explicit(f"{f.code} {f.message}", GradientContractWarning, f.path, f.line)

    def _collect_finding(self, finding: Finding, step: object, may_raise: bool) -> None:
        """A finding of the GL006-GL009 monitors. `may_raise` is False when PyTorch itself is raising
        (GL009, a second unscale_): its error propagates, with the diagnostic added as a note."""
        if not self._filter.keeps(finding):
            return
        merged = self._log.add(finding, step)
        if self.mode == "raise" and may_raise:
            raise GradientContractError([finding])
        if self.mode == "warn" and merged.steps == 1:
            warnings.warn_explicit(f"{finding.code} {finding.message}", GradientContractWarning, finding.path, finding.line)

    def add_finding(self, finding: Finding, step: object = None) -> Finding:
        """Merge a finding into this guard's report (for other runtime monitors); returns the merged one.

        Args:
            finding: what was seen, with `steps=1`.
            step: a hashable token of the optimizer step that showed it (the same step counts once).

        A finding suppressed by a comment in its file, or whose code that file's `[tool.gradlint]`
        settings leave out, is not added (the finding is returned as given).
        """
        if not self._filter.keeps(finding):
            return finding
        return self._log.add(finding, step)

    def report(self) -> Report:
        """The findings so far (all modes): one per code and place, with step counts."""
        return self._log.report(self.steps_checked())


class GradientContractWarning(UserWarning):
    """Issued by a guard in warn mode."""


def _as_list(objs: Any) -> list[torch.optim.Optimizer]:
    if objs is None:
        return []
    if isinstance(objs, torch.optim.Optimizer) or hasattr(objs, "param_groups"):
        objs = [objs]
    elif isinstance(objs, dict):
        objs = list(objs.values())
    return [unwrap_optimizer(o) for o in objs]


def unwrap_optimizer(opt: Any) -> Any:
    """The torch optimizer inside a framework's wrapper (Accelerate's `AcceleratedOptimizer`,
    Lightning's `LightningOptimizer`): its step hooks are the ones that run."""
    for _ in range(8):
        inner = getattr(opt, "optimizer", None)
        if inner is None or inner is opt or not hasattr(inner, "param_groups"):
            break
        opt = inner
    return opt


_PROCESS_GUARD: guard | None = None


def enable(mode: Mode = "raise", strict: bool = False, verify_every_cycle: bool | None = None) -> guard:
    """Check every optimizer's steps in this process, with no change to the training code."""
    global _PROCESS_GUARD
    if _PROCESS_GUARD is None:
        g = guard(mode=mode, strict=strict, verify_every_cycle=verify_every_cycle)
        g.start(process_wide=True)
        _PROCESS_GUARD = g
    return _PROCESS_GUARD


def disable() -> Report:
    """Stop the process-wide guard; return what it recorded."""
    global _PROCESS_GUARD
    g, _PROCESS_GUARD = _PROCESS_GUARD, None
    if g is None:
        return Report()
    g.stop()
    return g.report()


def enable_from_environment() -> guard | None:
    """`GRADLINT_GUARD=1` (or `raise`, `warn`, `record`) turns the process-wide guard on;
    `GRADLINT_GUARD_STRICT=1` makes it strict (`GRADLINT_VERIFY_EVERY_CYCLE=1`: see `guard`)."""
    value = os.environ.get("GRADLINT_GUARD", "").strip().lower()
    if value in ("", "0", "false", "off", "no"):
        return None
    mode: Mode = value if value in ("raise", "warn", "record") else "raise"  # type: ignore[assignment]
    return enable(mode, strict=_flag("GRADLINT_GUARD_STRICT"))


def _flag(name: str) -> bool:
    """An environment variable set to a true value (`1`, `yes`, `on`...)."""
    return os.environ.get(name, "").strip().lower() not in ("", "0", "false", "off", "no")

