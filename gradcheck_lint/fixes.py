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
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from .api import check_file, check_source
from .cache import ResultCache, file_key
from .config import Settings
from .diagnostics import Diagnostic, Edit, Fix
from .discovery import iter_python_files
from .engine import unanalysable
from .notebooks import is_notebook
from .output import write_bytes_atomic
from .registry import PARSE_ERROR_CODE
from .runner import lint_each_file
from .sources import read_bytes, read_source

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


def _codemods():
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
    return [d.fix for d in select_fixed(diagnostics, unsafe) if d.fix is not None]


def select_fixed(diagnostics: Iterable[Diagnostic], unsafe: bool) -> list[Diagnostic]:
    """The diagnostics whose fixes `select_fixes` picks (one per fix), in file order."""
    chosen: list[Diagnostic] = []
    fixes: list[Fix] = []
    taken: list[Edit] = []
    for d in sorted(diagnostics, key=Diagnostic.sort_key):
        fix = d.fix
        if fix is None or not fix.edits or not fix.applies(unsafe) or fix in fixes:
            continue
        if any(_overlaps(e, t) for e in fix.edits for t in taken):
            continue
        chosen.append(d)
        fixes.append(fix)
        taken.extend(fix.edits)
    return chosen


FindingKey = tuple[str, str]


def finding_key(d: Diagnostic, lines: Sequence[str]) -> FindingKey:
    """What identifies a finding across an edit elsewhere in its file: its code and the text of its line,
    whitespace-trimmed (line numbers move when a fix inserts or deletes lines above it)."""
    text = lines[d.line - 1].strip() if 1 <= d.line <= len(lines) else ""
    return d.code, text


def _counts(diagnostics: Iterable[Diagnostic], lines: Sequence[str]) -> dict[FindingKey, int]:
    out: dict[FindingKey, int] = {}
    for d in diagnostics:
        key = finding_key(d, lines)
        out[key] = out.get(key, 0) + 1
    return out


def _unremoved(applied: Sequence[Diagnostic], before: Sequence[Diagnostic], before_text: str,
               after: Sequence[Diagnostic], after_text: str) -> set[FindingKey]:
    """The keys of the applied fixes' findings that the fixed text still reports as often as before."""
    old_lines, new_lines = normalise(before_text).split("\n"), normalise(after_text).split("\n")
    old, new = _counts(before, old_lines), _counts(after, new_lines)
    return {key for key in (finding_key(d, old_lines) for d in applied) if new.get(key, 0) >= old.get(key, 0)}


def _without_fixes(diagnostics: Iterable[Diagnostic], text: str, keys: set[FindingKey]) -> tuple[Diagnostic, ...]:
    """`diagnostics` with the fixes of findings `keys` dropped: they were tried and did not remove them."""
    if not keys:
        return tuple(diagnostics)
    lines = normalise(text).split("\n")
    return tuple(replace(d, fix=None) if d.fix is not None and finding_key(d, lines) in keys else d for d in diagnostics)


def _parses(text: str) -> bool:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ast.parse(normalise(text))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


def _apply_checked(text: str, chosen: list[Diagnostic]) -> tuple[str, list[Diagnostic]]:
    """Apply the fixes if the text still parses after them, else the first fix that keeps it parsing;
    return the new text and the diagnostics whose fixes went in."""
    for group in ([chosen] if len(chosen) == 1 else [chosen, *([d] for d in chosen)]):
        try:
            candidate = apply_edits(text, [e for d in group for e in (d.fix.edits if d.fix else ())])
        except ValueError:
            continue
        if _parses(candidate):
            return candidate, group
    return text, []


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
        key = lambda d: (d.code, d.line)
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


