"""The probe's fast path for any steady training cycle: windows of several backward passes, several
optimizers, one model's loss writing another's gradients (a GAN), by replaying the full path.

The full path (`probe.py`) is the reference. It notes a *point* after each clear, at the start and the
end of each backward pass and before and after each step (`Recorder.note`): the call (its kind, the
line it was made from, the optimizer or model), how every watched `.grad` changed during it (which
became None, which changed tensor, which changed version), and an *image* of the ledger and the probe
in which pass ids are counted from the ledger's next id. Once the points repeat with a period ending at
a step (found from their calls alone, then `CYCLES` cycles imaged), the images of each point are the
same in every cycle, the clear and window counts grew by the same amounts, no `.grad` changed between
two calls, nothing was reported and the monitors had nothing pending, the state after any point of a
later identical cycle is known: the image of that point, its pass ids shifted by the passes of the
cycles since and its counts grown alike.

From then on (`Replay`) each call checks that it is the next call of the cycle (its kind, its place,
the optimizer or model, the parameters a clear lists), and writes nothing to the ledger; the monitors
are called as the steady cycle (`cycle.py`) calls them. On a *verified* cycle each call also checks
that the sampled `.grad` (each optimizer's sentinel, and one parameter of each optimizer) are as last
seen when it starts (which tensor, at which version) and changed as in the reference when it ends.
The first call that differs first writes out the state the full path would have reached
(`replay_handover.materialize`), and the full path handles it: the findings are the same, at the same step.
What is sampled instead of done on every cycle (said in the rule documents of GL002, GL003, GL005 and
GL008) is done on the *sampled* cycles, on a schedule that thins out once the replay has shown its
pattern holding (`Replay._next_cycle`): the first `VERIFY_ALL` cycles replayed, then cycles drawn
pseudo-randomly (the same in every run), the gap to the next one geometric with a mean of `VERIFY_EVERY`
cycles, doubled at each sampled cycle up to `VERIFY_SPARSEST` (the floor of the rate: from about the
80th cycle replayed on, one cycle in `VERIFY_SPARSEST` on average). Any change of the pattern (a call
that differs: a new window size, a new optimizer or backward line, a finding) ends the replay, and the
next one starts dense again. One draw for all of the checks below but GL008's tags, so that the cycles
in between take the lane from their first call to their last:
- the `.grad` reads: on the sampled cycles, and on every cycle when the reference measured a window
  rescaled by other than one. A change no call shows (`p.grad = None` or `p.grad /= N` written by hand
  between two calls) is seen on the next verified cycle it happens in: one that happens on every cycle
  from some step on, once the schedule is at its floor, is found on average about `VERIFY_SPARSEST`
  cycles late (up to a few times that), one that happens once only if its cycle is verified. On the
  benchmark GAN a verified cycle costs 7 to 9 cycles on the lane (benchmarks/README.md, rt14);
- a loss's constant factors are read on the passes of the sampled cycles and compared with the
  reference's (a change falls back there); the passes not read carry `windows.UNREAD`;
- a window's in-place rescaling (`p.grad /= N` shows in a version counter and falls back on a verified
  cycle; `p.grad.data /= N` does not) is measured on the windows of verified cycles, against a copy of
  its sentinel taken after the window's last pass; on the others the reference's factor of one stands;
- GL008's tag: every pass of the first `TAG_ALL` of its line (`Monitors.tag_first`), then every pass of
  the sampled cycles and of one cycle in `TAG_EVERY` drawn apart (`Replay.tagging`): one pass in
  `TAG_EVERY` on average at any point of the schedule, as in `cycle.py`. The lane tags the passes it
  takes itself (`Replay.tag`, called from the backward wrapper when `Replay.tags`: a tag costs a few µs,
  a cycle off the lane several times a cycle on it; before 2026-11-30 a pass among the first `TAG_ALL`
  of its line left the lane, which put the benchmark GAN's first 30 or so iterations off it).

The lane: a cycle that is not verified (so reads no factors, and tags only as above) takes the *lane*
(`Replay.lane`), where each clear, backward pass and step is known by what its entry point sees of its
caller (the frames the call came from, which give the same place whenever they are the same:
`sites.SiteMemo`), compared with what the entry point saw at the same point of an earlier cycle
(`Replay.learn`), and the optimizer or model; nothing else is
read, no place is looked up and nothing per parameter is done (the parameters a clear lists are compared
on verified cycles only: a parameter group added to an optimizer between two of them is met at the next
one). A GradScaler's output or a DDP forward, or any call that differs leaves the lane for the replay's
own methods at that call, which check it as above. The lane's checks are written out in the entry points
themselves, on the lane tuple of the point due (`lanes[next_i]`, made by `_arm`): the clear wrapper
(`probe_clears.py`: owner, code, instruction), the backward wrapper (`torch_patches.py`: torch's frame,
the user's code and instruction, its caller's) and the step pre-hook (`probe_steps.py`: optimizer, torch's
wrapper, the user's code and instruction). A watched parameter that dies (its id may name another tensor:
`Probe.generation` changes), a GradScaler's output or a DDP forward (`Monitors.pending`) disarms every
lane tuple (`disarm`), so that the next call goes through the replay's methods, which compare the
generation and look for those, and leave the replay (before 2026-11-30 each lane call compared the
generations, and each pass looked for those outputs). A match moves the cycle on by writing `next_i` (the
last point passed, `done`, is the one before it) and, at a cycle's first point, `cycle`. The end of a
pass the lane took is passed by its wrapper when the pass returns and the point due is still that end
(nothing inside the pass called the probe), and a step's end by the step post-hook (`Probe._after_step`:
the optimizer the point names, then `Monitors.after_step`, or, while the monitors have nothing to do at a
step end but count it, no call: the step end is owed, `owed`, and told before the monitors next read
anything, `Monitors._catch_up`); any other end goes through the replay's methods. No method of the replay
is called on the lane but `_next_cycle` once a cycle and `tag` on the passes of the cycles that tag
(`tags`): the lane is what
every call of a steady loop runs, right after a forward, backward or optimizer pass, where each call made
and each object touched costs (cold caches: `benchmarks/README.md`).
"""

