"""A finding of one file settled by the files that call it: one report per bug, where the bug is.

A training step written as a function (`def train_one_epoch(model, optimizer, loader)`) is read, in its
own file, with its parameters unknown: the optimizer handed in could be a wrapper whose `step()` clears
gradients, the caller could clear them between calls. A finding there rests on that assumption and is
`possible`. The file that calls it (`train_one_epoch(model, torch.optim.SGD(...), loader)` in `main.py`)
is read with the callee followed (`project.context`): there the same bug is proven from read facts, and
reported at the call, naming the callee's line.

Both views are about one bug. When the callee's finding stands on its own code (its loop, its window),
the bug and its fix are in the callee. So, over the project:
- the callee's `possible` finding becomes `certain` when a caller's analysis proves the same code at the
  same line (the caller's finding names it as its innermost evidence); its message is the proven one,
  said from the callee's file, and it names the call that proves it (a related location);
- the caller's finding is then not reported again at the call (nor a possible one the callee reports too).
A callee's finding that assumed its calling context (a step function taken to run once per batch: the
loop is the caller's) is left as it is: the caller's report, at the call in its loop, is the one that
stands. The two decisions read the same pairs, so a bug is reported once whichever files are checked (the
pre-commit hook passes only changed files). Callers are found by reading the project's files for the
callee module's name and one of its top-level names (at most `MAX_CALLERS` of them, in a fixed order),
then analysing them; every analysis is kept per file content for the process.
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import os
import re
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from typing import Protocol

from ..analysis.provenance import Assumption
from ..diagnostics import Certainty, Diagnostic, RelatedLocation, Span
from ..sources import read_bytes
from .index import ProjectIndex


class FileReport(Protocol):
    """What the analysis of one file gives (`engine.FileReport`, a frozen dataclass)."""

    @property
    def diagnostics(self) -> list[Diagnostic]: ...

    @property
    def dependencies(self) -> tuple[tuple[str, str], ...]: ...
__all__ = ["MAX_CALLERS", "project_files", "settle_with_callers"]

MAX_CALLERS = 12  # files analysed as possible callers of one file
MAX_PROJECT_FILES = 5_000  # files listed under one root when looking for callers
_SKIPPED_DIRS = frozenset({"site-packages", "node_modules", "__pycache__", "build", "dist", "venv", "env"})
_MEMO_SIZE = 256
_FILE_LINE = re.compile(r"(?<![\w./-])((?:\.\.?/)*[\w.-]+(?:/[\w.-]+)*\.py):(\d+)")

Analyse = Callable[[str, str], FileReport]
_memo: OrderedDict[tuple[str, str, int], tuple[object, FileReport]] = OrderedDict()


def settle_with_callers(report: FileReport, text: str, path: str, index: ProjectIndex, settings: object,
                        analyse: Analyse) -> tuple[list[Diagnostic], tuple[tuple[str, str], ...]] | None:
    """The diagnostics and dependencies of `report` (the analysis of `path` alone, following its own
    calls) with its possible findings that a caller proves made certain, and its findings that a callee
    reports itself dropped; None when nothing changes. `analyse(text, path)` analyses another file the
    same way (without this step)."""
    me = os.path.abspath(path)
    _remember(me, text, settings, report)
    kept = _without_callee_duplicates(report.diagnostics, path, me, index, settings, analyse)
    deps = dict(report.dependencies)
    if any(_settleable(d) for d in kept):
        kept, used = _confirmed(kept, text, path, me, index, settings, analyse)
        deps.update(used)
    if kept is report.diagnostics and len(deps) == len(report.dependencies):
        return None
    return sorted(kept, key=Diagnostic.sort_key), tuple(sorted(deps.items()))


# ---------------------------------------------------------------------------------------------- callees
def _without_callee_duplicates(found: list[Diagnostic], path: str, me: str, index: ProjectIndex, settings: object,
                               analyse: Analyse) -> list[Diagnostic]:
    """Drop a finding reported at a call whose innermost evidence is a line of another project file where
    that file's own analysis finds the same code without assuming the loop around it: that file reports
    it (made certain by this very call, see `_confirmed`, when it was only possible there)."""
    out = []
    for d in found:
        callee = _innermost(d, path)
        if callee is None:
            out.append(d)
            continue
        other, line = callee
        own = _base(other, index, settings, analyse)
        same = [o for o in own.diagnostics if o.code == d.code and o.line == line] if own is not None else []
        if any(not o.possible for o in same):
            continue  # reported there, certain on its own
        if not any(_settleable(o) for o in same):
            out.append(d)  # not found there, or only by assuming the loop around it: the loop is here
        elif d.possible or me in _callers(other, index):
            continue  # reported there: as possible as here, or made certain by this very call
        else:
            out.append(d)
    return out if len(out) != len(found) else found


def _innermost(d: Diagnostic, path: str) -> tuple[str, int] | None:
    """The other project file and line a finding's evidence ends in, if it rests on another file."""
    if not d.related:
        return None
    first = d.related[0]
    return os.path.abspath(first.path), first.span.line


