"""Accumulation windows: how many backward passes each step applied, and how each pass's loss relates
to a window of N (divided by N, by N twice, not at all, or by something else)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .ledger import BackwardPass


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


UNREAD: tuple[float, ...] = ()  # `BackwardPass.scale` of a pass whose graph the steady cycle did not read


def scales_of(window: list[BackwardPass]) -> list[tuple[float, ...] | None]:
    """The constant factors of each pass of one backward line in a window; a pass the steady cycle
    did not read (`UNREAD`) has those of the nearest later pass of the line that was read (the same
    expression: `loss / accumulate` divides by what it divided by a pass earlier), else unknown."""
    window = sorted(window, key=lambda bp: bp.id)
    out: list[tuple[float, ...] | None] = []
    for i, bp in enumerate(window):
        scale = bp.scale
        if scale == UNREAD:
            scale = next((later.scale for later in window[i + 1:] if later.scale != UNREAD), None)
        out.append(scale)
    return out


def scaling_kind(terms: tuple[float, ...] | None, rescale: float, n: int) -> str:
    """How one pass's loss relates to a window of n: "scaled" (a term is divided by n), "twice" (by
    n * n), "unscaled" (its main term carries no factor), or "unknown" (another factor: a per-token
    normalisation, say, which may well be intended)."""
    if terms is None:
        return "unknown"
    factors = [t * rescale for t in terms]

    def near(a: float, b: float) -> bool:
        return abs(a - b) <= 1e-6 * max(abs(b), 1e-12)

    if any(near(f, 1.0 / n) for f in factors):
        return "scaled"
    if near(max(factors), 1.0 / (n * n)):
        return "twice"
    if near(max(factors), 1.0):
        return "unscaled"
    return "unknown"
