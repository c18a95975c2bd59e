"""The probe's fast path: the steady training cycle of one optimizer, checked with the least work.

A loop that clears, runs one backward pass and steps, over and over, leaves the ledger in the same
state after every step: each parameter holds the last pass, which the optimizer applied, and nothing
waits to be reported. Once the full path has seen that state after a step (`establish`), the next
clear, backward pass and step each check only what could make them differ from the last cycle (the
order of the calls, the parameters listed, their `.grad` as last seen) and make the changes the
full path would make to the ledger directly, calling the monitors as the full path does. Anything
else drops the cycle before the first change, and the full path, the reference, runs: the findings
are the same. What the fast path saves is mostly the memory the general code touches: after a
backward pass the caches are cold, and each distinct table or object read then costs a miss.

Sampled, as the replay of longer cycles samples them (`replay.py`; said in the rule documents of GL002,
GL003 and GL008): the `.grad` of every parameter are read at each call on *verified* cycles only, the
first `VERIFY_ALL` after the cycle is established and then one in `VERIFY_EVERY`, chosen
pseudo-randomly. On the others a clear checks only that it lists the same parameters, a backward pass
reads only the sentinel's `.grad` (the copy a growing window measures needs it), and a step only that
its optimizer lists the parameters held since the clear. A change of the calls still falls back at
that call; a change only the `.grad` show (`p.grad = None` by hand) is found on the next verified cycle
it happens in: the first call of a verified cycle finds every `.grad` its pass wrote still there, and
takes them as its baseline. When a cycle not verified is flushed, each `.grad` is read as it is then.
"""

from __future__ import annotations

import math
import operator
import random
from collections.abc import Callable
from typing import Any, Protocol

import torch

from .evidence import UNKNOWN_SITE, BackwardPass, Site
from .ledger import Ledger
from .loss_scale import LossGraph, graph_scale
from .monitors import Monitors
from .observed import _NO_GRAD, _Group, _Observed
from .windows import UNREAD, Scale, WindowSizes
from .wording import optimizer_name


class CycleHost(Protocol):
    """What the steady cycle uses of the probe (`probe.Probe`) when it leaves or establishes itself."""

    last_event: Site | None
    @property
    def ledger(self) -> Ledger: ...
    @property
    def monitors(self) -> Monitors | None: ...
    @property
    def strict(self) -> bool: ...
    @property
    def verify_every_cycle(self) -> bool: ...
    @property
    def generation(self) -> int: ...
    @property
    def discover(self) -> bool: ...
    @property
    def discovered_sites(self) -> dict[Site, int]: ...
    @property
    def sentinels(self) -> set[int]: ...
    @property
    def watched(self) -> list[tuple[int, _Observed]]: ...
    @property
    def _deferred(self) -> list[_Observed]: ...
    @staticmethod
    def _params_of(opt: torch.optim.Optimizer) -> list[torch.Tensor]: ...


ENABLED = True  # off: the full path every time (tests compare the two)
# the replay (`replay.py`) is tried first on a steady loop of one optimizer too: its lane checks a call by
# the frames it came from and does no per-parameter work on the cycles it does not verify, where this
# cycle still compares the parameters a clear and a step list; this cycle is established once the
# recorder has given up on a period (`Recorder.backoff`), or always when this is off (its own tests)
REPLAY_FIRST = True
VERIFY_ALL = 8  # cycles whose `.grad` are all read once the cycle is steady, before the sampling starts
VERIFY_EVERY = 8  # then one cycle in this many (pseudo-random) reads them (`Cycle.verify`)
_VERIFY_SEED = 0x31A8  # the verified cycles are pseudo-random, and the same in every run
_GONE = -2  # an observed `.grad` id no tensor has: a gradient expected, found gone (`Cycle.flush`)

# the phase of the cycle: the call the probe has seen last
STEPPED, CLEARED, IN_BACKWARD, BACKWARD_DONE, STEPPING = range(5)
MISS = object()  # `zero_grad` returns this when the fast path does not apply


