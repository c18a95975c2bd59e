"""`gradlint --add-noqa`: write a `# gradlint: ignore[GLxxx]` comment on the line of every current finding.

This is how a linter is adopted on a codebase that already has findings: every one is suppressed where it
stands, with the project's own directive (see `suppressions.py`), and only new code is held to the rules.
A line that already carries a `# gradlint: ignore[...]` gets the new codes added to it. The comment goes
on the line the diagnostic is reported on; when that line ends inside a multi-line string or with a
backslash, it goes on the first line of the statement holding it (the directive covers that statement
too); when neither can carry a comment the finding is left as it is and counted. GL000 (a file that could
not be analysed) cannot be suppressed. A notebook gets its comments in its code cells, and is written
back only when the JSON it holds is the form Jupyter writes (one-space indentation), read back
unchanged: anything else is left as it is and said so.
"""

from __future__ import annotations

import io
import json
import os
import re
import tokenize
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from .api import check_paths
from .cache import ResultCache
from .config import Settings
from .diagnostics import NOTICE_CODE, Diagnostic, Edit, Span
from .fixes import FileResult, apply_edits, read_rewritable, write_fixed
from .notebooks import is_notebook
from .output import write_bytes_atomic
from .registry import PARSE_ERROR_CODE
from .sources import read_bytes
from .suppressions import find_directives, statement_starts

__all__ = ["NoqaPlan", "add_noqa_paths", "directive_edits", "plan_noqa"]

# GL100 and GL101 are about suppression comments themselves: suppressing them by another one would hide
# a stale or blanket comment behind a second comment.
_NOT_SUPPRESSIBLE = frozenset({PARSE_ERROR_CODE, NOTICE_CODE, "GL100", "GL101"})  # a notice names what was not analysed


@dataclass(frozen=True, slots=True)
class NoqaPlan:
    """The comment edits for one text, and the diagnostics that no comment could cover."""

    edits: tuple[Edit, ...]
    suppressed: int  # diagnostics that the edits cover
    left: tuple[Diagnostic, ...]  # diagnostics left unsuppressed (GL000, no line could carry a comment)


def plan_noqa(text: str, diagnostics: Iterable[Diagnostic]) -> NoqaPlan:
    """The edits that suppress `diagnostics` (of the newline-normalised `text`) with line comments."""
    wanted = [d for d in diagnostics if d.cell is None]
    left = [d for d in wanted if d.code in _NOT_SUPPRESSIBLE]
    wanted = [d for d in wanted if d.code not in _NOT_SUPPRESSIBLE]
    if not wanted:
        return NoqaPlan((), 0, tuple(left))
    lines = text.split("\n")
    blocked = _lines_without_comments(text)
    starts: dict[int, int] | None = None
    per_line: dict[int, list[str]] = {}
    for d in wanted:
        line = d.line
        if line in blocked or not 1 <= line <= len(lines):
            if starts is None:
                starts = _statement_starts(text)
            line = starts.get(d.line, d.line)
        if line in blocked or not 1 <= line <= len(lines):
            left.append(d)
            continue
        per_line.setdefault(line, []).append(d.code)
    edits = tuple(e for line, codes in sorted(per_line.items()) for e in directive_edits(text, lines, line, codes))
    return NoqaPlan(edits, sum(len(codes) for codes in per_line.values()), tuple(left))


def directive_edits(text: str, lines: Sequence[str], line: int, codes: Iterable[str]) -> list[Edit]:
    """The edit writing `codes` into a `# gradlint: ignore[...]` on `line`: extending the one already there,
    or appending a new one at the end of the line."""
    existing = [d for d in find_directives(text) if d.line == line and d.kind == "ignore"]
    if existing:
        directive = existing[0]
        merged = sorted({*directive.codes, *codes})
        return [Edit(directive.span(), f"# gradlint: ignore[{', '.join(merged)}]")]
    content = lines[line - 1]
    end = len(content.rstrip()) + 1
    return [Edit(Span(line, end, line, len(content) + 1), f"  # gradlint: ignore[{', '.join(sorted(set(codes)))}]")]


def _lines_without_comments(text: str) -> set[int]:
    """Lines whose end lies inside a multi-line token (a triple-quoted string) or that end with a backslash:
    a comment appended there would change the program or be no comment at all."""
    blocked: set[int] = set()
    for number, content in enumerate(text.split("\n"), 1):
        if content.rstrip().endswith("\\"):
            blocked.add(number)
    open_fstrings: list[int] = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            name = tokenize.tok_name.get(tok.type, "")
            if name == "FSTRING_START":
                open_fstrings.append(tok.start[0])
            elif name == "FSTRING_END" and open_fstrings:
                blocked.update(range(open_fstrings.pop(), tok.end[0]))
            elif tok.start[0] != tok.end[0] and tok.type not in (tokenize.NL, tokenize.NEWLINE):
                blocked.update(range(tok.start[0], tok.end[0]))
    except (tokenize.TokenError, SyntaxError):
        pass  # the file was analysed, so it tokenizes; keep what was read
    return blocked


def _statement_starts(text: str) -> dict[int, int]:
    from .sources import parse_python

    try:
        return statement_starts(parse_python(text))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return {}


