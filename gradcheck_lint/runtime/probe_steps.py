"""The probe's steps: the optimizer's step pre- and post-hooks, where the ledger checks each parameter's
`.grad` against the contributions recorded since the last step (GL001-GL005), a closure's evaluations
are checked as steps (`step(closure)`, LBFGS), and the steady cycle is established or left.

`StepChecks` is a base class of `probe.Probe`: it reads and writes the probe's state (declared below for
the type checker), and the probe's fast paths (`cycle.py`, `replay.py`) answer first when they apply.
"""

from __future__ import annotations

import functools
import sys
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import torch

from . import cycle as _cycle
from . import recorder as _rec
from .evidence import UNKNOWN_SITE, Site, Violation
from .gates import gate_of, step_frame
from .ledger import Ledger, Rescale
from .monitors import Monitors
from .names import owner_name
from .observed import _MAX_GROUPS, _Group, _look, _Observed, _unmeasured
from .rescale import rescale_factor, uniform_factor
from .sites import SiteMemo, memo_site
from .wording import optimizer_name

Sink = Callable[[list[Violation], str, object], None]
_getframe = sys._getframe  # one global read per step instead of two
_STEP_MID = _rec.STEP_MID  # (likewise)


class StepChecks:
    """The step hooks of `probe.Probe` (see the module's docstring)."""

    ledger: Ledger
    monitors: Monitors | None
    sink: Sink
    strict: bool
    verify_every_cycle: bool
    accumulation_steps: int | None
    sentinels: set[int]
    optimizers: dict[int, weakref.ReferenceType[torch.optim.Optimizer]]
    owner_of: dict[int, str]
    last_event: Site | None
    retained: bool
    active: bool
    generation: int
    discover: bool
    discovered_sites: dict[Site, int]
    watched: list[tuple[int, _Observed]]
    _deferred: list[_Observed]
    _cycle: _cycle.Cycle | None
    _replay: Any
    _recorder: _rec.Recorder
    _measured: tuple[int, float | None] | None
    _reports: int
    _plain_step: int | None
    _step_sites: dict[int, SiteMemo]
    _owner_names: dict[frozenset[int], str]
    _reported_windows: set[int]

    if TYPE_CHECKING:
        def _group(self, owner: int, params: list[torch.Tensor], watch: bool = False) -> _Group: ...
        def _note(self, kind: int, key: tuple[Any, ...], site: Site | None = None, **extra: Any) -> None: ...
        def _drop_cycle(self) -> None: ...
        def _sync(self, observations: list[_Observed | None] | None, now: Site) -> None: ...
        def watch_optimizer(self, opt: torch.optim.Optimizer, own_hooks: bool = True) -> None: ...
        @staticmethod
        def _params_of(opt: torch.optim.Optimizer) -> list[torch.Tensor]: ...

    def _before_step(self, opt: torch.optim.Optimizer, args: Any, kwargs: Any, frame: Any = None) -> Any:
        """`frame`: the frame that called the hook (the optimizer's step wrapper), when not the caller's."""
        replay = self._replay
        if replay is not None and replay.lane and len(args) == 1 and not kwargs:
            # the lane (`replay.py`): a step of a replayed cycle not verified, known by its frames alone. A
            # step hook is called by torch's step wrapper (`Optimizer.profile_hook_step`, one code object for
            # every optimizer, the lane tuple's third item): the user's frame is the one above it, read
            # without making a frame object of the wrapper's (since 2026-11-30: a new one at every step)
            if frame is not None:
                user = frame.f_back
            else:
                try:
                    user = _getframe(2)
                except ValueError:  # (torch's wrapper called with no Python frame above it)
                    user = None
            i = replay.next_i
            f = replay.lanes[i]
            # the lane tuple of the point due (`Replay._arm`): a step of this optimizer, from this frame
            if user is not None and f is not None and f[0] == _STEP_MID and f[1] == id(opt):
                if f[5] is not None:  # an internal frame between (an LR scheduler's wrapper of `step`): its code
                    user = user.f_back if user.f_code is f[5] else None
                if user is not None and f[3] is user.f_code and f[4] == user.f_lasti:
                    if i == 0:
                        replay.cycle += 1
                    replay.next_i = i + 1
                    return None
        if frame is None:
            frame = _getframe(1)
        memo = self._step_sites.get(id(opt))
        if memo is None:  # one memo per optimizer: two optimizers stepping in turn keep their answers
            if len(self._step_sites) >= _MAX_GROUPS:
                self._step_sites.clear()
            memo = self._step_sites[id(opt)] = SiteMemo()
        # `memo_site`'s answer, inline for the usual chain: the optimizer's step wrapper, the user's frame,
        # maybe with one internal frame between (`SiteMemo.mid`: an LR scheduler wraps `optimizer.step`)
        inline = (frame.f_code is memo.skip and (user := frame.f_back) is not None
                  and (memo.mid is None or (user.f_code is memo.mid and (user := user.f_back) is not None))
                  and user.f_code is memo.code and user.f_lasti == memo.lasti)
        if inline:
            site = memo.site
        else:
            site = memo_site(frame, memo, ("step",), False)[0]
        rest = args[1:] if args and args[0] is opt else args
        closure = kwargs.get("closure") or (next((a for a in rest if callable(a)), None) if rest else None)
        if replay is not None:
            i = replay.next_i
            if closure is None and not rest and replay.before_step(self, opt, site):
                if inline and len(args) == 1 and not kwargs:
                    replay.learn(i, (_rec.STEP_MID, id(opt), frame.f_code, memo.code, memo.lasti, memo.mid))
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

    def _check_step(self, opt: torch.optim.Optimizer, site: Site, name: str, evaluation: int = 0) -> None:
        """Check the gradients `opt` is about to read; `evaluation`: which evaluation of the closure of
        one `step(closure)` this is (from 1; 0: a step without a closure)."""
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
            # GL004 anchors at the condition gating the step (a flag it reads: where the flag is computed)
            window.site = gate_of(window.site, step_frame(window.site))
            violations.append(window)
        self.last_event = site
        if violations:
            self._reports += 1
            for v in violations:
                if v.code == "GL005" and not v.param_owner:
                    v.param_owner = self._owner_in_source(v, group.keys)
                elif v.code == "GL001" and evaluation > 1 and not v.leftover:
                    v.closure_again = True  # the closure's own earlier evaluation left them
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

        evaluations = 0

        def evaluated() -> Any:
            nonlocal evaluations
            result = closure()
            evaluations += 1
            probe, o = probe_ref(), opt_ref()
            if probe is not None and probe.active and o is not None:
                probe._check_step(o, site, name, evaluations)  # the optimizer reads these gradients now
            return result

        if "closure" in kwargs:
            return args, {**kwargs, "closure": evaluated}
        return tuple(evaluated if a is closure else a for a in args), kwargs

    def _after_step(self, opt: torch.optim.Optimizer, args: Any, kwargs: Any) -> None:
        replay = self._replay
        if replay is not None:
            i = replay.next_i
            end = replay.ends[i]
            if replay.lane and end is not None and end[0] == id(opt):
                # the lane (`replay.py`): the step's end is the point due, passed as `Replay.after_step` and
                # `Replay._advance` pass it on a cycle not verified, without calling them; the monitors are
                # told at once only when they have more to do than count it (`Monitors.quiet_steps`): else the
                # step end is owed (`Replay.owed`), told before the monitors next read anything (`_catch_up`)
                room = replay.room
                if room:
                    replay.room = room - 1
                    replay.owed += 1
                else:
                    monitors = self.monitors
                    if monitors is not None:
                        monitors.after_step(end[0], end[1], end[2])
                        room = replay.room = monitors.quiet_steps()
                        if room:
                            monitors.owed_by = replay
                i += 1  # (a step's end is never a cycle's first point: no new cycle is counted here)
                if i == replay.period:
                    i = 0
                    plain = replay.plain
                    if plain:  # a cycle that neither verifies nor tags, drawn with an earlier one (`Replay._next_cycle`)
                        replay.plain = plain - 1
                    else:
                        replay._next_cycle()
                replay.next_i = i
                return
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
            # the replay first (its lane does no per-parameter work on the cycles it does not verify);
            # the steady cycle of one optimizer once the recorder has failed to find one (`REPLAY_FIRST`)
            if not _cycle.REPLAY_FIRST or self._recorder.backoff > 1:
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
        return self._before_step(opt, args, kwargs, sys._getframe(1))  # the frames as a hook of its own sees them

    def _global_after_step(self, opt: torch.optim.Optimizer, args: Any, kwargs: Any) -> None:
        known = self.optimizers.get(id(opt))
        if known is not None and known() is opt:
            self._after_step(opt, args, kwargs)
