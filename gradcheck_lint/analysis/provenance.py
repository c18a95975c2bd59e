"""Where a fact of the analysis came from, and how sure a finding built on such facts can be.

Every fact a rule relies on (an object is an optimizer, a backward writes these parameters, a loss was
divided by N) was either read in the analysed code, given by an API model of the catalogue, or assumed
(a name that looks like an optimizer, an attribute set out of sight, a function's parameter, the result
of a call the analysis could not read, code of another file). A finding is `certain` only when every
fact on its chain was read or modelled (Infer's *manifest* issues); one assumption makes it `possible`
(*latent*): it needs something to hold that the analysis could not see.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass

from ..diagnostics import Certainty


class Origin(str, enum.Enum):
    """How a fact was learnt."""

    READ = "read"  # in the analysed code
    MODELLED = "modelled"  # from an API model of the catalogue (apimodels/*.toml, [tool.gradlint.models])
    ASSUMED = "assumed"  # taken without seeing it


class Assumption(str, enum.Enum):
    """Why a fact is assumed: each names what the analysis did not see."""

    NAME = "known only by its name"
    ATTRIBUTE = "an attribute set out of sight"
    PARAMETER = "handed in as a parameter"
    OPAQUE = "the result of a call the analysis could not read"
    OTHER_FILE = "made in another file, not read"
    CONTEXT = "a calling context assumed (a function called once per batch)"
    CONFIG = "a setting whose value is not seen"
    INTENT = "what the code's author meant"
    SAVED = "what its forward pass saves for backward"
    REDUCTION = "how a loss made out of sight is reduced over its samples (mean or sum)"
    CLASS = "the class of an object made out of sight (what its methods do)"
    CARRIED = "that a value the previous loop iteration left still holds its graph (code out of sight may detach it)"
    WRAPPED = "that an attribute stepped like an optimizer is the optimizer its object was built from"
    CHOICE = "which of several objects a name holds (one picked by a key the analysis cannot evaluate)"
    # (a dict keyed by what a loop walks may overwrite its slots)
    KEYS = "that an item store writes a new key on each iteration"
    PICKED = "which of the parameters a test picked from a module (`if \"emb\" in n`) a loss reaches"
    PROCESS_GROUP = "that a process group is started out of sight (the data-parallel wrapper raises without one)"
    LAUNCH = "that the script runs on several processes where its setting for a multi-process run is off"
    LAUNCH_KIND = "that the script is launched on several processes of a kind other than the one its code tests for"
    OWNERSHIP = "which parameters an optimizer made out of sight updates"
    SAMPLES = "how many micro-batches a window counted in samples holds (what a loss divided by a number is divided by)"
    FLUSH = ("that a test after the loop of the window's remainder (`n % N != 0`) counts other micro-batches than the "
             "window's gate did (a path leaving a partial window that the test does not step)")
    FACTOR = "that a factor the loss is multiplied by, whose value is not read, is not 1/N"


@dataclass(frozen=True, slots=True)
class Provenance:
    """The origin of one fact; `assumption` says why it is assumed (None when read or modelled)."""

    origin: Origin
    assumption: Assumption | None = None

    @property
    def assumed(self) -> bool:
        return self.origin is Origin.ASSUMED

    def __str__(self) -> str:
        return self.assumption.value if self.assumption is not None else self.origin.value


READ = Provenance(Origin.READ)
MODELLED = Provenance(Origin.MODELLED)
_ASSUMED = {a: Provenance(Origin.ASSUMED, a) for a in Assumption}


def assumed(why: Assumption) -> Provenance:
    """The provenance of a fact taken without seeing it, for `why`."""
    return _ASSUMED[why]


def read_if(sure: bool, why: Assumption) -> Provenance:
    """READ when `sure`, else assumed for `why` (for the analysis's older yes/no certainty flags)."""
    return READ if sure else _ASSUMED[why]


# the rank of each assumption: of several, `weakest` names the first in the order they are declared
_RANK = {a: i for i, a in enumerate(Assumption)}


def _rank(p: Provenance) -> int:
    return _RANK.get(p.assumption, len(_RANK)) if p.assumption is not None else len(_RANK)


def weakest(facts: Iterable[Provenance]) -> Provenance:
    """The least sure of the facts: an assumption, else a modelled fact, else READ. Of several assumptions,
    the same one whatever order the facts come in (they are often read off a set, whose order changes from
    one process to the next)."""
    out = READ
    for p in facts:
        if p.assumed:
            if not out.assumed or _rank(p) < _rank(out):
                out = p
        elif p.origin is Origin.MODELLED and not out.assumed:
            out = p
    return out


def certainty(facts: Iterable[Provenance]) -> Certainty:
    """`certain` when every fact of the chain was read or modelled, `possible` when one is assumed."""
    return Certainty.POSSIBLE if weakest(facts).assumed else Certainty.CERTAIN


def assumptions(facts: Iterable[Provenance]) -> tuple[Assumption, ...]:
    """The distinct assumptions of a chain, in order of first appearance."""
    out: list[Assumption] = []
    for p in facts:
        if p.assumption is not None and p.assumption not in out:
            out.append(p.assumption)
    return tuple(out)
