"""The catalogue of codes (analysis rules and suppression codes) and rule selection.

Every code a user can select, ignore or read with `gradlint rule` is a `RuleSpec` subclass registered
here, and nowhere else: the analysis rules (`Rule`, in `gradcheck_lint.checks`) and the codes the
engine reports about suppression comments (`SuppressionRule`, in `gradcheck_lint.suppressions`).
"""

from __future__ import annotations

import abc
import ast
import importlib
import pkgutil
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from .analysis.provenance import Provenance, certainty
from .diagnostics import NOTICE_CODE, NOTICE_NAME, Certainty, Severity

if TYPE_CHECKING:
    from .analysis import TrainingModel
    from .fixplan import FixPlan

PARSE_ERROR_CODE = "GL000"
PARSE_ERROR_NAME = "unanalysable-file"
ALL_SELECTOR = "ALL"
PARSE_ERROR_SUMMARY = "A file could not be read or parsed, so it was not analysed."
PARSE_ERROR_HELP = "fix the file so that Python can parse it, or exclude it from the checked paths."
NOTICE_SUMMARY = "The analysis of a file stopped at its work budget: part of it was not analysed."
NOTICE_HELP = ("split the file (a long training function into smaller ones), or exclude generated code; what was "
               "analysed is reported, what was not is named here.")
PARSE_ERROR_DESCRIPTION = (
    "The file could not be read, decoded or parsed: a syntax error, undecodable bytes, nesting too deep "
    "for the parser, a directory named like a Python file, a broken symbolic link, or a file too large to "
    "be a training script. Every other file was still checked; this one's training loops were not."
)


@dataclass(frozen=True, slots=True)
class Finding:
    """What a rule reports before positions are resolved: an anchor node, the words, a fix plan, and
    the provenance of every fact the finding rests on (its chain: the optimizer that steps, the
    gradients it holds, the loss, ...). Its certainty is computed from that chain, never asserted."""

    node: ast.AST
    message: str
    help: str
    facts: tuple[Provenance, ...] = ()
    fix: FixPlan | None = None
    # the calls being evaluated when the event at `node` ran, outermost first: a node in another file is
    # reported at the innermost of them in the checked file (a helper called from two places: at each)
    via: tuple[ast.Call, ...] = ()

    @property
    def certainty(self) -> Certainty:
        """`certain` when every fact of the chain was read or modelled; `possible` when one is assumed."""
        return certainty(self.facts)


@dataclass(frozen=True, slots=True)
class Invalid:
    """A snippet a rule must flag (Fixit style): once, at `line`, with this certainty; `fixed` is the
    snippet after the rule's fix (`fix` says whether that fix is "safe" or "unsafe"; no fix: None)."""

    source: str
    line: int
    fixed: str | None = None
    fix: str | None = None
    certainty: str = "certain"


class RuleSpec:
    """What every code of the catalogue declares: identity, wording, default selection, own cases."""

    code: ClassVar[str]
    name: ClassVar[str]
    summary: ClassVar[str]
    severity: ClassVar[Severity] = Severity.ERROR
    # Off-by-default codes run only when selected explicitly, by prefix, by `ALL` or `extend-select`.
    default_enabled: ClassVar[bool] = True
    # Snippets the code must stay silent on / must flag when selected (Fixit style); tested over the catalogue.
    VALID: ClassVar[tuple[str, ...]] = ()
    INVALID: ClassVar[tuple[Invalid, ...]] = ()


class Rule(RuleSpec, abc.ABC):
    """An analysis rule: a check over the semantic model of one file."""

    @abc.abstractmethod
    def check(self, model: TrainingModel) -> Iterable[Finding]:
        """Yield the findings of this rule in one file."""


class SuppressionRule(RuleSpec):
    """A code the engine reports about suppression comments themselves, after the analysis rules ran."""


_CATALOGUE: dict[str, type[RuleSpec]] = {}
_NAMES: dict[str, str] = {}
_CODE = re.compile(r"GL\d{3}")
_PROVIDERS = ("gradcheck_lint.suppressions",)
_loaded = False


