"""Find the Python files under the paths given on the command line."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass

from .config import Settings
from .globs import GlobSet

# What a directory walk collects: Python scripts and Jupyter notebooks.
SOURCE_SUFFIXES = (".py", ".ipynb")


@dataclass(frozen=True, slots=True)
class GitIgnore:
    """The patterns of one `.gitignore`, relative to the directory holding it."""

    patterns: GlobSet

    @classmethod
    def load(cls, root: str) -> GitIgnore | None:
        """Read `root/.gitignore`; None when there is none (or it cannot be read)."""
        try:
            with open(os.path.join(root, ".gitignore"), encoding="utf-8", errors="replace") as fh:
                lines = fh.read().splitlines()
        except OSError:
            return None
        kept = []
        for raw in lines:
            line = raw.rstrip()
            if not line or line.startswith("#"):
                continue
            try:
                GlobSet.of(root, (line,))
            except ValueError:
                continue  # a lone `/` or `!`: matches nothing
            kept.append(line)
        return cls(GlobSet.of(root, tuple(kept)))

    def ignored(self, path: str, is_dir: bool) -> bool:
        """Whether the path (inside the `.gitignore`'s directory) is ignored, itself or through a directory."""
        if not self.patterns.relative(path)[1]:
            return False
        return self.patterns.matches_with_parents(path, is_dir)


def iter_python_files(paths: list[str], settings: Settings | None = None) -> Iterator[str]:
    """Yield the files to check: explicit paths as given, `*.py` and `*.ipynb` files under directories.

    Files and directories met while walking are skipped when `settings` exclude them; paths given
    explicitly are skipped only with `settings.force_exclude`.
    """
    settings = settings or Settings.default()
    seen: set[str] = set()
    for given in paths:
        is_dir = os.path.isdir(given) and not given.endswith(SOURCE_SUFFIXES)
        if settings.force_exclude and settings.excluded_explicitly(given, is_dir):
            continue
        if not is_dir:
            yield given
            continue
        gitignore = GitIgnore.load(given)
        unlistable: list[OSError] = []  # directories the walk cannot enter are reported, not dropped
        for root, dirs, files in os.walk(given, onerror=unlistable.append, followlinks=False):
            yield from _drain(unlistable)
            real_root = os.path.realpath(root)  # once per directory; a file's own link is looked at below
            dirs[:] = sorted(
                d for d in dirs
                if not _is_venv(os.path.join(root, d))
                and not settings.excluded(os.path.join(root, d), True)
                and not (gitignore and gitignore.ignored(os.path.join(root, d), True))
            )
            for name in sorted(files):
                full = os.path.join(root, name)
                if not name.endswith(SOURCE_SUFFIXES):
                    continue
                if settings.excluded(full, False) or (gitignore and gitignore.ignored(full, False)):
                    continue
                real = os.path.realpath(full) if os.path.islink(full) else os.path.join(real_root, name)
                if real in seen and os.path.exists(real):
                    continue
                seen.add(real)
                yield full
            # directories named like files (`x.py/`) are reported, not walked into
            for d in list(dirs):
                if d.endswith(SOURCE_SUFFIXES):
                    dirs.remove(d)
                    yield os.path.join(root, d)
        yield from _drain(unlistable)


def _drain(errors: list[OSError]) -> Iterator[str]:
    """Yield (and forget) the directories whose listing failed during the walk."""
    while errors:
        exc = errors.pop(0)
        if exc.filename is not None:
            yield os.fsdecode(exc.filename)


def _is_venv(path: str) -> bool:
    return os.path.exists(os.path.join(path, "pyvenv.cfg"))
