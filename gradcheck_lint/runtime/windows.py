"""Accumulation windows: how many backward passes each step applied, and how each pass's loss relates
to a window of N (divided by N, by N twice, not at all, or by something else)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol


class WindowSizes:
    """How many backward passes each step of one optimizer applied, kept in constant memory: the
    number of steps, the first three sizes, the last two, and how many were not one (a run of a
    million steps does not keep a million sizes, nor sum them at each step)."""

    __slots__ = ("count", "head", "last", "before_last", "non_unit")

    def __init__(self) -> None:
        self.count = 0
        self.head: list[int] = []
        self.last = self.before_last = 0
        self.non_unit = 0

    def append(self, size: int) -> None:
        self.count += 1
        if len(self.head) < 3:
            self.head.append(size)
        self.before_last, self.last = self.last, size
        self.non_unit += size != 1

    def append_ones(self, k: int) -> None:
        """`append(1)` k times (the steady cycle's steps, written at once)."""
        if k > 0:
            for _ in range(min(k, 3 - len(self.head))):
                self.head.append(1)
            self.count += k
            self.before_last = self.last if k == 1 else 1
            self.last = 1

    def __len__(self) -> int:
        return self.count

    def __getitem__(self, i: int) -> int:
        if i == -1 and self.count:
            return self.last
        if i == -2 and self.count >= 2:
            return self.before_last
        if 0 <= i < len(self.head):
            return self.head[i]
        raise IndexError(f"window {i} of {self.count} is not kept")


Op = tuple[float, bool]  # one constant factor below one applied to a loss's term: (factor, written as a division)
Term = tuple[Op, ...]  # the factors of one term of a loss, from the graph's root down
Scale = tuple[Term, ...]  # the terms of a loss (`loss_scale.graph_scale`); `((),)`: one term, no factor

UNREAD: Scale = ()  # `BackwardPass.scale` of a pass whose graph the steady cycle did not read


class Pass(Protocol):
    """What a window reads of a backward pass (`evidence.BackwardPass`)."""

    @property
    def id(self) -> int: ...
    @property
    def scale(self) -> Scale | None: ...
    @property
    def writes(self) -> frozenset[int] | None: ...
    @property
    def batch(self) -> int: ...


def scales_of(window: Sequence[Pass]) -> list[Scale | None]:
    """The constant factors of each pass of one backward line in a window; a pass the steady cycle
    did not read (`UNREAD`) has those of the nearest later pass of the line that was read (the same
    expression: `loss / accumulate` divides by what it divided by a pass earlier), else unknown."""
    window = sorted(window, key=lambda bp: bp.id)
    out: list[Scale | None] = []
    for i, bp in enumerate(window):
        scale = bp.scale
        if scale == UNREAD:
            scale = next((later.scale for later in window[i + 1:] if later.scale != UNREAD), None)
        out.append(scale)
    return out


def _near(a: float, b: float) -> bool:
    return abs(a - b) <= 1e-6 * max(abs(b), 1e-12)


def _multiple(factor: float, n: int) -> bool:
    """The factor divides by a multiple of n (`/ (2 * N)`)."""
    k = 1.0 / factor / n
    return k >= 1.0 - 1e-6 and _near(k, float(round(k)))


def term_kind(term: Term, rescale: float, n: int) -> str:
    """How one term of a pass's loss relates to a window of n passes: "scaled" (a factor, or all of
    them together, is 1/n), "twice" (two divisions by n, or one by n * n), "shared" (a division by a
    multiple of n: `/ (2 * N)`), "unscaled" (no factor at all), "weighted" (constant factors none of
    which is the window: a weight of the objective, `0.5 * mse`), or "unknown" (the gradients grew
    in place)."""
    ops = list(term)
    if not _near(rescale, 1.0):
        if rescale > 1.0:
            return "unknown"
        ops.append((rescale, True))  # `p.grad /= N` before the step: a division of every term
    if not ops:
        return "unscaled"
    # divisions by n itself (or n * n): a multiplication by 0.5 next to a division by 2 is a weight
    # of the objective (`(real + fake) * 0.5 / 2` over a window of 2 is divided once)
    divisions = sum(1 if _near(f, 1.0 / n) else 2 if _near(f, 1.0 / (n * n)) else 0 for f, div in ops if div)
    if divisions >= 2:
        return "twice"
    total = 1.0
    for f, _div in ops:
        total *= f
    if any(_near(f, 1.0 / n) for f, _div in ops) or _near(total, 1.0 / n):
        return "scaled"
    if any(div and _multiple(f, n) for f, div in ops) or _multiple(total, n):
        return "shared"
    return "weighted"


def scaling_kind(terms: Scale | None, rescale: float, n: int) -> str:
    """How one pass's loss relates to a window of n: "scaled" (a term is divided by n), "unscaled" (a
    term carries no factor), "twice" (by n twice), "scaled" again (a term divided by a multiple of n),
    "weighted" (every term carries constant factors that are not the window), or "unknown" (not
    read, or not understood), the first that applies."""
    if terms is None or terms == UNREAD:
        return "unknown"
    kinds = {term_kind(term, rescale, n) for term in terms}
    # a term divided by n wins; else a bare term (`recon + 0.1 * reg`: the main term is undivided)
    for kind in ("unknown", "scaled", "unscaled", "twice", "shared"):
        if kind in kinds:
            return "scaled" if kind == "shared" else kind
    return "weighted"


_KINDS: dict[tuple[tuple[Scale | None, ...], float, int], str] = {}  # `window_kind`'s answers: a loop asks the same


def window_kind(scales: list[Scale | None], rescale: float, n: int) -> str:
    """How the passes of one backward line in a window of n relate to it, comparing them with each
    other: the `scaling_kind` they share; "weighted" only when every pass carries the very same
    constant factors (a weight of the objective, not a per-micro-batch normalisation such as a
    token count, which differs from one micro-batch to the next); else "unknown". A function of its
    arguments alone: answered from `_KINDS` when asked again (every step of an accumulation loop)."""
    key = (tuple(scales), rescale, n)
    kind = _KINDS.get(key)
    if kind is None:
        if len(_KINDS) >= 256:
            _KINDS.clear()
        kind = _KINDS[key] = _window_kind(scales, rescale, n)
    return kind


def _window_kind(scales: list[Scale | None], rescale: float, n: int) -> str:
    kinds = {scaling_kind(scale, rescale, n) for scale in scales}
    if len(kinds) != 1:
        return "unknown"
    kind = kinds.pop()
    if kind == "weighted" and len(set(scales)) != 1:
        return "unknown"
    return kind


def micro_batches(passes: Sequence[Pass]) -> int:
    """How many micro-batches these passes of one backward line in one window are. Passes that share
    their forward graph (`BackwardPass.batch`: losses of one batch, the graph retained between them)
    are one. Passes that wrote parameters the others did not, each (one task head each on a shared
    encoder), are several losses of one batch, not a window: the count is then that of the largest
    set of passes that wrote the same parameters. Passes whose parameters only grow or shrink (a
    layer some micro-batches do not reach) and passes whose writes were not told (the steady
    cycle's) count together."""
    sets = {bp.writes for bp in passes}
    if None in sets or all(a <= b or b <= a for a in sets for b in sets if a is not None and b is not None):
        return len({bp.batch or bp.id for bp in passes})
    by_writes: dict[frozenset[int] | None, set[int]] = {}
    for bp in passes:
        by_writes.setdefault(bp.writes, set()).add(bp.batch or bp.id)
    return max(len(b) for b in by_writes.values())
