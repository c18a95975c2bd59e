"""A baseline file: the findings a codebase had when gradlint was adopted, so that CI fails only on new ones.

`gradlint --baseline FILE` writes FILE when it does not exist (or with `--update-baseline`), holding every
current finding; when it exists, the findings it holds are left out of the report and the exit code.

A finding is matched by what survives edits elsewhere in its file, not by its line number: its path
(relative to the baseline's directory, `/`-separated, so `gradlint src/` and `gradlint ./src` agree),
its code, the text of its line with whitespace collapsed, and its occurrence among the findings of its
file with the same code and line text (in file order). Lines added above a finding, or the file
re-indented, leave it matched; a finding whose line changes is new. Matching counts: a baseline holding
one `opt.step()` GL001 absorbs one such finding, and a second identical one is reported. GL000 (a file
that could not be analysed) is never baselined.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import PurePath

from .diagnostics import Diagnostic
from .output import write_atomic
from .registry import PARSE_ERROR_CODE
from .render.source import SourceLines

FORMAT = "gradlint-baseline"
VERSION = 1

Key = tuple[str, str, str, int]  # path, code, line text, occurrence


class BaselineError(ValueError):
    """A baseline file that cannot be read or is not one."""


@dataclass(frozen=True, slots=True)
class Filtered:
    """The outcome of reading a baseline: the findings to report, and how many it held and left out."""

    new: list[Diagnostic]
    known: int


def _path(path: str, directory: str) -> str:
    absolute = os.path.abspath(path)
    try:
        rel = os.path.relpath(absolute, directory)
    except ValueError:  # another drive
        return PurePath(absolute).as_posix()
    return PurePath(rel).as_posix()


def keys(diagnostics: Sequence[Diagnostic], directory: str, sources: SourceLines | None = None) -> list[Key]:
    """The matching key of each diagnostic (in the order given; occurrences counted in file order)."""
    sources = sources or SourceLines()
    seen: Counter[tuple[str, str, str]] = Counter()
    out: list[Key] = []
    for d in diagnostics:
        text = " ".join((sources.line(d) or "").split())
        base = (_path(d.path, directory), d.code, text)
        out.append((*base, seen[base]))
        seen[base] += 1
    return out


def write(path: str, diagnostics: Iterable[Diagnostic]) -> int:
    """Write the baseline of `diagnostics` to `path` (atomically); return how many findings it holds.

    Raises:
        OSError: the file cannot be written.
    """
    kept = sorted((d for d in diagnostics if d.code != PARSE_ERROR_CODE), key=Diagnostic.sort_key)
    directory = os.path.dirname(os.path.abspath(path))
    entries = [
        {"path": p, "code": code, "line_text": text, "occurrence": n, "line": d.line, "message": d.message}
        for (p, code, text, n), d in zip(keys(kept, directory), kept)
    ]
    payload = {"format": FORMAT, "version": VERSION, "findings": entries}
    write_atomic(path, json.dumps(payload, indent=1, ensure_ascii=False) + "\n")
    return len(entries)


def read(path: str) -> Counter[Key]:
    """The keys a baseline file holds.

    Raises:
        BaselineError: the file cannot be read, or is not a gradlint baseline.
    """
    try:
        with open(path, encoding="utf-8") as fh:
            payload = json.load(fh)
    except OSError as exc:
        raise BaselineError(f"the baseline {path} cannot be read: {exc.strerror or exc}") from exc
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BaselineError(f"the baseline {path} is not valid JSON: {exc}") from exc
    if not isinstance(payload, dict) or payload.get("format") != FORMAT or not isinstance(payload.get("findings"), list):
        raise BaselineError(f"{path} is not a gradlint baseline (write one with `gradlint --baseline {path} --update-baseline`)")
    if payload.get("version") != VERSION:
        raise BaselineError(f"the baseline {path} has version {payload.get('version')!r}; this gradlint reads version {VERSION}")
    found: Counter[Key] = Counter()
    for entry in payload["findings"]:
        try:
            key = (str(entry["path"]), str(entry["code"]), str(entry["line_text"]), int(entry["occurrence"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise BaselineError(f"the baseline {path} holds a malformed finding: {entry!r}") from exc
        found[key] += 1
    return found


def filter_new(diagnostics: Sequence[Diagnostic], path: str) -> Filtered:
    """Leave out the findings the baseline at `path` holds.

    Raises:
        BaselineError: the baseline cannot be read.
    """
    known = read(path)
    directory = os.path.dirname(os.path.abspath(path))
    ordered = sorted(diagnostics, key=Diagnostic.sort_key)
    remaining = Counter(known)
    new: list[Diagnostic] = []
    matched = 0
    for d, key in zip(ordered, keys(ordered, directory)):
        if d.code != PARSE_ERROR_CODE and remaining[key] > 0:
            remaining[key] -= 1
            matched += 1
        else:
            new.append(d)
    return Filtered(new, matched)