def fix_source(text: str, path: str, codes: Iterable[str] | None, unsafe: bool, settings: Settings | None = None,
               diagnostics: Sequence[Diagnostic] | None = None) -> FixedSource:
    """Apply fixes to a source text until none applies (at most MAX_PASSES rounds); never raises.

    A fix counts only if it removes its finding: one after which the fixed text still reports that finding
    (same code on the same line text, as often as before) is taken back, and the finding is left without a
    fix in `before` and `after`, so that the listing's `[*]`, `--diff` and `--fix` agree. `diagnostics`, when
    given, are those of `text` under the same settings (the first lint is then skipped).
    """
    selected = list(codes) if codes is not None else None
    found = list(diagnostics) if diagnostics is not None else check_source(normalise(text), path, selected, settings)
    before = tuple(found)
    applied = 0
    if any(d.code == PARSE_ERROR_CODE for d in found):
        return FixedSource(text, 0, before, before)
    seen = {text}
    original = text
    futile: set[FindingKey] = set()  # findings (keys in the original text) whose fix did not remove them
    futile_here: set[FindingKey] = set()  # the same findings, keyed in the current text
    one_at_a_time = False  # safe fixes applied together made a finding appear: apply them one by one
    attempts = 0
    while attempts < MAX_PASSES + len(futile_here):
        attempts += 1
        try:
            found = materialise(text, found, unsafe)
        except CodemodsUnavailable as exc:
            return FixedSource(original, 0, before, before, str(exc))
        lines = normalise(text).split("\n")
        # only the fixes of findings the report shows: possible ones need --show-possible
        shown = found if settings is not None and settings.show_possible else [d for d in found if not d.possible]
        chosen = select_fixed([d for d in shown if finding_key(d, lines) not in futile_here], unsafe)
        if one_at_a_time:
            chosen = chosen[:1]
        if not chosen:
            break
        candidate, group = _apply_checked(text, chosen)
        if not group or candidate in seen:
            break
        relinted = check_source(normalise(candidate), path, selected, settings)
        if any(d.code == PARSE_ERROR_CODE for d in relinted):
            break  # the fixed text could not be analysed: keep the last text that could
        stale = _unremoved(group, found, text, relinted, candidate)
        if not unsafe and not stale and new_findings(found, relinted, normalise(text), normalise(candidate)):
            # a safe fix never makes a finding appear (a GAN's clear moved where another model's loss now
            # leaks into it): several at once are tried one at a time; one alone is taken back
            if len(group) > 1:
                one_at_a_time = True
                continue
            stale = _keys(group, text)
        if stale:
            futile_here |= stale
            futile |= {key for key in stale if key in _keys(before, original)}
            continue  # try again without them
        seen.add(candidate)
        text, found, applied = candidate, relinted, applied + len(group)
    return FixedSource(text, applied, _without_fixes(before, original, futile), _without_fixes(found, text, futile_here))


def _keys(diagnostics: Iterable[Diagnostic], text: str) -> set[FindingKey]:
    lines = normalise(text).split("\n")
    return {finding_key(d, lines) for d in diagnostics}


@dataclass(frozen=True, slots=True)
class Rewritable:
    """A file's text as it holds it (its newlines, no BOM), with what it takes to write it back byte for byte."""

    raw: str
    encoding: str
    bom: bool
    data: bytes


