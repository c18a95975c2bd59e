"""Watch optimizers and the `.grad` of their parameters for the ledger; every hook handle comes off.

No hook on any parameter: the probe is told of every backward pass by the wrapper of
`torch.autograd.backward` (`torch_patches.py`: each pass gets an id and the call that issued it) and reads each watched parameter's `.grad` (which tensor, at which
version) once before and once after each backward pass, and at each step. A gradient that changed
during the pass was accumulated into; one that disappeared or became zeros between passes was
cleared; one changed otherwise was rescaled in place.
"""

from __future__ import annotations

import functools
import sys
import weakref
from collections.abc import Callable, Iterable
from typing import Any

import torch
from torch.utils.hooks import RemovableHandle

from . import batches as _batches
from . import cycle as _cycle
from . import recorder as _rec
from . import replay as _replay
from .clear_sites import clear_between
from .gates import gate_of
from .ledger import UNKNOWN_SITE, Ledger, Rescale, Site, Violation
from .loss_scale import LossGraph, loss_scale
from .monitors import FindingSink, Monitors, leaf_tensors
from .names import owner_name
from .observed import _LOST, _MAX_GROUPS, _NO_GRAD, _Group, _look, _Observed, _unmeasured
from .rescale import MAX_SENTINELS, SENTINEL_MAX_NUMEL, STRICT_SAMPLES, rescale_factor, uniform_factor
from .sites import SiteMemo, memo_site
from .torch_patches import activate, deactivate
from .wording import optimizer_name

__all__ = ["Probe", "iter_models", "loss_scale", "SENTINEL_MAX_NUMEL"]

Sink = Callable[[list[Violation], str, object], None]

# torch's own clears: with `set_to_none` true they leave every `.grad` they list None
_STOCK_ZERO_GRADS = (torch.optim.Optimizer.zero_grad, torch.nn.Module.zero_grad)

