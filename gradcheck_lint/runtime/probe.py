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
    tensors = args[0] if args else kwargs.get("tensors")
    scale = loss_scale(tensors) if _ACTIVE else None
    for probe in _ACTIVE:
        if probe.discover and probe.discovered_sites.get(site, 0) < 4:
            # the first few passes of each backward line: enough to meet every model it reaches
            probe.discovered_sites[site] = probe.discovered_sites.get(site, 0) + 1
            probe.discover_leaves(tensors)
        probe.ledger.begin_backward(site, scale)
    try:
        assert _ORIGINAL_BACKWARD is not None
        return _ORIGINAL_BACKWARD(*args, **kwargs)
    finally:
        for probe in _ACTIVE:
            probe.ledger.end_backward()


_SCALAR_OPS = {"MulBackward0": False, "MulBackward1": False, "DivBackward0": True, "DivBackward1": True}
_PASS_THROUGH = {"NegBackward0", "CloneBackward0", "ViewBackward0", "SqueezeBackward0", "SqueezeBackward1",
                 "UnsqueezeBackward0", "ToCopyBackward0", "ReshapeAliasBackward0"}


def loss_scale(tensors: Any) -> tuple[float, ...] | None:
    """The constant factors below one applied to the terms of a loss: `loss / 4` -> (0.25,), a bare
    loss -> (1.0,), `(a + 0.1 * b) / 4` -> (0.025, 0.25).

    Reads the autograd graph from the root down through multiplications and divisions by a
    constant (a Python number or a CPU scalar: reading it never waits for a device), sums and
    differences (each term keeps its own factor), negation and views. Factors of one or more
    (GradScaler's scale, a loss weight) and factors held on an accelerator are neutral. None when a
    factor cannot be known without a device sync, or the graph is not understood.
    """
    import torch

    if not isinstance(tensors, torch.Tensor) or tensors.grad_fn is None:
        return None
    terms = _factors(tensors.grad_fn, 0)
    return None if terms is None else tuple(sorted(terms))


def _factors(fn: Any, depth: int) -> set[float] | None:
    import torch

    if fn is None:
        return {1.0}
    if depth > 12:
        return None
    name = type(fn).__name__
    if name in _PASS_THROUGH:
        return _factors(fn.next_functions[0][0], depth + 1) if fn.next_functions else {1.0}
    if name in ("AddBackward0", "SubBackward0"):
        out: set[float] = set()
        for nf, _ in fn.next_functions:
            if nf is None:
                continue
            part = _factors(nf, depth + 1)
            if part is None:
                return None
            out |= part
        return out or {1.0}
    if name in _SCALAR_OPS:
        other = getattr(fn, "_saved_other", None)
        if not isinstance(other, torch.Tensor) or other.requires_grad or other.numel() != 1:
            return None
        inner = _factors(fn.next_functions[0][0], depth + 1)
        if inner is None or other.device.type != "cpu":
            return inner  # a device-held factor: GradScaler's scale, unscaled again before the step
        value = abs(float(other.reshape(()).item()))
        if value == 0.0:
            return None
        shrink = 1.0 / value if _SCALAR_OPS[name] else value
        # only factors below one can be a 1/N; growing ones are undone (GradScaler) or are weights
        return {f * shrink for f in inner} if shrink < 1.0 else inner
    return {1.0}


_ORIGINAL_UNSCALE: Callable[..., Any] | None = None
_UNSCALE = "_amp_foreach_non_finite_check_and_unscale_"


def _unscale_seen(grads: Any, *args: Any, **kwargs: Any) -> Any:
    """GradScaler.unscale_ undoes the loss scaling it applied: not a rescale of the gradients."""
    assert _ORIGINAL_UNSCALE is not None
    result = _ORIGINAL_UNSCALE(grads, *args, **kwargs)
    for probe in _ACTIVE:
        probe.unscaled(grads)
    return result


def _activate(probe: "Probe") -> None:
    global _ORIGINAL_BACKWARD, _ORIGINAL_UNSCALE
    if not _ACTIVE:
        # module functions, looked up by torch at call time; restored by _deactivate
        _ORIGINAL_BACKWARD = torch.autograd.backward
        torch.autograd.backward = _backward_with_ids
        _ORIGINAL_UNSCALE = getattr(torch, _UNSCALE, None)
        if _ORIGINAL_UNSCALE is not None:
            setattr(torch, _UNSCALE, _unscale_seen)
    _ACTIVE.append(probe)


def _deactivate(probe: "Probe") -> None:
    global _ORIGINAL_BACKWARD, _ORIGINAL_UNSCALE
    if probe in _ACTIVE:
        _ACTIVE.remove(probe)
    if not _ACTIVE and _ORIGINAL_BACKWARD is not None:
        torch.autograd.backward = _ORIGINAL_BACKWARD
        _ORIGINAL_BACKWARD = None
        if _ORIGINAL_UNSCALE is not None:
            setattr(torch, _UNSCALE, _ORIGINAL_UNSCALE)
            _ORIGINAL_UNSCALE = None


