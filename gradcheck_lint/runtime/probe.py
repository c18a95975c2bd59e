"""Hooks on real tensors and optimizers that feed the ledger; every hook handle always comes off."""

from __future__ import annotations

import weakref
from typing import Any, Callable, Iterable

import torch
from torch.utils.hooks import RemovableHandle

from .ledger import UNKNOWN_SITE, Ledger, Site, Violation
from .sites import user_site

# -- one wrapper around torch.autograd.backward, shared by every active probe -------------------
_ACTIVE: list["Probe"] = []
_ORIGINAL_BACKWARD: Callable[..., Any] | None = None


def _backward_with_ids(*args: Any, **kwargs: Any) -> Any:
    site = user_site(2)
    for probe in _ACTIVE:
        if probe.discover and probe.discovered_sites.get(site, 0) < 4:
            # the first few passes of each backward line: enough to meet every model it reaches
            probe.discovered_sites[site] = probe.discovered_sites.get(site, 0) + 1
            probe.discover_leaves(args[0] if args else kwargs.get("tensors"))
        probe.ledger.begin_backward(site)
    try:
        assert _ORIGINAL_BACKWARD is not None
        return _ORIGINAL_BACKWARD(*args, **kwargs)
    finally:
        for probe in _ACTIVE:
            probe.ledger.end_backward()


def _activate(probe: "Probe") -> None:
    global _ORIGINAL_BACKWARD
    if not _ACTIVE:
        _ORIGINAL_BACKWARD = torch.autograd.backward
        torch.autograd.backward = _backward_with_ids  # module function, restored by _deactivate
    _ACTIVE.append(probe)


def _deactivate(probe: "Probe") -> None:
    global _ORIGINAL_BACKWARD
    if probe in _ACTIVE:
        _ACTIVE.remove(probe)
    if not _ACTIVE and _ORIGINAL_BACKWARD is not None:
        torch.autograd.backward = _ORIGINAL_BACKWARD
        _ORIGINAL_BACKWARD = None


class _Observed:
    """What the probe last saw of one parameter's `.grad`: which tensor, at which version."""

    __slots__ = ("grad_id", "version", "param")

    def __init__(self, param: torch.Tensor) -> None:
        self.param = weakref.ref(param)
        self.grad_id: int | None = None
        self.version = -1


