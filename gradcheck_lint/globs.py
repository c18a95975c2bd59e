"""Gitignore-style path patterns, matched against `/`-separated paths relative to a root directory.

`build` matches a file or directory named `build` at any depth; a pattern with a `/` in it (other than
a trailing one) is anchored to the root (`/build`, `src/gen_*.py`); a trailing `/` matches directories
only; `*` and `?` stop at `/`, `**` crosses directories; a leading `!` re-includes. The last matching
pattern wins, and a path inside a matched directory is matched too.
"""

from __future__ import annotations

import functools
import os
import re
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Glob:
    """One compiled pattern."""

    pattern: str
    regex: re.Pattern[str]
    negated: bool
    dir_only: bool
    anchored: bool

    def matches(self, rel: str, is_dir: bool, inside: bool = True) -> bool:
        """Whether the path matches, ignoring negation; `inside` is False for paths outside the root."""
        if self.dir_only and not is_dir:
            return False
        if self.anchored:
            return inside and self.regex.fullmatch(rel) is not None
        return self.regex.fullmatch(rel.rsplit("/", 1)[-1]) is not None


@functools.lru_cache(maxsize=1024)
def compile_glob(pattern: str) -> Glob:
    """Compile one gitignore-style pattern.

    Raises:
        ValueError: the pattern is empty or invalid.
    """
    raw = pattern.strip()
    negated = raw.startswith("!")
    if negated:
        raw = raw[1:]
    dir_only = raw.endswith("/")
    raw = raw.rstrip("/")
    if raw.startswith("./"):
        raw = "/" + raw[2:]
    anchored = "/" in raw
    raw = raw.lstrip("/")
    if not raw:
        raise ValueError(f"empty path pattern {pattern!r}")
    try:
        regex = re.compile(_translate(raw))
    except re.error as exc:  # a reversed range such as `[z-a]`
        raise ValueError(f"invalid path pattern {pattern!r}: {exc}") from exc
    return Glob(pattern, regex, negated, dir_only, anchored)


def _translate(pattern: str) -> str:
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        if pattern.startswith("**/", i) and (i == 0 or pattern[i - 1] == "/"):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("/**", i) and i + 3 == n:
            out.append("/.*")
            i += 3
        elif pattern.startswith("**", i) and i == 0 and n == 2:
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        elif pattern[i] == "[":
            cls, i = _bracket(pattern, i)
            out.append(cls)
        elif pattern[i] == "\\" and i + 1 < n:
            out.append(re.escape(pattern[i + 1]))
            i += 2
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return "".join(out)


def _bracket(pattern: str, start: int) -> tuple[str, int]:
    """Translate the bracket expression at `start`; an unclosed `[` is a literal."""
    j = start + 1
    if j < len(pattern) and pattern[j] in "!^":
        j += 1
    if j < len(pattern) and pattern[j] == "]":  # a `]` first in the set is a member
        j += 1
    while j < len(pattern) and pattern[j] != "]":
        j += 1
    if j >= len(pattern):
        return re.escape("["), start + 1
    body = pattern[start + 1 : j]
    negated = body[:1] in ("!", "^")
    if negated:
        body = body[1:]
    members = "".join(
        "-" if c == "-" and 0 < k < len(body) - 1 and "-" not in (body[k - 1], body[k + 1]) else re.escape(c)
        for k, c in enumerate(body)
    )
    return (f"[^/{members}]" if negated else f"[{members}]"), j + 1


@functools.lru_cache(maxsize=128)
def _by_name(globs: tuple[Glob, ...], is_dir: bool) -> re.Pattern[str] | None:
    """One regex for patterns that read only names and re-include nothing: with no `!`, any match decides
    (the default exclusions: 21 patterns, asked for every file and directory of a walk). None when one
    pattern is negated."""
    if any(glob.negated for glob in globs):
        return None
    parts = [f"(?:{glob.regex.pattern})" for glob in globs if is_dir or not glob.dir_only]
    return re.compile("|".join(parts) if parts else "(?!)")


@dataclass(frozen=True, slots=True)
class GlobSet:
    """Patterns relative to one root directory; the last matching pattern wins."""

    root: str
    globs: tuple[Glob, ...]

    @classmethod
    def of(cls, root: str, patterns: tuple[str, ...]) -> GlobSet:
        return cls(os.path.abspath(root), tuple(compile_glob(p) for p in patterns))

    def relative(self, path: str) -> tuple[str, bool]:
        """The path relative to the root, `/`-separated, and whether it lies inside the root."""
        rel = os.path.relpath(os.path.abspath(path), self.root).replace(os.sep, "/")
        if rel == ".." or rel.startswith("../"):
            return os.path.basename(os.path.abspath(path)), False
        return rel, True

    def _decide(self, rel: str, is_dir: bool, inside: bool) -> bool:
        result = False
        for glob in self.globs:
            if glob.matches(rel, is_dir, inside):
                result = not glob.negated
        return result

    def matches(self, path: str, is_dir: bool) -> bool:
        """Whether the path itself matches (its directories are not looked at: a walk prunes them)."""
        if not self.globs:
            return False
        if not any(glob.anchored for glob in self.globs):  # only the name is read: no relative path needed
            name = os.path.basename(path) or os.path.basename(os.path.abspath(path))
            combined = _by_name(self.globs, is_dir)
            if combined is not None:
                return combined.fullmatch(name) is not None
            return self._decide(name, is_dir, True)
        rel, inside = self.relative(path)
        return self._decide(rel, is_dir, inside)

    def matches_with_parents(self, path: str, is_dir: bool) -> bool:
        """Whether the path or one of its directories below the root matches."""
        if not self.globs:
            return False
        rel, inside = self.relative(path)
        parts = rel.split("/") if inside else [rel]
        for k in range(1, len(parts)):
            if self._decide("/".join(parts[:k]), True, inside):
                return True
        return self._decide(rel, is_dir, inside)
