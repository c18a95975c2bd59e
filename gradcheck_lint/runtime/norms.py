"""GL007 at runtime: a gradient norm read while the gradients are still multiplied by a GradScaler's scale.

`torch.nn.utils.get_total_norm(grads)` is watched while a probe is active (`torch_patches.py`). When
some of the gradients it reads are still scaled (written by the backward of a `scaler.scale(loss)`
and not unscaled, cleared or stepped since: `Monitors.scaled`), the norm is the scale times the real
one, and whatever logs or compares it (a loop skipping steps on a large norm) is wrong: reported
where the norm is read, as the static side does. A norm computed by hand from `.grad` is not seen.
"""

from __future__ import annotations

from typing import Any, Protocol

import torch

from .. import messages
from .monitors import Monitors
from .observed import _Observed
from .sites import user_site


class NormHost(Protocol):
    """What reading gradient norms uses of the probe (`probe.Probe`)."""

    @property
    def monitors(self) -> Monitors | None: ...
    @property
    def watched(self) -> list[tuple[int, _Observed]]: ...



def read(probe: NormHost, grads: Any) -> None:
    """`grads` (tensors, or one) are about to be read for their norm."""
    monitors = probe.monitors
    if monitors is None or not monitors.scaled:
        return
    tensors = [grads] if isinstance(grads, torch.Tensor) else [g for g in grads if isinstance(g, torch.Tensor)]
    ids = {id(g) for g in tensors}
    keys: set[int] = set()
    for key, obs in probe.watched:
        p = obs.param()
        g = p.grad if p is not None else None
        if g is not None and id(g) in ids:
            keys.add(key)
    stale = keys & monitors.scaled
    if not stale:
        return
    site = user_site(2, ("get_total_norm",))
    opt = next((o for o, ps in monitors.opt_params.items() if ps & stale), None)
    name = monitors.opt_names.get(opt, "optimizer") if opt is not None else "optimizer"
    by = monitors.scaled_by
    monitors._report("GL007", site, messages.amp_scaled_gradients(
        "norm_before_unscale", site.text or "get_total_norm(...)", name, by.text if by else None, by.line if by else None), name)
