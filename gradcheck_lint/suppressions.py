"""Suppression comments: `# gradlint: ignore[GL003]`, `# gradlint: file-ignore[GL005]`, `# noqa: GL003`.

Comments are read with `tokenize`, so text inside a string literal is never taken for a directive.
A line directive covers diagnostics on its own line and on the statement that starts on its line
(the innermost statement, as `ast` spans it). GL000 is never suppressed. A bare `# noqa` (no codes)
suppresses every code on its line, as it does in flake8 and ruff; a `# noqa:` listing only other tools'
codes suppresses nothing of gradlint's. The catalogue codes of this module: GL100 (a directive, or a code in it,
that suppressed nothing) and GL101 (a directive that names no code).
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from .diagnostics import Diagnostic, Severity, Span
from .registry import PARSE_ERROR_CODE, Invalid, SuppressionRule, catalogue, register

Kind = Literal["ignore", "file-ignore", "noqa"]

# Cheap textual test before tokenizing: no directive can exist without one of these words.
# A file worth tokenizing for its comments: one mentions gradlint, or a noqa lists one of its codes.
_MAYBE = re.compile(r"#\s*gradlint|#\s*noqa\s*:[^\n]*GL\d|#\s*noqa(?![\w-])(?!\s*:)", re.I)
_GRADLINT = re.compile(
    r"#\s*gradlint\s*:\s*(?P<kind>file-ignore|ignore)(?![\w-])(?:\s*\[(?P<codes>[^\]\n]*)\])?", re.I
)
_NOQA = re.compile(r"#\s*noqa\s*:\s*(?P<codes>[A-Z]+[0-9]+(?:[\s,]+[A-Z]+[0-9]+)*)", re.I)
# flake8's and ruff's blanket form: the word noqa with no colon after it (a colon starts a list of codes).
_BARE_NOQA = re.compile(r"#\s*noqa(?![\w-])(?!\s*:)", re.I)
_SEPARATORS = re.compile(r"[\s,]+")
_OWN_CODE = re.compile(r"GL\d*", re.I)
_EXAMPLE_CODE = "GL001"


@register
class UnusedSuppression(SuppressionRule):
    code = "GL100"
    name = "unused-suppression"
    summary = "A suppression comment, or one code in it, suppresses nothing (off by default)."
    severity = Severity.WARNING
    default_enabled = False

    VALID = (
        """
import torch
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for x in torch.randn(8, 4).split(2):
    model(x).sum().backward()
    opt.step()  # gradlint: ignore[GL001]
""",
        """
import torch
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for x in torch.randn(8, 4).split(2):
    model(x).sum().backward()
    opt.step()  # noqa: E501, GL001
text = "# gradlint: ignore[GL003]"
""",
    )
    INVALID = (
        Invalid(
            """
import torch
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for x in torch.randn(8, 4).split(2):
    opt.zero_grad()
    model(x).sum().backward()
    opt.step()  # gradlint: ignore[GL001]
""",
            line=8,
        ),
        Invalid(
            """
import torch
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for x in torch.randn(8, 4).split(2):
    model(x).sum().backward()
    opt.step()  # noqa: E501, GL001, GL003
""",
            line=7,
        ),
    )


@register
class BlanketSuppression(SuppressionRule):
    code = "GL101"
    name = "blanket-suppression"
    summary = "A `# gradlint: ignore` or `file-ignore` comment names no code, so it suppresses nothing."
    severity = Severity.WARNING

    VALID = (
        """
import torch
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for x in torch.randn(8, 4).split(2):
    model(x).sum().backward()
    opt.step()  # gradlint: ignore[GL001]  # noqa
""",
    )
    INVALID = (
        Invalid(
            """
# gradlint: file-ignore
import torch
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for x in torch.randn(8, 4).split(2):
    opt.zero_grad()
    model(x).sum().backward()
    opt.step()
