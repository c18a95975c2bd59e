"""The full path's points, and the search for a steady cycle among them (see `replay.py`).

The probe notes a point after each clear, at the start and the end of each backward pass and before
and after each step (`Recorder.note`): the call, how every watched `.grad` changed during it, and an
image of the ledger and the probe with pass ids counted from the ledger's next id (`image`). When the
calls repeat with a period ending at a step, `CYCLES` cycles are imaged; if they are alike (see
`Recorder._steady`), the last one is what `replay.Replay` replays.
"""

from __future__ import annotations

import operator
from typing import Any

import torch

from . import cycle as _cycle
from .evidence import Site
from .observed import _LOST, _NO_GRAD
from .windows import Scale

# the probe (`probe.Probe`, which imports this module): the recorder reads most of its state
Probe = Any

ENABLED = True  # off (or `cycle.ENABLED` off): the full path every time (tests compare the two)
CYCLES = 3  # cycles imaged alike (and two alike growths of the counts) before the replay starts
MAX_PERIOD = 64  # points in one cycle at most
SETTLE = 8  # cycles imaged, at most, waiting for `CYCLES` alike

# points: the full path's calls, each cut where the replay may hand over to it
CLEAR_END, BW_MID, BW_END, STEP_MID, STEP_END = range(5)

_GRAD = operator.attrgetter("grad")
_VERSION = operator.attrgetter("_version")
_IS_NONE = _NO_GRAD.__eq__


def read(ps: list[torch.Tensor]) -> tuple[list[int], list[int]]:
    """Every `.grad` of `ps`: its id (`_NO_GRAD`: None) and version (-1: None)."""
    grads = list(map(_GRAD, ps))
    ids = list(map(id, grads))
    if _NO_GRAD in ids:
        return ids, [-1 if g is None else g._version for g in grads]
    return ids, list(map(_VERSION, grads))


def signature(ids0: list[int], vers0: list[int], ids: list[int],
              vers: list[int]) -> tuple[list[bool], list[bool], list[bool]]:
    """How each `.grad` changed from one read to the next: same tensor, same version, None now."""
    return list(map(operator.eq, ids, ids0)), list(map(operator.eq, vers, vers0)), list(map(_IS_NONE, ids))


def _pending_kind(pending: object) -> int:
    return 0 if pending is None else 1 if pending == _LOST else 2


def image(probe: Probe) -> tuple[tuple[Any, ...], dict[Any, int]]:
    """What the full path reads of the ledger and the probe, pass ids counted from the next id; and the
    counts that grow from cycle to cycle (clear runs, steps and windows not of one per optimizer)."""
    ledger = probe.ledger
    nxt = ledger._next
    refs: set[int] = set()
    held = {}
    for pid, bids in ledger.held.items():
        held[pid] = tuple(b - nxt for b in bids)
        refs.update(bids)
    discards = {}
    for opt, ds in ledger.discards.items():
        if ds:
            discards[opt] = tuple((d.backward - nxt, d.clear, d.refilled, d.refilled_by_same_site,
                                   frozenset(b - nxt for b in d.refills)) for d in ds)
            refs.update(d.backward for d in ds)
    since = {opt: frozenset(b - nxt for b in s) for opt, s in ledger._since_step.items() if s}
    for s in ledger._since_step.values():
        refs.update(s)
    live = frozenset(bp.id - nxt for bp in ledger._live if bp.live)
    refs.update(bp.id for bp in ledger._live if bp.live)
    if ledger.current is not None:
        refs.add(ledger.current)
    passes: dict[int, Any] = {}
    for b in refs:
        bp = ledger.passes.get(b)
        passes[b - nxt] = None if bp is None else (bp.site, frozenset(bp.consumers), bp.live, bp.scale, bp.via,
                                                   bp.writes, bp.batch - nxt if bp.batch else 0)
    counts = {b - nxt: n for b, n in ledger._held.items() if n}
    windows = {opt: (tuple(s.head), s.last, s.before_last) for opt, s in ledger.windows.items()}
    sentinels = tuple((k, obs.snapshot is not None, _pending_kind(obs.pending)) for k, obs in probe.watched
                      if k in probe.sentinels)
    deferred = tuple(id(obs.param()) for obs in probe._deferred)
    seen = True  # each observation is the `.grad` it observes (the replay restores them from its reads)
    for _k, obs in probe.watched:
        p = obs.param()
        g = p.grad if p is not None else None
        if obs.grad_id != id(g) or (g is not None and obs.version != g._version):
            seen = False
            break
    img = (held, counts, passes, None if ledger.current is None else ledger.current - nxt, discards, since, live,
           windows, dict(ledger.step_sites), dict(ledger._weighted), frozenset(ledger._rescaled),
           dict(ledger._leftovers),
           {k: tuple(v) for k, v in ledger._registered.items()}, dict(ledger.optimizers_of),
           probe.last_event, probe._plain_step, probe.retained, frozenset(probe.sentinels), sentinels, deferred, seen,
           frozenset(probe._reported_windows), dict(probe.discovered_sites), probe.generation, len(probe.watched))
    grows: dict[Any, int] = {("clear", site): n for site, n in ledger.clear_runs.items()}
    for opt, sizes in ledger.windows.items():
        grows[("steps", opt)] = sizes.count
        grows[("non_unit", opt)] = sizes.non_unit
    grows["next"] = nxt
    grows["reports"] = probe._reports + (probe.monitors.reported[0] if probe.monitors is not None else 0)
    return img, grows


