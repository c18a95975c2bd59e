"""The probe's clears: each watched `zero_grad` tells the ledger where it ran and what it dropped, and a
clear made behind the probe's back (`p.grad = None`, `p.grad.zero_()`, an unwatched `zero_grad()`) or an
in-place rescaling is noticed by its effect on the `.grad` last seen (`_sync`).

`ClearChecks` is a base class of `probe.Probe`: it reads and writes the probe's state (declared below for
the type checker), and the probe's fast paths (`cycle.py`, `replay.py`) answer first when they apply.
"""

from __future__ import annotations

import sys
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import torch

from . import cycle as _cycle
from . import recorder as _rec
from . import replay as _replay
from .clear_sites import clear_between
from .evidence import UNKNOWN_SITE, Site
from .ledger import Ledger
from .monitors import Monitors
from .observed import _NO_GRAD, _Group, _look, _Observed
from .sites import SiteMemo, memo_site

# torch's own clears: with `set_to_none` true they leave every `.grad` they list None
_STOCK_ZERO_GRADS = (torch.optim.Optimizer.zero_grad, torch.nn.Module.zero_grad)
_getframe = sys._getframe  # one global read per clear instead of two
_CLEAR_END = _rec.CLEAR_END  # (likewise)


class ClearChecks:
    """The clears of `probe.Probe` (see the module's docstring)."""

    ledger: Ledger
    monitors: Monitors | None
    observed: dict[int, _Observed]
    watched: list[tuple[int, _Observed]]
    last_event: Site | None
    active: bool
    strict: bool
    verify_every_cycle: bool
    generation: int
    discover: bool
    discovered_sites: dict[Site, int]
    sentinels: set[int]
    _deferred: list[_Observed]
    _patched: list[tuple[weakref.ReferenceType[Any], str]]
    _cycle: _cycle.Cycle | None
    _replay: _replay.Replay | None
    _recorder: _rec.Recorder

    if TYPE_CHECKING:
        def _drop_cycle(self) -> None: ...
        @staticmethod
        def _params_of(opt: torch.optim.Optimizer) -> list[torch.Tensor]: ...
        def _group(self, owner: int, params: list[torch.Tensor], watch: bool = False) -> _Group: ...
        def _note(self, kind: int, key: tuple[Any, ...], site: Site | None = None, **extra: Any) -> None: ...

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
            frame = _getframe(1)
            replay = probe._replay
            if replay is not None and replay.lane:
                # the lane (`replay.py`): a clear of a replayed cycle not verified, known by its caller alone,
                # from the lane tuple of the point due (`Replay._arm`): this owner, this instruction
                f = replay.lanes[replay.next_i]
                if (f is not None and f[0] == _CLEAR_END and f[1] == owner and f[2] is frame.f_code
                        and f[3] == frame.f_lasti):
                    result = original(*args, **kwargs)
                    i = replay.next_i  # past the clear (`replay.py`: the lane moves the cycle on)
                    if i == 0:
                        replay.cycle += 1
                    replay.next_i = i + 1
                    return result
            inline = frame.f_code is memo.code and frame.f_lasti == memo.lasti
            if inline:  # `memo_site`'s answer, inline
                site = memo.site
            else:
                site = memo_site(frame, memo, ("zero_grad",), False)[0]
            ps = params()
            if replay is not None:
                i = replay.next_i
                result = replay.clear(probe, owner, site, ps, original, args, kwargs, stock)
                if result is not _replay.MISS:
                    if inline and probe._replay is replay:
                        replay.learn(i, (_rec.CLEAR_END, owner, frame.f_code, frame.f_lasti))
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