class _Observed:
    """What the probe last saw of one parameter's `.grad`: which tensor, at which version."""

    __slots__ = ("grad_id", "version", "param", "snapshot", "sample")

    def __init__(self, param: torch.Tensor) -> None:
        self.param = weakref.ref(param)
        self.grad_id: int | None = None
        self.version = -1
        # a copy of `.grad` after the last backward pass, kept for one small CPU parameter per
        # optimizer: measures in-place rescaling (`p.grad /= N`) without any device sync
        self.snapshot: torch.Tensor | None = None
        # strict mode, large parameters: the fixed elements copied instead of the whole gradient
        self.sample: torch.Tensor | None = None

    def view(self, grad: torch.Tensor) -> torch.Tensor:
        """The part of a gradient that is snapshotted: all of it, or the sampled elements (as float)."""
        g = grad.detach()
        if self.sample is None:
            return g
        return g.reshape(-1).index_select(0, self.sample).float()

    def take(self, grad: torch.Tensor) -> None:
        self.snapshot = self.view(grad).clone() if self.sample is None else self.view(grad)


SENTINEL_MAX_NUMEL = 4096
MAX_SENTINELS = 16
STRICT_SAMPLES = 64  # elements per large parameter compared in strict mode


def _rescale_factor(obs: "_Observed") -> float | None:
    """The uniform factor `.grad` was multiplied by in place since its snapshot; None if not uniform."""
    param = obs.param()
    snap = obs.snapshot
    if param is None or snap is None or param.grad is None or (obs.sample is None and param.grad.shape != snap.shape):
        return None
    return _uniform_factor([(obs.view(param.grad), snap)])


def _uniform_factor(pairs: list[tuple[torch.Tensor, torch.Tensor]]) -> float | None:
    """The one factor every (now, before) pair was multiplied by, or None (not uniform, or nothing
    to compare). Pairs are concatenated per device: a few device syncs per step, not per parameter."""
    by_device: dict[torch.device, tuple[list[torch.Tensor], list[torch.Tensor]]] = {}
    for now, before in pairs:
        nows, befores = by_device.setdefault(now.device, ([], []))
        nows.append(now.reshape(-1).float())
        befores.append(before.reshape(-1).float())
    factors: list[float] = []
    for nows, befores in by_device.values():
        now, before = torch.cat(nows), torch.cat(befores)
        mask = before != 0
        if not bool(mask.any()):
            continue
        ratios = now[mask] / before[mask]
        r = float(ratios.mean())
        if not bool(torch.allclose(ratios, torch.full_like(ratios, r), rtol=1e-4, atol=0.0)):
            return None
        factors.append(r)
    if not factors or any(abs(f - factors[0]) > 1e-4 * abs(factors[0]) for f in factors):
        return None
    return factors[0]


class Probe:
    """Watch parameters and optimizers; report contract violations to `sink`."""

    def __init__(self, sink: Callable[[list[Violation], "Probe"], None], accumulation_steps: int | None = None,
                 strict: bool = False) -> None:
        self.ledger = Ledger()
        # strict: snapshot every parameter's gradient, on any device, and measure in-place rescaling on
        # all of them at each step (device syncs and a second copy of the gradients; see the README)
        self.strict = strict
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
        self.sentinels: set[int] = set()  # parameters whose gradient is snapshotted (one per optimizer)
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
        if self.strict or (len(self.sentinels) < MAX_SENTINELS and p.device.type == "cpu" and p.numel() <= SENTINEL_MAX_NUMEL):
            self.sentinels.add(key)  # by default small CPU parameters only: snapshotting them needs no device sync
            if p.numel() > SENTINEL_MAX_NUMEL:  # strict: a fixed sample of a large gradient
                obs.sample = torch.linspace(0, p.numel() - 1, STRICT_SAMPLES, device=p.device).long()

        def before_accumulate(grad: torch.Tensor) -> None:
            param = obs.param()
            if param is not None:
                self._sync(key, param)

        def after_accumulate(param: torch.Tensor) -> None:
            ledger.accumulated(key)
            g = param.grad
            obs.grad_id = id(g) if g is not None else None
            obs.version = g._version if g is not None else -1
            if key in self.sentinels and g is not None:
                obs.take(g)

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
    def unscaled(self, grads: Any) -> None:
        """These gradient tensors were unscaled by a GradScaler: take their new version as seen."""
        ids = {id(g) for g in grads} if isinstance(grads, (list, tuple)) else set()
        for obs in self.observed.values():
            if obs.grad_id in ids:
                param = obs.param()
                g = param.grad if param is not None else None
                if g is not None:
                    obs.version = g._version
                    if obs.snapshot is not None:
                        obs.take(g)  # the unscaled gradient is the new baseline

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
                self.ledger.rescaled(key)
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
        rescale = None
        measured = False
        pairs: list[tuple[torch.Tensor, torch.Tensor]] = []
        for p in params:
            obs = self.observed.get(id(p))
            if id(p) in self.sentinels and obs is not None and obs.snapshot is not None:
                if self.strict:  # every parameter, measured together: they must all be rescaled alike
                    if p.grad is not None and (obs.sample is not None or p.grad.shape == obs.snapshot.shape):
                        pairs.append((obs.view(p.grad), obs.snapshot))
                elif not measured:  # the default: the first small CPU parameter
                    rescale, measured = _rescale_factor(obs), True
                obs.snapshot = None
        if pairs:
            rescale, measured = _uniform_factor(pairs), True
        self.ledger.register(id(opt), [id(p) for p in params])
        violations = self.ledger.step(id(opt), [id(p) for p in params if p.grad is not None], site, self.owner_of, rescale,
                                      measured=measured)
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
