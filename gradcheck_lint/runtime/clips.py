"""Gradient clipping, seen at the clip call: the window's scale is measured on the gradients entering it.

`clip_grad_norm_` and `clip_grad_value_` change the gradients in place by a factor that depends on
their size. Measured at the step, that change hides whether the window's losses were divided by N
(an undivided window clipped to `max_norm=1.0` and a divided one look alike). So the probe measures
what happened to the gradients up to the clip (`before`: an in-place `/= N` before it is measured or
noted as usual), and then takes the clip's own change as no rescaling at all (`after`): each copy
of a gradient (`_Observed.snapshot`) becomes the clipped gradient divided by the factor measured
before the clip, and each gradient's new version is taken as seen. A factor that was not uniform
before the clip leaves the window's scale unmeasured (no GL003), as without a clip.

GL007's partial window (`monitors.Monitors.clipped`) is told here too, once the ledger is up to date:
a clip counts only when its gradients hold a backward pass no step applied. One that finds them just
cleared or just stepped (a clip under `if accelerator.sync_gradients:` after a step method that steps
and clears) limits nothing of a window, and the next micro-batch's gradients are not added to a clip.
"""

from __future__ import annotations

from typing import Any, Protocol

import torch

from . import cycle as _cycle
from .cycle import Cycle, CycleHost
from .evidence import UNKNOWN_SITE, Site
from .observed import _LOST, _Observed
from .rescale import rescale_factor


class ClipHost(CycleHost, Protocol):
    """What watching a clip uses of the probe (`probe.Probe`), with what the steady cycle uses of it."""

    @property
    def _cycle(self) -> Cycle | None: ...
    @property
    def observed(self) -> dict[int, _Observed]: ...
    def _sync(self, observations: list[_Observed | None] | None, now: Site) -> None: ...
    def _drop_replay(self) -> None: ...


_FAST = object()  # `before`'s answer when the steady cycle takes the clip (a window of one: nothing to measure)


def before(probe: ClipHost, params: list[Any], site: Site) -> Any:
    """Measure the gradients of `params` as they enter the clip, and tell the monitors of the clip
    (`site`) when it clips gradients some backward pass wrote since their last clear or step; returns
    what `after` needs."""
    probe._drop_replay()  # a clip in a replayed cycle: not one of its calls
    cycle = probe._cycle
    monitors = probe.monitors
    if (cycle is not None and cycle.phase == _cycle.BACKWARD_DONE and cycle.params is not None
            and len(params) == cycle.n and all(map(_same, params, cycle.params))
            and _cycle._unchanged(params, cycle.gids, cycle.vers)):
        if monitors is not None:  # the cycle's pass, not yet stepped: a clip of gradients it wrote
            monitors.clipped(site, params)
        return _FAST
    if cycle is not None:
        cycle.flush(probe)
    observed = [probe.observed.get(id(p)) for p in params if isinstance(p, torch.Tensor)]
    watched: list[_Observed | None] = [obs for obs in observed if obs is not None and obs.param() is not None]
    if not watched:
        if monitors is not None:  # gradients the probe does not follow: counted, as it cannot tell
            monitors.clipped(site, params)
        return None
    probe._sync(watched, probe.last_event or UNKNOWN_SITE)  # changes since the last look: before the clip
    if monitors is not None:
        pids = [id(p) for obs in watched if obs is not None and (p := obs.param()) is not None]
        monitors.clipped(site, params, window=bool(probe.ledger.unapplied(pids)))
    factors: list[tuple[_Observed, float | None]] = []
    for obs in watched:
        if obs is not None and obs.snapshot is not None:
            factors.append((obs, rescale_factor(obs, obs.snapshot)))
    return watched, factors


def after(probe: ClipHost, params: list[Any], state: Any) -> None:
    """The clip ran: its change to the gradients is not a rescaling of the window."""
    if state is None:
        return
    cycle = probe._cycle
    if state is _FAST:
        if cycle is not None:
            cycle.gids = [id(p.grad) for p in params]
            cycle.vers = [-1 if p.grad is None else p.grad._version for p in params]
        return
    watched, factors = state
    for obs, factor in factors:
        p = obs.param()
        g = p.grad if p is not None else None
        if g is None or factor is None or factor == 0.0:
            obs.snapshot, obs.pending = None, _LOST  # not uniform before the clip: not measured
        else:
            obs.snapshot = obs.view(g) / factor  # a new tensor: measures the factor before the clip
    for seen in watched:
        p = seen.param()
        g = p.grad if p is not None else None
        if g is not None:
            seen.grad_id, seen.version = id(g), g._version
    if cycle is not None:
        cycle.reload()


def _same(a: Any, b: Any) -> bool:
    return a is b