def decode_exactly(data: bytes, linted: str) -> Rewritable | None:
    """The text of `data` if it decodes and re-encodes to the very same bytes and reads as `linted`
    (the newline-normalised text the linter saw); None for anything else (never rewrite it)."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        raw = data.decode(encoding)
    except (SyntaxError, UnicodeDecodeError, LookupError):
        return None
    bom = data.startswith(codecs.BOM_UTF8)
    if raw.startswith("\ufeff"):
        raw = raw[1:]
    if normalise(raw) != linted or _encode(raw, encoding, bom) != data:
        return None
    return Rewritable(raw, encoding, bom, data)


def read_rewritable(path: str) -> tuple[Rewritable | None, str | None]:
    """A file's rewritable text (None when it cannot be rewritten exactly), and the text the linter reads
    (None when it cannot be read: the second item is then the reason)."""
    src = read_source(path)
    if src.text is None:
        return None, None
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError:
        return None, src.text
    return decode_exactly(data, src.text), src.text


def fix_file(path: str, codes: Iterable[str] | None = None, unsafe: bool = False, settings: Settings | None = None,
             diagnostics: Sequence[Diagnostic] | None = None) -> FileResult:
    """Compute the fixed text of one file without writing it; unreadable or odd files stay untouched.

    Notebooks are checked but never rewritten. `diagnostics`, when given, are the file's current ones.
    """
    selected = list(codes) if codes is not None else None
    if is_notebook(path):
        found = tuple(diagnostics) if diagnostics is not None else tuple(check_file(path, selected, settings))
        return FileResult(path, None, None, 0, found, found)
    rewritable, linted = read_rewritable(path)
    if linted is None:
        bad = (unanalysable(path, read_source(path).error or "cannot be read"),)
        return FileResult(path, None, None, 0, bad, bad)
    if rewritable is None:
        # Not a text whose bytes can be reproduced exactly: report, never rewrite.
        found = tuple(diagnostics) if diagnostics is not None else tuple(check_source(linted, path, selected, settings))
        return FileResult(path, None, None, 0, found, found)
    result = fix_source(rewritable.raw, path, codes, unsafe, settings, diagnostics)
    return FileResult(path, rewritable.raw, result.text, result.applied, result.before, result.after,
                      rewritable.encoding, rewritable.bom, rewritable.data, result.error)


def verify_fixes(diagnostics: Sequence[Diagnostic], unsafe: bool, settings: Settings | None = None,
                 cache: ResultCache | None = None) -> list[Diagnostic]:
    """`diagnostics` with the fixes that would not remove their findings dropped, so that a listing marks
    `[*]` exactly where `--fix` would fix (`--diff` shows the same). Only files with an applicable fix are
    read again and fixed in memory; nothing is written. With a `cache`, the verified result of a file is
    kept under a key of its own (its bytes, path, codes, and whether unsafe fixes count)."""
    chosen = settings or Settings.default()
    by_path: dict[str, list[Diagnostic]] = {}
    for d in diagnostics:
        by_path.setdefault(d.path, []).append(d)
    out: list[Diagnostic] = []
    for path, found in by_path.items():
        if fixable(path, found, unsafe):
            key = None
            if cache is not None:
                data = read_bytes(path)
                if isinstance(data, bytes):
                    key = verified_key(data, path, unsafe, chosen)
            known = cache.get(key) if cache is not None and key is not None else None
            if known is not None and len(known) == len(found):
                found = known
            else:
                verified = verify_file(path, found, unsafe, settings)
                if verified is not None:
                    found = verified
                    if cache is not None and key is not None:
                        cache.put(key, found)
        out.extend(found)
    return out


def fixable(path: str, found: Sequence[Diagnostic], unsafe: bool) -> bool:
    """A file whose findings `verify_fixes` checks: a script with a fix that applies."""
    return not is_notebook(path) and any(d.fix is not None and d.fix.applies(unsafe) for d in found)


def verified_key(data: bytes, path: str, unsafe: bool, settings: Settings) -> str:
    """The cache key of a file's verified findings (a path never holds NUL: no file's own entry has it)."""
    return file_key(data, path, settings, f"\0fixes verified, unsafe={unsafe}")


def verified_entry(unsafe: bool, path: str, data: bytes, found: list[Diagnostic],
                   settings: Settings) -> tuple[str, list[Diagnostic]] | None:
    """What `verify_fixes` would keep in the cache for a file whose bytes are `data` and findings `found`:
    its key and the findings with their fixes verified; None when it would keep nothing (no fix applies).
    A worker calls it right after the file's analysis (`runner.lint_each_file`'s `verify`)."""
    listed = sorted(found, key=Diagnostic.sort_key)  # in the listing's order
    if any(d.path != path for d in listed) or not fixable(path, listed, unsafe):
        return None
    verified = verify_file(path, listed, unsafe, settings)
    return None if verified is None else (verified_key(data, path, unsafe, settings), verified)


def verify_file(path: str, found: Sequence[Diagnostic], unsafe: bool,
                settings: Settings | None) -> list[Diagnostic] | None:
    """`found`, a file's findings in the listing's order, with the fixes that would not remove their findings
    dropped; None when the file could not be fixed in memory (then they stand as they are)."""
    result = fix_file(path, None, unsafe, settings, found)
    return list(result.before) if result.error is None and len(result.before) == len(found) else None


def encode_like(text: str, like: Rewritable) -> bytes | None:
    """`text` encoded as the file it came from was (its encoding and BOM); None if it cannot be."""
    return _encode(text, like.encoding, like.bom)


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
              settings: Settings | None = None, *, jobs: int = 1, cache: ResultCache | None = None) -> list[FileResult]:
    """Compute the fixes of every file under the paths (nothing is written).

    With more than one job or a result cache (and the settings' own codes), the files' current
    diagnostics are found first as a listing finds them (`lint_each_file`: the cache, then a pool of
    processes): only the files with a fix are then analysed again, here, after each fix."""
    selected = list(codes) if codes is not None else None
    files = list(iter_python_files(paths, settings))
    if selected is not None or (jobs <= 1 and cache is None):
        return [fix_file(path, selected, unsafe, settings) for path in files]
    current = lint_each_file(files, settings or Settings.default(), jobs=jobs, cache=cache)
    return [fix_file(path, None, unsafe, settings, found) for path, found in zip(files, current)]