# ---------------------------------------------------------------------------------------------- callers
def _confirmed(found: list[Diagnostic], text: str, path: str, me: str, index: ProjectIndex, settings: object,
               analyse: Analyse) -> tuple[list[Diagnostic], dict[str, str]]:
    """`found` with each possible finding that a caller's analysis proves (same code, its innermost
    evidence at this line) made certain; and the caller files read, with their digests."""
    wanted = {(d.code, d.line) for d in found if _settleable(d)}
    if not wanted:
        return found, {}
    proofs: dict[tuple[str, int], tuple[str, Diagnostic]] = {}
    used: dict[str, str] = {}
    for caller in _callers(me, index):
        report = _base(caller, index, settings, analyse)
        if report is None:
            continue
        used[caller] = _digest_of(caller, index)
        for c in report.diagnostics:
            if c.possible or c.code not in {code for code, _ in wanted}:
                continue
            inner = _innermost(c, caller)
            if inner is not None and inner[0] == me and (c.code, inner[1]) in wanted:
                proofs.setdefault((c.code, inner[1]), (caller, c))
        if len(proofs) == len(wanted):
            break
    if not proofs:
        return found, used
    out = []
    for d in found:
        proof = proofs.get((d.code, d.line)) if _settleable(d) else None
        out.append(d if proof is None else _proven(d, path, me, *proof))
    return out, used


def _settleable(d: Diagnostic) -> bool:
    """A possible finding a caller may prove: one that did not assume the loop around it (the caller's)."""
    return d.possible and _CONTEXT not in d.assumptions


_CONTEXT = Assumption.CONTEXT.value


def _proven(d: Diagnostic, path: str, me: str, caller: str, proof: Diagnostic) -> Diagnostic:
    """The possible finding `d`, proven by `proof` (the caller's finding at its call of this file)."""
    here = os.path.dirname(me)
    caller_dir = os.path.dirname(os.path.abspath(proof.path))
    message = proof.message.split(" (In another file of the project:")[0]

    def from_here(m: re.Match[str]) -> str:
        target = os.path.normpath(os.path.join(caller_dir, m.group(1)))
        if target == me:
            return f"line {m.group(2)}"
        return f"{os.path.relpath(target, here).replace(os.sep, '/')}:{m.group(2)}"

    message = _FILE_LINE.sub(from_here, message)
    shown = os.path.relpath(caller, here).replace(os.sep, "/")
    reported = os.path.normpath(os.path.join(os.path.dirname(path), shown)).replace(os.sep, "/")
    call = _segment(caller, proof.span)
    message += f" (Proven by its caller: `{call}` at {shown}:{proof.line}.)" if call else f" (Proven by its caller at {shown}:{proof.line}.)"
    related = (RelatedLocation(reported, proof.span, f"called from `{call}`" if call else "called from here"),
               *(dataclasses.replace(r, path=_reported(r.path, path, me)) for r in proof.related[1:]))
    return dataclasses.replace(d, certainty=Certainty.CERTAIN, message=message, related=related, assumptions=())


def _reported(other: str, path: str, me: str) -> str:
    rel = os.path.relpath(os.path.abspath(other), os.path.dirname(me))
    return os.path.normpath(os.path.join(os.path.dirname(path), rel)).replace(os.sep, "/")


def _segment(path: str, span: Span) -> str:
    data = read_bytes(path)  # (never a plain open: a named pipe would block)
    if isinstance(data, str):
        return ""
    lines = data.decode("utf-8", "replace").splitlines()
    if span.line != span.end_line or not 0 < span.line <= len(lines):
        return ""
    return " ".join(lines[span.line - 1][span.column - 1:span.end_column - 1].split())[:80]