from __future__ import annotations

import operator
import random
from collections.abc import Callable
from typing import Any

import torch

from . import cycle as _cycle
from .evidence import UNKNOWN_SITE, Site
from .loss_scale import LossGraph, graph_scale
from .observed import _NO_GRAD
from .recorder import BW_END, BW_MID, CLEAR_END, STEP_END, STEP_MID, Point, _params
from .rescale import rescale_factor
from .windows import Scale

# the probe (`probe.Probe`, which imports this module): the replay reads and writes most of its state
Probe = Any

VERIFY_ALL = 8  # cycles replayed whose `.grad` are all read, before the sampling starts
VERIFY_EVERY = 8  # then a gap of this many cycles on average (pseudo-random) to the next verified one ...
VERIFY_SPARSEST = 64  # ... its mean doubled at each verified cycle, up to this (the floor of the sampling rate)
TAG_EVERY = 8  # GL008's tags, past the first `TAG_ALL` of a line: the sampled cycles and one in this many
_VERIFY_SEED = 0x31A7  # the verified cycles are pseudo-random, and the same in every run
LANE = True  # off: every call through the replay's methods (tests compare the two)
MISS = object()  # `Replay.clear`'s answer when the call is not the cycle's next
_GRAD = operator.attrgetter("grad")


class Replay:
    """A steady cycle replayed: `done` is the last point passed, in cycle `cycle` (0: the reference)."""

    # what the lane reads at every call, in slots: in a dict (40-odd attributes, more than shared keys hold)
    # each read touched the dict, its keys and an entry, cold after a pass (benchmarks/README.md, `guardcost`)
    __slots__ = ("lane", "next_i", "lanes", "cycle", "ends", "room", "owed", "period", "plain", "tags", "verify",
                 "sampled", "tagging", "__dict__")

    def __init__(self, probe: Probe, cycle: list[Point], growth: dict[Any, int]) -> None:
        self.points = cycle
        self.period = len(cycle)
        self.growth = growth
        self.step = growth.get("next", 0)  # pass ids per cycle
        self.cycle = 0
        self.next_i = 0  # the point due; the last passed is the one before it (`done`)
        self.generation = probe.generation
        # the parameters read at each call: each sentinel, and the first and last of each optimizer and of
        # all those watched (`SAMPLED`); the others are read when the replay ends
        self.all_ps = _params(probe)  # held while the replay lasts (it ends at the next call that differs)
        all_keys = [k for k, _obs in probe.watched]
        full = {k: i for i, k in enumerate(all_keys)}
        chosen = {k for k in probe.sentinels if k in full}
        for point in cycle:
            if point.kind == STEP_END and point.keys and not chosen.intersection(point.keys):
                chosen.add(point.keys[0])
        if not chosen:
            chosen.add(all_keys[0])
        self.sample = sorted(full[k] for k in chosen if k in full)
        self.keys = [all_keys[x] for x in self.sample]
        self.ps = [self.all_ps[x] for x in self.sample]
        last = cycle[-1]
        self.ids, self.vers = [last.ids[x] for x in self.sample], [last.vers[x] for x in self.sample]
        self.index = {k: i for i, k in enumerate(self.keys)}
        # which of all the watched `.grad` are None after each point, in the reference
        self.nones: list[list[bool]] = []
        now = [i == _NO_GRAD for i in last.ids]
        for point in cycle:
            if point.ids:
                now = [i == _NO_GRAD for i in point.ids]
            self.nones.append(now)
        # how each sampled `.grad` changes at each point: same tensor (1), same version (2), None now (4)
        self.sigs = {i: [point.sig[0][x] + 2 * point.sig[1][x] + 4 * point.sig[2][x] for x in self.sample]
                     for i, point in enumerate(cycle) if point.sig is not None}
        # clears that leave exactly the sampled gradients they list None (known without reading them)
        self.cleared: dict[int, list[int]] = {}
        for i, point in enumerate(cycle):
            if point.kind == CLEAR_END and i in self.sigs:
                listed = set(point.keys)
                if all(code & 4 if k in listed else code & 3 == 3 for code, k in zip(self.sigs[i], self.keys)):
                    self.cleared[i] = [x for x, k in enumerate(self.keys) if k in listed]
        # each sentinel's `.grad` right after the last pass that wrote it, and copies taken of it
        self.stamps: dict[int, tuple[int, int]] = {}
        self.copies: dict[int, tuple[torch.Tensor, tuple[int, int]]] = {}
        for k, obs in probe.watched:
            if k in probe.sentinels and obs.snapshot is not None:
                self.stamps[k] = (obs.grad_id, obs.version)
                self.copies[k] = (obs.snapshot, (obs.grad_id, obs.version))
        self.read_scales: dict[int, Scale | None] = {}  # pass id -> factors read on a sampled cycle
        # passes whose sentinel copy a later step measures: the pass's end takes it (sampled windows)
        self.copy_at: dict[int, list[int]] = {}
        for i, point in enumerate(cycle):
            if point.kind == STEP_MID and point.measured is not None:
                key = point.measured[0]
                for back in range(1, self.period):
                    j = (i - back) % self.period
                    prior = cycle[j]
                    if prior.kind == BW_END and prior.sig is not None and key in full:
                        x = full[key]
                        if not (prior.sig[0][x] and prior.sig[1][x]):
                            self.copy_at.setdefault(j, []).append(key)
                            break
        self.writes: dict[int, list[tuple[int, int]]] = {}  # BW_END -> (sentinel, index) it wrote
        for i, point in enumerate(cycle):
            if point.kind == BW_END and point.sig is not None:
                same_id, same_v, _none = point.sig
                self.writes[i] = [(k, self.index[k]) for k in probe.sentinels
                                  if k in self.index and not (same_id[full[k]] and same_v[full[k]])]
        self.factors = {point.measured[0]: point.measured[1] for point in cycle if point.measured is not None}
        # a window rescaled by other than one (`p.grad.data /= N`: no version shows it) is measured every time
        self.always = any(factor != 1.0 for factor in self.factors.values())
        self.verify = True  # the cycle under way reads the sampled `.grad`
        # ... and is one of the sampled cycles (`_next_cycle`), which also read the loss factors and tag
        # every pass for GL008: one draw per cycle for all that is sampled, so that the cycles in between
        # take the lane from their first call to their last
        self.sampled = True
        self.tagging = True  # ... tags its passes for GL008 (the sampled cycles, and one in `TAG_EVERY`)
        self.reading = True  # `ids` and `vers` are the sampled `.grad` as of the last point passed
        self._draw = random.Random(_VERIFY_SEED).random
        # the schedule once past the first `VERIFY_ALL` cycles (`_next_cycle`): cycles until the next verified
        # one, that one included, and the mean of the gap drawn then; cycles until the next that tags
        self._left = _cycle.gap(self._draw(), VERIFY_EVERY)
        self._every = min(2 * VERIFY_EVERY, max(VERIFY_SPARSEST, VERIFY_EVERY))
        self._tag_left = _cycle.gap(self._draw(), TAG_EVERY)
        # cycles ahead, drawn with the last, that neither verify nor tag (`_next_cycle`): their start only counts down
        self.plain = 0
        # the lane (see the module's docstring): each point's call as its entry point saw it, learned on
        # the cycles the replay passes call by call; and which passes' lines are past GL008's first tags
        self.facts: list[tuple[Any, ...] | None] = [None] * self.period
        self.tag_ready = [False] * self.period
        self.passes = [i for i, point in enumerate(cycle) if point.kind == BW_MID]
        self.warming = bool(self.passes)  # a pass's line is still within GL008's first `TAG_ALL` (not `tag_ready`)
        self.tags = True  # the lane tags (`tag`): the cycle tags, or a pass's line is still within its first tags
        # what the lane compares at each point, in one tuple (`_arm`): the facts, and for a pass its line (its
        # end is the next point); None where the lane cannot take the point (facts not learned, a pass of a
        # line within GL008's first tags)
        self.lanes: list[tuple[Any, ...] | None] = [None] * self.period
        # each step's end: (optimizer id, the step's place, the optimizer's parameters), None at other points
        self.ends = [(point.key[1], point.site or UNKNOWN_SITE, point.keyset) if point.kind == STEP_END else None
                     for point in cycle]
        self.lane = False  # the cycle under way takes the lane: not verified, no factors read
        # step ends the lane passed without calling `Monitors.after_step`, and how many more it may pass so
        # (`Monitors.quiet_steps`: it had nothing to do at them but count; `Monitors._catch_up` tells them)
        self.owed = 0
        self.room = 0

    # -- the calls
    def _next(self, kind: int, key: tuple[Any, ...], probe: Probe) -> Point | None:
        """The next point of the cycle if it is this call's; on a verified cycle, with every sampled `.grad`
        as last seen (the first call of a verified cycle after one not verified reads them afresh: each
        must be None where the reference's is, and the reads are the cycle's baseline)."""
        point = self.points[self.next_i]
        if point.kind != kind or point.key != key or probe.generation != self.generation:
            return None
        if not self.verify:
            return point
        grads = list(map(_GRAD, self.ps))
        ids = list(map(id, grads))
        vers = [-1 if g is None else g._version for g in grads]
        if not self.reading:
            nones = self.nones[self.done]
            if [gid == _NO_GRAD for gid in ids] != [nones[x] for x in self.sample]:
                return None
            self.ids, self.vers, self.reading = ids, vers, True
            return point
        if ids != self.ids or vers != self.vers:
            return None
        return point

    @property
    def done(self) -> int:
        """The last point passed: the one before the point due (the lane writes `next_i` alone)."""
        return (self.next_i - 1) % self.period

    def _advance(self) -> None:
        i = self.next_i
        if i == 0:
            self.cycle += 1
        i += 1
        if i == self.period:
            i = 0
            self._next_cycle()
        self.next_i = i

    def _next_cycle(self) -> None:
        """The cycle that starts now: verified or not, tagging GL008's passes or not (`VERIFY_ALL`,
        `VERIFY_EVERY`, `VERIFY_SPARSEST`, `TAG_EVERY`: the module's docstring). One not verified forgets the
        reads, the stamps and the copies, which are stale by the next verified one. Once past the dense start,
        the cycles up to the next that verifies or tags by the draw are drawn in one go (`plain`): each of them
        only counts down (the lane's step post-hook does so itself, `Probe._after_step`), its state that of the
        cycle before it, as the draws one by one would leave it. Also while a line is within GL008's first tags
        (`warming`: the lane tags those passes by their count, `tag`, whatever the draw; before 2026-12-01 each
        of those cycles drew one by one, about 5 µs a step on the benchmark CNN's first 64)."""
        plain = self.plain
        if plain:
            self.plain = plain - 1
            return
        tag = self._tag_left - 1
        tags = tag <= 0
        if tags:
            tag = _cycle.gap(self._draw(), TAG_EVERY)
        self._tag_left = tag
        if self.cycle < VERIFY_ALL:
            sampled = True
        else:
            left = self._left - 1
            sampled = left <= 0
            if sampled:  # a verified cycle: the next one is drawn further off, up to the floor's mean
                every = self._every
                left = _cycle.gap(self._draw(), every)
                self._every = min(2 * every, max(VERIFY_SPARSEST, VERIFY_EVERY))
            self._left = left
        verify = self.always or sampled
        if not verify:
            self.reading = False
            if self.stamps:
                self.stamps.clear()
            if self.copies:
                self.copies.clear()
        self.verify, self.sampled, self.tagging = verify, sampled, tags or sampled
        self.tags = self.tagging or self.warming
        self.lane = LANE and not verify
        if not (verify or self.tagging) and self.cycle >= VERIFY_ALL:
            # the next `plain` cycles neither verify nor tag by the draw: their draws' countdowns, taken now
            run = min(self._tag_left, self._left) - 1
            if run > 0:
                self._tag_left -= run
                self._left -= run
                self.plain = run

    def _ended(self, i: int) -> bool:
        """The call (point `i`) ended: each sampled `.grad` changed as in the reference; the new reads kept.
        Not verified on a cycle that is not."""
        if not self.verify:
            return True
        grads = list(map(_GRAD, self.ps))
        ids = list(map(id, grads))
        vers = [-1 if g is None else g._version for g in grads]
        codes = [(a == b) + 2 * (c == d) + 4 * (a == _NO_GRAD) for a, b, c, d in zip(ids, self.ids, vers, self.vers)]
        if codes != self.sigs[i]:
            return False
        self.ids, self.vers = ids, vers
        return True

    def clear(self, probe: Probe, owner: int, site: Site, ps: list[torch.Tensor], original: Callable[..., Any],
              args: Any, kwargs: Any, stock: bool = False) -> Any:
        point = self._next(CLEAR_END, (CLEAR_END, owner, site), probe)
        if point is None or point.pending or list(map(id, ps)) != point.keys:
            return MISS
        result = original(*args, **kwargs)
        i = self.next_i
        cleared = self.cleared.get(i)
        if not self.verify:
            pass
        elif cleared is not None and stock and _cycle._sets_none(args, kwargs):
            # torch's own clear, `set_to_none`: the gradients it lists are None, the others as they were
            ids, vers = list(self.ids), list(self.vers)
            for x in cleared:
                ids[x], vers[x] = _NO_GRAD, -1
            self.ids, self.vers = ids, vers
        elif not self._ended(i):
            # the clear ran, and left the gradients otherwise: the full path's bookkeeping of it, from here
            probe._drop_cycle()
            probe._cleared_by(owner, ps, site)
            return result
        self._advance()
        return result

    def before_backward(self, probe: Probe, site: Site, tensors: Any, graph: LossGraph | None, via: object) -> bool:
        point = self._next(BW_MID, (BW_MID, site, via), probe)
        if point is None:
            return False
        monitors = probe.monitors
        if monitors is not None and (monitors.scaled_outputs or monitors.ddp_forwards):
            return False  # a GradScaler's output or a DDP forward since: not this cycle's
        cycle = self.cycle + (self.next_i == 0)
        grad_fn = None
        if self.sampled:  # the factors, on the passes of the sampled cycles
            if graph is not None:
                scale = graph.scale
            else:
                grad_fn = tensors.grad_fn if isinstance(tensors, torch.Tensor) else None
                scale = graph_scale(grad_fn)
            if scale != point.scale:
                return False
            img = point.img
            assert img is not None
            nxt = point.grows["next"] + cycle * self.step
            self.read_scales[img[3] + nxt] = scale
            if len(self.read_scales) > 4 * self.period:
                for b in sorted(self.read_scales)[:2 * self.period]:
                    del self.read_scales[b]
        if monitors is not None:
            # GL008's tag: the first `TAG_ALL` passes of each line, then every pass of the sampled cycles
            due = monitors.tag_first(site)
            if due is not True and not self.tag_ready[self.next_i]:
                self._ready(self.next_i)  # past its first passes (or reported)
            if due is None:
                due = self.tagging
            if due:
                if graph is not None:
                    grad_fn = graph.grad_fn
                elif grad_fn is None and isinstance(tensors, torch.Tensor):
                    grad_fn = tensors.grad_fn
                monitors.before_backward(site, tensors, grad_fn)
        self._advance()
        return True

    def after_backward(self, probe: Probe, site: Site) -> bool:
        i = self.next_i
        point = self.points[i]
        if point.kind != BW_END or point.key[1] != site:
            return False
        if not self.verify:
            self._advance()
            return True
        if not self._ended(i):
            return False
        ids, vers = self.ids, self.vers
        for key, x in self.writes.get(i, ()):
            self.stamps[key] = (ids[x], vers[x])
        keys = self.copy_at.get(i)
        if keys is not None:
            for key in keys:  # the windows of a verified cycle are measured
                x = self.index[key]
                g = self.ps[x].grad
                if g is not None:  # (a gradient with no graph of its own is copied as it is)
                    self.copies[key] = ((g.detach() if g.requires_grad else g).clone(), (ids[x], vers[x]))
        self._advance()
        return True

    def before_step(self, probe: Probe, opt: torch.optim.Optimizer, site: Site) -> bool:
        point = self._next(STEP_MID, (STEP_MID, id(opt), site), probe)
        if point is None:
            return False
        if point.measured is not None and self.verify:
            key, factor = point.measured
            x = self.index.get(key)
            stamp = self.stamps.get(key)
            if x is None or (stamp is not None and stamp != (self.ids[x], self.vers[x])):
                return False  # the sentinel's `.grad` changed since the pass that wrote it (`p.grad /= N`)
            copy = self.copies.get(key)
            if copy is not None and copy[1] == stamp:
                obs = probe.observed.get(key)
                if obs is None:
                    return False
                # `rescale_factor`'s first answer, as it reaches it: unchanged since the copy, a factor of one
                g = self.ps[x].grad
                unchanged = (g is not None and obs.sample is None and g.shape == copy[0].shape
                             and torch.equal(g, copy[0]))
                if (1.0 if unchanged else rescale_factor(obs, copy[0])) != factor:
                    return False
            elif factor != 1.0:
                return False
            self.copies.pop(key, None)
        self._advance()
        return True

    def after_step(self, probe: Probe, opt: torch.optim.Optimizer) -> bool:
        i = self.next_i
        end = self.ends[i]
        if end is None or end[0] != id(opt) or (self.verify and not self._ended(i)):
            return False
        monitors = probe.monitors
        if monitors is not None:
            monitors.after_step(end[0], end[1], end[2])
        self._advance()
        return True

    # -- the lane: a cycle not verified, call by call as its entry points see them (the module's docstring)
    def tag(self, monitors: Any, i: int, site: Site, tensors: Any) -> None:
        """GL008's tag on the pass at point `i`, which the lane took on a cycle that tags (`tags`): as
        `before_backward` tags (the first `TAG_ALL` passes of its line, then those of the cycles that tag),
        with `Monitors.tag` alone (the lane has no GradScaler output or DDP forward pending)."""
        due = None
        if not self.tag_ready[i]:
            due = monitors.tag_first(site)
            if due is not True:
                self._ready(i)
        if due is None:
            due = self.tagging
        if due and isinstance(tensors, torch.Tensor):
            monitors.tag(site, tensors.grad_fn)

    def _ready(self, i: int) -> None:
        """The pass at point `i` is past its line's first tags (or its line was reported)."""
        self.tag_ready[i] = True
        self.warming = not all(self.tag_ready[j] for j in self.passes)
        self.tags = self.tagging or self.warming

    def learn(self, i: int, facts: tuple[Any, ...]) -> None:
        """Point `i`'s call, as its entry point saw it: the frames its memo answers from inline
        (`sites.SiteMemo`), which give the same place whenever they are the same."""
        if self.facts[i] is None:
            self.facts[i] = facts
            self._arm(i)

    def disarm(self) -> None:
        """No call takes the lane any more (the watched parameters' generation changed, or a GradScaler's output
        or a DDP forward is pending: `Monitors.pending`): each goes through the replay's methods, which compare
        the generation (`_next`) and look for those (`before_backward`), and so leave the replay; facts are not
        learned again on this replay (`learn` follows a call the replay's methods took)."""
        self.lanes = [None] * self.period

    def _arm(self, i: int) -> None:
        """Point `i`'s lane tuple, from its facts: a clear's and a step's as learned; a pass's with its line,
        if the pass's end is the next point (within its line's first GL008 tags too: the
        lane tags them, `tag`)."""
        f = self.facts[i]
        if f is not None and f[0] == BW_MID:
            point = self.points[i]
            end = self.points[i + 1] if i + 1 < self.period else None
            site = point.key[1]
            ends_here = end is not None and end.kind == BW_END and end.key[1] is site
            f = (*f, site) if ends_here else None  # (its end is the next point)
        self.lanes[i] = f
