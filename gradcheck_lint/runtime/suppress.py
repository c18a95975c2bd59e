"""The static side's suppressions and settings, applied to the guard's findings.

A finding is dropped when the source file it is anchored on covers its line with a suppression
comment (`# gradlint: ignore[GL003]`, `# noqa: GL003`, `# gradlint: file-ignore[GL003]`, read by
`suppressions.py`, the static side's own parser), or when the `[tool.gradlint]` settings of that file
(the nearest `pyproject.toml` with the table, found as `gradlint` finds it: `select`, `ignore`,
`per-file-ignores`) leave its code out. Files and settings are read once per run, on the first
finding anchored in them: a run without findings reads nothing.
"""

from __future__ import annotations

import ast
import os
import warnings
from collections.abc import Callable

from .report import Finding

_Test = Callable[[str, int], bool]


class FindingFilter:
    """Decide, once per file, which findings the user's comments and settings keep."""

    def __init__(self) -> None:
        self._comments: dict[str, _Test | None] = {}  # path -> its directives' test (None: no directive)
        self._codes: dict[str, frozenset[str] | None] = {}  # path -> codes enabled there (None: all)
        self._settings: dict[str, object] = {}  # directory -> its `Settings` (or None when unusable)

    def keeps(self, finding: Finding) -> bool:
        """Whether `finding` is reported: its code is enabled for its file, and no comment suppresses it."""
        path = finding.path
        codes = self._codes.get(path, ())
        if codes == ():
            if not path or not os.path.isfile(path):
                self._codes[path], self._comments[path] = None, None  # `<stdin>`, a notebook cell: nothing to read
                return True
            codes = self._codes[path] = self._enabled_codes(path)
        if codes is not None and finding.code not in codes:
            return False
        test = self._comments.get(path, _unread)
        if test is _unread:
            test = self._comments[path] = _comment_test(path)
        return test is None or not test(finding.code, finding.line)

    def _enabled_codes(self, path: str) -> frozenset[str] | None:
        from ..config import ConfigError, discover, resolve

        directory = os.path.dirname(os.path.abspath(path))
        settings = self._settings.get(directory, _unread)
        if settings is _unread:
            try:
                settings = resolve(discover(directory))
            except ConfigError as exc:  # a broken table: `gradlint` refuses it; the guard still reports
                warnings.warn(f"gradcheck_lint guard: {exc}; its settings are not applied to the guard's report",
                              stacklevel=2)
                settings = None
            self._settings[directory] = settings
        if settings is None:
            return None
        return settings.codes_for(path)


def _unread(code: str, line: int) -> bool:  # a marker: the cache has no entry yet
    return False


def _comment_test(path: str) -> _Test | None:
    from ..sources import decode_source, read_bytes
    from ..suppressions import suppression_test

    data = read_bytes(path)
    if isinstance(data, str):
        return None
    text = decode_source(data).text
    if text is None:
        return None

    def tree() -> ast.AST | None:
        try:
            return ast.parse(text)
        except (SyntaxError, ValueError):
            return None

    return suppression_test(text, tree)
