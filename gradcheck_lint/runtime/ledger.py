"""The gradient contract, checked concretely: which backward passes each parameter's `.grad` holds.

Pure bookkeeping with no torch import, fed by the probe's hooks. It mirrors the static typestate
(`analysis/gradstate.py`): backward passes add contributions, a step consumes whole backward passes,
clears drop them. A step applying a pass its own optimizer already applied is GL001, one another
optimizer applied in an earlier group of steps is GL005; a clear that dropped a pass no step had
applied, before the step it was meant for, is GL002. What it keeps and reports (a call's `Site`, a
`BackwardPass`, a `Discard`, a `Violation`) are values of their own (`evidence.py`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from .evidence import UNKNOWN_SITE, BackwardPass, Discard, Site, Violation
from .windows import Scale, WindowSizes, micro_batches, scales_of, scaling_kind, window_kind

Rescale = float | None | Callable[[], float | None]  # a factor, or how to measure it when it is needed
_NONE: frozenset[int] = frozenset()


class Ledger:
    """Per-parameter contributions, per-optimizer pending discards and windows.

    A parameter's state is two entries, keyed by its id: the backward passes its `.grad` holds
    (`held`: a tuple, oldest first) and its optimizers (`optimizers_of`: a frozenset). Parameters in
    the same state share the same tuple and frozenset, so what is done to many parameters at once (a
    backward pass writing them, a clear, a step) is worked out once per distinct state.
    """

    def __init__(self) -> None:
        self.passes: dict[int, BackwardPass] = {}
        self.held: dict[int, tuple[int, ...]] = {}  # parameter -> backward ids its `.grad` holds, oldest first
        self.optimizers_of: dict[int, frozenset[int]] = {}  # parameter -> its optimizers (absent: none)
        self._opt_sets: dict[frozenset[int], frozenset[int]] = {}  # one frozenset object per set of optimizers
        self.current: int | None = None
        self._next = 1
        self._held: dict[int, int] = {}  # backward id -> number of parameters holding it
        self.step_sites: dict[int, Site] = {}  # optimizer -> its first step's site
        self.discards: dict[int, list[Discard]] = {}
        self.windows: dict[int, WindowSizes] = {}  # optimizer -> backward passes per step
        self._since_step: dict[int, set[int]] = {}
        self._weighted: dict[Site, Scale | None] = {}  # backward line -> the constant factors of its last weighted window
        self.clear_runs: dict[Site, int] = {}  # clearing call -> how many times it ran
        self._live: list[BackwardPass] = []  # passes marked live since the last backward pass
        self._rescaled: set[int] = set()  # parameters whose `.grad` changed in place (`/= N`, clipping) since the last step
        self._registered: dict[int, list[int]] = {}  # optimizer -> the parameters its last `register` named
        self._leftovers: dict[int, int] = {}  # optimizer -> its steps that applied a skipped step's passes (GL001)
        # finds and registers the optimizers of parameters no optimizer seen so far owns (the probe's)
        self.find_owners: Callable[[list[int]], None] | None = None
        self._owners_sought: set[int] = set()  # parameters `find_owners` was asked about

    def contributions(self, pid: int) -> tuple[int, ...]:
        """The backward passes this parameter's `.grad` holds, oldest first."""
        return self.held.get(pid, ())

    def clear_ran(self, site: Site) -> None:
        """One run of a clearing call (whatever the number of parameters it cleared)."""
        self.clear_runs[site] = self.clear_runs.get(site, 0) + 1

    # -- backward passes
    def begin_backward(self, site: Site, scale: Scale | None = None, via: object = None) -> int:
        bid = self._next
        self._next += 1
        if self._live:
            for p in self._live:  # the passes the last group of steps applied, not every pass kept
                p.live = False
            self._live.clear()
        self.passes[bid] = BackwardPass(bid, site, scale=scale, via=via)
        self.current = bid
        if len(self.passes) > 256:
            self._forget_unheld()
        return bid

    def end_backward(self) -> None:
        self.current = None

    def _forget_unheld(self) -> None:
        """Drop passes no parameter holds any more, so memory stays flat over a long run."""
        if len(self.passes) > 256:
            keep = {d.backward for ds in self.discards.values() for d in ds}
            for bid in [b for b in self.passes if not self._held.get(b) and b not in keep and b != self.current]:
                del self.passes[bid]
                self._held.pop(bid, None)
            # counts of passes forgotten earlier (the fast path counts without a pass to forget)
            for bid in [b for b, n in self._held.items() if not n and b not in self.passes]:
                del self._held[bid]

    def accumulated(self, pid: int) -> None:
        """A backward pass added into this parameter's `.grad`."""
        self.accumulated_many((pid,))

    def accumulated_many(self, pids: Iterable[int]) -> None:
        """`accumulated` for every parameter one backward pass wrote, with each optimizer of those
        parameters updated once per call instead of once per parameter."""
        bid = self.current if self.current is not None else self.begin_backward(UNKNOWN_SITE)
        held, optimizers_of = self.held, self.optimizers_of
        grown: dict[tuple[int, ...], tuple[int, ...]] = {}  # what a held tuple becomes with this pass
        added = 0
        opt_sets: set[frozenset[int]] = set()
        last: tuple[int, ...] | None = None  # the previous parameter's tuple (usually the same object)
        last_after: tuple[int, ...] = ()
        last_opts: frozenset[int] | None = None
        for pid in pids:
            before = held.get(pid)
            if before is last and before is not None:
                after = last_after
            else:
                if before is not None and bid in before:
                    continue
                after = grown.get(before or ())
                if after is None:
                    after = grown[before or ()] = (*(before or ()), bid)
                last, last_after = before, after
            held[pid] = after
            added += 1
            opts = optimizers_of.get(pid)
            if opts and opts is not last_opts:
                opt_sets.add(opts)
                last_opts = opts
        if added:
            self._held[bid] = self._held.get(bid, 0) + added
        if not opt_sets:
            return
        site = self.passes[bid].site
        for opt in frozenset().union(*opt_sets):
            self._since_step.setdefault(opt, set()).add(bid)
            for d in self.discards.get(opt, ()):
                d.refilled = True
                d.refills.add(bid)
                if d.backward in self.passes and self.passes[d.backward].site == site:
                    d.refilled_by_same_site = True

    def may_accumulate(self, pid: int, bid: int) -> bool:
        """Whether the next step of this parameter's optimizers may apply pass `bid` together with
        other passes (a window of several): call after `bid` wrote it. No only when every optimizer
        of the parameter has stepped, its last step applied a window of at most one pass, and `bid`
        is the only pass into its parameters since."""
        opts = self.optimizers_of.get(pid)
        if not opts:
            return True
        for opt in opts:
            sizes = self.windows.get(opt)
            since = self._since_step.get(opt)
            if not sizes or sizes[-1] > 1 or since is None or len(since) != 1 or bid not in since:
                return True
        return False

    def rescaled(self, pid: int) -> None:
        """The parameter's `.grad` was changed in place by something other than a backward or a clear."""
        if pid in self.held:
            self._rescaled.add(pid)

    # -- clears

    def unapplied(self, pids: Iterable[int]) -> list[int]:
        """The parameters (of `pids`, in order) whose `.grad` holds a pass no step applied."""
        held, passes = self.held, self.passes
        out: list[int] = []
        last: tuple[int, ...] = ()
        unapplied = False
        for pid in pids:
            bids = held.get(pid)
            if not bids:
                continue
            if bids is not last:
                last, unapplied = bids, any(not passes[b].consumers for b in bids)
            if unapplied:
                out.append(pid)
        return out

    def cleared(self, pid: int, site: Site, discard: bool = True) -> None:
        """The parameter's `.grad` was cleared (set to None, zeroed, replaced by zeros)."""
        dropped = self.held.get(pid)
        if dropped is None:
            return
        self.held[pid] = ()
        for bid in dropped:
            self._held[bid] -= 1
        if not discard:
            return
        opts = self.optimizers_of.get(pid, _NONE)
        for opt in opts:
            # A second clear before the step: what an earlier clear dropped is no evidence any more.
            pending = [d for d in self.discards.get(opt, []) if d.clear == site and not d.refilled]
            for bid in dropped:
                bp = self.passes[bid]
                # not applied by any optimizer of this parameter (another optimizer's step does not count)
                if (not (bp.consumers & opts) and not self._held_by_optimizer(opt, bid)
                        and not any(d.backward == bid for d in pending) and not self._kept_for_a_step(bid)):
                    pending.append(Discard(bid, site))
            self.discards[opt] = pending

    def cleared_many(self, pids: list[int], site: Site, discard: bool = True) -> None:
        """`cleared` for all the parameters one clearing call cleared, with each optimizer's pending
        discards filtered once per call instead of once per parameter."""
        held, optimizers_of, passes = self.held, self.optimizers_of, self.passes
        dropped_by: dict[tuple[int, ...], int] = {}  # what was held -> how many parameters held it
        drops: dict[tuple[frozenset[int], tuple[int, ...]], None] = {}  # (optimizers, dropped), in order
        opt_sets: set[frozenset[int]] = set()
        # runs of parameters in the same state (the same tuple and frozenset objects) are counted as one
        last: tuple[int, ...] | None = None
        last_opts: frozenset[int] = _NONE
        run = 0
        for pid in pids:
            dropped = held.get(pid)
            if dropped is None:
                continue
            opts = optimizers_of.get(pid, _NONE) if discard else _NONE
            if dropped:
                held[pid] = ()
            if dropped is last and opts is last_opts:
                run += 1
                continue
            if last:
                dropped_by[last] = dropped_by.get(last, 0) + run
                if discard:
                    drops[(last_opts, last)] = None
            if opts:
                opt_sets.add(opts)
            last, last_opts, run = dropped, opts, 1
        if last:
            dropped_by[last] = dropped_by.get(last, 0) + run
            if discard:
                drops[(last_opts, last)] = None
        counts = self._held
        for dropped, n in dropped_by.items():
            for bid in dropped:
                counts[bid] -= n
        if not discard:
            return
        dropped_unapplied: list[tuple[frozenset[int], int]] = []  # (optimizers of the parameter, pass)
        for opts, dropped in drops:
            for bid in dropped:
                # not applied by any optimizer of this parameter (another optimizer's step does not count)
                if not passes[bid].consumers & opts:
                    dropped_unapplied.append((opts, bid))
        discards = self.discards
        for opt in frozenset().union(*opt_sets):
            if not discards.get(opt) and not any(opt in opts for opts, _bid in dropped_unapplied):
                continue  # no discard to filter, none to add (no entry is the same as an empty one)
            # A second clear before the step: what an earlier clear dropped is no evidence any more.
            pending = [d for d in discards.get(opt, []) if d.clear == site and not d.refilled]
            for opts, bid in dropped_unapplied:
                if (opt in opts and not self._held_by_optimizer(opt, bid)
                        and not any(d.backward == bid for d in pending) and not self._kept_for_a_step(bid)):
                    pending.append(Discard(bid, site))
            discards[opt] = pending

    def _held_by_optimizer(self, opt: int, bid: int) -> bool:
        """Whether a parameter of `opt` still holds pass `bid`: a clear of some of its parameters only
        (`p.grad = None` for a frozen part) does not drop the pass from it. Other optimizers' parameters
        do not count: one backward feeding two optimizers, one clear drops the whole of one's part."""
        pids = self._registered.get(opt)
        if pids is None:
            return bool(self._held.get(bid))
        held = self.held
        return any(bid in held.get(pid, ()) for pid in pids)

    def _kept_for_a_step(self, bid: int) -> bool:
        """Whether parameters of another optimizer still hold pass `bid` unapplied: a clear of one part of
        a pass whose other part is still to be stepped drops a by-product (a GAN's `opt_G.zero_grad()`
        after `d_loss.backward()` wrote D too), as the static side reads it; the clear that drops the
        last unapplied part is the one that loses the pass. Parameters of no optimizer seen so far (one
        that has not stepped yet) are looked up once (`find_owners`). Only a clear that left the pass
        somewhere pays for the scan."""
        if not self._held.get(bid):
            return False
        consumers = self.passes[bid].consumers
        held, optimizers_of = self.held, self.optimizers_of
        unowned: list[int] = []
        for pid, bids in held.items():
            if bid in bids:
                opts = optimizers_of.get(pid, _NONE)
                if opts and not opts & consumers:
                    return True
                if not opts and pid not in self._owners_sought:
                    unowned.append(pid)
        if not unowned or self.find_owners is None:
            return False
        self._owners_sought.update(unowned)
        self.find_owners(unowned)  # registers the optimizers it finds
        return any(optimizers_of.get(pid, _NONE) and not optimizers_of[pid] & consumers for pid in unowned)

    # -- steps
    def forget_param(self, pid: int) -> None:
        """The parameter with this id is gone (its id now names a new tensor): drop what it held."""
        dropped = self.held.pop(pid, None)
        self.optimizers_of.pop(pid, None)
        self._owners_sought.discard(pid)
        self._rescaled.discard(pid)
        self._registered.clear()
        for bid in dropped or ():
            self._held[bid] = self._held.get(bid, 1) - 1

    def forget_optimizer(self, opt: int) -> None:
        """The optimizer with this id is gone (its id now names a new optimizer)."""
        for table in (self.step_sites, self.discards, self.windows, self._since_step, self._registered, self._leftovers):
            table.pop(opt, None)
        for pid, opts in list(self.optimizers_of.items()):
            if opt in opts:
                self.optimizers_of[pid] = self._interned(opts - {opt})

    def _interned(self, opts: frozenset[int]) -> frozenset[int]:
        return self._opt_sets.setdefault(opts, opts)

    def register(self, opt: int, pids: list[int]) -> None:
        """These parameters are `opt`'s. Named again with the same list (every step), nothing to do:
        only `forget_param` and `forget_optimizer` take an optimizer off a parameter."""
        if self._registered.get(opt) == pids:
            return
        held, optimizers_of = self.held, self.optimizers_of
        for pid in pids:
            bids = held.setdefault(pid, ())
            opts = optimizers_of.get(pid, _NONE)
            if opt not in opts:
                optimizers_of[pid] = self._interned(opts | {opt})
                # passes already held count towards this optimizer's first window
                self._since_step.setdefault(opt, set()).update(b for b in bids if not self.passes[b].consumers)
        self._registered[opt] = list(pids)

    def step(self, opt: int, pids: list[int], site: Site, owner_of: dict[int, str] | None = None,
             rescale: Rescale = None, measured: bool = False) -> list[Violation]:
        """Check and record `opt.step()` over its parameters.

        `rescale`: the factor by which the gradients were changed in place since the last backward
        pass (`p.grad /= N`), when the probe measured it (`measured`; None then: not uniform), or a
        function measuring it, called only for a window of several passes (the only use of it).
        A measurement also sees changes no version counter shows (`p.grad.data /= N`).
        """
        held, optimizers_of, passes = self.held, self.optimizers_of, self.passes
        out: list[Violation] = []
        seen: set[tuple[str, int]] = set()
        current_sites: set[Site] | None = None
        applied: set[int] = set()
        # first applied to these parameters by this step (another optimizer may have applied the same
        # pass to its own parameters: Muon stepping every micro-batch, Adam every second one)
        newly: set[int] = set()
        states: set[tuple[tuple[int, ...], frozenset[int]]] = set()
        last: tuple[int, ...] = ()
        last_opts: frozenset[int] | None = None
        for pid in pids:
            bids = held.get(pid)
            if not bids:
                continue
            opts = optimizers_of.get(pid, _NONE)
            if bids is last and opts is last_opts:
                continue
            last, last_opts = bids, opts
            if (bids, opts) in states:
                continue  # a parameter in the same state as an earlier one adds nothing (the first names the owner)
            states.add((bids, opts))
            for bid in bids:
                bp = passes[bid]
                consumers = bp.consumers
                applied.add(bid)
                if not consumers:
                    newly.add(bid)
                    continue
                if not consumers & opts:
                    newly.add(bid)
                if opt in consumers:
                    code = "GL001"
                elif not bp.live:
                    if current_sites is None:
                        current_sites = self._current_sites(pids)
                    same_line = bp.site in current_sites
                    if same_line and not consumers & opts:
                        # no optimizer of this parameter applied it: another one applied the same
                        # pass to its own parameters, stepping more often (Muon on every micro-batch,
                        # Adam on every second), and here it belongs to this optimizer's window
                        continue
                    # an older pass of the same backward line as this step's own: stale gradients
                    # (another part of the model stepped on it), not another model's loss
                    code = "GL001" if same_line else "GL005"
                else:
                    continue
                if (code, bid) in seen:
                    continue
                seen.add((code, bid))
                other = self.step_sites.get(opt) if code == "GL001" else self.step_sites.get(min(consumers))
                out.append(Violation(code, site, bp, other_step=other, own_backward=self._first_fresh(pids),
                                     param_owner=(owner_of or {}).get(pid)))
        for d in self.discards.pop(opt, None) or ():
            if d.refilled and not d.refilled_by_same_site:
                continue  # a by-product backward cleared on purpose, then the real one
            if len(d.refills) >= 2:
                continue  # the clear opened a window that then accumulated: a window-start clear
            if d.refilled and self.clear_runs.get(d.clear, 0) < len(self.windows.get(opt, ())):
                # a clear that runs less often than this optimizer steps (once per epoch) and after
                # which training went on: it dropped a trailing partial window on purpose
                continue
            where = d.clear if d.clear.line else site  # a clear the probe saw only by its effect
            out.append(Violation("GL002", where, passes.get(d.backward), other_step=site, refilled=d.refilled))
            break
        for bid in applied:
            bp = passes[bid]
            bp.consumers.add(opt)
            if not bp.live:
                bp.live = True
                self._live.append(bp)
        # window size: how many passes of the most repeated backward line (reached from one place) the step applies
        by_site: dict[tuple[Site, object], list[BackwardPass]] = {}
        for bid in newly:  # first applied by this step
            bp = passes[bid]
            by_site.setdefault(bp.line_and_caller, []).append(bp)
        # micro-batches, not passes: several losses of one batch (per-task heads, a retained graph) are one
        per_site = {key: micro_batches(line) for key, line in by_site.items()}
        size = max(per_site.values(), default=0)
        sizes = self.windows.get(opt)
        if sizes is None:
            sizes = self.windows[opt] = WindowSizes()
        sizes.append(size)
        # A loop that stepped on every micro-batch so far (two windows of one at least, so not an
        # accumulation loop), until a step was skipped (`continue` after backward): this step
        # applies the skipped pass too.
        # Unless each of its passes was divided by the new window's size: a warm-up that grows the window
        # from 1 (yolov7's `accumulate`), an accumulation window meant as such.
        # (Earlier steps that applied such a leftover do not make it an accumulation loop.)
        leftover = False
        if (len(sizes) >= 3 and sizes[-1] > 1 and sizes[-2] == 1
                and sizes.non_unit - (sizes[-1] != 1) <= self._leftovers.get(opt, 0)):
            repeated = max(per_site, key=lambda k: per_site[k])
            window = [passes[b] for b in newly if passes[b].line_and_caller == repeated]
            factor = rescale() if callable(rescale) else rescale
            if not all(scaling_kind(scale, factor if factor is not None else 1.0, size) == "scaled" for scale in scales_of(window)):
                rep_pass = next((passes[b] for b in applied if passes[b].line_and_caller == repeated), None)
                out.append(Violation("GL001", site, rep_pass, leftover=True))
                self._leftovers[opt] = self._leftovers.get(opt, 0) + 1
                leftover = True
        # a leftover is not a window: its undivided losses are GL001's, not also GL003's
        scaling = None if leftover else self._scaling_violation(opt, pids, newly, per_site, size, site, rescale, measured)
        if scaling is not None:
            out.append(scaling)
        if self._rescaled:
            self._rescaled.difference_update(pids)
        since = self._since_step.get(opt)
        if since is None:
            self._since_step[opt] = set()
        else:
            since.clear()
        if opt not in self.step_sites:
            self.step_sites[opt] = site
        for v in out:
            v.step_index = len(sizes)
        return out

    def _contributions(self, pids: list[int]) -> list[BackwardPass]:
        """The passes these parameters hold, in order (one entry per parameter holding it)."""
        held, passes = self.held, self.passes
        return [passes[b] for pid in pids for b in held.get(pid, ())]

    def _first_fresh(self, pids: list[int]) -> BackwardPass | None:
        """The first pass these parameters hold that no step applied yet."""
        return next((bp for bp in self._contributions(pids) if not bp.consumers), None)

    def _current_sites(self, pids: list[int]) -> set[Site]:
        """The backward lines of the passes this step applies first or the last group of steps applied."""
        return {bp.site for bp in self._contributions(pids) if not bp.consumers or bp.live}

    def _scaling_violation(self, opt: int, pids: list[int], newly: set[int], per_site: dict[tuple[Site, object], int], size: int,
                           site: Site, rescale: Rescale, measured: bool) -> Violation | None:
        """GL003: a window of N passes of one backward line whose loss is not divided by N (or twice)."""
        if size < 2:
            return None
        if measured:
            if callable(rescale):
                rescale = rescale()
            if rescale is None:
                return None  # changed in place, not uniformly
        elif not self._rescaled.isdisjoint(pids):
            return None  # changed in place by a factor that could not be measured (a parameter on a device)
        else:
            rescale = 1.0
        repeated = max(per_site, key=lambda k: per_site[k])
        window = [self.passes[b] for b in newly if self.passes[b].line_and_caller == repeated]
        scales = scales_of(window)
        kind = window_kind(scales, rescale, size)
        if kind == "weighted":
            # the same constant factors on every micro-batch, none of them the window: a weight of the
            # objective (`0.5 * mse`), if an earlier window of this line carried the very same ones
            # (a normalisation by the window's own token count changes from window to window), and
            # the window holds passes of this line only (else its size is not this line's count)
            if len(per_site) != 1:
                return None
            earlier = self._weighted.get(repeated[0])
            self._weighted[repeated[0]] = scales[0]
            if earlier != scales[0]:
                return None
            kind = "unscaled"
        if kind not in ("unscaled", "twice"):
            return None
        first = min(window, key=lambda bp: bp.id)
        return Violation("GL003", first.site, first, other_step=site, window=(size, size), scaled_twice=kind == "twice")

    def consume(self, opt: int, pids: list[int]) -> None:
        """Mark what these parameters hold as applied by `opt` (after a step that ran a closure)."""
        self.discards.pop(opt, None)
        held, passes = self.held, self.passes
        done: set[tuple[int, ...]] = set()
        last: tuple[int, ...] = ()
        for pid in pids:
            bids = held.get(pid)
            if not bids or bids is last or bids in done:
                continue
            last = bids
            done.add(bids)
            for bid in bids:
                bp = passes[bid]
                if opt not in bp.consumers:
                    bp.consumers.add(opt)
                    if not bp.live:
                        bp.live = True
                        self._live.append(bp)

    def window_violation(self, opt: int, n: int | None) -> Violation | None:
        """The first window of this optimizer held fewer micro-batches than the accumulation window.

        With N declared, any first window other than N; without, windows that settled at N > 1 after a
        shorter or longer first one (`if i % N == 0` with a zero-based counter, `if i > 0 and i % N == 0`).
        Call after each step.
        """
        sizes = self.windows.get(opt) or WindowSizes()
        site = self.step_sites.get(opt, UNKNOWN_SITE)
        v = self._window_violation(sizes, site, n)
        if v is not None and not v.step_index:
            v.step_index = len(sizes)
        return v

    @staticmethod
    def _window_violation(sizes: WindowSizes, site: Site, n: int | None) -> Violation | None:
        if n is not None and n > 1 and len(sizes) == 1 and sizes[0] < n:
            return Violation("GL004", site, None, window=(sizes[0], n), step_index=1)
        if n is not None and n > 1 and sizes and sizes[-1] > n:  # a window longer than N: a late step
            return Violation("GL004", site, None, window=(sizes[-1], n))
        if n is None and len(sizes) == 3 and sizes[0] != sizes[1] == sizes[2] and sizes[1] > 1 and sizes[0] > 0:
            # seen at the third step, but the wrong window is the first: the first step applied it
            return Violation("GL004", site, None, window=(sizes[0], sizes[1]), step_index=1)
        return None
