"""Find the Python files under the paths given on the command line."""

from __future__ import annotations

import fnmatch
import os
from dataclasses import dataclass, field
from typing import Iterator

SKIP_DIRS = frozenset(
    {".git", ".hg", ".svn", "__pycache__", ".venv", "venv", "env", ".env", ".tox", ".nox", "build", "dist",
     "node_modules", ".mypy_cache", ".pytest_cache", ".ruff_cache", "site-packages", ".eggs", ".gradlint_cache"}
)


@dataclass
class GitIgnore:
    """The patterns of one `.gitignore` (the subset of gitignore syntax that matters for sources)."""

    root: str
    patterns: list[tuple[str, bool, bool, bool]] = field(default_factory=list)  # pattern, negated, dir_only, anchored

    @classmethod
    def load(cls, root: str) -> "GitIgnore | None":
        path = os.path.join(root, ".gitignore")
        try:
            with open(path, encoding="utf-8", errors="replace") as fh:
                lines = fh.read().splitlines()
        except OSError:
            return None
        gi = cls(root)
        for raw in lines:
            line = raw.rstrip()
            if not line or line.startswith("#"):
                continue
            negated = line.startswith("!")
            if negated:
                line = line[1:]
            dir_only = line.endswith("/")
            line = line.rstrip("/")
            anchored = "/" in line
            gi.patterns.append((line.lstrip("/"), negated, dir_only, anchored))
        return gi

    def ignored(self, path: str, is_dir: bool) -> bool:
        rel = os.path.relpath(path, self.root).replace(os.sep, "/")
        if rel.startswith(".."):
            return False
        result = False
        parts = rel.split("/")
        for pattern, negated, dir_only, anchored in self.patterns:
            if dir_only and not is_dir:
                # a directory pattern also ignores everything below a matching directory
                if any(self._match(pattern, "/".join(parts[: i + 1]), parts[i], anchored) for i in range(len(parts) - 1)):
                    result = not negated
                continue
            if self._match(pattern, rel, parts[-1], anchored) or any(
                self._match(pattern, "/".join(parts[: i + 1]), parts[i], anchored) for i in range(len(parts) - 1)
            ):
                result = not negated
        return result

    @staticmethod
    def _match(pattern: str, rel: str, name: str, anchored: bool) -> bool:
        if anchored:
            return fnmatch.fnmatchcase(rel, pattern) or fnmatch.fnmatchcase(rel, pattern.replace("**/", ""))
        return fnmatch.fnmatchcase(name, pattern)


def iter_python_files(paths: list[str]) -> Iterator[str]:
    """Yield files to check: explicit paths as given, `*.py` (and `.ipynb`-free) files under directories."""
    seen: set[str] = set()
    for given in paths:
        if os.path.isdir(given) and not given.endswith(".py"):
            gitignore = GitIgnore.load(given)
            unlistable: list[OSError] = []  # directories the walk cannot enter are reported, not dropped
            for root, dirs, files in os.walk(given, onerror=unlistable.append, followlinks=False):
                yield from _drain(unlistable)
                dirs[:] = sorted(
                    d for d in dirs
                    if d not in SKIP_DIRS and not d.endswith(".egg-info") and not _is_venv(os.path.join(root, d))
                    and not (gitignore and gitignore.ignored(os.path.join(root, d), True))
                )
                for name in sorted(files):
                    full = os.path.join(root, name)
                    if not name.endswith(".py"):
                        continue
                    if gitignore and gitignore.ignored(full, False):
                        continue
                    real = os.path.realpath(full)
                    if real in seen and os.path.exists(real):
                        continue
                    seen.add(real)
                    yield full
                # directories named like files (`x.py/`) are reported, not walked into
                for d in list(dirs):
                    if d.endswith(".py"):
                        dirs.remove(d)
                        yield os.path.join(root, d)
            yield from _drain(unlistable)
        else:
            yield given


def _drain(errors: list[OSError]) -> Iterator[str]:
    """Yield (and forget) the directories whose listing failed during the walk."""
    while errors:
        exc = errors.pop(0)
        if exc.filename is not None:
            yield os.fsdecode(exc.filename)


def _is_venv(path: str) -> bool:
    return os.path.exists(os.path.join(path, "pyvenv.cfg"))
