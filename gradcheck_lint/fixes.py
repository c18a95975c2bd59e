"""Apply fixes: pick non-overlapping edits, apply them, lint again, repeat; write files atomically.

Fixing works on the text as the file holds it (its own newlines, no BOM). Diagnostics are computed on
the newline-normalised text the linter reads; their positions (line, column) are the same in both,
since only the line ends differ. A file is written only when it decodes and re-encodes to the very
same bytes, and the fixed text still parses; anything else leaves it as it was.
"""

from __future__ import annotations

import ast
import codecs
import collections
import difflib
import io
import os
import re
import tokenize
import warnings
from dataclasses import dataclass, replace
from typing import Iterable, Sequence

from .api import check_file, check_source
from .config import Settings
from .diagnostics import Diagnostic, Edit, Fix
from .discovery import iter_python_files
from .engine import unanalysable
from .notebooks import is_notebook
from .output import write_bytes_atomic
from .registry import PARSE_ERROR_CODE
from .sources import read_source

# Each pass applies every fix that does not overlap another; later passes pick up the rest.
MAX_PASSES = 10
_NEWLINE = re.compile(r"\r\n|\r|\n")
_NUMBER = re.compile(r"\d+")
NO_LIBCST = ("the fixes that move or wrap code (GL006, GL007, GL008, GL010) need libcst, which is not installed: "
             "`pip install 'gradcheck-lint[fix]'`; files needing them were left untouched")


class CodemodsUnavailable(Exception):
    """A fix needs libcst and it cannot be imported."""


@dataclass(frozen=True, slots=True)
class FixedSource:
    """The outcome of fixing one text: the new text, how many fixes went in, what remains."""

    text: str
    applied: int
    before: tuple[Diagnostic, ...]
    after: tuple[Diagnostic, ...]
    error: str | None = None  # why nothing was fixed although fixes apply (libcst is missing)


@dataclass(frozen=True, slots=True)
class FileResult:
    """The outcome of fixing one file, before anything is written."""

    path: str
    original: str | None  # the decoded text as read (None: not fixable at all)
    fixed: str | None
    applied: int
    before: tuple[Diagnostic, ...]
    after: tuple[Diagnostic, ...]
    encoding: str = "utf-8"
    bom: bool = False
    data: bytes = b""  # the bytes read, to refuse writing over a file changed meanwhile
    error: str | None = None  # why fixes that apply were not made (the file is left as it was)

    @property
    def changed(self) -> bool:
        """Tell whether fixing changed the text."""
        return self.original is not None and self.fixed is not None and self.fixed != self.original


def split_lines(text: str) -> list[str]:
    """Split on the newlines Python's tokenizer knows (`\\r\\n`, `\\r`, `\\n`), keeping them."""
    out: list[str] = []
    start = 0
    for m in _NEWLINE.finditer(text):
        out.append(text[start:m.end()])
        start = m.end()
    if start < len(text):
        out.append(text[start:])
    return out


def normalise(text: str) -> str:
    """Turn every newline into `\\n`, as the linter reads a file."""
    return text.replace("\r\n", "\n").replace("\r", "\n")


def apply_edits(text: str, edits: Sequence[Edit]) -> str:
    """Apply non-overlapping edits whose positions refer to `text` (inserted newlines follow the file's)."""
    lines = split_lines(text)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    default_nl = next((m.group() for m in _NEWLINE.finditer(text)), "\n")

    def offset(line: int, column: int) -> int:
        if line == len(lines) + 1 and column == 1:
            return len(text)
        if not 1 <= line <= len(lines):
            raise ValueError(f"edit outside the text: line {line}")
        content = lines[line - 1].rstrip("\r\n")
        if not 1 <= column <= len(content) + 1:
            raise ValueError(f"edit outside line {line}: column {column}")
        return starts[line - 1] + column - 1

    placed = []
    for e in edits:
        start, end = offset(e.span.line, e.span.column), offset(e.span.end_line, e.span.end_column)
        if end < start:
            raise ValueError("edit ends before it starts")
        # Inserted lines end like the line they follow (the previous one, for an edit at a line start).
        ref = e.span.line - 1 if e.span.column == 1 and e.span.line > 1 else e.span.line
        at = lines[ref - 1] if ref <= len(lines) else ""
        nl = at[len(at.rstrip("\r\n")):] or default_nl
        placed.append((start, end, e.content.replace("\n", nl)))
    # Right to left, and at one offset a deletion before an insertion, so offsets stay valid.
    out = text
    for start, end, content in sorted(placed, key=lambda p: (p[0], p[1]), reverse=True):
        out = out[:start] + content + out[end:]
    return out


def _overlaps(a: Edit, b: Edit) -> bool:
    sa, sb = a.span, b.span
    a0, a1 = (sa.line, sa.column), (sa.end_line, sa.end_column)
    b0, b1 = (sb.line, sb.column), (sb.end_line, sb.end_column)
    if a0 == a1 or b0 == b1:  # an insertion clashes with an edit at or around the same place
        return a0 <= b1 and b0 <= a1 if (a0 == a1) != (b0 == b1) else a0 == b0
    return a0 < b1 and b0 < a1


