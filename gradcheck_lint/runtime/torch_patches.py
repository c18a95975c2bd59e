"""The torch functions patched while a probe is active, one wrapper each, shared by every active probe.

- `torch.autograd.backward` (what `Tensor.backward` calls, looked up at call time): each backward pass
  is told to every active probe before and after it runs, with the user's call that issued it
  (`sites.memo_site`); the steady cycle (`cycle.py`) answers first when it applies.
- GradScaler's unscale kernel: `GradScaler.unscale_` undoes the loss scaling it applied, which is
  not a rescale of the gradients.
- `torch.nn.utils.clip_grad_norm_` and `clip_grad_value_` (looked up at call time): the window's scale
  is measured on the gradients entering the clip, and the clip's own change is not a rescale; the
  monitors are told of the clip there, with whether it clips a window (`clips.py`).
- `torch.nn.utils.get_total_norm`: a norm of gradients still multiplied by a GradScaler's scale (`norms.py`).

All are restored when the last probe closes (`deactivate`).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any, Protocol

import torch

from . import clips as _clips
from . import cycle as _cycle
from . import norms as _norms
from . import recorder as _rec
from .clips import ClipHost
from .evidence import Site
from .loss_scale import LossGraph
from .norms import NormHost
from .replay import Replay
from .sites import MEMOS, SiteMemo, memo_sites, user_site


class PatchHost(ClipHost, NormHost, Protocol):
    """What the patched torch functions use of each active probe (`probe.Probe`), with what they hand it on to."""

    @property
    def retained(self) -> bool: ...
    @property
    def _replay(self) -> Replay | None: ...
    def full_before_backward(self, site: Site, tensors: Any, graph: LossGraph | None = None, via: object = None,
                             retain: bool = False) -> None: ...
    def full_after_backward(self, site: Site) -> None: ...
    def unscaled(self, grads: Any) -> None: ...


_ACTIVE: list[PatchHost] = []
_ORIGINAL_BACKWARD: Callable[..., Any] | None = None
# the places of the last few backward calls (`sites.memo_site`): a loop with several backward lines (a
# GAN's discriminator and generator losses) finds each of them again without walking the stack
_BACKWARD_SITES = [SiteMemo() for _ in range(MEMOS)]


# backward passes running now (a backward inside one is part of it), and the active probe when it is the only
# one: the lane reads both from this one list (with `_ACTIVE` as well, each pass touched two lists and
# their items, cold after a forward: benchmarks/README.md, `guardcost`)
_RUNNING: list[Any] = [0, None]
_getframe = sys._getframe  # one global read on the lane instead of two


def _backward_with_ids(*args: Any, **kwargs: Any) -> Any:
    assert _ORIGINAL_BACKWARD is not None
    running = _RUNNING
    probe = running[1]
    if probe is not None and not running[0]:
        replay = probe._replay
        if replay is not None and replay.lane and not (args[2] if len(args) > 2 else kwargs.get("retain_graph")):
            # the lane (`replay.py`): a pass of a replayed cycle not verified, known by its frames alone
            frame = _getframe(1)
            user = frame.f_back
            # the lane tuple of the point due (`Replay._arm`): torch's frame, the user's, its caller's
            i = replay.next_i
            lane = replay.lanes[i]
            # (`lane[1] is frame.f_code` holds of a pass's tuple only: a clear's and a step's hold an id there)
            if (lane is not None and lane[1] is frame.f_code and user is not None
                    and lane[2] is user.f_code and lane[3] == user.f_lasti):
                # (no GradScaler output or DDP forward pending: one disarms the lane, `Monitors.pending`)
                up = user.f_back
                if ((lane[4] is not None or lane[5] != -2) if up is None
                        else (lane[4] is not up.f_code or lane[5] != up.f_lasti)):
                    lane = None
            else:
                lane = None
            if lane is not None:  # (..., its line): `Replay._arm`
                if replay.tags and probe.monitors is not None:  # GL008's tags on a cycle not verified (`Replay.tag`)
                    replay.tag(probe.monitors, i, lane[6], args[0] if args else kwargs.get("tensors"))
                if i == 0:
                    replay.cycle += 1
                replay.next_i = i + 1
                running[0] += 1
                try:
                    return _ORIGINAL_BACKWARD(*args, **kwargs)
                except RuntimeError as err:
                    if probe.monitors is not None:
                        tensors = args[0] if args else kwargs.get("tensors")
                        probe.monitors.backward_failed(lane[6], tensors, err, frame)
                    raise
                finally:
                    running[0] -= 1
                    # past the pass's end if it is the cycle's next point (`replay.py`: the lane moves the cycle
                    # on); a hook inside the pass may have left the replay: its lane is off then (`Probe._drop_replay`)
                    end = i + 1  # (`Replay._arm`: the pass's end is the next point)
                    if replay.next_i == end and replay.lane:
                        replay.next_i = end + 1  # a pass's end is never the cycle's last point
                    else:
                        _after_backward(probe, lane[6])
    probes = tuple(_ACTIVE)
    if not probes or _RUNNING[0]:
        # a backward run by a backward (reentrant checkpointing recomputes a block and backpropagates
        # through it from inside the outer pass, maybe on the device's autograd thread): what it writes
        # is the outer pass's, seen when that one ends
        return _ORIGINAL_BACKWARD(*args, **kwargs)
    frame = sys._getframe(1)
    # `memo_site`'s answer, inline for the usual chain: torch's `Tensor.backward`, the user's frame, its
    # caller (or none: a script's module code). Each frame's fields are read once, and the instructions,
    # which tell apart two calls of one helper (a GAN's `backward(d_loss)` and `backward(g_loss)`), first
    user = frame.f_back
    site = None
    facts = None
    if user is not None:
        code, lasti, up = user.f_code, user.f_lasti, user.f_back
        up_code, up_lasti = (None, -2) if up is None else (up.f_code, up.f_lasti)  # -2: `SiteMemo`'s top of stack
        skip = frame.f_code
        for memo in _BACKWARD_SITES:
            if (up_lasti == memo.via_lasti and lasti == memo.lasti and code is memo.code and up_code is memo.via_code
                    and skip is memo.skip):
                site, via = memo.site, memo.via
                facts = (_rec.BW_MID, skip, code, lasti, up_code, up_lasti)  # what the lane compares
                break
    if site is None:
        site, via = memo_sites(frame, _BACKWARD_SITES, ("backward",), True)
    tensors = args[0] if args else kwargs.get("tensors")
    graph = LossGraph(tensors) if len(probes) > 1 else None  # one probe: made only if it is needed
    # `Tensor.backward(gradient, retain_graph, ...)` passes it third: a graph kept for another backward
    retain = bool(args[2] if len(args) > 2 else kwargs.get("retain_graph"))
    if retain and graph is None:
        graph = LossGraph(tensors)
    for probe in probes:  # `Probe.before_backward`, the steady cycle's case without a call of its own
        cycle = probe._cycle
        replay = probe._replay
        if retain or probe.retained:
            probe.full_before_backward(site, tensors, graph, via, retain)
        elif replay is not None:
            i = replay.next_i
            if not replay.before_backward(probe, site, tensors, graph, via):
                probe.full_before_backward(site, tensors, graph, via)
            elif facts is not None and len(probes) == 1:
                replay.learn(i, facts)
        elif cycle is None or cycle.phase != _cycle.CLEARED or not cycle.before_backward(probe, site, tensors, graph, via):
            probe.full_before_backward(site, tensors, graph, via)
    del graph  # the graph's root is not held past the pass
    _RUNNING[0] += 1
    try:
        return _ORIGINAL_BACKWARD(*args, **kwargs)
    except RuntimeError as err:
        for probe in probes:
            if probe.monitors is not None:
                probe.monitors.backward_failed(site, tensors, err, sys._getframe(1))
        raise
    finally:
        _RUNNING[0] -= 1
        for probe in probes:  # `Probe.after_backward`, likewise
            _after_backward(probe, site)


def _after_backward(probe: PatchHost, site: Site) -> None:
    """`Probe.after_backward` of one probe, for a pass the lane took whose end it does not take."""
    replay = probe._replay
    if replay is not None:
        if not replay.after_backward(probe, site):
            probe.full_after_backward(site)
        return
    cycle = probe._cycle
    if cycle is None or cycle.phase != _cycle.IN_BACKWARD or not cycle.after_backward(probe, site):
        probe.full_after_backward(site)


_ORIGINAL_UNSCALE: Callable[..., Any] | None = None
_UNSCALE = "_amp_foreach_non_finite_check_and_unscale_"


def _unscale_seen(grads: Any, *args: Any, **kwargs: Any) -> Any:
    """GradScaler.unscale_ undoes the loss scaling it applied: not a rescale of the gradients."""
    assert _ORIGINAL_UNSCALE is not None
    result = _ORIGINAL_UNSCALE(grads, *args, **kwargs)
    for probe in _ACTIVE:
        probe.unscaled(grads)
    return result


_CLIP_ORIGINALS: dict[tuple[Any, str], Any] = {}


def _clip(key: tuple[Any, str]) -> Callable[..., Any]:
    def clip(parameters: Any, *args: Any, **kwargs: Any) -> Any:
        original = _CLIP_ORIGINALS[key]
        probes = tuple(_ACTIVE)
        if not probes:
            return original(parameters, *args, **kwargs)
        params = [parameters] if isinstance(parameters, torch.Tensor) else list(parameters)
        site = user_site(2, ("clip_grad_norm_", "clip_grad_value_"))
        states = [(probe, _clips.before(probe, params, site)) for probe in probes]
        try:
            return original(params, *args, **kwargs)
        finally:
            for probe, state in states:
                _clips.after(probe, params, state)

    return clip


def _norm(key: tuple[Any, str]) -> Callable[..., Any]:
    def get_total_norm(tensors: Any, *args: Any, **kwargs: Any) -> Any:
        original = _CLIP_ORIGINALS[key]
        if _ACTIVE:
            tensors = [tensors] if isinstance(tensors, torch.Tensor) else list(tensors)
            for probe in tuple(_ACTIVE):
                _norms.read(probe, tensors)
        return original(tensors, *args, **kwargs)

    return get_total_norm


def _clip_targets() -> list[tuple[Any, str]]:
    utils = torch.nn.utils
    return [(owner, name) for name in ("clip_grad_norm_", "clip_grad_value_", "get_total_norm")
            for owner in (utils, getattr(utils, "clip_grad", None)) if owner is not None and hasattr(owner, name)]


def activate(probe: PatchHost) -> None:
    global _ORIGINAL_BACKWARD, _ORIGINAL_UNSCALE
    if not _ACTIVE:
        for owner, name in _clip_targets():
            _CLIP_ORIGINALS[(owner, name)] = owner.__dict__.get(name, getattr(owner, name))
            setattr(owner, name, (_norm if name == "get_total_norm" else _clip)((owner, name)))
        # module functions, looked up by torch at call time; restored by _deactivate
        _ORIGINAL_BACKWARD = torch.autograd.backward
        torch.autograd.backward = _backward_with_ids
        _ORIGINAL_UNSCALE = getattr(torch, _UNSCALE, None)
        if _ORIGINAL_UNSCALE is not None:
            setattr(torch, _UNSCALE, _unscale_seen)
    _ACTIVE.append(probe)
    _RUNNING[1] = _ACTIVE[0] if len(_ACTIVE) == 1 else None


def deactivate(probe: PatchHost) -> None:
    global _ORIGINAL_BACKWARD, _ORIGINAL_UNSCALE
    if probe in _ACTIVE:
        _ACTIVE.remove(probe)
    _RUNNING[1] = _ACTIVE[0] if len(_ACTIVE) == 1 else None
    if not _ACTIVE and _ORIGINAL_BACKWARD is not None:
        torch.autograd.backward = _ORIGINAL_BACKWARD
        _ORIGINAL_BACKWARD = None
        if _ORIGINAL_UNSCALE is not None:
            setattr(torch, _UNSCALE, _ORIGINAL_UNSCALE)
            _ORIGINAL_UNSCALE = None
        for (owner, name), original in list(_CLIP_ORIGINALS.items()):
            setattr(owner, name, original)
        _CLIP_ORIGINALS.clear()
