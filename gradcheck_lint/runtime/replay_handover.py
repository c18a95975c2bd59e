"""Leaving a replay (`replay.py`): the state the full path would have reached, written out to the ledger and
the probe, so that the full path handles the call that differed as if it had run all along.

While a replay lasts nothing is written to the ledger. The recorder imaged the ledger and the probe at
each point of the reference cycle (`recorder.image`, pass ids counted from the ledger's next id), and the
cycles since are like it: the state after the last point passed is that point's image, its pass ids
shifted by the passes of the cycles since and its counts grown alike. `materialize` is the inverse of
`image`, with what the replay itself read since in place of the reference's: the loss factors read on the
sampled cycles (`Replay.read_scales`; `windows.UNREAD` for the passes not read), each sampled `.grad` as last
read (the others as they are now) and the sentinels' copies the replay kept.

Kept apart from the replay's calls (`Replay.clear`, `before_backward`, ...), which check one call against
the cycle at every call and never rebuild the state: this runs only when the full path's state is needed
(the replay ends: `Probe._drop_replay`; the guard counts the steps checked: `Probe.steps_checked`).
"""

from __future__ import annotations

from typing import Any

from .evidence import BackwardPass, Discard
from .observed import _LOST, _NO_GRAD
from .recorder import BW_END, read
from .replay import Replay
from .windows import UNREAD

# the probe (`probe.Probe`, which imports this module): the replay's state is written into it
Probe = Any

_GONE = -2  # an observed `.grad` id no tensor has: a gradient the full path saw, gone since