class Cycle:
    """The steady cycle of one optimizer, whose parameters are all the probe watches.

    Lazy: while the cycle holds, what the ledger and the observations would record is kept here in
    a few fields (`gids` and `vers`: each parameter's `.grad` as last seen; the latest pass; counts of
    clears and steps), and written to them by `flush` when anything else reads them: the full path
    (every fallback flushes first: `Probe._drop_cycle`), `Probe.unscaled`, `Probe.steps_checked`.
    """

    __slots__ = ("opt_id", "group", "keys", "n", "gids", "vers", "held", "holds", "sizes", "since", "sentinel",
                 "sentinel_i", "phase", "generation", "name", "name_site", "passes", "next_bid", "bid", "bp", "pass_site",
                 "pass_scale", "pass_via", "stepped", "clear_site", "clears", "steps", "sentinel_state", "dirty", "params",
                 "none", "verify", "reading", "cycles", "left", "stamp", "_draw")

    def __init__(self, opt_id: int, group: _Group, held: tuple[int, ...], sizes: WindowSizes, since: set[int],
                 sentinel: Any, generation: int, next_bid: int) -> None:
        self.opt_id = opt_id
        self.group = group
        self.keys = group.keys
        self.n = len(group.keys)
        self.gids = [obs.grad_id for obs in group.obs]  # each `.grad` as last seen: its id (`_NO_GRAD`: None) ...
        self.vers = [obs.version for obs in group.obs]  # ... and its version (-1: None)
        self.held = held  # the tuple of passes every parameter holds in the ledger (the ledger shares one object)
        self.holds = held  # ... and in fact (written to the ledger by `flush`)
        self.sizes = sizes  # the ledger's windows of this optimizer
        self.since = since  # the ledger's passes since this optimizer's last step
        self.sentinel = sentinel  # the one `_Observed` whose gradient is copied, or None
        self.sentinel_i = group.obs.index(sentinel) if sentinel is not None else -1
        self.phase = STEPPED
        self.generation = generation
        self.name = ""
        self.name_site: Site | None = None
        self.passes = 0  # backward passes of this cycle so far
        self.next_bid = next_bid  # the ledger's next pass id
        self.bid: int | None = None  # the latest pass of this cycle ...
        self.bp: BackwardPass | None = None  # ... once in the ledger
        self.pass_site: Site = UNKNOWN_SITE
        self.pass_scale: Scale | None = None
        self.pass_via: object = None
        self.stepped = False  # the latest pass was applied by this optimizer's step
        self.clear_site: Site | None = None
        self.clears = 0  # runs of `clear_site` not yet counted in the ledger
        self.steps = 0  # windows of one not yet appended to `sizes`
        self.sentinel_state = 0  # 1: its copy waits (written, not stepped); 2: no copy (stepped); 0: as flushed
        self.dirty = False  # something to `flush`
        # the parameters, held from a clear to the step that follows it (not longer: models are held
        # weakly), so that the checks after the backward pass and at the step need no weak reference
        self.params: list[torch.Tensor] | None = None
        self.none = False  # the last clear left every `.grad` None: any `.grad` now was written since
        # sampled reads: a *verified* cycle (clear to step) reads every `.grad` at each call, as above; the
        # others read none after the backward pass and at the step (see `verify_next`)
        self.verify = True  # the cycle under way is verified
        self.reading = True  # `gids` and `vers` are each `.grad` as of the last call (else: not read since)
        self.cycles = 0  # cycles since the cycle was established (counted up to `VERIFY_ALL`)
        self.left = 0  # then: cycles until the next verified one, that one included (drawn ahead: `_gap`)
        self.stamp: tuple[int, int] = (_NO_GRAD, -1)  # the sentinel's `.grad` right after the last pass
        self._draw = random.Random(_VERIFY_SEED).random

    def flush(self, probe: CycleHost) -> None:
        """Write to the ledger and the observations what the cycle kept since the last flush: after it,
        they are what the eager bookkeeping of every call would have made them."""
        if not self.dirty:
            return
        self.dirty = False
        ledger = probe.ledger
        opt = self.opt_id
        if self.clears:
            site = self.clear_site
            assert site is not None
            ledger.clear_runs[site] = ledger.clear_runs.get(site, 0) + self.clears
            self.clears = 0
        bid = self.bid
        if bid is not None:
            bp = self.bp
            if bp is None:  # `Ledger.begin_backward`
                for old in ledger._live:
                    old.live = False
                ledger._live.clear()
                bp = self.bp = BackwardPass(bid, self.pass_site, scale=self.pass_scale, via=self.pass_via)
                ledger.passes[bid] = bp
                ledger._next = self.next_bid
            if self.stepped and opt not in bp.consumers:  # `Ledger.step` of one pass
                bp.consumers.add(opt)
                if not bp.live:
                    bp.live = True
                    ledger._live.append(bp)
        ledger.current = bid if self.phase == IN_BACKWARD else None
        holds = self.holds
        if holds is not self.held:  # every parameter holds the same passes: one tuple
            table = ledger.held
            for key in self.keys:
                table[key] = holds
            counts, n = ledger._held, self.n
            for b in self.held:
                counts[b] -= n
            for b in holds:
                counts[b] = counts.get(b, 0) + n
            self.held = holds
        self.since.clear()  # empty but after a backward pass that no step applied yet
        if self.phase == BACKWARD_DONE and bid is not None:
            self.since.add(bid)
        if self.steps:
            self.sizes.append_ones(self.steps)
            self.steps = 0
            ledger.discards.pop(opt, None)
        sentinel = self.sentinel
        if sentinel is not None and self.sentinel_state:
            if self.sentinel_state == 1:  # the copy waits for the next backward pass (`Probe.after_backward`)
                sentinel.snapshot, sentinel.pending = None, self.stamp
                if not any(o is sentinel for o in probe._deferred):
                    probe._deferred.append(sentinel)
            else:  # a window of one pass: its rescaling is not measured (`Ledger.step`)
                sentinel.snapshot = sentinel.pending = None
            self.sentinel_state = 0
        if not self.reading:
            self._reread()
        for obs, gid, version in zip(self.group.obs, self.gids, self.vers):
            obs.grad_id, obs.version = gid, version

    def _reread(self) -> None:
        """Each `.grad` as it is now, for the observations, after a cycle that did not read them (each was
        written by the last pass: one found None is recorded as a gradient gone, which the full path's
        next look notices as a clear, as it would have at the call after it)."""
        ps = self.params if self.params is not None else [ref() for ref in self.group.refs]
        gids, vers = [], []
        for p in ps:
            g = None if p is None else p.grad
            gids.append(_GONE if g is None else id(g))
            vers.append(-1 if g is None else g._version)
        self.gids, self.vers, self.reading = gids, vers, True

    def reload(self) -> None:
        """Take the observations as they are now (after `flush`, changed by `Probe.unscaled`)."""
        self.gids = [obs.grad_id for obs in self.group.obs]
        self.vers = [obs.version for obs in self.group.obs]

    # -- a clear: opt.zero_grad() (or a model's, over the same parameters in the same order)
    def zero_grad(self, probe: CycleHost, site: Site, ps: list[torch.Tensor],
                  original: Callable[..., Any], args: Any, kwargs: Any, stock: bool = False) -> Any:
        """`ps`: the parameters the clearing call lists (`_Group.lists` of the cycle's group: the same);
        `stock`: `original` is torch's own `Optimizer.zero_grad` or `Module.zero_grad`, which leave every
        `.grad` of `ps` None when `set_to_none` is true (so they are not read again after it)."""
        # the same tensors, in the same order: by id, as no watched parameter died since the cycle was
        # established (a death changes `probe.generation`: `Probe.param_died`), and each of them is watched
        if probe.generation != self.generation or len(ps) != self.n or list(map(id, ps)) != self.keys:
            return MISS
        if self.verify:
            grads = list(map(_GRAD, ps))
            if self.reading:
                if not _seen(grads, self.gids, self.vers):  # each `.grad` as last seen
                    return MISS
            elif _NO_GRAD in map(id, grads):  # after a cycle not verified: each written by its pass, still there
                return MISS
        result = original(*args, **kwargs)
        n = self.n
        grads = None if stock and _sets_none(args, kwargs) else list(map(_GRAD, ps))
        self.none = grads is None or grads.count(None) == n
        if grads is None or self.none:
            self.gids, self.vers = [_NO_GRAD] * n, [-1] * n
        else:
            self.gids = list(map(id, grads))
            self.vers = [-1 if g is None else g._version for g in grads]
        self.reading = True
        self.params = ps
        if site is not self.clear_site:
            if self.clears:  # the runs of the clear before, counted now
                runs = probe.ledger.clear_runs
                runs[self.clear_site] = runs.get(self.clear_site, 0) + self.clears  # type: ignore[index]
                self.clears = 0
            self.clear_site = site
        self.clears += 1
        self.holds = ()  # every parameter drops the passes it held, all applied: nothing discarded
        self.dirty = True
        monitors = probe.monitors
        if monitors is not None and (monitors.scaled or monitors.clip is not None):
            monitors.cleared_many(self.group.keyset)
        probe.last_event = site
        self.phase = CLEARED
        return result

    # -- a backward pass
    def before_backward(self, probe: CycleHost, site: Site, tensors: Any, graph: LossGraph | None, via: object) -> bool:
        """The loss's constant factors are read on the passes of verified cycles only (`verify`: the first
        `VERIFY_ALL`, then one in `VERIFY_EVERY`): in a cycle of windows of one they matter to no check
        (GL003 needs a window of several passes), and when a window does grow, a pass left unread takes
        the factors of the next pass of its line (`windows.UNREAD`). The first pass after the cycle is
        established is read; strict mode, which has no cycle, reads all. GL008's tag is sampled the same
        way, after the first `TAG_ALL` passes of each line (`Monitors.tag_first`): one draw per cycle for
        all that is sampled, so that the cycles in between do none of it.
        `graph`: the `LossGraph` of `tensors` shared by several probes, or None: the root is read here,
        once (each read of `tensor.grad_fn` wraps the node anew), and only if it is needed."""
        if probe.generation != self.generation or (probe.discover and probe.discovered_sites.get(site, 0) < 4):
            return False
        ps = self.params
        if ps is None:
            return False
        if self.verify and not self.none and not _seen(list(map(_GRAD, ps)), self.gids, self.vers):
            return False  # what `Probe._sync` would notice: none
        # `Probe._take_deferred` has nothing to take: the last step dropped the copy (`sentinel_state`)
        sampled = self.verify
        self.passes += 1
        monitors = probe.monitors
        if monitors is None:
            tag = False
        else:
            due = monitors.tag_first(site)  # GL008's tag: the first passes of each line, then verified cycles'
            tag = sampled if due is None else due
        if graph is not None:
            grad_fn = graph.grad_fn if tag else None
            self.pass_scale = graph.scale if sampled else UNREAD
        else:
            grad_fn = tensors.grad_fn if (tag or sampled) and isinstance(tensors, torch.Tensor) else None
            self.pass_scale = graph_scale(grad_fn) if sampled else UNREAD
            if not tag:
                grad_fn = None
        self.bid = self.next_bid  # `Ledger.begin_backward`, written by `flush`
        self.next_bid += 1
        self.bp = None
        self.pass_site, self.pass_via, self.stepped = site, via, False
        self.dirty = True
        # `Monitors.before_backward` changes nothing when this pass is not tagged, no GradScaler output
        # or DDP forward is pending and its flags are already off: not called then
        if monitors is not None and (grad_fn is not None or monitors.pass_scaled or monitors.collect
                                     or monitors.scaled_outputs or monitors.ddp_forwards or monitors.clip is not None):
            monitors.before_backward(site, tensors, grad_fn)
        self.phase = IN_BACKWARD
        return True

    def after_backward(self, probe: CycleHost, site: Site) -> bool:
        """False when the pass did not write every parameter: the full `after_backward` then runs. On a
        cycle not verified only the sentinel's `.grad` is read (its deferred copy needs it)."""
        params = self.params
        assert params is not None
        if self.verify:
            grads = list(map(_GRAD, params))
            gids = list(map(id, grads))
            if _NO_GRAD in gids:
                return False
            vers = list(map(_VERSION, grads))
            # every `.grad` was None before the pass, else each must differ from what it was
            same = map(operator.and_, map(operator.eq, gids, self.gids), map(operator.eq, vers, self.vers))
            if not self.none and any(same):
                return False  # a parameter this pass did not write
            self.gids, self.vers = gids, vers
            if self.sentinel is not None:
                i = self.sentinel_i
                self.stamp = (gids[i], vers[i])
        else:
            if self.sentinel is not None:
                i = self.sentinel_i
                g = params[i].grad
                if g is None or (not self.none and id(g) == self.gids[i] and g._version == self.vers[i]):
                    return False  # the sentinel not written by this pass
                self.stamp = (id(g), g._version)
            self.reading = False
        self.holds = (self.bid,)  # what `Ledger.accumulated_many` makes of parameters holding nothing
        if self.sentinel is not None:
            # `Ledger.may_accumulate` is False: the optimizer stepped after its last pass, and this is
            # the only pass since; the copy waits for the next backward pass (see `Probe.after_backward`)
            self.sentinel_state = 1
        monitors = probe.monitors
        if monitors is not None and monitors.collect:
            monitors.wrote(site, list(self.keys))
        probe.last_event = site
        self.phase = BACKWARD_DONE
        return True

    # -- a step without a closure
    def before_step(self, probe: CycleHost, opt: torch.optim.Optimizer, site: Site) -> bool:
        # `_Group.lists` and `_Group.all_watched` (true of the cycle's group when it lists them: each
        # parameter is watched, `establish`), and each `.grad` as after the pass (`after_backward`:
        # none is None)
        groups = opt.param_groups
        params = groups[0]["params"] if len(groups) == 1 else probe._params_of(opt)
        group = self.group
        if not self._lists(params, probe.generation):
            return False
        if self.reading and not _unchanged(params, self.gids, self.vers):  # not read since the pass: not compared
            return False
        told = site is self.name_site  # this cycle told the monitors this step's name and parameters
        if not told:
            self.name, self.name_site = optimizer_name(site, 0), site
        if self.sentinel is not None:  # a window of one pass: its rescaling is not measured (`Ledger.step`)
            self.sentinel_state = 2
        monitors = probe.monitors
        if monitors is not None and (not told or monitors.scaled):
            # told already, and nothing still scaled: `Monitors.before_step` would change nothing
            monitors.before_step(self.opt_id, site, self.name, group.keyset)
        # `Ledger.step` of one pass that no step applied yet, after a window of one: nothing to report
        self.stepped = True
        self.steps += 1
        self.dirty = True
        probe.last_event = site
        self.phase = STEPPING
        return True

    def after_step(self, probe: CycleHost) -> None:
        """The step's own writes to `.grad` (an optimizer that changes or drops them in place) are left
        to the next call's check of each `.grad` as last seen (`zero_grad`, or the full path's
        `before_backward`), which falls back to the full path before any change, as a check here would:
        nothing but the step runs between the two, and a clear or rescale after a step that applied
        every pass held reports nothing either way."""
        self.params = None
        # the next cycle's reads: the first `VERIFY_ALL` cycles, then one in `VERIFY_EVERY`
        if self.cycles < VERIFY_ALL:
            self.cycles += 1
        if self.cycles < VERIFY_ALL:
            self.verify = True
        else:
            left = self.left - 1
            if left > 0:
                self.left, self.verify = left, False
            else:
                self.left, self.verify = self._gap(), True
        # `Ledger.consume` has nothing to do: the step applied every pass held
        monitors = probe.monitors
        if monitors is not None:
            monitors.after_step(self.opt_id, probe.last_event or UNKNOWN_SITE, self.group.keyset)
        self.phase = STEPPED


    def _gap(self) -> int:
        """Cycles until the next verified one, that one included (`gap`)."""
        return gap(self._draw(), VERIFY_EVERY)

    def _lists(self, params: list[torch.Tensor], generation: int) -> bool:
        """`_Group.lists` of the cycle's group, against the parameters held since the clear."""
        held = self.params
        return (held is not None and generation == self.generation and len(params) == self.n
                and all(map(operator.is_, params, held)))


