"""Public entry points of the static analyzer."""

from __future__ import annotations

from typing import Iterable

from .config import Settings
from .diagnostics import Diagnostic
from .discovery import iter_python_files
from .engine import check_text, unanalysable
from .notebooks import check_notebook_file, is_notebook
from .sources import read_source


def _effective(settings: Settings | None, codes: Iterable[str] | None) -> Settings:
    chosen = settings or Settings.default()
    return chosen if codes is None else chosen.with_enabled(codes)


def check_source(text: str, path: str = "<string>", codes: Iterable[str] | None = None,
                 settings: Settings | None = None) -> list[Diagnostic]:
    """Lint Python source text under `settings` (default: built-in); `codes`, if given, replaces their selection."""
    return check_text(text, path, _effective(settings, codes))


def check_file(path: str, codes: Iterable[str] | None = None, settings: Settings | None = None) -> list[Diagnostic]:
    """Lint one file (a `.ipynb` file as a notebook); unreadable or unparsable files give a single GL000 diagnostic."""
    if is_notebook(path):
        return check_notebook_file(path, _effective(settings, codes))
    src = read_source(path)
    if src.text is None:
        return [unanalysable(path, src.error or "cannot be read")]
    return check_text(src.text, path, _effective(settings, codes))


def check_paths(paths: list[str], settings: Settings | None = None) -> tuple[list[Diagnostic], int]:
    """Lint files and directories (scripts and notebooks); return the diagnostics and the number of files checked.

    `settings` default to the built-in ones; `gradcheck_lint.config.load_settings(paths)` reads the
    `[tool.gradlint]` configuration the way the `gradlint` command does.
    """
    chosen = settings or Settings.default()
    out: list[Diagnostic] = []
    count = 0
    for path in iter_python_files(paths, chosen):
        count += 1
        out.extend(check_file(path, settings=chosen))
    return sorted(out, key=Diagnostic.sort_key), count