def materialize(replay: Replay, probe: Probe) -> None:
    """Write to the ledger and the probe the state after the last point passed (see the module's docstring)."""
    monitors = probe.monitors
    if monitors is not None and monitors.owed_by is replay:
        monitors._catch_up()  # the step ends the lane passed without telling it (`owed`)
    point = replay.points[replay.done]
    img = point.img
    assert img is not None
    cycle = replay.cycle
    ledger = probe.ledger
    nxt = point.grows["next"] + cycle * replay.step
    first_fast = replay.points[-1].grows["next"]  # passes from here on were made by the replay
    (held, counts, passes, current, discards, since, live, windows, _step_sites, weighted, rescaled, _leftovers,
     _registered, _optimizers_of, last_event, plain_step, _retained, _sentinels, sentinels, deferred, _seen,
     _reported, _discovered, _generation, _n) = img
    objs: dict[int, BackwardPass] = {}
    for rel, state in passes.items():
        bid = rel + nxt
        if state is None:
            continue
        site, consumers, is_live, scale, via, writes, batch = state
        bp = ledger.passes.get(bid)
        if bp is None:
            bp = ledger.passes[bid] = BackwardPass(bid, site, via=via)
            bp.scale = replay.read_scales.get(bid, UNREAD) if bid >= first_fast else scale
        bp.consumers = set(consumers)
        bp.live = is_live
        bp.writes = writes
        bp.batch = batch + nxt if batch else 0
        objs[bid] = bp
    tuples: dict[tuple[int, ...], tuple[int, ...]] = {}
    table = ledger.held
    for pid, rels in held.items():
        t = tuples.get(rels)
        if t is None:
            t = tuples[rels] = tuple(r + nxt for r in rels)
        table[pid] = t
    held_counts = ledger._held
    for b in held_counts:
        held_counts[b] = 0
    for rel, n in counts.items():
        held_counts[rel + nxt] = n
    ledger.current = None if current is None else current + nxt
    ledger._next = nxt
    ledger.discards.clear()
    for opt, ds in discards.items():
        ledger.discards[opt] = [Discard(b + nxt, clear, refilled, same, {r + nxt for r in refills})
                                for b, clear, refilled, same, refills in ds]
    for opt, s in ledger._since_step.items():
        s.clear()
        s.update(r + nxt for r in since.get(opt, ()))
    for opt, rels in since.items():
        if opt not in ledger._since_step:
            ledger._since_step[opt] = {r + nxt for r in rels}
    for bp in ledger._live:
        bp.live = False
    ledger._live = [objs[r + nxt] for r in sorted(live) if r + nxt in objs]
    for bp in ledger._live:
        bp.live = True
    grows = point.grows
    for opt, (head, last, before_last) in windows.items():
        sizes = ledger.windows[opt]
        sizes.head = list(head)
        sizes.last, sizes.before_last = last, before_last
        sizes.count = grows[("steps", opt)] + cycle * replay.growth.get(("steps", opt), 0)
        sizes.non_unit = grows[("non_unit", opt)] + cycle * replay.growth.get(("non_unit", opt), 0)
    for key, n in grows.items():
        if isinstance(key, tuple) and key[0] == "clear":
            ledger.clear_runs[key[1]] = n + cycle * replay.growth.get(key, 0)
    ledger._weighted.clear()
    ledger._weighted.update(weighted)
    ledger._rescaled = set(rescaled)
    probe.last_event = last_event
    probe._plain_step = plain_step
    # the observations: each `.grad` as last read; those not sampled, as they are now, unless a `.grad`
    # is None where the reference had a tensor or the other way round: then as the full path saw it
    # (a tensor it will find gone, None), for its next look to notice the change
    ids, vers = read(replay.all_ps)
    for pos, (was_none, gid) in enumerate(zip(replay.nones[replay.done], ids)):
        if was_none != (gid == _NO_GRAD):
            ids[pos], vers[pos] = (_NO_GRAD, -1) if was_none else (_GONE, -1)
    if replay.reading:  # else the reads of now stand for those of the last point (the cycle was not verified)
        for x, pos in enumerate(replay.sample):
            ids[pos], vers[pos] = replay.ids[x], replay.vers[x]
    for (_k, obs), gid, version in zip(probe.watched, ids, vers):
        obs.grad_id, obs.version = gid, version
    observed = probe.observed
    for key, has_copy, pending in sentinels:
        obs = observed[key]
        obs.snapshot = obs.pending = None
        x = replay.index[key]
        if not replay.reading:
            # not verified: its `.grad` now, if the reference left it unchanged since the pass that wrote it
            g = replay.ps[x].grad
            fresh = g is not None and _fresh(replay, x)
            if has_copy:
                if fresh:
                    obs.take(g)
                else:
                    obs.pending = _LOST
            if pending == 1:
                obs.pending = _LOST
            elif pending == 2:
                obs.pending = (id(g), g._version) if fresh and g is not None else _LOST
            continue
        stamp = replay.stamps.get(key)
        if has_copy:
            copy = replay.copies.get(key)
            if copy is not None and stamp is not None and copy[1] == stamp:
                obs.snapshot = copy[0]
            elif stamp is not None and stamp == (replay.ids[x], replay.vers[x]):
                p = replay.ps[x]
                if p.grad is not None:
                    obs.take(p.grad)  # unchanged since the pass that wrote it: the same copy
            else:
                # its `.grad` changed since the pass (a clear): no step can measure against this copy
                # (a window of several passes takes a new one first), so it is not kept
                obs.pending = _LOST
        if pending == 1:
            obs.pending = _LOST
        elif pending == 2:
            obs.pending = stamp if stamp is not None else _LOST
    probe._deferred[:] = [observed[k] for k in deferred]
    if len(ledger.passes) > 256:
        ledger._forget_unheld()


def _fresh(replay: Replay, x: int) -> bool:
    """In the reference, the sampled `.grad` `x` is unchanged since the backward pass that wrote it, as
    of the last point passed."""
    for back in range(replay.period):
        j = (replay.done - back) % replay.period
        sig = replay.sigs.get(j)
        if sig is None:
            continue
        if sig[x] & 3 != 3:
            return replay.points[j].kind == BW_END and not sig[x] & 4
    return False
