"""Lint one text that does not come from a file walk: standard input (`gradlint - --stdin-filename`) or an
editor's buffer (`gradlint server`).

The text is analysed under the name it is given, so the configuration, the per-file ignores and the
result cache treat it exactly as `gradlint` treats the file of that name: a buffer equal to the file on
disk is answered from the entry the command line wrote, and the other way round.
"""

from __future__ import annotations

from collections.abc import Callable

from .cache import ResultCache, file_key
from .config import Settings
from .diagnostics import Diagnostic
from .engine import FileReport, analyse_text
from .runner import analyse_bytes
from .sources import decode_source

__all__ = ["lint_bytes", "lint_text"]


def lint_bytes(data: bytes, path: str, settings: Settings, cache: ResultCache | None = None) -> list[Diagnostic]:
    """Diagnostics of `data` read as the file `path` (a notebook when it ends in `.ipynb`); never raises."""
    key = file_key(data, path, settings) if cache is not None else None
    return _cached(key, cache, lambda: analyse_bytes(data, path, settings))


def lint_text(text: str, path: str, settings: Settings, cache: ResultCache | None = None) -> list[Diagnostic]:
    """Diagnostics of decoded source `text` as the file `path`; never raises.

    The cache is keyed by bytes: the text's UTF-8 encoding is used as the key only when those bytes,
    read as a file, decode to the same text (a file declaring another encoding is analysed uncached).
    """
    data = text.encode("utf-8", "surrogatepass")
    same = cache is not None and decode_source(data).text == text.replace("\r\n", "\n").replace("\r", "\n")
    key = file_key(data, path, settings) if same else None
    return _cached(key, cache, lambda: analyse_text(text, path, settings))


def _cached(key: str | None, cache: ResultCache | None, analyse: Callable[[], FileReport]) -> list[Diagnostic]:
    if cache is not None and key is not None:
        found = cache.get(key)
        if found is not None:
            return found
    report = analyse()
    if cache is not None and key is not None and report.reproducible:
        cache.put(key, report.diagnostics)
    return report.diagnostics

