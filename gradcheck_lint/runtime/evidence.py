"""What a finding cites, as plain values: the call in the user's code where something happened (`Site`),
a backward pass (`BackwardPass`), a clear that dropped a pass no step had applied (`Discard`), and the
finding itself (`Violation`).

The ledger (`ledger.py`) keeps them and the probe's parts make them, but most of the runtime only names
them: the entry points and monitors anchor what they see to a `Site`, `wording.py` words a `Violation`.
Kept apart from the ledger's bookkeeping so that those modules depend on the values alone.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .windows import Scale


@dataclass(frozen=True, slots=True)
class Site:
    """A call in the user's code: file, line, 1-based column, the call expression as written, and its
    receiver (`opt` in `opt.step()`) and first argument (`opt` in `scaler.step(opt)`)."""

    path: str
    line: int
    text: str
    col: int = 1
    receiver: str = ""
    first_arg: str = ""
    method: str = ""  # `step` in `opt.step()`
    # Sites key the ledger's tables several times a step: hashed once, not each time from the fields
    _hash: int = field(default=0, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_hash", hash((self.path, self.line, self.text, self.col, self.receiver,
                                                 self.first_arg, self.method)))

    def __hash__(self) -> int:
        return self._hash

    def __str__(self) -> str:
        return f"{self.path}:{self.line}"


UNKNOWN_SITE = Site("<unknown>", 0, "")


@dataclass(slots=True)
class BackwardPass:
    id: int
    site: Site
    consumers: set[int] = field(default_factory=set)  # optimizers whose step applied it
    live: bool = False  # applied by the current group of steps (no backward since)
    scale: Scale | None = None  # constant factors of the loss's terms (`((),)`: none; None: unknown; (): not read)
    via: object = None  # where the user's code running the backward line was called from (see `user_caller`)
    writes: frozenset[int] | None = None  # the parameters it wrote (None: not told)
    batch: int = 0  # the pass whose forward graph it shares (`batches.py`), 0: its own

    @property
    def line_and_caller(self) -> tuple[Site, object]:
        """What repeats from micro-batch to micro-batch: one backward line reached from one place."""
        return self.site, self.via


@dataclass(slots=True)
class Discard:
    """A clear that dropped the gradients of a backward pass no step had applied."""

    backward: int
    clear: Site
    refilled: bool = False  # a backward wrote into the optimizer's parameters after the clear
    refilled_by_same_site: bool = False  # ... from the same line: the same loss on the next micro-batch
    refills: set[int] = field(default_factory=set)  # backward passes since the clear


@dataclass
class Violation:
    code: str
    site: Site  # where the diagnostic anchors: a step, or for GL002 the clear
    backward: BackwardPass | None
    other_step: Site | None = None  # GL001/GL005: the step that applied them first; GL002: the step
    own_backward: BackwardPass | None = None
    param_owner: str | None = None
    window: tuple[int, int] | None = None  # GL004: (micro-batches in the first window, N); GL003: (N, N)
    leftover: bool = False  # GL001: passes of a skipped step, applied by the next one
    scaled_twice: bool = False  # GL003: the loss was divided by N twice
    step_index: int = 0  # which step of its optimizer (from 1) showed it
    closure_again: bool = False  # GL001: seen at a second or later evaluation of one `step(closure)` (L-BFGS)
    refilled: bool = False  # GL002: the same backward ran again after the clear, before the step (its last micro-batch)
