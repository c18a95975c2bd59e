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
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

import torch

from .ledger import UNKNOWN_SITE, Site
from .windows import UNREAD, WindowSizes
from .loss_scale import LossGraph
from .observed import _NO_GRAD, _Group
from .wording import optimizer_name

if TYPE_CHECKING:
    from .probe import Probe

ENABLED = True  # off: the full path every time (tests compare the two)
GRAPH_EVERY = 8  # a steady cycle reads the loss's constant factors on one backward pass in this many

# the phase of the cycle: the call the probe has seen last
STEPPED, CLEARED, IN_BACKWARD, BACKWARD_DONE, STEPPING = range(5)
MISS = object()  # `zero_grad` returns this when the fast path does not apply


class Cycle:
    """The steady cycle of one optimizer, whose parameters are all the probe watches."""

    __slots__ = ("opt_id", "group", "n", "held", "sizes", "since", "sentinel", "phase", "generation", "name", "name_site",
                 "passes")

    def __init__(self, opt_id: int, group: _Group, held: tuple[int, ...], sizes: WindowSizes, since: set[int],
                 sentinel: Any, generation: int) -> None:
        self.opt_id = opt_id
        self.group = group
        self.n = len(group.keys)
        self.held = held  # the tuple of passes every parameter holds (the ledger shares one object)
        self.sizes = sizes  # the ledger's windows of this optimizer
        self.since = since  # the ledger's passes since this optimizer's last step
        self.sentinel = sentinel  # the one `_Observed` whose gradient is copied, or None
        self.phase = STEPPED
        self.generation = generation
        self.name = ""
        self.name_site: Site | None = None
        self.passes = 0  # backward passes of this cycle so far

    # -- a clear: opt.zero_grad() (or a model's, over the same parameters)
    def zero_grad(self, probe: Probe, site: Site, group: _Group, ps: list[torch.Tensor],
                  original: Callable[..., Any], args: Any, kwargs: Any) -> Any:
        if probe.generation != self.generation or group.keyset != self.group.keyset or not _unchanged(ps, group.obs):
            return MISS
        result = original(*args, **kwargs)
        ledger = probe.ledger
        ledger.clear_runs[site] = ledger.clear_runs.get(site, 0) + 1
        held = self.held
        if held:  # every parameter drops the passes it held, all applied: nothing discarded
            table = ledger.held
            for key in group.keys:
                table[key] = ()
            counts = ledger._held
            for bid in held:
                counts[bid] -= self.n
            self.held = ()
        if probe.monitors is not None:
            probe.monitors.cleared_many(group.keyset)
        for p, obs in zip(ps, group.obs):
            g = p.grad
            obs.grad_id = id(g)
            obs.version = g._version if g is not None else -1
        probe.last_event = site
        self.phase = CLEARED
        return result

    # -- a backward pass
    def before_backward(self, probe: Probe, site: Site, tensors: Any, graph: LossGraph, via: object) -> bool:
        """The loss's constant factors are read on one pass in `GRAPH_EVERY` only: in a cycle of windows
        of one they matter to no check (GL003 needs a window of several passes), and when a window does
        grow, a pass left unread takes the factors of the next pass of its line (`windows.UNREAD`). The
        first pass after the cycle is established is read; strict mode, which has no cycle, reads all."""
        if probe.generation != self.generation or (probe.discover and probe.discovered_sites.get(site, 0) < 4):
            return False
        for obs in self.group.obs:  # what `Probe._sync` would notice: none
            gid = obs.grad_id
            if gid != _NO_GRAD:
                p = obs.param()
                g = p.grad if p is not None else None
                if p is not None and (g is None or id(g) != gid or g._version != obs.version):
                    return False
        if probe._deferred:
            probe._take_deferred()
        sampled = self.passes % GRAPH_EVERY == 0
        self.passes += 1
        probe.ledger.begin_backward(site, graph.scale if sampled else UNREAD, via)
        if probe.monitors is not None:
            probe.monitors.before_backward(site, tensors, graph.grad_fn)
        self.phase = IN_BACKWARD
        return True

    def after_backward(self, probe: Probe, site: Site) -> bool:
        """False when the pass did not write every parameter: the full `after_backward` then runs."""
        group = self.group
        written: list[tuple[Any, torch.Tensor]] = []
        for obs in group.obs:
            p = obs.param()
            g = p.grad if p is not None else None
            if g is not None and (id(g) != obs.grad_id or g._version != obs.version):
                written.append((obs, g))
        if len(written) != self.n:
            return False
        sentinel = self.sentinel
        for obs, g in written:
            obs.grad_id, obs.version = id(g), g._version
        ledger = probe.ledger
        bid = ledger.current
        assert bid is not None
        held = (bid,)  # what `Ledger.accumulated_many` makes of parameters holding nothing
        table = ledger.held
        for key in group.keys:
            table[key] = held
        ledger._held[bid] = ledger._held.get(bid, 0) + self.n
        self.since.add(bid)
        self.held = held
        if sentinel is not None:
            # `Ledger.may_accumulate` is False: the optimizer stepped after its last pass, and this is
            # the only pass since; the copy waits for the next backward pass (see `Probe.after_backward`)
            g = next(g for obs, g in written if obs is sentinel)
            sentinel.snapshot, sentinel.pending = None, (id(g), g._version)
            probe._deferred.append(sentinel)
        monitors = probe.monitors
        if monitors is not None and monitors.collect:
            monitors.wrote(site, list(group.keys))
        ledger.current = None
        probe.last_event = site
        self.phase = BACKWARD_DONE
        return True

    # -- a step without a closure
    def before_step(self, probe: Probe, opt: torch.optim.Optimizer, site: Site) -> bool:
        params = probe._params_of(opt)
        group = self.group
        if not (group.lists(params, probe.generation) and group.all_watched(params)) or not _all_unchanged(params, group.obs):
            return False
        if site is not self.name_site:
            self.name, self.name_site = optimizer_name(site, 0), site
        sentinel = self.sentinel
        if sentinel is not None:  # a window of one pass: its rescaling is not measured (`Ledger.step`)
            sentinel.snapshot = sentinel.pending = None
        if probe.monitors is not None:
            probe.monitors.before_step(self.opt_id, site, self.name, group.keyset)
        # `Ledger.step` of one pass that no step applied yet, after a window of one: nothing to report
        ledger = probe.ledger
        ledger.discards.pop(self.opt_id, None)
        bp = ledger.passes[self.held[0]]
        bp.consumers.add(self.opt_id)
        if not bp.live:
            bp.live = True
            ledger._live.append(bp)
        self.sizes.append(1)
        self.since.clear()
        probe.last_event = site
        self.phase = STEPPING
        return True

    def after_step(self, probe: Probe, opt: torch.optim.Optimizer) -> bool:
        params = probe._params_of(opt)
        group = self.group
        if not group.lists(params, probe.generation) or not _all_unchanged(params, group.obs):
            return False
        # `Ledger.consume` has nothing to do: the step applied every pass held
        if probe.monitors is not None:
            probe.monitors.after_step(self.opt_id, probe.last_event or UNKNOWN_SITE, group.keyset)
        self.phase = STEPPED
        return True


def _unchanged(ps: list[torch.Tensor], observations: list[Any]) -> bool:
    """Each `.grad` is the tensor last seen, at the version last seen (None if it was None)."""
    for p, obs in zip(ps, observations):
        g = p.grad
        if g is None:
            if obs.grad_id != _NO_GRAD:
                return False
        elif id(g) != obs.grad_id or g._version != obs.version:
            return False
    return True


def _all_unchanged(ps: list[torch.Tensor], observations: list[Any]) -> bool:
    """`_unchanged`, and every parameter has a `.grad`."""
    for p, obs in zip(ps, observations):
        g = p.grad
        if g is None or id(g) != obs.grad_id or g._version != obs.version:
            return False
    return True


def establish(probe: Probe, opt_id: int, group: _Group) -> Cycle | None:
    """The cycle of this optimizer, if the ledger is in its steady state after this step (see the
    module's docstring); None otherwise."""
    if not ENABLED or probe.strict:
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
    return Cycle(opt_id, group, held, sizes, since, sentinels[0] if sentinels else None, probe.generation)
