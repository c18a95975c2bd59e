"""The typestate of gradients: what each parameter set's `.grad` holds on one path of the program.

A path state records, per holder (a set of parameters), the backward passes whose gradients it
currently holds and, for each, which optimizers already applied it. Transitions are the training
events: backward, clear (zero_grad, `p.grad = None`), step, in-place rescale, freeze.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import NamedTuple

from . import provenance as P
from .values import Holder

# The consumer a step that does not train leaves on the gradients it applied (a look-ahead undone by
# restoring the weights, a benchmark's repeated steps; see `trials`): applied, so a later clear discards
# nothing, but by no optimizer, so the real step after it does not find them already applied.
UNDONE = -1


class Contribution(NamedTuple):
    """Gradients written into a holder by one backward call site (a named tuple, like `Holder`, so
    that path states compare in C).

    Attributes:
        backward: id of the backward event.
        consumers: uids of the optimizers whose step already applied them.
        live: applied in the current group of steps (no backward since); steps of a group share them.
        repeated: the backward ran more than once since the last clear (accumulation).
        certain: the backward certainly writes this holder (known dataflow, known ownership).
        rescaled: the gradients were divided in place after they were written.
    """

    backward: int
    consumers: frozenset[int] = frozenset()
    live: bool = False
    repeated: bool = False
    certain: bool = True
    rescaled: bool = False
    carried: bool = False  # written before the loop now running was entered (a previous epoch)
    decayed: bool = False  # rescaled in place after a step applied them (`p.grad *= 0.5`): kept on purpose

    @property
    def fresh(self) -> bool:
        return not self.consumers

    @property
    def provenance(self) -> P.Provenance:
        """Read when the backward certainly writes the holder; else assumed (its loss or its optimizer's
        parameters came out of sight, or an exception may have skipped it)."""
        return P.READ if self.certain else P.assumed(P.Assumption.OPAQUE)

    def but(self, *, consumers: frozenset[int] | None = None, live: bool | None = None, repeated: bool | None = None,
            certain: bool | None = None, rescaled: bool | None = None, carried: bool | None = None,
            decayed: bool | None = None) -> Contribution:
        """`dataclasses.replace` without its per-call introspection (path states copy these constantly)."""
        return Contribution(
            self.backward,
            self.consumers if consumers is None else consumers,
            self.live if live is None else live,
            self.repeated if repeated is None else repeated,
            self.certain if certain is None else certain,
            self.rescaled if rescaled is None else rescaled,
            self.carried if carried is None else carried,
            self.decayed if decayed is None else decayed,
        )


class Discard(NamedTuple):
    """A clear that wiped out gradients no step had applied yet."""

    clear: int
    backward: int
    holder: Holder
    refilled: bool = False  # a backward wrote into the holder after the clear
    refilled_same: bool = False  # ... the same backward call: the next micro-batch of one loss
    applied_elsewhere: bool = False  # another optimizer had already stepped on this backward (its own model's loss)
    restored: bool = False  # written back by hand after the clear (a backup of the gradients): nothing was lost


class Assumption(NamedTuple):
    """A branch condition known to hold (or not) on this path."""

    cond: int
    value: bool


# `PathState.held` answers of the file being analysed, by gradients and holders (`forget_held`)
_HELD: dict[tuple[frozenset[tuple[Holder, Contribution]], frozenset[Holder]], tuple[tuple[Holder, Contribution], ...]] = {}


def forget_held() -> None:
    _HELD.clear()


# the AMP stage of an optimizer whose `unscale_` a GradScaler recorded until its `update()` (`amp.py`)
UNSCALE_PENDING = "pending"


@dataclass(frozen=True, slots=True)
class PathState:
    grads: frozenset[tuple[Holder, Contribution]] = frozenset()
    discards: frozenset[Discard] = frozenset()
    assumptions: frozenset[Assumption] = frozenset()
    frozen: frozenset[Holder] = frozenset()
    # (counter, window) -> phases the counter may be at: see window_arithmetic.ALL_PHASES
    phases: frozenset[tuple[str, str, frozenset[str]]] = frozenset()
    # (optimizer uid, "scaled" | "unscaled" | "clipped", ordinal of the call): what AMP and clipping did
    # to its gradients since its last step; see amp.py. Two pseudo uids mark other facts of a path:
    # amp.MADE (a `scaler.scale` ran), callables.HOOKED (a gradient hook was registered on it)
    amp: frozenset[tuple[int, str, int]] = frozenset()

    def _with(self, *, grads: frozenset[tuple[Holder, Contribution]] | None = None,
              discards: frozenset[Discard] | None = None, assumptions: frozenset[Assumption] | None = None,
              frozen: frozenset[Holder] | None = None, phases: frozenset[tuple[str, str, frozenset[str]]] | None = None,
              amp: frozenset[tuple[int, str, int]] | None = None,
              ) -> PathState:
        """`dataclasses.replace`, without its per-call introspection (the interpreter's hottest copy)."""
        return PathState(
            self.grads if grads is None else grads,
            self.discards if discards is None else discards,
            self.assumptions if assumptions is None else assumptions,
            self.frozen if frozen is None else frozen,
            self.phases if phases is None else phases,
            self.amp if amp is None else amp,
        )

    def amp_marks(self, optimizer: int) -> list[tuple[str, int]]:
        return sorted((stage, node) for uid, stage, node in self.amp if uid == optimizer)

    def with_amp_mark(self, optimizer: int, stage: str, node: int) -> PathState:
        rest = frozenset(x for x in self.amp if not (x[0] == optimizer and x[1] == stage))
        return self._with(amp=rest | {(optimizer, stage, node)})

    def without_amp_mark(self, optimizer: int, stage: str | None = None) -> PathState:
        return self._with(amp=frozenset(x for x in self.amp if not (x[0] == optimizer and (stage is None or x[1] == stage))))

    def without_amp_marks(self, optimizers: frozenset[int]) -> PathState:
        """No AMP mark of these optimizers (made anew, `Flow.renew`)."""
        if not any(x[0] in optimizers for x in self.amp):
            return self
        return self._with(amp=frozenset(x for x in self.amp if x[0] not in optimizers))

    # -- queries ---------------------------------------------------------------------------
    def held(self, holders: Iterable[Holder]) -> list[tuple[Holder, Contribution]]:
        """The contributions of the holders that overlap `holders`, in order. Every rule asks this of
        each state at each step with the optimizer's holders (a frozenset): answered once per file."""
        key = (self.grads, holders) if type(holders) is frozenset else None
        if key is not None:
            known = _HELD.get(key)
            if known is not None:
                return list(known)
        hs = list(holders)
        found = sorted((h, c) for h, c in self.grads if any(h.overlaps(x) for x in hs))
        if key is not None:
            _HELD[key] = tuple(found)
        return found

    def assumption(self, cond: int) -> bool | None:
        for a in self.assumptions:
            if a.cond == cond:
                return a.value
        return None

    def is_frozen(self, holder: Holder) -> bool:
        # A freeze of the whole model or of the written submodule stops the write.
        return bool(self.frozen) and _frozen_in(_freeze_paths(self.frozen), holder)

    # -- transitions -----------------------------------------------------------------------
    def backward(self, event: int, written: dict[Holder, bool], refills: frozenset[Holder] = frozenset()) -> PathState:
        """`written`: the holders this backward writes (certainly or not); `refills`: holders it is not said to write,
        yet which a clear's records count as written again after it (the parts of a whole module written)."""
        grads: set[tuple[Holder, Contribution]] = set()
        again: dict[Holder, list[Contribution]] = {}  # fresh gradients of this backward call, by holder
        for h, c in self.grads:
            if c.live:
                c = c.but(live=False)
            grads.add((h, c))
            if c.backward == event and not c.consumers:
                again.setdefault(h, []).append(c)
        touched: list[Holder] = []
        for holder, certain in written.items():
            if self.is_frozen(holder):
                continue
            touched.append(holder)
            existing = again.get(holder)
            if existing:
                for c in existing:
                    grads.discard((holder, c))
                    grads.add((holder, c.but(repeated=True, rescaled=False, certain=c.certain and certain)))
            else:
                grads.add((holder, Contribution(event, certain=certain)))
        discards = frozenset(
            Discard(d.clear, d.backward, d.holder, True, d.refilled_same or d.backward == event, restored=d.restored)
            if any(d.holder.overlaps(t) for t in touched) or d.holder in refills else d
            for d in self.discards
        )
        return self._with(grads=frozenset(grads), discards=discards)

    def clear(self, event: int, cleared: Iterable[Holder], *, record_discards: bool = True,
              stepped: frozenset[Holder] | None = None,
              owners: dict[Holder, frozenset[int]] | None = None,
              memo: dict[tuple[str, Holder], object] | None = None,
              consumed_by: frozenset[int] = frozenset()) -> PathState:
        """Drop the gradients of `cleared`; a backward no step applied and no stepped holder still
        keeps is recorded as discarded by this clear (`stepped`: holders some optimizer updates).
        `memo` caches per-holder answers across the path states of one clear (same `stepped`, `owners`).
        `consumed_by`: optimizers whose parameters are not known, each the only one in sight: their clear also
        drops what their steps applied, wherever it was recorded (those are their parameters)."""
        targets = list(cleared)
        if not targets:
            return self
        keep: set[tuple[Holder, Contribution]] = set()
        wiped: list[tuple[Holder, Contribution]] = []
        hit: dict[Holder, bool] = {}  # holder -> whether the clear reaches it (many contributions share a holder)

        def reached(h: Holder) -> bool:
            found = hit.get(h)
            if found is None:
                found = hit[h] = any(h.overlaps(t) for t in targets)
            return found

        for hc in self.grads:
            if reached(hc[0]) or consumed_by and not consumed_by.isdisjoint(hc[1].consumers):
                wiped.append(hc)
            else:
                keep.add(hc)
        # a clear that reaches a discard's holder replaces that record with its own, when it drops gradients there;
        # one that finds them dropped already (`opt.zero_grad(); model.zero_grad()`) leaves the first clear's record
        discards = {d for d in self.discards
                    if not reached(d.holder) or not any(d.holder.overlaps(h) for h, _c in wiped)}
        if record_discards:
            cache: dict[tuple[str, Holder], object] = {} if memo is None else memo

            def unapplied(h: Holder, c: Contribution) -> bool:
                # no optimizer that updates this holder has applied these gradients yet
                if c.fresh or owners is None:
                    return c.fresh
                mine = cache.get(("owners", h))
                if mine is None:
                    mine = cache[("owners", h)] = frozenset().union(*(o for k, o in owners.items() if k.overlaps(h))) if owners else frozenset()
                return bool(mine) and not (c.consumers & mine) and UNDONE not in c.consumers  # type: ignore[operator]

            def is_stepped(h: Holder) -> bool:
                hit = cache.get(("stepped", h))
                if hit is None:
                    hit = cache[("stepped", h)] = stepped is None or any(h.overlaps(x) for x in stepped)
                return bool(hit)

            surviving = {c.backward for h, c in keep if is_stepped(h) and unapplied(h, c)}
            for h, c in wiped:
                if c.certain and not c.carried and unapplied(h, c) and c.backward not in surviving:
                    discards.add(Discard(event, c.backward, h, applied_elsewhere=bool(c.consumers)))
        return self._with(grads=frozenset(keep), discards=frozenset(discards))

    def step(self, optimizer: int, holders: Iterable[Holder]) -> PathState:
        by_uid: dict[tuple[int, bool], list[Holder]] = {}  # the step's holders, by what `overlaps` needs equal
        for x in holders:
            by_uid.setdefault((x.uid, x.pseudo), []).append(x)
        touched: dict[Holder, bool] = {}  # holder of the state -> whether the step's holders overlap it

        def steps_on(h: Holder) -> bool:
            hit = touched.get(h)
            if hit is None:
                hit = touched[h] = any(h.overlaps(x) for x in by_uid.get((h.uid, h.pseudo), ()))
            return hit

        # A step consumes whole backward passes: the part of `g_loss.backward()` that went into D is
        # "the generator's backward" once opt_G has stepped on it, whoever steps on it later.
        applied = {c.backward for h, c in self.grads if (c.fresh or c.live or optimizer not in c.consumers) and steps_on(h)}
        grads = set()
        for h, c in self.grads:
            if c.backward in applied and (c.fresh or c.live or steps_on(h)):
                # Once applied, whether the pass ran more than once and whether it was rescaled before
                # the step are no longer facts of the gradients (they describe a window the step
                # consumed): kept, they would split one path into variants no rule tells apart
                c = c.but(consumers=c.consumers | {optimizer}, live=True, repeated=False, rescaled=False)
            grads.add((h, c))
        discards = frozenset(d for d in self.discards if not steps_on(d.holder))
        return self._with(grads=frozenset(grads), discards=discards)

    def refill(self, holders: Iterable[Holder] | None) -> PathState:
        """Gradients were written into these holders by hand (`p.grad.copy_(saved)`): a clear's discard of
        them is refilled, as a later backward would (see `Discard.refilled`), and with what it dropped (`restored`).
        None: into whichever parameters (the writer names none the analysis can tell): every discard."""
        targets = [d.holder for d in self.discards] if holders is None else list(holders)
        if not any(d.holder.overlaps(t) for d in self.discards for t in targets):
            return self
        return self._with(discards=frozenset(d._replace(refilled=True, restored=True)
                                             if any(d.holder.overlaps(t) for t in targets) else d
                                             for d in self.discards))

    def carry_over(self, backwards: set[int]) -> PathState:
        """Mark the fresh gradients of these backward passes as left over from an earlier period."""
        return self._with(grads=frozenset((h, c.but(carried=True) if c.fresh and c.backward in backwards else c)
                                          for h, c in self.grads))

    def enter_loop(self) -> PathState:
        """Mark what the gradients hold as left over from before this loop started."""
        if not any(c.fresh and not c.carried for _, c in self.grads):
            return self
        return self._with(grads=frozenset((h, c.but(carried=True) if c.fresh else c) for h, c in self.grads))

    def exceptional(self) -> PathState:
        """Enter an exception handler: what the gradients hold here is not certain (the exception may
        have come from anywhere in the `try`), so no discard or leak is recorded on this path alone; nor
        is a GradScaler's record of an `unscale_` (the `update()` in the `try` may have run)."""
        amp = frozenset(x for x in self.amp if x[1] != UNSCALE_PENDING)
        return self._with(grads=frozenset((h, c.but(certain=False)) for h, c in self.grads), amp=amp)

    def unread(self) -> PathState:
        """Past a call of code that may touch gradients but was not run (another file's, past the budget for
        reading it): what the gradients hold is no longer certain (it may have cleared or stepped them)."""
        if all(not c.certain for _, c in self.grads):
            return self
        return self._with(grads=frozenset((h, c.but(certain=False)) for h, c in self.grads))

    def rescale(self, holders: Iterable[Holder]) -> PathState:
        """`p.grad /= n`: fresh gradients are rescaled (accumulation done by hand); gradients a step
        already applied are decayed, a deliberate way of keeping part of them."""
        hs = list(holders)
        grads = frozenset(
            (h, (c.but(rescaled=True) if c.fresh else c.but(decayed=True)) if any(h.overlaps(x) for x in hs) else c)
            for h, c in self.grads
        )
        return self._with(grads=grads)

    def freeze(self, holders: Iterable[Holder], frozen: bool) -> PathState:
        hs = set(holders)
        if frozen:
            return self._with(frozen=self.frozen | hs)
        return self._with(frozen=frozenset(f for f in self.frozen if not any(f.overlaps(h) for h in hs)))

    def assume(self, cond: int, value: bool) -> PathState:
        return self._with(assumptions=self.assumptions | {Assumption(cond, value)})

    def phase(self, counter: str, window: str) -> frozenset[str] | None:
        for c, w, p in self.phases:
            if c == counter and w == window:
                return p
        return None

    def with_phase(self, counter: str, window: str, phases: frozenset[str]) -> PathState:
        rest = frozenset(x for x in self.phases if not (x[0] == counter and x[1] == window))
        return self._with(phases=rest | {(counter, window, phases)})

    def advance(self, counter: str, step: Callable[[frozenset[str]], frozenset[str]]) -> PathState:
        """Move every window phase of `counter` on by one micro-batch."""
        if not any(c == counter for c, _, _ in self.phases):
            return self
        return self._with(phases=frozenset((c, w, step(p) if c == counter else p) for c, w, p in self.phases))

    def restart(self, counter: str, phases: Mapping[str, frozenset[str] | None]) -> PathState:
        """The counter was (re)assigned: in each window at the given phases, or unknown (None)."""
        out = frozenset(x for x in self.phases if x[0] != counter) | {
            (counter, w, p) for w, p in phases.items() if p is not None}
        return self._with(phases=out) if out != self.phases else self

    def forget(self, conds: Iterable[int]) -> PathState:
        drop = set(conds)
        if not any(a.cond in drop for a in self.assumptions):
            return self
        return self._with(assumptions=frozenset(a for a in self.assumptions if a.cond not in drop))


class _Cap:
    """Where and how often path states were dropped at the cap in the file being analysed (`pathcap`
    tells the user; reset per file by the model). `place` is what the interpreter is running: the
    statement and its frame (`Interpreter.exec_stmt` sets it)."""

    def __init__(self) -> None:
        self.hits = 0
        self.place: tuple[object, object] | None = None
        # (statement, frame) of each cut, with the number of states met and kept, in the order they happened
        self.cuts: list[tuple[object, object, int, int]] = []

    def reset(self) -> None:
        self.hits = 0
        self.place = None
        self.cuts = []

    def cut(self, met: int, kept: int) -> None:
        self.hits += 1
        stmt, frame = self.place if self.place is not None else (None, None)
        self.cuts.append((stmt, frame, met, kept))


CAP = _Cap()
STATE_CAP = 64  # path states kept per program point (benchmarks/realworld.py --cap compares verdicts with more)


def merge_states(states: Iterable[PathState], limit: int | None = None) -> frozenset[PathState]:
    """Bound the number of distinct path states: first by merging paths that differ only in their
    branch assumptions, then, past the cap, by keeping the simplest ones.

    Dropping paths can only hide findings, never invent one (merging paths whose gradients differ
    would over-approximate and could combine facts of different paths). The order is deterministic: states hold small
    ordinal integers only.
    """
    limit = STATE_CAP if limit is None else limit
    s = frozenset(states)
    if len(s) <= limit:
        return s
    # Paths whose gradients agree and differ only in which way they went at earlier tests (a logging
    # flag tested twice, `if rank == 0`) become one path that remembers what they all assumed: the
    # next test of those flags splits it again, so no gradient fact is lost.
    groups: dict[tuple[object, ...], list[PathState]] = {}
    for p in s:
        groups.setdefault((p.grads, p.discards, p.frozen, p.phases, p.amp), []).append(p)
    if len(groups) < len(s):
        s = frozenset(
            ps[0] if len(ps) == 1 else ps[0]._with(assumptions=frozenset.intersection(*(p.assumptions for p in ps)))
            for ps in groups.values()
        )
        if len(s) <= limit:
            return s
    CAP.cut(len(s), limit)

    def sizes(p: PathState) -> tuple[int, int, int]:
        return (len(p.grads), len(p.discards), len(p.assumptions))

    # The full order is by sizes, then by contents; contents are compared (costly) only where the
    # sizes tie at the cut.
    ordered = sorted(s, key=lambda p: (sizes(p), _contents(p)))
    rich = limit // 4
    return frozenset(ordered[: limit - rich] + ordered[len(ordered) - rich:])


def _contents(p: PathState) -> tuple[object, ...]:
    """A total order of path states that does not depend on hashing: ties at the cap are cut the same
    way whatever order the set iterates in (string hashes differ from one process to the next, so a
    key that left states with equal gradients but different phases tied kept different paths, and a
    loop at the cap could take another iteration and exhaust the work budget in some processes only)."""
    return (sorted(p.grads), sorted(p.assumptions), sorted(p.discards), sorted(p.frozen),
            sorted((counter, window, tuple(sorted(at))) for counter, window, at in p.phases), sorted(p.amp))


_NOT_A_DATACLASS = ()
# Field names of the dataclasses met so far (`dataclasses.fields` introspects on every call).
_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


def canonical(value: object, memo: dict[int, tuple[object, str]] | None = None) -> str:
    """A hash-seed independent text of a state (sets sorted, dataclasses field by field).

    States share most of their parts, so texts are remembered by object in `memo`. An entry holds its
    object beside its text: a part dropped during the analysis would otherwise free its id for a new
    object, which would then be read with the old text (the sort order of states, and so which states
    the path cap keeps, depended on the allocator: neural_sp's GL003 was certain or possible depending
    on the files analysed before it in the process). The memo lives as long as the file's analysis
    (`forget_canonical`)."""
    memo = {} if memo is None else memo
    entry = memo.get(id(value))
    if entry is not None and entry[0] is value:
        return entry[1]
    cls = value.__class__
    by_value = _BY_VALUE if memo is _CANONICAL and cls in _VALUE_KEYED else None
    if by_value is not None:
        # an equal part met in another state (states are rebuilt, their parts equal): the same text
        known = by_value.get(value)
        if known is not None:
            memo[id(value)] = (value, known)
            return known
    if cls is frozenset or cls is set:
        text = "{" + ",".join(sorted([canonical(v, memo) for v in value])) + "}"  # type: ignore[attr-defined]
    elif cls is tuple:
        text = "(" + ",".join([canonical(v, memo) for v in value]) + ")"  # type: ignore[attr-defined]
    else:
        names = _FIELD_NAMES.get(cls)
        if names is None:
            names = _FIELD_NAMES[cls] = (
                tuple(f.name for f in dataclasses.fields(cls)) if dataclasses.is_dataclass(cls)
                else getattr(cls, "_fields", _NOT_A_DATACLASS)  # a named tuple
            )
        if names:
            text = cls.__name__ + "(" + ",".join([canonical(getattr(value, n), memo) for n in names]) + ")"
        else:
            text = repr(value)
    if cls is not int and cls is not str and cls is not bool and value is not None:
        memo[id(value)] = (value, text)
        if by_value is not None:
            by_value[value] = text
    return text


# Texts of the parts of the states of the file being checked (steps share most of them), each beside
# its object, until `forget_canonical()`, called when the file's analysis ends.
_CANONICAL: dict[int, tuple[object, str]] = {}
# The same texts by value, for the hashable parts whose fields are all of fixed types (two equal
# parts have the same text): holders, contributions, discards, assumptions and sets of them.
_BY_VALUE: dict[object, str] = {}
_VALUE_KEYED: frozenset[type] = frozenset({tuple, frozenset, Holder, Contribution, Discard, Assumption})


def in_order(states: Iterable[PathState]) -> list[PathState]:
    """States in an order that does not depend on set iteration (and so on PYTHONHASHSEED)."""
    return sorted(states, key=lambda s: canonical(s, _CANONICAL))


def forget_canonical() -> None:
    _CANONICAL.clear()
    _BY_VALUE.clear()


def frozen_on_every_path(states: Iterable[PathState], holders: Iterable[Holder]) -> frozenset[Holder]:
    """The holders frozen on every one of `states` (none when there is no state): a path at a time, the first one,
    often frozen nowhere, leaving few to test on the others (a large model has thousands of holders)."""
    left = list(holders)
    seen = False
    for state in states:
        seen = True
        if not state.frozen:
            return frozenset()
        index = _freeze_paths(state.frozen)
        left = [h for h in left if _frozen_in(index, h)]
        if not left:
            return frozenset()
    return frozenset(left) if seen else frozenset()


_FreezeIndex = dict[tuple[int, bool], tuple[frozenset[tuple[str, ...]], bool, tuple[int, ...]]]


def _frozen_in(index: _FreezeIndex, holder: Holder) -> bool:
    """A freeze of the holder's module, or of a part of it on the holder's path."""
    found = index.get((holder.uid, holder.pseudo))
    return found is not None and (found[1] or any(holder.path[:k] in found[0]
                                                  for k in found[2] if k <= len(holder.path)))


@functools.lru_cache(maxsize=4096)
def _freeze_paths(frozen: frozenset[Holder]) -> _FreezeIndex:
    """A set of freezes by module: the frozen parts' paths, whether the whole module is frozen, the lengths of those
    paths. Read once per set of freezes, which many paths share."""
    out: dict[tuple[int, bool], set[tuple[str, ...]]] = {}
    for f in frozen:
        out.setdefault((f.uid, f.pseudo), set()).add(f.path)
    return {k: (frozenset(v), () in v, tuple(sorted({len(p) for p in v}))) for k, v in out.items()}
