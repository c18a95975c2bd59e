"""The rule base class and the registry of rules (codes and names are unique)."""

from __future__ import annotations

import abc
import importlib
import pkgutil
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Iterable

import libcst as cst

from .diagnostics import Certainty, Severity

if TYPE_CHECKING:
    from .fixplan import FixPlan

PARSE_ERROR_CODE = "GL000"
PARSE_ERROR_NAME = "unanalysable-file"


@dataclass(frozen=True, slots=True)
class Finding:
    """What a rule reports before positions are resolved: an anchor node, the words, and a fix plan."""

    node: cst.CSTNode
    message: str
    help: str
    certainty: Certainty = Certainty.CERTAIN
    fix: "FixPlan | None" = None


class Rule(abc.ABC):
    """A check over the semantic model. Subclasses carry their own valid/invalid examples."""

    code: ClassVar[str]
    name: ClassVar[str]
    summary: ClassVar[str]
    severity: ClassVar[Severity] = Severity.ERROR
    # Snippets the rule must stay silent on / must flag (Fixit style); tested over the registry.
    VALID: ClassVar[tuple[str, ...]] = ()
    INVALID: ClassVar[tuple[str, ...]] = ()

    @abc.abstractmethod
    def check(self, model: "TrainingModel") -> Iterable[Finding]:  # noqa: F821
        """Yield the findings of this rule in one file."""


_RULES: dict[str, type[Rule]] = {}
_NAMES: dict[str, str] = {}
_CODE = re.compile(r"GL\d{3}")


def register(cls: type[Rule]) -> type[Rule]:
    """Class decorator adding a rule to the registry; refuses duplicate codes and names."""
    if not _CODE.fullmatch(cls.code) or cls.code == PARSE_ERROR_CODE:
        raise ValueError(f"invalid rule code {cls.code!r}")
    if cls.code in _RULES and _RULES[cls.code] is not cls:
        raise ValueError(f"duplicate rule code {cls.code}")
    if cls.name in _NAMES and _NAMES[cls.name] != cls.code:
        raise ValueError(f"duplicate rule name {cls.name}")
    _RULES[cls.code] = cls
    _NAMES[cls.name] = cls.code
    return cls


def all_rules() -> dict[str, type[Rule]]:
    """Every registered rule by code, importing each module of `gradcheck_lint.checks` once."""
    from . import checks

    for info in pkgutil.iter_modules(checks.__path__):
        importlib.import_module(f"{checks.__name__}.{info.name}")
    return dict(sorted(_RULES.items()))


def known_codes() -> list[str]:
    return [PARSE_ERROR_CODE, *all_rules()]


def expand_selection(select: Iterable[str] | None, ignore: Iterable[str] | None) -> frozenset[str]:
    """Resolve `--select`/`--ignore` lists of codes, prefixes (`GL00`) or `ALL` to a set of codes.

    Raises:
        ValueError: a selector matches no rule.
    """
    codes = list(all_rules())
    by_name = {cls.name: code for code, cls in all_rules().items()}

    def expand(items: Iterable[str]) -> set[str]:
        out: set[str] = set()
        for raw in items:
            item = raw.strip()
            if not item:
                continue
            if item.upper() == "ALL":
                out.update(codes)
                continue
            if item in by_name:
                out.add(by_name[item])
                continue
            matched = [c for c in codes if c.startswith(item.upper())]
            if not matched:
                raise ValueError(f"unknown rule selector {item!r}; valid codes: {', '.join(codes)}")
            out.update(matched)
        return out

    chosen = expand(select) if select else set(codes)
    if ignore:
        chosen -= expand(ignore)
    return frozenset(chosen)
