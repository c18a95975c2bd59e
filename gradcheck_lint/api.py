"""Public entry points of the static analyzer."""

from __future__ import annotations

from collections.abc import Iterable

from .cache import ResultCache
from .config import Settings
from .diagnostics import Diagnostic
from .discovery import iter_python_files
from .engine import check_text
from .runner import RunStats, Verifier, analyse_bytes, lint_files
from .sources import read_bytes


def _effective(settings: Settings | None, codes: Iterable[str] | None) -> Settings:
    chosen = settings or Settings.default()
    return chosen if codes is None else chosen.with_enabled(codes)


def check_source(text: str, path: str = "<string>", codes: Iterable[str] | None = None,
                 settings: Settings | None = None) -> list[Diagnostic]:
    """Lint Python source text under `settings` (default: built-in); `codes`, if given, replaces their selection."""
    return check_text(text, path, _effective(settings, codes))


def check_file(path: str, codes: Iterable[str] | None = None, settings: Settings | None = None) -> list[Diagnostic]:
    """Lint one file (a `.ipynb` file as a notebook); unreadable or unparsable files give a single GL000 diagnostic."""
    return analyse_bytes(read_bytes(path), path, _effective(settings, codes)).diagnostics


def check_paths(paths: list[str], settings: Settings | None = None, *, jobs: int = 1,
                cache: ResultCache | None = None, stats: RunStats | None = None,
                verify: Verifier | None = None) -> tuple[list[Diagnostic], int]:
    """Lint files and directories (scripts and notebooks); return the diagnostics and the number of files checked.

    `settings` default to the built-in ones; `gradcheck_lint.config.load_settings(paths)` reads the
    `[tool.gradlint]` configuration the way the `gradlint` command does. `jobs` > 1 analyses files in
    that many processes; `cache` (a `gradcheck_lint.cache.ResultCache`) reuses earlier results. Neither
    changes the result. `verify` (`fixes.verified_entry` with its first argument given) has each file's
    fixes verified by the worker that analyses it, into the `cache`, for `fixes.verify_fixes` to find.
    """
    chosen = settings or Settings.default()
    stats = stats if stats is not None else RunStats()
    out = lint_files(iter_python_files(paths, chosen), chosen, jobs=jobs, cache=cache, stats=stats, verify=verify)
    return sorted(out, key=Diagnostic.sort_key), stats.files
