"""Plain values describing findings: no syntax nodes, safe to pickle and to serialise."""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import asdict, dataclass, replace
from typing import Any


class Severity(str, enum.Enum):
    """How bad a finding is for the training run."""

    ERROR = "error"
    WARNING = "warning"
    NOTE = "note"  # no finding: a notice about the analysis itself (part of a file was not analysed)


# The code of the notice that the analysis of a file stopped at its work budget: never selected,
# ignored or suppressed, and no problem (it does not change the exit code).
NOTICE_CODE = "GL099"
NOTICE_NAME = "analysis-incomplete"


class Certainty(str, enum.Enum):
    """How sure the analysis is (ruff's applicability, for diagnostics)."""

    CERTAIN = "certain"
    POSSIBLE = "possible"


@dataclass(frozen=True, slots=True, order=True)
class Span:
    """A source range: 1-based lines, 1-based columns, end exclusive."""

    line: int
    column: int
    end_line: int
    end_column: int


class Applicability(str, enum.Enum):
    """Whether `--fix` applies a fix on its own, or only with `--unsafe-fixes`."""

    SAFE = "safe"
    UNSAFE = "unsafe"


@dataclass(frozen=True, slots=True, order=True)
class Edit:
    """Replace the text of `span` with `content`; an empty span inserts."""

    span: Span
    content: str

    def to_json(self) -> dict[str, Any]:
        """Return the JSON object of one edit."""
        return {**asdict(self.span), "content": self.content}


@dataclass(frozen=True, slots=True)
class Codemod:
    """A structural change made with libcst when fixing (it moves or wraps code), said with plain values.

    `kind` names the transformation in `gradcheck_lint.codemods`; `spans` are the nodes it acts on (their
    positions in the linted text); `args` its named strings (`("code", "scaler.unscale_(opt)")`).
    """

    kind: str
    spans: tuple[Span, ...]
    args: tuple[tuple[str, str], ...] = ()

    def arg(self, name: str) -> str:
        """Return the named argument ("" when absent)."""
        return next((v for k, v in self.args if k == name), "")

    def to_json(self) -> dict[str, Any]:
        """Return the JSON object of the codemod."""
        return {"kind": self.kind, "spans": [asdict(s) for s in self.spans], "args": dict(self.args)}


@dataclass(frozen=True, slots=True)
class Fix:
    """A change that resolves one diagnostic; its edits are applied together or not at all.

    A fix with a `codemod` has no edits until fixing: `gradcheck_lint.fixes` runs the codemod (libcst)
    on the text and turns the result into edits then.
    """

    description: str
    edits: tuple[Edit, ...]
    applicability: Applicability = Applicability.SAFE
    codemod: Codemod | None = None

    def applies(self, unsafe: bool) -> bool:
        """Tell whether `--fix` applies this fix (`unsafe`: `--unsafe-fixes` was given)."""
        return unsafe or self.applicability is Applicability.SAFE

    def to_json(self) -> dict[str, Any]:
        """Return the JSON object of the fix."""
        return {
            "description": self.description,
            "applicability": self.applicability.value,
            "edits": [e.to_json() for e in self.edits],
            **({"codemod": self.codemod.to_json()} if self.codemod is not None else {}),
        }


@dataclass(frozen=True, slots=True)
class RelatedLocation:
    """A place in another file a finding rests on (code of the project reached through an import)."""

    path: str
    span: Span
    message: str

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, **asdict(self.span), "message": self.message}