@dataclass(frozen=True, slots=True)
class NoqaReport:
    """What `--add-noqa` did: comments added, files written, findings left as they were, writes that failed."""

    added: int
    files: int
    left: tuple[Diagnostic, ...]
    failed: tuple[tuple[str, str], ...]  # (path, why)

    def why_left(self, d: Diagnostic) -> str:
        if d.code == PARSE_ERROR_CODE:
            return "a file that could not be analysed cannot be suppressed"
        if d.code == NOTICE_CODE:
            return "a notice of what the analysis left out is no finding: nothing to suppress"
        if d.code in _NOT_SUPPRESSIBLE:
            return f"{d.code} is about a suppression comment: edit that comment"
        if is_notebook(d.path):
            return "the notebook is not in the JSON form Jupyter writes, or no line of its statement can carry a comment"
        return "no line of its statement can carry a comment, or the file cannot be rewritten byte for byte"

    @property
    def exit_code(self) -> int:
        """0: every finding suppressed; 1: some could not be; 2: a file could not be analysed or written."""
        if self.failed or any(d.code == PARSE_ERROR_CODE for d in self.left):
            return 2
        return 1 if any(d.code != NOTICE_CODE for d in self.left) else 0


def add_noqa_paths(paths: list[str], settings: Settings, cache: ResultCache | None, jobs: int) -> NoqaReport:
    """`gradlint --add-noqa`: check the paths and write a suppression comment for every finding."""
    diagnostics, _ = check_paths(paths, settings, jobs=jobs, cache=cache)
    diagnostics = [d for d in diagnostics if d.code != NOTICE_CODE]  # what was not analysed: no finding to suppress
    by_path: dict[str, list[Diagnostic]] = {}
    for d in diagnostics:
        by_path.setdefault(d.path, []).append(d)
    added = files = 0
    left: list[Diagnostic] = []
    failed: list[tuple[str, str]] = []
    for path, found in by_path.items():
        if is_notebook(path):
            done = _notebook(path, found)
            if done is None:
                left.extend(found)
                continue
            data, plan_left, suppressed = done
            left.extend(plan_left)
            if suppressed:
                try:
                    write_bytes_atomic(os.path.realpath(path), data, suffix=".gradlint-tmp")
                except OSError as exc:
                    failed.append((path, str(exc)))
                    continue
                added += suppressed
                files += 1
            continue
        rewritable, linted = read_rewritable(path)
        if rewritable is None or linted is None:
            left.extend(found)
            continue
        plan = plan_noqa(linted, found)
        left.extend(plan.left)
        if not plan.edits:
            continue
        text = apply_edits(rewritable.raw, plan.edits)
        try:
            write_fixed(FileResult(path, rewritable.raw, text, plan.suppressed, (), (), rewritable.encoding,
                                   rewritable.bom, rewritable.data))
        except OSError as exc:
            failed.append((path, str(exc)))
            continue
        added += plan.suppressed
        files += 1
    return NoqaReport(added, files, tuple(left), tuple(failed))


_MAGIC = re.compile(r"^[ \t]*[%!]|\?[ \t]*$")


def _notebook(path: str, found: list[Diagnostic]) -> tuple[bytes, list[Diagnostic], int] | None:
    """The notebook's new bytes with comments in its code cells, the findings left, how many were suppressed;
    None when it cannot be rewritten exactly."""
    data = read_bytes(path)
    if isinstance(data, str):
        return None
    try:
        text = data.decode("utf-8")
        notebook = json.loads(text)
        cells = notebook["cells"]
    except (UnicodeDecodeError, ValueError, KeyError, TypeError):
        return None
    ascii_only = next((flag for flag in (False, True) if json.dumps(notebook, indent=1, ensure_ascii=flag) + "\n" == text), None)
    if ascii_only is None:
        return None  # not Jupyter's own layout: a rewrite would change more than the comments
    left: list[Diagnostic] = []
    suppressed = 0
    by_cell: dict[int, list[Diagnostic]] = {}
    for d in found:
        if d.cell is None or not 1 <= d.cell <= len(cells) or not isinstance(cells[d.cell - 1], dict):
            left.append(d)
        else:
            by_cell.setdefault(d.cell, []).append(d)
    for index, wanted in by_cell.items():
        cell = cells[index - 1]
        source = cell.get("source")
        joined = "".join(source) if isinstance(source, list) else source
        if not isinstance(joined, str) or "\r" in joined:
            left.extend(wanted)
            continue
        # Magics and shell lines are not Python: blank them for reading where comments may go.
        readable = "\n".join("" if _MAGIC.search(line) else line for line in joined.split("\n"))
        plan = plan_noqa(readable, [replace(d, cell=None) for d in wanted])
        left.extend(plan.left)
        if not plan.edits:
            continue
        new = apply_edits(joined, plan.edits)
        cell["source"] = new.splitlines(keepends=True) if isinstance(source, list) else new
        suppressed += plan.suppressed
    return (json.dumps(notebook, indent=1, ensure_ascii=ascii_only) + "\n").encode("utf-8"), left, suppressed