class Point:
    """One point of the full path, as the recorder noted it."""

    __slots__ = ("kind", "key", "img", "grows", "sig", "ids", "vers", "clean", "scale", "measured",
                 "keys", "keyset", "site", "pending")

    def __init__(self, kind: int, key: tuple[Any, ...]) -> None:
        self.kind = kind
        self.key = key
        self.img: tuple[Any, ...] | None = None
        self.grows: dict[Any, int] = {}
        self.sig: tuple[list[bool], list[bool], list[bool]] | None = None  # CLEAR_END, BW_END, STEP_END
        self.ids: list[int] = []
        self.vers: list[int] = []
        self.clean = True  # no `.grad` changed between the point before and this call's start
        self.scale: Scale | None = None  # BW_MID: the pass's factors
        self.measured: tuple[int, float | None] | None = None  # STEP_MID: (sentinel, factor) the step measured
        self.keys: list[int] = []  # CLEAR_END: the parameters cleared
        self.keyset: frozenset[int] = frozenset()  # STEP_END: the optimizer's parameters
        self.site: Site | None = None  # the call's place
        self.pending = False  # CLEAR_END: the clear dropped gradients no step applied


class Recorder:
    """The full path's points, and the search for a steady cycle among them (see the module's docstring)."""

    def __init__(self) -> None:
        self.points: list[Point] = []
        self.period = 0  # armed: the calls repeat with this period, images are taken
        self.imaged = 0  # points imaged since armed
        self.last: tuple[list[int], list[int]] | None = None  # the last exit read
        self.clean = True
        self.wait = 0  # steps to let pass before looking for a period again
        self.backoff = 1

    def reset(self) -> None:
        self.points.clear()
        self.period = self.imaged = 0
        self.last = None

    def entry(self, probe: Probe) -> None:
        """A call starts on the full path: was any `.grad` changed since the last point?"""
        if self.period and self.last is not None and read(_params(probe)) != self.last:
            self.clean = False

    def note(self, probe: Probe, kind: int, key: tuple[Any, ...], site: Site | None = None,
             **extra: Any) -> tuple[list[Point], dict[Any, int]] | None:
        """A point of the full path; returns the cycle to replay from it (its points and growth), if any."""
        if not (ENABLED and _cycle.ENABLED) or probe.strict or probe.verify_every_cycle:
            return None
        point = Point(kind, key)
        point.site = site
        for name, value in extra.items():
            setattr(point, name, value)
        points = self.points
        points.append(point)
        if self.period:
            point.clean, self.clean = self.clean, True
            if kind in (CLEAR_END, BW_END, STEP_END):
                ids, vers = read(_params(probe))
                if self.last is not None:
                    point.sig = signature(*self.last, ids, vers)
                point.ids, point.vers = ids, vers
                self.last = (ids, vers)
            point.img, point.grows = image(probe)
            self.imaged += 1
            if len(points) <= self.period or points[-1 - self.period].key != key or self.imaged >= SETTLE * self.period:
                self._disarm()  # not the same calls, or images that never settle
                return None
            if kind == STEP_END and self.imaged >= CYCLES * self.period and self.imaged % self.period == 0:
                steady = self._steady(probe)
                if steady is not None:
                    return steady
            if len(points) > (CYCLES + 2) * self.period:
                del points[:self.period]
            return None
        if len(points) > 3 * MAX_PERIOD:
            del points[:MAX_PERIOD]
        if kind == STEP_END:
            if self.wait:
                self.wait -= 1
            else:
                self._arm(probe)
        return None

    def _disarm(self) -> None:
        self.period = self.imaged = 0
        self.points = self.points[-MAX_PERIOD:]
        self.last = None
        self.wait, self.backoff = self.backoff, min(self.backoff * 2, 64)

    def _arm(self, probe: Probe) -> None:
        """Arm when the calls since some earlier step repeat those before it."""
        points = self.points
        n = len(points)
        tries = 0
        for j in range(n - 2, -1, -1):
            if points[j].key != points[-1].key:
                continue
            period = n - 1 - j
            if period > MAX_PERIOD or 2 * period > n or tries > 4:
                return
            tries += 1
            if all(points[n - 1 - i].key == points[n - 1 - period - i].key for i in range(period)):
                self.period, self.imaged, self.clean = period, 0, True
                self.last = read(_params(probe))
                return

    def _steady(self, probe: Probe) -> tuple[list[Point], dict[Any, int]] | None:
        """The replay of the last imaged cycle, if the last `CYCLES` were alike."""
        period, points = self.period, self.points
        cycle = points[-period:]
        growth: dict[Any, int] | None = None
        for back in range(1, CYCLES):
            before = points[-(back + 1) * period:-back * period]
            after = points[-back * period:len(points) - (back - 1) * period]
            for a, b in zip(before, after):
                if a.key != b.key or a.img != b.img or not b.clean or (
                        b.sig is not None and a.sig is not None and a.sig != b.sig):
                    return None
                if a.kind == BW_MID and a.scale != b.scale:
                    return None
            grown = {k: after[-1].grows.get(k, 0) - before[-1].grows.get(k, 0) for k in after[-1].grows}
            if growth is not None and grown != growth:
                return None
            growth = grown
        reads = (CLEAR_END, BW_END, STEP_END)
        if growth is None or growth.get("reports") or any(p.sig is None for p in cycle if p.kind in reads):
            return None
        img = cycle[-1].img
        assert img is not None
        if any(p.img is None or not p.img[20] for p in cycle) or probe._cycle is not None or probe.retained:
            return None
        monitors = probe.monitors
        if monitors is not None and not _quiet(monitors):
            return None
        self.reset()
        self.backoff = 1
        return cycle, growth


class _Dead:
    """Stands for a watched parameter that was freed (its `.grad` reads None; `Probe.generation` changed)."""

    grad = None


_DEAD = _Dead()


def _params(probe: Probe) -> list[torch.Tensor]:
    return [p if (p := obs.param()) is not None else _DEAD for _k, obs in probe.watched]


def _quiet(monitors: Any) -> bool:
    """The monitors have nothing pending that a call of the cycle would change."""
    return not (monitors.scaled or monitors.clip is not None or monitors.scaled_outputs or monitors.ddp_forwards
                or monitors.pass_scaled or monitors.collect)