""",
            line=2,
        ),
    )


@dataclass(frozen=True, slots=True)
class Directive:
    """One suppression directive inside a comment, as written."""

    kind: Kind
    line: int
    column: int  # 1-based, at the directive's `#`
    end_column: int
    text: str
    codes: tuple[str, ...]  # upper-cased; empty for a blanket directive; only gradlint's codes for noqa
    other_tools: bool = False  # a noqa that also lists other tools' codes

    @property
    def blanket(self) -> bool:
        """A gradlint directive naming no code (reported as GL101; it suppresses nothing)."""
        return not self.codes and self.kind != "noqa"

    @property
    def bare_noqa(self) -> bool:
        """A `# noqa` naming no code: it suppresses every code on its line."""
        return self.kind == "noqa" and not self.codes

    def covers(self, code: str) -> bool:
        """Whether the directive suppresses `code` on its lines (a bare noqa: every code but the reports
        about suppression comments, its own among them)."""
        return code in self.codes or (self.bare_noqa and code not in (UnusedSuppression.code, BlanketSuppression.code))

    def span(self) -> Span:
        return Span(self.line, self.column, self.line, self.end_column)


def find_directives(text: str) -> tuple[Directive, ...]:
    """Return the suppression directives in the comments of `text` (never in its strings)."""
    if not _MAYBE.search(text):
        return ()
    found: list[Directive] = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.COMMENT:
                found.extend(_parse_comment(tok.string, tok.start[0], tok.start[1]))
    except (tokenize.TokenError, SyntaxError):
        pass  # unreachable for text `ast` accepted; keep the directives read so far
    return tuple(found)


def _parse_comment(comment: str, line: int, offset: int) -> Iterable[Directive]:
    for m in _GRADLINT.finditer(comment):
        raw = m.group("codes")
        codes = tuple(c.upper() for c in _SEPARATORS.split(raw) if c) if raw is not None else ()
        kind: Kind = "file-ignore" if m.group("kind").lower() == "file-ignore" else "ignore"
        yield Directive(kind, line, offset + m.start() + 1, offset + m.end() + 1, m.group(0), codes)
    for m in _NOQA.finditer(comment):
        listed = [c.upper() for c in _SEPARATORS.split(m.group("codes")) if c]
        own = tuple(c for c in listed if _OWN_CODE.fullmatch(c))
        if own:
            yield Directive("noqa", line, offset + m.start() + 1, offset + m.end() + 1, m.group(0), own,
                            other_tools=len(own) < len(listed))
    for m in _BARE_NOQA.finditer(comment):
        yield Directive("noqa", line, offset + m.start() + 1, offset + m.end() + 1, m.group(0), ())


def statement_starts(tree: ast.AST) -> dict[int, int]:
    """Map each line inside a statement to the first line of the innermost statement holding it."""
    starts: dict[int, int] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.stmt):
            first = node.lineno
            for line in range(first, (node.end_lineno or first) + 1):
                if starts.get(line, 0) < first:
                    starts[line] = first
    return starts


class _Index:
    """The directives of one file, looked up by line and by code, with their uses recorded."""

    def __init__(self, directives: Sequence[Directive], tree: Callable[[], ast.AST | None]) -> None:
        self.directives = directives
        self.used: set[tuple[int, str]] = set()
        self.by_line: dict[int, list[int]] = {}
        self.file_wide: list[int] = []
        self._tree = tree
        self._starts: dict[int, int] | None = None
        for i, d in enumerate(directives):
            if d.kind == "file-ignore":
                self.file_wide.append(i)
            else:
                self.by_line.setdefault(d.line, []).append(i)

    def scope_lines(self, line: int) -> set[int]:
        """The lines whose directives cover a diagnostic on `line`: its own and its statement's first."""
        if self._starts is None:
            tree = self._tree()  # parsed on first need: most files have no directive on a reported line
            self._starts = statement_starts(tree) if tree is not None else {}
        return {line, self._starts.get(line, line)}

    def suppressed(self, d: Diagnostic) -> bool:
        """Whether a directive covers `d`; record every directive that does."""
        return self.covers(d.code, d.line)

    def covers(self, code: str, line: int) -> bool:
        """Whether a directive covers a diagnostic of `code` on `line`; record every directive that does."""
        if code == PARSE_ERROR_CODE:
            return False
        hits = [i for i in self.file_wide if code in self.directives[i].codes]
        if self.by_line:
            for scope in self.scope_lines(line):
                hits.extend(i for i in self.by_line.get(scope, ()) if self.directives[i].covers(code))
        self.used.update((i, code) for i in hits)
        return bool(hits)

    def keep(self, diagnostics: Iterable[Diagnostic]) -> list[Diagnostic]:
        return [d for d in diagnostics if not self.suppressed(d)]


def suppression_test(text: str, tree: Callable[[], ast.AST | None]) -> Callable[[str, int], bool] | None:
    """Whether the directives of `text` cover a diagnostic of a code on a line (the runtime guard's
    findings, which are not `Diagnostic`s), as `apply_suppressions` decides; None when `text` has none.
    `tree` returns the file's CPython tree (or None), and is called only if statement ranges are needed."""
    directives = find_directives(text)
    return _Index(directives, tree).covers if directives else None


