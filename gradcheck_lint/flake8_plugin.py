"""flake8 plugin: `flake8 --select GL` reports what `gradlint` reports (same lines, codes and messages).

flake8 handles `# noqa`, `--select`/`--ignore` and output itself. Files that never mention
`backward` cost one regular-expression search: the analyzer is imported on first need.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Sequence

from . import __version__
from .prefilter import might_train


class GradlintChecker:
    """Run gradlint's rules on the lines flake8 read (from a file or from stdin)."""

    name = "gradcheck-lint"
    version = __version__

    def __init__(self, tree: ast.AST, lines: Sequence[str], filename: str) -> None:
        # flake8 classifies a plugin by its parameters: `tree` makes this one run once per file.
        del tree
        self._lines = lines
        self._filename = filename

    def run(self) -> Iterator[tuple[int, int, str, type[GradlintChecker]]]:
        """Yield `(line, 0-based column, "GLxxx message", type)` for each diagnostic of the file."""
        text = "".join(self._lines)
        if not might_train(text):
            return
        from .engine import check_text

        for d in check_text(text.replace("\r\n", "\n").replace("\r", "\n"), self._filename):
            if d.possible or d.notice:
                continue  # as gradlint's default output: certain findings (a notice is no flake8 error)
            yield d.line, d.column - 1, f"{d.code} {d.message}", type(self)