class Probe:
    """Watch parameters and optimizers; report contract violations to `sink(violations, optimizer, step)`."""

    def __init__(self, sink: Sink, accumulation_steps: int | None = None, strict: bool = False,
                 finding_sink: FindingSink | None = None) -> None:
        self.ledger = Ledger()
        # GL006-GL009 (monitors.py): findings of their own, straight to the guard
        self.monitors = Monitors(finding_sink, self._owner_name) if finding_sink is not None else None
        # strict: snapshot every parameter's gradient, on any device, and measure in-place rescaling on
        # all of them at each step (device syncs and a second copy of the gradients; see the README)
        self.strict = strict
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

        self._param_died = param_died

    def steps_checked(self) -> int:
        if self._cycle is not None:
            self._cycle.flush(self)
        if self._replay is not None:
            self._replay.materialize(self)
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
        """Leave the replay: the state the full path would have is written first (`Replay.materialize`)."""
        replay, self._replay = self._replay, None
        if replay is not None:
            replay.materialize(self)
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

    def _wrap_zero_grad(self, obj: Any, params: Callable[[], list[torch.Tensor]]) -> None:
        """Give this instance a zero_grad that tells the ledger where the clear happened."""
        if "zero_grad" in getattr(obj, "__dict__", {}):
            return
        original = obj.zero_grad  # the bound method of the class
        stock = getattr(type(obj), "zero_grad", None) in _STOCK_ZERO_GRADS
        probe_ref = weakref.ref(self)
        owner = id(obj)
        memo = SiteMemo()  # the last call's place

        def zero_grad(*args: Any, **kwargs: Any) -> Any:
            probe = probe_ref()
            if probe is None or not probe.active:
                return original(*args, **kwargs)
            frame = sys._getframe(1)
            if frame.f_code is memo.code and frame.f_lasti == memo.lasti:  # `memo_site`'s answer, inline
                site = memo.site
            else:
                site = memo_site(frame, memo, ("zero_grad",), False)[0]
            ps = params()
            replay = probe._replay
            if replay is not None:
                result = replay.clear(probe, owner, site, ps, original, args, kwargs, stock)
                if result is not _replay.MISS:
                    return result
                probe._drop_cycle()
            cycle = probe._cycle
            if cycle is not None:
                if cycle.phase <= _cycle.CLEARED:
                    result = cycle.zero_grad(probe, site, ps, original, args, kwargs, stock)
                    if result is not _cycle.MISS:
                        return result
                probe._drop_cycle()
            probe._recorder.entry(probe)
            group = probe._group(owner, ps)
            with_grad, stale, _differs = _look(group, ps)
            if stale:
                probe._sync(group.obs, site)  # what changed since the last look happened before this clear
            # Gradients no step applied, and not finite: a GradScaler skipped the step on purpose.
            pending = probe.ledger.unapplied(with_grad)
            skipped = False
            if pending:
                held = set(pending)
                skipped = not all(bool(torch.isfinite(p.grad).all())
                                  for k, p in zip(group.keys, ps) if k in held and p.grad is not None)
            result = original(*args, **kwargs)
            probe._cleared_by(owner, ps, site, group, skipped, bool(pending))
            return result

        obj.zero_grad = zero_grad
        self._patched.append((weakref.ref(obj), "zero_grad"))

    def _cleared_by(self, owner: int, ps: list[torch.Tensor], site: Site, group: _Group | None = None,
                    skipped: bool = False, pending: bool = False) -> None:
        """The full path's bookkeeping of a clear that ran (`owner`'s `zero_grad` over `ps`); `skipped`: the
        gradients it dropped were a step a GradScaler skipped; `pending`: it dropped some no step applied."""
        if group is None:
            group = self._group(owner, ps)
        self.ledger.clear_ran(site)
        self._mark_all_cleared(group, ps, site, discard=not skipped)
        self.last_event = site
        self._note(_rec.CLEAR_END, (_rec.CLEAR_END, owner, site), site, keys=list(group.keys), pending=pending)

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

    def _mark_cleared(self, p: torch.Tensor, site: Site, discard: bool = True) -> None:
        key = id(p)
        self.ledger.cleared(key, site, discard=discard)
        if self.monitors is not None:
            self.monitors.cleared(key)
        obs = self.observed.get(key)
        if obs is not None:
            g = p.grad
            obs.grad_id = id(g)
            obs.version = g._version if g is not None else -1

    def _mark_all_cleared(self, group: _Group, ps: list[torch.Tensor], site: Site, discard: bool = True) -> None:
        """`_mark_cleared` for every parameter one clearing call cleared (`ps`, listed by `group`)."""
        self.ledger.cleared_many(group.keys, site, discard=discard)
        if self.monitors is not None:
            self.monitors.cleared_many(group.keyset)
        for p, obs in zip(ps, group.obs):
            if obs is not None:
                g = p.grad
                obs.grad_id = id(g)
                obs.version = g._version if g is not None else -1

    def _sync(self, observations: list[_Observed | None] | None, now: Site) -> None:
        """Notice clears made behind the probe's back (`p.grad = None`, `p.grad.zero_()`, a model's
        `zero_grad()`) and in-place rescaling, since the last look; `now` is the call that looks.
        `observations`: of some parameters (None: not watched), or None for every watched one."""
        where: Site | None = None
        for obs in [obs for _key, obs in self.watched] if observations is None else observations:
            if obs is None or obs.grad_id == _NO_GRAD:
                continue
            p = obs.param()
            if p is None:
                continue
            g = p.grad
            if g is not None and id(g) == obs.grad_id and g._version == obs.version:
                continue
            key = id(p)
            # replaced or modified in place: zeroed means cleared; anything else (clipping, unscale_,
            # `/= N`) rescales the same gradients; during a backward pass (a step or a clear from a
            # gradient hook, `register_post_accumulate_grad_hook`), a new gradient is that pass's
            if g is not None and self.ledger.current is not None and bool(g.any()):
                self.ledger.accumulated(key)
                obs.grad_id, obs.version = id(g), g._version
                continue
            if g is None or not bool(g.any()):
                if where is None:
                    where = clear_between(self.last_event, now) or UNKNOWN_SITE
                    self.ledger.clear_ran(where)
                self._mark_cleared(p, where)
            else:
                self.ledger.rescaled(key)
                obs.grad_id, obs.version = id(g), g._version
        if where is not None:
            self.last_event = where

    # -- steps
    def _before_step(self, opt: torch.optim.Optimizer, args: Any, kwargs: Any) -> Any:
        frame = sys._getframe(1)
        memo = self._step_sites.get(id(opt))
        if memo is None:  # one memo per optimizer: two optimizers stepping in turn keep their answers
            if len(self._step_sites) >= _MAX_GROUPS:
                self._step_sites.clear()
            memo = self._step_sites[id(opt)] = SiteMemo()
        # `memo_site`'s answer, inline for the usual chain: the optimizer's step wrapper, the user's frame
        if frame.f_code is memo.skip and (user := frame.f_back) is not None and user.f_code is memo.code and user.f_lasti == memo.lasti:
            site = memo.site
        else:
            site = memo_site(frame, memo, ("step",), False)[0]
        rest = args[1:] if args and args[0] is opt else args
        closure = kwargs.get("closure") or (next((a for a in rest if callable(a)), None) if rest else None)
        replay = self._replay
        if replay is not None:
            if closure is None and not rest and replay.before_step(self, opt, site):
                return None
            self._drop_cycle()
        cycle = self._cycle
        if cycle is not None:
            if (closure is None and not rest and cycle.phase == _cycle.BACKWARD_DONE and cycle.opt_id == id(opt)
                    and cycle.before_step(self, opt, site)):
                self._plain_step = id(opt)
                return None
            self._drop_cycle()
        self._plain_step = None if closure is not None else id(opt)
        name = optimizer_name(site, len(rest))
        if closure is not None:
            # `step(closure)` (LBFGS): the closure clears and runs backward inside the step, maybe
            # several times; each evaluation's gradients are checked as one step's
            self._recorder.reset()
            return self._wrap_closure(opt, closure, site, name, args, kwargs)
        self._recorder.entry(self)
        self._check_step(opt, site, name)
        self._note(_rec.STEP_MID, (_rec.STEP_MID, id(opt), site), site, measured=self._measured)
        return None

    def _check_step(self, opt: torch.optim.Optimizer, site: Site, name: str) -> None:
        self._drop_cycle()
        self.retained = False
        self._measured = None
        params = self._params_of(opt)
        group = self._group(id(opt), params, watch=True)  # new parameters, or a new tensor under a dead one's id
        with_grad, stale, _differs = _look(group, params)
        if stale:
            self._sync(group.obs, site)
        rescale: Rescale = None
        measured = False
        pairs: list[tuple[torch.Tensor, torch.Tensor]] = []
        sentinels = self.sentinels
        for key, p, obs in zip(group.keys, params, group.obs):
            if key not in sentinels:
                continue
            if obs is not None and (obs.snapshot is not None or obs.pending is not None):
                if self.strict:  # every parameter, measured together: they must all be rescaled alike
                    if obs.snapshot is not None and p.grad is not None and (
                            obs.sample is not None or p.grad.shape == obs.snapshot.shape):
                        pairs.append((obs.view(p.grad), obs.snapshot))
                elif not measured:  # the default: the first small CPU parameter
                    # measured only if the step applies a window of several passes (GL003's case)
                    measured = True
                    rescale = (functools.partial(rescale_factor, obs, obs.snapshot) if obs.snapshot is not None
                               else _unmeasured)  # a deferred copy: a window of one pass, unless lost
                    rescale = self._noted(key, rescale)
                else:
                    # another parameter of this optimizer is measured: stop copying this one after
                    # every backward pass (one sentinel per optimizer is all the default mode reads)
                    sentinels.discard(key)
                obs.snapshot = None
                obs.pending = None
        if pairs:
            rescale, measured = functools.partial(uniform_factor, pairs), True
        if self.monitors is not None:
            self.monitors.before_step(id(opt), site, name, group.keyset)
        self.ledger.register(id(opt), group.keys)
        violations = self.ledger.step(id(opt), with_grad, site, self.owner_of, rescale, measured=measured)
        window = self.ledger.window_violation(id(opt), self.accumulation_steps)
        if window is not None and id(opt) not in self._reported_windows:
            self._reported_windows.add(id(opt))
            window.site = gate_of(window.site)  # GL004 anchors at the condition gating the step
            violations.append(window)
        self.last_event = site
        if violations:
            self._reports += 1
            for v in violations:
                if v.code == "GL005" and not v.param_owner:
                    v.param_owner = self._owner_in_source(v, group.keys)
            self.sink(violations, name, (id(opt), len(self.ledger.windows.get(id(opt), ()))))

    def _noted(self, key: int, measure: Callable[[], float | None]) -> Callable[[], float | None]:
        """`measure`, noting what it measured for the recorder (`_measured`: which sentinel, what factor)."""
        probe_ref = weakref.ref(self)

        def noted() -> float | None:
            factor = measure()
            probe = probe_ref()
            if probe is not None:
                probe._measured = (key, factor)
            return factor

        return noted

    def _owner_in_source(self, v: Violation, keys: list[int]) -> str | None:
        """GL005: the user's name of the model whose parameters hold the other model's pass (`critic`)."""
        held = self.ledger.held
        bid = v.backward.id if v.backward is not None else None
        written = [k for k in keys if bid in held.get(k, ())] or keys
        key = frozenset(written)
        known = self._owner_names.get(key)
        if known is None:
            if len(self._owner_names) >= 64:  # ids of dead parameters may name new ones: keep it short
                self._owner_names.clear()
            known = self._owner_names[key] = owner_name(written) or ""
        return known or None

    def _wrap_closure(self, opt: torch.optim.Optimizer, closure: Callable[[], Any], site: Site, name: str,
                      args: Any, kwargs: Any) -> tuple[Any, Any]:
        probe_ref = weakref.ref(self)
        opt_ref = weakref.ref(opt)

        def evaluated() -> Any:
            result = closure()
            probe, o = probe_ref(), opt_ref()
            if probe is not None and probe.active and o is not None:
                probe._check_step(o, site, name)  # the optimizer reads these gradients now
            return result

        if "closure" in kwargs:
            return args, {**kwargs, "closure": evaluated}
        return tuple(evaluated if a is closure else a for a in args), kwargs

    def _after_step(self, opt: torch.optim.Optimizer, args: Any, kwargs: Any) -> None:
        replay = self._replay
        if replay is not None:
            if replay.after_step(self, opt):
                return
            self._drop_cycle()
        cycle = self._cycle
        if cycle is not None:
            if cycle.phase == _cycle.STEPPING and cycle.opt_id == id(opt):
                cycle.after_step(self)
                return
            self._drop_cycle()
        params = self._params_of(opt)
        group = self._group(id(opt), params)
        with_grad, stale, differs = _look(group, params)
        if stale:
            self._sync(group.obs, self.last_event or UNKNOWN_SITE)
        self.ledger.consume(id(opt), with_grad)
        if self.monitors is not None:
            self.monitors.after_step(id(opt), self.last_event or UNKNOWN_SITE, group.keyset)
        if differs:  # a gradient the probe has not seen yet (or one `_sync` just noted): the new baseline
            for p, obs in zip(params, group.obs):
                g = p.grad
                if obs is not None and g is not None:
                    obs.grad_id, obs.version = id(g), g._version
        if self._plain_step == id(opt):  # the state the fast path starts from, if it is steady
            self._cycle = _cycle.establish(self, id(opt), group)
            if self._cycle is None:
                self._note(_rec.STEP_END, (_rec.STEP_END, id(opt)), self.last_event or UNKNOWN_SITE,
                           keyset=group.keyset, keys=list(group.keys))
        else:
            self._recorder.reset()

    def _global_before_step(self, opt: torch.optim.Optimizer, args: Any, kwargs: Any) -> Any:
        known = self.optimizers.get(id(opt))
        if known is None or known() is not opt:
            # first sight of this optimizer: watch it (without hooks of its own: torch is iterating
            # over them); parameters found from the backward graph already hold their contributions
            self.watch_optimizer(opt, own_hooks=False)
        return self._before_step(opt, args, kwargs)

    def _global_after_step(self, opt: torch.optim.Optimizer, args: Any, kwargs: Any) -> None:
        known = self.optimizers.get(id(opt))
        if known is not None and known() is opt:
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