def gap(u: float, every: float) -> int:
    """Cycles until the next sampled one, that one included, from a uniform draw `u` in [0, 1): each
    cycle is sampled with probability 1 / `every`, independently (one geometric draw ahead: a cycle not
    sampled draws nothing)."""
    if every <= 1:
        return 1
    return 1 + int(math.log1p(-u) / math.log1p(-1.0 / every))


def _sets_none(args: Any, kwargs: Any) -> bool:
    """torch's `zero_grad(set_to_none)` called with `set_to_none` true: `()`, `(True)`, `(set_to_none=True)`."""
    if args:
        return len(args) == 1 and not kwargs and args[0] is True
    return not kwargs or (len(kwargs) == 1 and kwargs.get("set_to_none") is True)


def _unchanged(ps: list[torch.Tensor], gids: list[int], vers: list[int]) -> bool:
    """Each `.grad` is the tensor last seen, at the version last seen (`gids` holds no None)."""
    grads = list(map(_GRAD, ps))
    return list(map(id, grads)) == gids and list(map(_VERSION, grads)) == vers


def _seen(grads: list[Any], gids: list[int], vers: list[int]) -> bool:
    """Each of these `.grad` is the tensor last seen (None if it was None), at the version last seen."""
    if list(map(id, grads)) != gids:
        return False
    if _NO_GRAD in gids:
        return all(g is None or g._version == v for g, v in zip(grads, vers))
    return list(map(_VERSION, grads)) == vers