def _codemods():  # type: ignore[no-untyped-def]
    """Import the codemod module (and libcst) on first use."""
    try:
        from . import codemods
    except ImportError as exc:
        raise CodemodsUnavailable(NO_LIBCST) from exc
    return codemods


def materialise(text: str, diagnostics: Iterable[Diagnostic], unsafe: bool) -> list[Diagnostic]:
    """Give each applicable codemod fix the edits it makes to `text`; drop the fix if it does not fit.

    Raises:
        CodemodsUnavailable: a codemod fix applies and libcst cannot be imported.
    """
    out = []
    normalised: str | None = None
    for d in diagnostics:
        fix = d.fix
        if fix is not None and fix.codemod is not None and not fix.edits and fix.applies(unsafe):
            module = _codemods()
            normalised = normalise(text) if normalised is None else normalised
            edits = module.edits(normalised, fix.codemod)
            d = replace(d, fix=replace(fix, edits=edits) if edits else None)
        out.append(d)
    return out


def select_fixes(diagnostics: Iterable[Diagnostic], unsafe: bool) -> list[Fix]:
    """Pick the applicable fixes in file order, leaving out any that overlaps one already taken."""
    chosen: list[Fix] = []
    taken: list[Edit] = []
    for d in sorted(diagnostics, key=Diagnostic.sort_key):
        fix = d.fix
        if fix is None or not fix.edits or not fix.applies(unsafe) or fix in chosen:
            continue
        if any(_overlaps(e, t) for e in fix.edits for t in taken):
            continue
        chosen.append(fix)
        taken.extend(fix.edits)
    return chosen


def _parses(text: str) -> bool:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ast.parse(normalise(text))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


def _apply_checked(text: str, fixes: list[Fix]) -> tuple[str, int]:
    """Apply the fixes if the text still parses after them, else the first fix that keeps it parsing."""
    for group in ([fixes] if len(fixes) == 1 else [fixes, *([f] for f in fixes)]):
        try:
            candidate = apply_edits(text, [e for f in group for e in f.edits])
        except ValueError:
            continue
        if _parses(candidate):
            return candidate, len(group)
    return text, 0


def _shape(d: Diagnostic) -> tuple[str, str]:
    """What a finding says, without its positions (fixing moves lines): code and message, numbers masked."""
    return d.code, _NUMBER.sub("#", d.message)


def new_findings(before: Iterable[Diagnostic], after: Iterable[Diagnostic], old_text: str | None = None,
                 new_text: str | None = None) -> list[Diagnostic]:
    """The findings of `after` that `before` did not have. With both texts, a finding is old when one of
    its code stood on the line it came from (lines mapped through the edit: a fix rewrites text other
    messages quote, `(loss / N).backward()`); without them, by code and wording (numbers masked)."""
    if old_text is not None and new_text is not None:
        moved = _line_map(old_text, new_text)
        left = collections.Counter((d.code, moved.get(d.line, d.line)) for d in before)
        key = lambda d: (d.code, d.line)  # noqa: E731
    else:
        left = collections.Counter(_shape(d) for d in before)
        key = _shape
    out = []
    for d in after:
        if left[key(d)] > 0:
            left[key(d)] -= 1
        else:
            out.append(d)
    return out


def _line_map(old_text: str, new_text: str) -> dict[int, int]:
    """1-based old line -> new line, for the lines an edit kept or rewrote in place."""
    a, b = old_text.splitlines(), new_text.splitlines()
    out: dict[int, int] = {}
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal" or (tag == "replace" and i2 - i1 == j2 - j1):
            for k in range(i2 - i1):
                out[i1 + k + 1] = j1 + k + 1
    return out


def _apply_without_new_findings(text: str, fixes: list[Fix], before: Sequence[Diagnostic], path: str,
                                selected: list[str] | None, settings: Settings | None) -> tuple[str, int, list[Diagnostic]] | None:
    """Safe fixes never make a finding appear: apply them together if gradlint reports nothing new on the
    result, else each one alone that keeps it so (a GAN's clear moved where another model's loss now
    leaks into it); None when none can go in."""
    for group in ([fixes] if len(fixes) == 1 else [fixes, *([f] for f in fixes)]):
        candidate, count = _apply_checked(text, group)
        if count != len(group):
            continue
        relinted = check_source(normalise(candidate), path, selected, settings)
        if any(d.code == PARSE_ERROR_CODE for d in relinted) or new_findings(before, relinted, normalise(text), normalise(candidate)):
            continue
        return candidate, count, relinted
    return None