def _callers(me: str, index: ProjectIndex) -> list[str]:
    """The project files that may call into `me`: those that import it and name one of its top-level
    functions or classes (`_direct_callers`), then those that do so for one of these (a factory module that
    builds `me`'s trainer and returns it to a runner that never names `me`: VQ-VAE-Speech's
    `ModelFactory.build`); at most MAX_CALLERS, the direct ones first, each tier by path."""
    direct = _direct_callers(me, index)
    found = list(direct)
    for middle in direct:
        if len(found) >= MAX_CALLERS:
            break
        found += [c for c in _direct_callers(middle, index) if c != me and c not in found]
    return found[:MAX_CALLERS]


def _direct_callers(me: str, index: ProjectIndex) -> list[str]:
    """The project files an import statement of which names `me`'s module (a relative one included) and
    which name one of its top-level functions or classes, by path."""
    module = index.load(me)
    if module is None:
        return []
    stem = os.path.splitext(os.path.basename(me))[0]
    if stem == "__init__":
        stem = os.path.basename(os.path.dirname(me))
    names = [*module.functions, *module.class_nodes]
    if not names:
        return []
    alternatives = "|".join(map(re.escape, names))
    word = re.compile(rf"\b(?:{alternatives})\b")
    found = []
    # an import statement naming the module (`from pkg.engine import f`, `from . import engine`, `import
    # engine`): a file that only mentions the name (a test quoting a path) is no caller
    for other in _importers(index, stem):
        body = index.text_of(other) if other != me else None
        if body and word.search(body):
            found.append(other)
    return sorted(found)


_IMPORT_LINE = re.compile(r"^[ \t]*(?:from|import)[ \t][^\n]*", re.M)
_IMPORTED: dict[str, tuple[float, dict[str, list[str]]]] = {}


def _importers(index: ProjectIndex, stem: str) -> list[str]:
    """The project files an import statement of which names `stem` (a word of the line), from one reading
    of the project's import lines, kept with the listing."""
    files = project_files(index.root)
    stamp = _LISTINGS[(index.root, (".py",), MAX_PROJECT_FILES)][0]
    known = _IMPORTED.get(index.root)
    if known is None or known[0] != stamp:
        words: dict[str, list[str]] = {}
        for path in files:
            body = index.text_of(path) or ""
            seen = {w for line in _IMPORT_LINE.findall(body) for w in re.findall(r"\w+", line)}
            for w in seen:
                words.setdefault(w, []).append(path)
        known = _IMPORTED[index.root] = (stamp, words)
    return known[1].get(stem, [])


_LISTINGS: dict[tuple[str, tuple[str, ...], int], tuple[float, list[str]]] = {}
_LISTING_SECONDS = 10.0  # a listing is walked again after this long (a language server runs for hours)


def project_files(root: str, suffixes: tuple[str, ...] = (".py",), limit: int = MAX_PROJECT_FILES) -> list[str]:
    """The files under the project root whose names end so (hidden and environment folders left out), at most
    `limit` of them, in a fixed order, walked once per root every few seconds."""
    now = time.monotonic()
    key = (root, suffixes, limit)
    known = _LISTINGS.get(key)
    if known is None or now - known[0] > _LISTING_SECONDS:
        known = _LISTINGS[key] = (now, list(itertools.islice(_walk(root, suffixes), limit)))
    return known[1]


def _walk(root: str, suffixes: tuple[str, ...]) -> Iterator[str]:
    for current, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in _SKIPPED_DIRS)
        for name in sorted(files):
            if name.endswith(suffixes):
                yield os.path.join(current, name)


# ---------------------------------------------------------------------------------------------- memo
def _digest_of(path: str, index: ProjectIndex) -> str:
    module = index.load(path)
    return module.digest if module is not None else ""


def _remember(path: str, text: str, settings: object, report: FileReport) -> None:
    key = (path, hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest(), id(settings))
    _memo[key] = (settings, report)
    _memo.move_to_end(key)
    while len(_memo) > _MEMO_SIZE:
        _memo.popitem(last=False)


def _base(path: str, index: ProjectIndex, settings: object, analyse: Analyse) -> FileReport | None:
    """The analysis of another project file (without this step), kept per content for the process."""
    module = index.load(path)
    if module is None:
        return None
    text = module.source.text
    key = (path, hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest(), id(settings))
    known = _memo.get(key)
    if known is not None:
        _memo.move_to_end(key)
        return known[1]
    saved = index.recording
    try:
        report = analyse(text, path)
    finally:
        index.recording = saved
    _remember(path, text, settings, report)
    return report