_GRAD = operator.attrgetter("grad")
_VERSION = operator.attrgetter("_version")


def establish(probe: CycleHost, opt_id: int, group: _Group) -> Cycle | None:
    """The cycle of this optimizer, if the ledger is in its steady state after this step (see the
    module's docstring); None otherwise."""
    if not ENABLED or probe.strict or probe.verify_every_cycle:
        return None
    keys, observations = group.keys, group.obs
    n = len(keys)
    if n == 0 or group.unwatched or len(probe.watched) != n or not group.checked:
        return None
    ledger = probe.ledger
    sizes = ledger.windows.get(opt_id)
    since = ledger._since_step.get(opt_id)
    # four windows of one: `Ledger.window_violation` has nothing left to say about windows of one
    if not sizes or len(sizes) < 4 or sizes[-1] != 1 or since is None or since:
        return None
    if ledger.discards.get(opt_id) or ledger._rescaled or ledger.current is not None or ledger._registered.get(opt_id) != keys:
        return None
    held = ledger.held.get(keys[0])
    opts = ledger.optimizers_of.get(keys[0])
    if not held or opts != {opt_id}:
        return None
    for key in keys:
        if ledger.held.get(key) is not held or ledger.optimizers_of.get(key) is not opts:
            return None
    if any(opt_id not in ledger.passes[bid].consumers for bid in held):
        return None
    sentinels = [obs for key, obs in zip(keys, observations) if key in probe.sentinels]
    if len(sentinels) > 1 or any(obs.snapshot is not None or obs.pending is not None for obs in sentinels):
        return None
    return Cycle(opt_id, group, held, sizes, since, sentinels[0] if sentinels else None, probe.generation, ledger._next)
