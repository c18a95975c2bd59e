"""Watch optimizers and the `.grad` of their parameters for the ledger; every hook handle comes off.

No hook on any parameter: the probe is told of every backward pass by the wrapper of
`torch.autograd.backward` (`torch_patches.py`: each pass gets an id and the call that issued it) and reads each watched parameter's `.grad` (which tensor, at which
version) once before and once after each backward pass, and at each step. A gradient that changed
during the pass was accumulated into; one that disappeared or became zeros between passes was
cleared; one changed otherwise was rescaled in place.

The probe is three ideas, one module each: what is watched and each backward pass (here), the clears
(`probe_clears.py`: each watched `zero_grad`, and clears or rescaling noticed by their effect) and the
steps (`probe_steps.py`: the step hooks, where the ledger checks the contract). The two others are base
classes of `Probe` and work on its state; the steady cycle (`cycle.py`) and the replay (`replay.py`)
answer for all three when the loop is steady.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable
from typing import Any

import torch
from torch.utils.hooks import RemovableHandle

from . import batches as _batches
from . import cycle as _cycle
from . import recorder as _rec
from . import replay as _replay
from . import replay_handover as _handover
from .evidence import Site
from .ledger import Ledger
from .loss_scale import LossGraph, loss_scale
from .monitors import FindingSink, Monitors, leaf_tensors
from .observed import _LOST, _MAX_GROUPS, _NO_GRAD, _Group, _Observed
from .probe_clears import ClearChecks
from .probe_steps import Sink, StepChecks
from .rescale import MAX_SENTINELS, SENTINEL_MAX_NUMEL, STRICT_SAMPLES
from .sites import SiteMemo
from .torch_patches import activate, deactivate

__all__ = ["Probe", "iter_models", "loss_scale", "SENTINEL_MAX_NUMEL"]


class Probe(ClearChecks, StepChecks):
    """Watch parameters and optimizers; report contract violations to `sink(violations, optimizer, step)`."""

    # what every entry point reads first, in slots (as `Replay.__slots__`); the rest in the instance's dict
    __slots__ = ("_replay", "active", "monitors", "_cycle")

    def __init__(self, sink: Sink, accumulation_steps: int | None = None, strict: bool = False,
                 finding_sink: FindingSink | None = None, verify_every_cycle: bool = False) -> None:
        self.ledger = Ledger()
        # GL006-GL009 (monitors.py): findings of their own, straight to the guard
        self.monitors = Monitors(finding_sink, self._owner_name) if finding_sink is not None else None
        # strict: snapshot every parameter's gradient, on any device, and measure in-place rescaling on
        # all of them at each step (device syncs and a second copy of the gradients; see the README)
        self.strict = strict
        # every call on the full path: no steady cycle or replay, so nothing sampled (`guard`'s option)
        self.verify_every_cycle = verify_every_cycle
        self.sink = sink
        self.accumulation_steps = accumulation_steps
        self.handles: list[RemovableHandle] = []
        self.observed: dict[int, _Observed] = {}
        self.watched: list[tuple[int, _Observed]] = []  # the same, as a list: read twice per backward
        self.owner_of: dict[int, str] = {}
        self.optimizers: dict[int, weakref.ReferenceType[torch.optim.Optimizer]] = {}
        self._patched: list[tuple[weakref.ReferenceType[Any], str]] = []  # instance attributes we set
        self._reported_windows: set[int] = set()
        self.active = False
        self.discover = False  # process-wide: find parameters from the first backward of each line
        self.sentinels: set[int] = set()  # parameters whose gradient is snapshotted (one per optimizer)
        self.discovered_sites: dict[Site, int] = {}
        self.last_event: Site | None = None  # the last backward, step or clear the probe saw
        self.generation = 0  # changes whenever a parameter starts or stops being watched, or dies
        self._deferred: list[_Observed] = []  # sentinels whose copy waits for the next backward pass
        self._groups: dict[int, _Group] = {}  # id of an optimizer or model -> its parameters
        self._cycle: _cycle.Cycle | None = None  # the fast path (cycle.py), while the training cycle is steady
        self._replay: _replay.Replay | None = None  # the fast path of any steady cycle (replay.py)
        self._recorder = _rec.Recorder()  # the full path's points, searched for a steady cycle
        self._measured: tuple[int, float | None] | None = None  # the sentinel and factor the last step measured
        self._reports = 0  # steps that reported something (a replay starts from a cycle that reported nothing)
        self._plain_step: int | None = None  # the optimizer whose step is running without a closure
        self._step_sites: dict[int, SiteMemo] = {}  # optimizer id -> its last step call's place
        self._owner_names: dict[frozenset[int], str] = {}  # GL005: parameters -> their model's name in the source
        self.retained = False  # a pass since the last step retained its graph: later passes look for its mark
        self._write_sets: dict[frozenset[int], frozenset[int]] = {}  # the parameters passes wrote, interned
        probe_ref = weakref.ref(self)

        def param_died(_ref: object) -> None:
            # A watched parameter was freed: its id may now name another tensor. `generation` changes,
            # so no kept list of ids (`_Group`, the steady cycle's) is taken for the same tensors.
            probe = probe_ref()
            if probe is not None:
                probe.generation += 1
                if probe._replay is not None:
                    probe._replay.disarm()  # its lane compares no generation

        self._param_died = param_died

        def pending() -> None:
            # a GradScaler's output or a DDP forward: no pass takes the replay's lane (`Replay.disarm`)
            probe = probe_ref()
            if probe is not None and probe._replay is not None:
                probe._replay.disarm()

        if self.monitors is not None:
            self.monitors.pending = pending

    def steps_checked(self) -> int:
        if self._cycle is not None:
            self._cycle.flush(self)
        if self._replay is not None:
            _handover.materialize(self._replay, self)
        return sum(len(sizes) for sizes in self.ledger.windows.values())

    # -- lifecycle
    def open(self) -> None:
        activate(self)
        if self.monitors is not None:
            self.monitors.open()
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
        self._drop_cycle()
        if self.monitors is not None:
            self.monitors.close()
        deactivate(self)
        self.active = False

    # -- what to watch
    def watch_model(self, model: torch.nn.Module, name: str) -> None:
        for _pname, p in model.named_parameters():
            self.owner_of.setdefault(id(p), name)
            self.watch_param(p)
        self._wrap_zero_grad(model, lambda: list(model.parameters()))

    def watch_optimizer(self, opt: torch.optim.Optimizer, own_hooks: bool = True) -> None:
        self._drop_cycle()
        known = self.optimizers.get(id(opt))
        if known is not None:
            if known() is opt:
                return
            self.ledger.forget_optimizer(id(opt))  # a dead optimizer's id, reused (one per task in meta-learning)
            self._groups.pop(id(opt), None)
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
        self.ledger.find_owners = self._find_owners
        from torch.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook

        self.handles.append(register_optimizer_step_pre_hook(self._global_before_step))
        self.handles.append(register_optimizer_step_post_hook(self._global_after_step))

    def _find_owners(self, pids: list[int]) -> None:
        """Process-wide, an optimizer is met at its first step: for parameters no optimizer met so far
        owns, look among the live optimizers (one scan of the collector's objects, only when a clear
        leaves a pass in such parameters) and tell the ledger whose they are."""
        import gc

        wanted = set(pids)
        for obj in gc.get_objects():
            # type(), not isinstance(): no `__class__` lookup (deprecated lazy module attributes warn on it)
            if not issubclass(type(obj), torch.optim.Optimizer) or id(obj) in self.optimizers:
                continue
            try:
                keys = [id(p) for group in obj.param_groups for p in group["params"]]
            except (AttributeError, KeyError, TypeError):
                continue
            if wanted.intersection(keys):
                self.ledger.register(id(obj), keys)

    def discover_leaves(self, tensors: Any) -> None:
        """Watch the leaf parameters a loss depends on (walks the graph once per backward line)."""
        for p in leaf_tensors(tensors):
            self.watch_param(p)

    def _drop_cycle(self) -> None:
        """Leave the fast path: the cycle's bookkeeping is written to the ledger first (`Cycle.flush`)."""
        cycle, self._cycle = self._cycle, None
        if cycle is not None:
            cycle.flush(self)
        self._drop_replay()

    def _drop_replay(self) -> None:
        """Leave the replay: the state the full path would have is written first (`replay_handover.materialize`)."""
        replay, self._replay = self._replay, None
        if replay is not None:
            replay.lane = False  # left: an entry point still holding it (a pass under way) sees so
            _handover.materialize(replay, self)
            self._recorder.reset()

    def _note(self, kind: int, key: tuple[Any, ...], site: Site | None = None, **extra: Any) -> None:
        """A point of the full path, for the recorder (replay.py); the replay it finds takes over."""
        steady = self._recorder.note(self, kind, key, site, **extra)
        if steady is not None:
            self._replay = _replay.Replay(self, *steady)

    def _owner_name(self, p: torch.Tensor) -> str:
        return self.owner_of.get(id(p), "")

    @staticmethod
    def _params_of(opt: torch.optim.Optimizer) -> list[torch.Tensor]:
        """A new list of the optimizer's parameters, in order."""
        groups = opt.param_groups
        if len(groups) == 1:
            return list(groups[0]["params"])
        return [p for group in groups for p in group["params"]]

    def watch_param(self, p: torch.Tensor) -> None:
        key = id(p)
        known = self.observed.get(key)
        if known is not None:
            if known.param() is p:
                return
            self._drop_cycle()
            # a dead parameter's id, reused by a new tensor (`copy.deepcopy(model)` per task)
            self.ledger.forget_param(key)
            self.watched = [(k, o) for k, o in self.watched if k != key]
            self.sentinels.discard(key)
            del self.observed[key]
            self.generation += 1
        if not p.requires_grad:
            return
        self._drop_replay()
        obs = self.observed[key] = _Observed(p, self._param_died)
        self.generation += 1
        g = p.grad
        if g is not None:  # what it holds now was there before the guard: the baseline
            obs.grad_id, obs.version = id(g), g._version
        self.watched.append((key, obs))
        if self.strict or (len(self.sentinels) < MAX_SENTINELS and p.device.type == "cpu" and p.numel() <= SENTINEL_MAX_NUMEL):
            self.sentinels.add(key)  # by default small CPU parameters only: snapshotting them needs no device sync
            if p.numel() > SENTINEL_MAX_NUMEL:  # strict: a fixed sample of a large gradient
                obs.sample = torch.linspace(0, p.numel() - 1, STRICT_SAMPLES, device=p.device).long()

    def _group(self, owner: int, params: list[torch.Tensor], watch: bool = False) -> _Group:
        """The kept `_Group` of these parameters (of the optimizer or model whose id is `owner`);
        `watch`: first make sure each parameter is watched (new ones, a new tensor under a dead one's id)."""
        group = self._groups.get(owner)
        if group is not None and group.lists(params, self.generation) and (not watch or group.all_watched(params)):
            return group
        if watch:
            for p in params:
                self.watch_param(p)
        if len(self._groups) >= _MAX_GROUPS and owner not in self._groups:
            self._groups.clear()
        group = self._groups[owner] = _Group(params, self.observed, self.generation, watch)
        return group

    # -- observations
    def unscaled(self, grads: Any) -> None:
        """These gradient tensors were unscaled by a GradScaler: take their new version as seen."""
        ids = {id(g) for g in grads} if isinstance(grads, (list, tuple)) else set()
        self._drop_replay()
        cycle = self._cycle
        if cycle is not None:
            cycle.flush(self)
        unscaled: set[int] = set()
        for key, obs in self.watched:
            if obs.grad_id in ids:
                unscaled.add(key)
                param = obs.param()
                g = param.grad if param is not None else None
                if g is not None:
                    obs.version = g._version
                    if obs.snapshot is not None or obs.pending is not None:
                        obs.take(g)  # the unscaled gradient is the new baseline
                        obs.pending = None
        if cycle is not None and unscaled:
            cycle.reload()
        if self.monitors is not None and unscaled:
            self.monitors.unscaled(unscaled)

    def before_backward(self, site: Site, tensors: Any, graph: LossGraph | None = None, via: object = None) -> None:
        """`graph`: the root of the graph of `tensors` and its constant factors, read on demand; `via`:
        where the user's code running the backward line was called from (`sites.user_caller`)."""
        cycle = self._cycle
        if cycle is None or cycle.phase != _cycle.CLEARED or not cycle.before_backward(self, site, tensors, graph, via):
            self.full_before_backward(site, tensors, graph, via)

    def full_before_backward(self, site: Site, tensors: Any, graph: LossGraph | None = None, via: object = None,
                             retain: bool = False) -> None:
        """`before_backward` on the full path (leaving the steady cycle first, if any); `retain`: the
        pass keeps its graph for another backward (`batches.py`)."""
        self._drop_cycle()
        self._recorder.entry(self)
        graph = graph if graph is not None else LossGraph(tensors)
        if self._deferred:
            self._take_deferred()
        if self.discover and self.discovered_sites.get(site, 0) < 4:
            # the first few passes of each backward line: enough to meet every model it reaches
            self.discovered_sites[site] = self.discovered_sites.get(site, 0) + 1
            self.discover_leaves(tensors)
        for _key, obs in self.watched:  # `_sync` only when it has something to notice (a sufficient test)
            gid = obs.grad_id
            if gid == _NO_GRAD:
                continue
            p = obs.param()
            g = p.grad if p is not None else None
            if p is not None and (g is None or id(g) != gid or g._version != obs.version):
                self._sync(None, site)
                break
        bid = self.ledger.begin_backward(site, graph.scale, via)
        if retain or self.retained:  # losses of one batch share its forward graph: not micro-batches
            root = graph.grad_fn
            batch = _batches.shared(root) if self.retained else None
            self.ledger.passes[bid].batch = batch or bid
            if retain:
                _batches.mark(root, batch or bid)
                self.retained = True
        if self.monitors is not None:
            self.monitors.before_backward(site, tensors, graph.grad_fn)
        self._note(_rec.BW_MID, (_rec.BW_MID, site, via), site, scale=self.ledger.passes[bid].scale)

    def after_backward(self, site: Site) -> None:
        """Every watched `.grad` the pass changed was accumulated into."""
        cycle = self._cycle
        if cycle is None or cycle.phase != _cycle.IN_BACKWARD or not cycle.after_backward(self, site):
            self.full_after_backward(site)

    def full_after_backward(self, site: Site) -> None:
        """`after_backward` on the full path (leaving the steady cycle first, if any)."""
        self._drop_cycle()
        ledger = self.ledger
        sentinels = self.sentinels
        wrote: list[int] = []
        written: list[tuple[int, _Observed, torch.Tensor]] = []  # sentinels this pass wrote
        for key, obs in self.watched:
            param = obs.param()
            g = param.grad if param is not None else None
            if g is None:
                continue
            gid, version = id(g), g._version
            if gid != obs.grad_id or version != obs.version:
                wrote.append(key)
                obs.grad_id, obs.version = gid, version
                if key in sentinels:
                    written.append((key, obs, g))
        if wrote:
            bid = ledger.current
            ledger.accumulated_many(wrote)
            if bid is not None:  # one task head or another (`windows.micro_batches`), one object per set
                sets = self._write_sets
                ws = frozenset(wrote)
                if len(sets) > 64 and ws not in sets:
                    sets.clear()
                ledger.passes[bid].writes = sets.setdefault(ws, ws)
            for key, obs, g in written:
                if self.strict or bid is None or ledger.may_accumulate(key, bid):
                    obs.take(g)
                    obs.pending = None
                else:
                    # A step of a loop that steps after every pass does not use the copy (GL003 needs a
                    # window of several passes), so it waits for the next backward pass: if one comes
                    # before the step, the window may grow, and the copy is taken then
                    obs.snapshot, obs.pending = None, (id(g), g._version)
                    self._deferred.append(obs)
            if self.monitors is not None and self.monitors.collect:
                self.monitors.wrote(site, wrote)
        ledger.end_backward()
        self.last_event = site
        self._note(_rec.BW_END, (_rec.BW_END, site), site)

    def _take_deferred(self) -> None:
        """Another backward pass starts: take the deferred copies, of the same gradients as right after
        the pass that wrote them (else the copy is lost, and that window's rescaling is not measured)."""
        for obs in self._deferred:
            pending = obs.pending
            if pending is None or pending is _LOST:
                continue
            p = obs.param()
            g = p.grad if p is not None else None
            if g is not None and id(g) == pending[0] and g._version == pending[1]:
                obs.take(g)
                obs.pending = None
            else:
                obs.pending = _LOST
        self._deferred.clear()


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
