"""What the probe last saw of each watched parameter's `.grad`, and the parameters of each optimizer."""

from __future__ import annotations

import operator
import weakref
from collections.abc import Callable

import torch

_NO_GRAD = id(None)  # the `grad_id` of a parameter whose `.grad` is None: `id(p.grad)` then
_LOST = (-1, -1)  # `_Observed.pending` when the deferred copy could not be taken: the rescaling is not measured


def _unmeasured() -> None:
    """The rescaling factor of a sentinel whose copy was lost: not measured (GL003 stays silent)."""
    return None


class _Observed:
    """What the probe last saw of one parameter's `.grad`: which tensor (`id(p.grad)`), at which version."""

    __slots__ = ("grad_id", "version", "param", "snapshot", "pending", "sample")

    def __init__(self, param: torch.Tensor, on_death: Callable[[weakref.ReferenceType[torch.Tensor]], None] | None = None) -> None:
        # `on_death`: called when the parameter is freed (before its id can name another tensor)
        self.param = weakref.ref(param, on_death)
        self.grad_id = _NO_GRAD
        self.version = -1
        # a copy of `.grad` after the last backward pass, kept for one small CPU parameter per
        # optimizer: measures in-place rescaling (`p.grad /= N`) without any device sync
        self.snapshot: torch.Tensor | None = None
        # default mode, a pass that may be a window of one: the copy is deferred to the next backward
        # pass (`.grad`'s id and version when it was written), or `_LOST` if `.grad` changed meanwhile
        self.pending: tuple[int, int] | None = None
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


class _Group:
    """The parameters of one optimizer (or model) as last listed, with their ids and observations.

    Kept per optimizer so that a step does not look every parameter up again: valid while the
    optimizer lists the same tensors and the probe watches the same ones (`Probe.generation`).
    """

    __slots__ = ("refs", "keys", "keyset", "obs", "generation", "checked", "unwatched")

    def __init__(self, params: list[torch.Tensor], observed: dict[int, _Observed], generation: int, checked: bool) -> None:
        self.refs = [weakref.ref(p) for p in params]
        self.keys = [id(p) for p in params]
        self.keyset = frozenset(self.keys)
        self.obs = [observed.get(k) for k in self.keys]  # None: not watched (frozen)
        self.generation = generation
        self.checked = checked  # every parameter went through `watch_param` at this generation
        self.unwatched = [i for i, o in enumerate(self.obs) if o is None]

    def lists(self, params: list[torch.Tensor], generation: int) -> bool:
        """These are the same tensors, in the same order, and the watched ones have not changed."""
        return (generation == self.generation and len(params) == len(self.refs)
                and all(map(operator.is_, params, map(_DEREF, self.refs))))

    def all_watched(self, params: list[torch.Tensor]) -> bool:
        """`watch_param` would do nothing to any of these (listed) parameters: each went through it at
        this generation, and those it did not watch are still frozen."""
        return self.checked and not (self.unwatched and any(params[i].requires_grad for i in self.unwatched))


_DEREF = weakref.ref.__call__
_MAX_GROUPS = 64  # optimizers and models whose parameter lists are kept (one optimizer per task: many)


def _look(group: _Group, params: list[torch.Tensor]) -> tuple[list[int], bool, bool]:
    """One pass over a group's parameters: the ids of those with a `.grad`; whether `Probe._sync`
    has anything to notice (a watched gradient seen before is gone, replaced or modified: a sufficient
    test, `_sync` itself decides); whether any `.grad` differs from what was last seen of it."""
    with_grad: list[int] = []
    stale = differs = False
    for key, p, obs in zip(group.keys, params, group.obs):
        g = p.grad
        if g is not None:
            with_grad.append(key)
            if obs is not None and (id(g) != obs.grad_id or g._version != obs.version):
                differs = True
                stale = stale or obs.grad_id != _NO_GRAD
        elif obs is not None and obs.grad_id != _NO_GRAD:
            stale = True
    return with_grad, stale, differs