@dataclass(frozen=True, slots=True)
class Diagnostic:
    """One finding, anchored to a span of one file (of one cell, in a notebook)."""

    path: str
    span: Span
    code: str
    name: str
    message: str
    help: str
    severity: Severity = Severity.ERROR
    certainty: Certainty = Certainty.CERTAIN
    # 1-based index of the notebook cell among all cells of the notebook; lines count within it.
    cell: int | None = None
    fix: Fix | None = None
    # evidence in other files of the project, innermost first; non-empty exactly when the finding rests
    # on what code of another file does (a fact read there, through a call of this file)
    related: tuple[RelatedLocation, ...] = ()
    # why a possible finding is only possible: the assumptions of its chain, in words (`provenance.Assumption`)
    assumptions: tuple[str, ...] = ()

    @property
    def line(self) -> int:
        return self.span.line

    @property
    def column(self) -> int:
        return self.span.column

    @property
    def notice(self) -> bool:
        """A notice about the analysis (part of the file was not analysed), not a finding."""
        return self.code == NOTICE_CODE

    @property
    def possible(self) -> bool:
        """The finding rests on an assumption (shown only with `--show-possible`)."""
        return self.certainty is Certainty.POSSIBLE

    def sort_key(self) -> tuple[str, int, int, int, str, str]:
        # the message breaks ties: two findings of one code at one place (two accumulators on one line) come
        # out of a set, whose order changes from one process to the next
        return (self.path, self.cell or 0, self.span.line, self.span.column, self.code, self.message)

    def to_json(self) -> dict[str, Any]:
        """Return the JSON object of the `--format json` output."""
        span = asdict(self.span)
        return {
            "path": self.path,
            "cell": self.cell,
            **span,
            "code": self.code,
            "name": self.name,
            "severity": self.severity.value,
            "certainty": self.certainty.value,
            "message": self.message,
            "help": self.help,
            "fix": self.fix.to_json() if self.fix else None,
            **({"related": [r.to_json() for r in self.related]} if self.related else {}),
            **({"assumptions": list(self.assumptions)} if self.assumptions else {}),
        }

    @classmethod
    def from_json(cls, data: Any) -> Diagnostic:
        """Rebuild a diagnostic from `to_json()` output; raise ValueError on anything malformed."""
        try:
            fix = data["fix"]
            return cls(
                path=_typed(data["path"], str),
                span=Span(*(_typed(data[k], int) for k in ("line", "column", "end_line", "end_column"))),
                code=_typed(data["code"], str),
                name=_typed(data["name"], str),
                message=_typed(data["message"], str),
                help=_typed(data["help"], str),
                severity=Severity(data["severity"]),
                certainty=Certainty(data["certainty"]),
                cell=None if data["cell"] is None else _typed(data["cell"], int),
                fix=None if fix is None else Fix(
                    description=_typed(fix["description"], str),
                    edits=tuple(
                        Edit(Span(*(_typed(e[k], int) for k in ("line", "column", "end_line", "end_column"))),
                             _typed(e["content"], str))
                        for e in _typed(fix["edits"], list)
                    ),
                    applicability=Applicability(fix["applicability"]),
                    codemod=_codemod(fix.get("codemod")),
                ),
                related=tuple(RelatedLocation(_typed(r["path"], str), _span(r), _typed(r["message"], str))
                              for r in _typed(data.get("related", []), list)),
                assumptions=tuple(_typed(a, str) for a in _typed(data.get("assumptions", []), list)),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"not a diagnostic: {exc}") from exc


def made_possible(d: Diagnostic, assumption: str) -> Diagnostic:
    """The finding resting on one more assumption, said in words: `possible`, and its fix, if any, no longer safe (a
    safe fix is offered only on a certain finding)."""
    fix = replace(d.fix, applicability=Applicability.UNSAFE) if d.fix is not None else None
    return replace(d, certainty=Certainty.POSSIBLE, fix=fix, assumptions=tuple(sorted({*d.assumptions, assumption})))


def split_by_certainty(diagnostics: Iterable[Diagnostic], show_possible: bool) -> tuple[list[Diagnostic], int]:
    """The diagnostics to show (certain ones, and possible ones when `show_possible`), and how many
    possible ones were left out. A file that could not be analysed is always shown."""
    shown: list[Diagnostic] = []
    hidden = 0
    for d in diagnostics:
        if d.possible and not show_possible:
            hidden += 1
        else:
            shown.append(d)
    return shown, hidden


def _span(data: Any) -> Span:
    return Span(*(_typed(data[k], int) for k in ("line", "column", "end_line", "end_column")))


def _codemod(data: Any) -> Codemod | None:
    if data is None:
        return None
    args = _typed(data["args"], dict)
    return Codemod(
        kind=_typed(data["kind"], str),
        spans=tuple(_span(s) for s in _typed(data["spans"], list)),
        args=tuple((_typed(k, str), _typed(v, str)) for k, v in args.items()),
    )


def _typed(value: Any, kind: type) -> Any:
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise ValueError(f"expected {kind.__name__}, got {type(value).__name__}")
    return value