def register(cls: type[RuleSpec]) -> type[RuleSpec]:
    """Class decorator adding a code to the catalogue; refuses duplicate codes and names."""
    if not _CODE.fullmatch(cls.code) or cls.code in (PARSE_ERROR_CODE, NOTICE_CODE):
        raise ValueError(f"invalid rule code {cls.code!r}")
    if cls.code in _CATALOGUE and _CATALOGUE[cls.code] is not cls:
        raise ValueError(f"duplicate rule code {cls.code}")
    if cls.name in _NAMES and _NAMES[cls.name] != cls.code:
        raise ValueError(f"duplicate rule name {cls.name}")
    _CATALOGUE[cls.code] = cls
    _NAMES[cls.name] = cls.code
    return cls


def catalogue() -> dict[str, type[RuleSpec]]:
    """Every code a user can select, by code: the analysis rules, then the suppression codes."""
    global _loaded
    if not _loaded:
        from . import checks

        for info in pkgutil.iter_modules(checks.__path__):
            importlib.import_module(f"{checks.__name__}.{info.name}")
        for module in _PROVIDERS:
            importlib.import_module(module)
        _loaded = True
    return dict(sorted(_CATALOGUE.items()))


def all_rules() -> dict[str, type[Rule]]:
    """The analysis rules (the checks over the semantic model) by code."""
    return {code: cls for code, cls in catalogue().items() if issubclass(cls, Rule)}



def default_codes() -> frozenset[str]:
    """The codes enabled when nothing is selected."""
    return frozenset(code for code, cls in catalogue().items() if cls.default_enabled)


@dataclass(frozen=True, slots=True)
class Selection:
    """One layer of rule selection (the defaults, a config file, the command line), unresolved."""

    select: tuple[str, ...] | None = None
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()


def valid_selectors_text() -> str:
    """The sentence listing what a selector may be, for error messages."""
    listed = ", ".join(f"{code} ({cls.name})" for code, cls in catalogue().items())
    return f"valid codes: {listed}; also prefixes such as GL00, rule names, and ALL"


def expand_selector(selector: str) -> tuple[int, frozenset[str]]:
    """Resolve one selector to its specificity and codes: `ALL`, a rule name, a code or a code prefix.

    Raises:
        ValueError: the selector matches no code of the catalogue.
    """
    specs = catalogue()
    item = selector.strip()
    if item.upper() == ALL_SELECTOR:
        return 0, frozenset(specs)
    by_name = {cls.name: code for code, cls in specs.items()}
    if item in by_name:
        return len(by_name[item]), frozenset({by_name[item]})
    upper = item.upper()
    if upper == PARSE_ERROR_CODE:
        raise ValueError(f"{PARSE_ERROR_CODE} cannot be selected or ignored: a file that cannot be analysed is always reported")
    if upper == NOTICE_CODE or item == NOTICE_NAME:
        raise ValueError(f"{NOTICE_CODE} cannot be selected or ignored: a file analysed only in part is always said")
    matched = frozenset(code for code in specs if upper and code.startswith(upper))
    if not matched:
        raise ValueError(f"unknown rule selector {item!r}; {valid_selectors_text()}")
    return len(upper), matched


def resolve_selection(layers: Sequence[Selection]) -> frozenset[str]:
    """Resolve layers of selection in order, with ruff's semantics.

    The first layer starts from the default codes. A layer's `select` replaces what the earlier layers
    chose; its `extend-select` adds to it; its `ignore` removes from it. Within one layer the more
    specific selector wins (`ALL` < `GL` < `GL00` < `GL003`), and at equal specificity `ignore` wins.

    Raises:
        ValueError: a selector matches no code of the catalogue.
    """
    enabled = set(default_codes())
    for layer in layers:
        selects = [*(layer.select or ()), *layer.extend_select]
        if layer.select is not None:
            enabled = set()
        updates: list[tuple[int, int, frozenset[str]]] = []  # (specificity, 0=select/1=ignore, codes)
        for raw in selects:
            if raw.strip():
                specificity, codes = expand_selector(raw)
                updates.append((specificity, 0, codes))
        for raw in layer.ignore:
            if raw.strip():
                specificity, codes = expand_selector(raw)
                updates.append((specificity, 1, codes))
        for _specificity, is_ignore, codes in sorted(updates, key=lambda u: (u[0], u[1])):
            if is_ignore:
                enabled -= codes
            else:
                enabled |= codes
    return frozenset(enabled)


