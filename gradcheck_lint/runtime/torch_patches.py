"""The torch functions patched while a probe is active, one wrapper each, shared by every active probe.

- `torch.autograd.backward` (what `Tensor.backward` calls, looked up at call time): each backward pass
  is told to every active probe before and after it runs, with the user's call that issued it
  (`sites.memo_site`); the steady cycle (`cycle.py`) answers first when it applies.
- GradScaler's unscale kernel: `GradScaler.unscale_` undoes the loss scaling it applied, which is
  not a rescale of the gradients.

Both are restored when the last probe closes (`deactivate`).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, Callable

import torch

from . import cycle as _cycle
from .loss_scale import LossGraph
from .sites import SiteMemo, memo_site

if TYPE_CHECKING:
    from .probe import Probe

_ACTIVE: list["Probe"] = []
_ORIGINAL_BACKWARD: Callable[..., Any] | None = None
_BACKWARD_SITE = SiteMemo()  # the last backward call's place (`sites.memo_site`)


def _backward_with_ids(*args: Any, **kwargs: Any) -> Any:
    assert _ORIGINAL_BACKWARD is not None
    probes = tuple(_ACTIVE)
    if not probes:
        return _ORIGINAL_BACKWARD(*args, **kwargs)
    frame = sys._getframe(1)
    memo = _BACKWARD_SITE
    # `memo_site`'s answer, inline for the usual chain: torch's `Tensor.backward`, the user's frame, its
    # caller (or none: a script's module code)
    if (frame.f_code is memo.skip and (user := frame.f_back) is not None and user.f_code is memo.code
            and user.f_lasti == memo.lasti and ((up := user.f_back) is None) is (memo.via_code is None)
            and (up is None or (up.f_code is memo.via_code and up.f_lasti == memo.via_lasti))):
        site, via = memo.site, memo.via
    else:
        site, via = memo_site(frame, memo, ("backward",), True)
    tensors = args[0] if args else kwargs.get("tensors")
    graph = LossGraph(tensors) if len(probes) > 1 else None  # one probe: made only if it is needed
    for probe in probes:  # `Probe.before_backward`, the steady cycle's case without a call of its own
        cycle = probe._cycle
        if cycle is None or cycle.phase != _cycle.CLEARED or not cycle.before_backward(probe, site, tensors, graph, via):
            probe.full_before_backward(site, tensors, graph, via)
    del graph  # the graph's root is not held past the pass
    try:
        return _ORIGINAL_BACKWARD(*args, **kwargs)
    except RuntimeError as err:
        for probe in probes:
            if probe.monitors is not None:
                probe.monitors.backward_failed(site, tensors, err, sys._getframe(1))
        raise
    finally:
        for probe in probes:  # `Probe.after_backward`, likewise
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


def activate(probe: "Probe") -> None:
    global _ORIGINAL_BACKWARD, _ORIGINAL_UNSCALE
    if not _ACTIVE:
        # module functions, looked up by torch at call time; restored by _deactivate
        _ORIGINAL_BACKWARD = torch.autograd.backward
        torch.autograd.backward = _backward_with_ids
        _ORIGINAL_UNSCALE = getattr(torch, _UNSCALE, None)
        if _ORIGINAL_UNSCALE is not None:
            setattr(torch, _UNSCALE, _unscale_seen)
    _ACTIVE.append(probe)


def deactivate(probe: "Probe") -> None:
    global _ORIGINAL_BACKWARD, _ORIGINAL_UNSCALE
    if probe in _ACTIVE:
        _ACTIVE.remove(probe)
    if not _ACTIVE and _ORIGINAL_BACKWARD is not None:
        torch.autograd.backward = _ORIGINAL_BACKWARD
        _ORIGINAL_BACKWARD = None
        if _ORIGINAL_UNSCALE is not None:
            setattr(torch, _UNSCALE, _ORIGINAL_UNSCALE)
            _ORIGINAL_UNSCALE = None