def apply_suppressions(
    diagnostics: Sequence[Diagnostic], text: str, tree: Callable[[], ast.AST | None], path: str, enabled: frozenset[str]
) -> list[Diagnostic]:
    """Drop the diagnostics suppression comments cover; add GL101 for blanket directives and GL100 for unused ones.

    `diagnostics` should hold every analysis code when GL100 is enabled, so that a suppression of a
    code left out of the selection is judged by whether that rule fires, not reported as unused.
    `tree` returns the file's CPython tree (or None), and is called only if statement ranges are needed.
    The result still holds codes outside `enabled`; the caller filters.
    """
    directives = find_directives(text)
    if not directives:
        return list(diagnostics)
    index = _Index(directives, tree)
    kept = index.keep(diagnostics)
    visible = [d for d in kept if d.code in enabled]
    kept += index.keep(_blanket(d, path, index, visible) for d in directives if d.blanket)
    if UnusedSuppression.code in enabled:
        kept += index.keep(_unused(directives, index.used, path))
    return kept


def _blanket(directive: Directive, path: str, index: _Index, visible: Sequence[Diagnostic]) -> Diagnostic:
    if directive.kind == "file-ignore":
        covered = sorted({d.code for d in visible})
        scope = "every line of the file"
    else:
        covered = sorted({d.code for d in visible if directive.line in index.scope_lines(d.line)})
        scope = "its line"
    written = f"# gradlint: {directive.kind}[{', '.join(covered or [_EXAMPLE_CODE])}]"
    if covered:
        help_ = f"name the codes it is meant for: `{written}` ({', '.join(covered)} reported here)."
    else:
        help_ = f"name the codes it is meant for, for example `{written}`; `gradlint rule` lists them."
    return Diagnostic(
        path=path,
        span=directive.span(),
        code=BlanketSuppression.code,
        name=BlanketSuppression.name,
        message=(f"`{directive.text.strip()}` names no code, so it suppresses nothing: gradlint has no blanket "
                 f"suppression, which would also hide every future bug on {scope}."),
        help=help_,
        severity=BlanketSuppression.severity,
    )


def _unused(directives: Sequence[Directive], used: set[tuple[int, str]], path: str) -> Iterable[Diagnostic]:
    known = set(catalogue())
    for i, d in enumerate(directives):
        if d.bare_noqa:
            if not any(j == i for j, _ in used):
                yield _unused_bare_noqa(d, path)
            continue
        unused = [c for c in dict.fromkeys(d.codes) if (i, c) not in used and c != UnusedSuppression.code]
        if not unused:
            continue
        whole = len(unused) == len(set(d.codes)) and not d.other_tools
        subject = f"`{d.text.strip()}`" if whole else f"{_codes(unused)} in `{d.text.strip()}`"
        scope = "in this file" if d.kind == "file-ignore" else "on this line or on the statement it starts"
        reasons = []
        plain = [c for c in unused if c in known]
        unknown = [c for c in unused if c not in known and c != PARSE_ERROR_CODE]
        if plain:
            reasons.append(f"no {' or '.join(plain)} diagnostic is reported {scope}")
        if unknown:
            reasons.append(f"{_codes(unknown)} {'is' if len(unknown) == 1 else 'are'} not a gradlint code")
        if PARSE_ERROR_CODE in unused:
            reasons.append(f"{PARSE_ERROR_CODE} cannot be suppressed (a file that cannot be analysed is always reported)")
        if whole:
            help_ = "remove the comment."
        elif d.other_tools and len(unused) == len(set(d.codes)):
            help_ = f"remove {_codes(unused)} from the comment; keep the other tools' codes."
        else:
            help_ = f"remove {_codes(unused)} from the comment."
        yield Diagnostic(
            path=path,
            span=d.span(),
            code=UnusedSuppression.code,
            name=UnusedSuppression.name,
            message=f"{subject} suppresses nothing: {'; '.join(reasons)}.",
            help=help_,
            severity=UnusedSuppression.severity,
        )


def _unused_bare_noqa(d: Directive, path: str) -> Diagnostic:
    return Diagnostic(
        path=path,
        span=d.span(),
        code=UnusedSuppression.code,
        name=UnusedSuppression.name,
        message=(f"`{d.text.strip()}` suppresses nothing: no gradlint diagnostic is reported on this line or on the "
                 "statement it starts, and a bare `# noqa` would hide every future one there."),
        help="remove the comment, or, if it is meant for another tool, name that tool's codes (`# noqa: E501`).",
        severity=UnusedSuppression.severity,
    )


def _codes(codes: Sequence[str]) -> str:
    return ", ".join(f"`{c}`" for c in codes)