def fix_source(text: str, path: str, codes: Iterable[str] | None, unsafe: bool, settings: Settings | None = None) -> FixedSource:
    """Apply fixes to a source text until none applies (at most MAX_PASSES rounds); never raises."""
    selected = list(codes) if codes is not None else None
    diagnostics = check_source(normalise(text), path, selected, settings)
    before = tuple(diagnostics)
    applied = 0
    if any(d.code == PARSE_ERROR_CODE for d in diagnostics):
        return FixedSource(text, 0, before, before)
    seen = {text}
    original = text
    for _ in range(MAX_PASSES):
        try:
            diagnostics = materialise(text, diagnostics, unsafe)
        except CodemodsUnavailable as exc:
            return FixedSource(original, 0, before, before, str(exc))
        # only the fixes of findings the report shows: possible ones need --show-possible
        shown = diagnostics if settings is not None and settings.show_possible else [d for d in diagnostics if not d.possible]
        fixes = select_fixes(shown, unsafe)
        if not fixes:
            break
        if not unsafe:
            checked = _apply_without_new_findings(text, fixes, diagnostics, path, selected, settings)
            if checked is None or checked[0] in seen:
                break
            seen.add(checked[0])
            text, diagnostics, applied = checked[0], checked[2], applied + checked[1]
            continue
        candidate, count = _apply_checked(text, fixes)
        if count == 0 or candidate in seen:
            break
        relinted = check_source(normalise(candidate), path, selected, settings)
        if any(d.code == PARSE_ERROR_CODE for d in relinted):
            break  # the fixed text could not be analysed: keep the last text that could
        seen.add(candidate)
        text, diagnostics, applied = candidate, relinted, applied + count
    return FixedSource(text, applied, before, tuple(diagnostics))


def fix_file(path: str, codes: Iterable[str] | None = None, unsafe: bool = False, settings: Settings | None = None) -> FileResult:
    """Compute the fixed text of one file without writing it; unreadable or odd files stay untouched.

    Notebooks are checked but never rewritten.
    """
    if is_notebook(path):
        found = tuple(check_file(path, list(codes) if codes is not None else None, settings))
        return FileResult(path, None, None, 0, found, found)
    src = read_source(path)
    if src.text is None:
        bad = (unanalysable(path, src.error or "cannot be read"),)
        return FileResult(path, None, None, 0, bad, bad)
    try:
        with open(path, "rb") as fh:
            data = fh.read()
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        raw = data.decode(encoding)
    except (OSError, SyntaxError, UnicodeDecodeError, LookupError):
        raw, encoding, data = None, "utf-8", b""
    bom = data.startswith(codecs.BOM_UTF8)
    if raw is not None and raw.startswith("\ufeff"):
        raw = raw[1:]
    if raw is None or normalise(raw) != src.text or _encode(raw, encoding, bom) != data:
        # Not a text whose bytes can be reproduced exactly: report, never rewrite.
        found = tuple(check_source(src.text, path, list(codes) if codes is not None else None, settings))
        return FileResult(path, None, None, 0, found, found)
    result = fix_source(raw, path, codes, unsafe, settings)
    return FileResult(path, raw, result.text, result.applied, result.before, result.after, encoding, bom, data, result.error)


def _encode(text: str, encoding: str, bom: bool) -> bytes | None:
    try:
        body = text.encode(encoding)
    except (UnicodeEncodeError, LookupError):
        return None
    if bom and not body.startswith(codecs.BOM_UTF8):
        body = codecs.BOM_UTF8 + body
    return body


def write_fixed(result: FileResult) -> None:
    """Write a fixed file atomically (temp file in its directory, then `os.replace`), keeping its mode.

    Raises:
        OSError: the file changed since it was read, or could not be written; it is left as it was.
    """
    if not result.changed or result.fixed is None:
        return
    data = _encode(result.fixed, result.encoding, result.bom)
    if data is None:
        raise OSError(f"{result.path}: the fixed text cannot be encoded as {result.encoding}")
    target = os.path.realpath(result.path)  # write through a symlink, do not replace it
    with open(target, "rb") as fh:
        if fh.read() != result.data:
            raise OSError(f"{result.path} changed while it was being fixed; it was not written")
    write_bytes_atomic(target, data, suffix=".gradlint-tmp")


def unified_diff(result: FileResult) -> str:
    """Return the unified diff from the file as read to the fixed text (`patch -p0` applies it)."""
    if not result.changed or result.original is None or result.fixed is None:
        return ""
    bom = "\ufeff" if result.bom else ""
    old, new = split_lines(bom + result.original), split_lines(bom + result.fixed)
    out: list[str] = []
    for line in difflib.unified_diff(old, new, fromfile=result.path, tofile=result.path):
        if line.startswith(("---", "+++")):
            out.append(line.rstrip("\r\n") + "\n")
        elif line.endswith(("\n", "\r")):
            out.append(line)
        else:
            out.append(line + "\n\\ No newline at end of file\n")
    return "".join(out)


def fix_paths(paths: list[str], codes: Iterable[str] | None = None, unsafe: bool = False,
              settings: Settings | None = None) -> list[FileResult]:
    """Compute the fixes of every file under the paths (nothing is written)."""
    selected = list(codes) if codes is not None else None
    return [fix_file(path, selected, unsafe, settings) for path in iter_python_files(paths, settings)]