class Probe:
    """Watch parameters and optimizers; report contract violations to `sink`."""

    def __init__(self, sink: Callable[[list[Violation], "Probe"], None], accumulation_steps: int | None = None) -> None:
        self.ledger = Ledger()
        self.sink = sink
        self.accumulation_steps = accumulation_steps
        self.handles: list[RemovableHandle] = []
        self.observed: dict[int, _Observed] = {}
        self.owner_of: dict[int, str] = {}
        self.optimizers: dict[int, weakref.ReferenceType[torch.optim.Optimizer]] = {}
        self._patched: list[tuple[weakref.ReferenceType[Any], str]] = []  # instance attributes we set
        self._reported_windows: set[int] = set()
        self.active = False
        self.discover = False  # process-wide: find parameters from the first backward of each line
        self.discovered_sites: dict[Site, int] = {}

    # -- lifecycle
    def open(self) -> None:
        _activate(self)
        self.active = True

    def close(self) -> None:
        """Remove every hook and instance patch; safe to call twice."""
        for handle in self.handles:
            handle.remove()
        self.handles.clear()
        for ref, attr in self._patched:
            obj = ref()
            if obj is not None and attr in getattr(obj, "__dict__", {}):
                delattr(obj, attr)  # the class's method shows through again
        self._patched.clear()
        _deactivate(self)
        self.active = False

    # -- what to watch
    def watch_model(self, model: torch.nn.Module, name: str) -> None:
        for pname, p in model.named_parameters():
            self.owner_of.setdefault(id(p), name)
            self.watch_param(p)
        self._wrap_zero_grad(model, lambda: list(model.parameters()))

    def watch_optimizer(self, opt: torch.optim.Optimizer, own_hooks: bool = True) -> None:
        if id(opt) in self.optimizers:
            return
        self.optimizers[id(opt)] = weakref.ref(opt)
        params = self._params_of(opt)
        for p in params:
            self.watch_param(p)
        self.ledger.register(id(opt), [id(p) for p in params])
        if own_hooks:
            self.handles.append(opt.register_step_pre_hook(self._before_step))
            self.handles.append(opt.register_step_post_hook(self._after_step))
        opt_ref = weakref.ref(opt)
        self._wrap_zero_grad(opt, lambda: self._params_of(opt_ref()) if opt_ref() is not None else [])

    def watch_all_optimizers(self) -> None:
        """Process-wide: check every optimizer's steps; parameters are found from backward graphs."""
        self.discover = True
        from torch.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook

        self.handles.append(register_optimizer_step_pre_hook(self._global_before_step))
        self.handles.append(register_optimizer_step_post_hook(self._global_after_step))

    def discover_leaves(self, tensors: Any) -> None:
        """Watch the leaf parameters a loss depends on (walks the graph once per backward line)."""
        roots = [tensors] if isinstance(tensors, torch.Tensor) else list(tensors or [])
        stack = [t.grad_fn for t in roots if isinstance(t, torch.Tensor) and t.grad_fn is not None]
        seen: set[int] = set()
        while stack:
            fn = stack.pop()
            if fn is None or id(fn) in seen:
                continue
            seen.add(id(fn))
            variable = getattr(fn, "variable", None)
            if isinstance(variable, torch.Tensor):
                self.watch_param(variable)
            stack.extend(next_fn for next_fn, _ in fn.next_functions)

    @staticmethod
    def _params_of(opt: torch.optim.Optimizer) -> list[torch.Tensor]:
        return [p for group in opt.param_groups for p in group["params"]]

    def watch_param(self, p: torch.Tensor) -> None:
        key = id(p)
        if key in self.observed or not p.requires_grad:
            return
        obs = self.observed[key] = _Observed(p)
        ledger = self.ledger

        def before_accumulate(grad: torch.Tensor) -> None:
            param = obs.param()
            if param is not None:
                self._sync(key, param)

        def after_accumulate(param: torch.Tensor) -> None:
            ledger.accumulated(key)
            g = param.grad
            obs.grad_id = id(g) if g is not None else None
            obs.version = g._version if g is not None else -1

        self.handles.append(p.register_hook(before_accumulate))
        self.handles.append(p.register_post_accumulate_grad_hook(after_accumulate))

    def _wrap_zero_grad(self, obj: Any, params: Callable[[], list[torch.Tensor]]) -> None:
        """Give this instance a zero_grad that tells the ledger where the clear happened."""
        if "zero_grad" in getattr(obj, "__dict__", {}):
            return
        original = obj.zero_grad  # the bound method of the class
        probe_ref = weakref.ref(self)

        def zero_grad(*args: Any, **kwargs: Any) -> Any:
            site = user_site(2)
            probe = probe_ref()
            skipped = False
            if probe is not None and probe.active:
                # Gradients no step applied, and not finite: a GradScaler skipped the step on purpose.
                pending = [p for p in params() if p.grad is not None and probe.ledger.holds_unapplied(id(p))]
                skipped = bool(pending) and not all(bool(torch.isfinite(p.grad).all()) for p in pending)
            result = original(*args, **kwargs)
            if probe is not None and probe.active:
                for p in params():
                    probe._mark_cleared(p, site, discard=not skipped)
            return result

        obj.zero_grad = zero_grad
        self._patched.append((weakref.ref(obj), "zero_grad"))

    # -- observations
    def _mark_cleared(self, p: torch.Tensor, site: Site, discard: bool = True) -> None:
        key = id(p)
        self.ledger.cleared(key, site, discard=discard)
        obs = self.observed.get(key)
        if obs is not None:
            g = p.grad
            obs.grad_id = id(g) if g is not None else None
            obs.version = g._version if g is not None else -1

    def _sync(self, key: int, p: torch.Tensor, site: Site | None = None) -> None:
        """Notice clears made behind the probe's back (`p.grad = None`, `p.grad.zero_()`)."""
        obs = self.observed.get(key)
        if obs is None or obs.grad_id is None:
            return
        g = p.grad
        where = site or UNKNOWN_SITE
        if g is None:
            self._mark_cleared(p, where)
        elif id(g) != obs.grad_id or g._version != obs.version:
            # replaced or modified in place: zeroed means cleared; anything else (clipping, unscale_,
            # `/= N`) rescales the same gradients
            if not bool(g.any()):
                self._mark_cleared(p, where)
            else:
                obs.grad_id, obs.version = id(g), g._version

    # -- steps
    def _before_step(self, opt: torch.optim.Optimizer, args: Any, kwargs: Any) -> None:
        if any(callable(a) and not isinstance(a, torch.optim.Optimizer) for a in args) or callable(kwargs.get("closure")):
            # `step(closure)`: the closure clears and runs backward inside the step (LBFGS may call it
            # several times); what it leaves is applied by this step, see _after_step
            return
        site = user_site(2)
        params = self._params_of(opt)
        for p in params:
            if id(p) not in self.observed:
                self.watch_param(p)
            self._sync(id(p), p)
        self.ledger.register(id(opt), [id(p) for p in params])
        violations = self.ledger.step(id(opt), [id(p) for p in params if p.grad is not None], site, self.owner_of)
        window = self.ledger.window_violation(id(opt), self.accumulation_steps)
        if window is not None and id(opt) not in self._reported_windows:
            self._reported_windows.add(id(opt))
            violations.append(window)
        if violations:
            self.sink(violations, self)

    def _after_step(self, opt: torch.optim.Optimizer, args: Any, kwargs: Any) -> None:
        # a closure (LBFGS) ran its backward inside step(): those gradients were applied too
        params = self._params_of(opt)
        for p in params:
            self._sync(id(p), p)
        self.ledger.consume(id(opt), [id(p) for p in params if p.grad is not None])
        for p in params:
            obs = self.observed.get(id(p))
            g = p.grad
            if obs is not None and g is not None:
                obs.grad_id, obs.version = id(g), g._version

    def _global_before_step(self, opt: torch.optim.Optimizer, args: Any, kwargs: Any) -> None:
        if id(opt) not in self.optimizers:
            # first sight of this optimizer: watch it (without hooks of its own: torch is iterating
            # over them); parameters found from the backward graph already hold their contributions
            self.watch_optimizer(opt, own_hooks=False)
        self._before_step(opt, args, kwargs)

    def _global_after_step(self, opt: torch.optim.Optimizer, args: Any, kwargs: Any) -> None:
        if id(opt) in self.optimizers:
            self._after_step(opt, args, kwargs)


def iter_models(models: Any) -> Iterable[tuple[str, torch.nn.Module]]:
    """Name the models given to a guard: dict keys, or class names made unique."""
    if models is None:
        return []
    if isinstance(models, torch.nn.Module):
        models = [models]
    if isinstance(models, dict):
        return list(models.items())
    out: list[tuple[str, torch.nn.Module]] = []
    counts: dict[str, int] = {}
    for m in models:
        base = type(m).__name__
        counts[base] = counts.get(base, 0) + 1
        out.append((base if counts[base] == 1 else f"{base}#{counts[base]}", m))
    return out
