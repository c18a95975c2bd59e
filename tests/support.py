"""Shared helpers of the test-suite: fixture discovery and `# expect:` comment parsing."""

from __future__ import annotations

import io
import json
import re
import tokenize
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
RULES_DIR = ROOT / "rules"
_EXPECT = re.compile(r"#\s*expect:\s*(GL\d{3}(?:\s*,\s*GL\d{3})*)")
_STATIC_ONLY = re.compile(r"#\s*gradlint-fixture:\s*static-only\b")


@dataclass(frozen=True)
class Fixture:
    path: Path
    expected: frozenset[tuple[int, str]]
    static_only: bool

    @property
    def id(self) -> str:
        return str(self.path.relative_to(FIXTURES))


def parse_expectations(source: str) -> frozenset[tuple[int, str]]:
    """Return the (line, code) pairs written as `# expect: GL001, GL005` comments."""
    out: set[tuple[int, str]] = set()
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type != tokenize.COMMENT:
            continue
        m = _EXPECT.search(tok.string)
        if m:
            for code in m.group(1).split(","):
                out.add((tok.start[0], code.strip()))
    return frozenset(out)


def load_fixtures() -> list[Fixture]:
    """Return the `*.py` fixtures (runnable scripts) with their expectations."""
    fixtures = []
    for path in sorted(FIXTURES.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        head = "\n".join(text.splitlines()[:5])
        fixtures.append(Fixture(path, parse_expectations(text), bool(_STATIC_ONLY.search(head))))
    return fixtures


@dataclass(frozen=True)
class NotebookFixture:
    path: Path
    expected: frozenset[tuple[int, int, str]]  # (cell, line in the cell, code); cells count from 1 among all cells
    sources: tuple[str, ...]  # every cell's source, by cell index - 1

    @property
    def id(self) -> str:
        return str(self.path.relative_to(FIXTURES))


def parse_notebook_expectations(sources: list[str], cell_types: list[str]) -> frozenset[tuple[int, int, str]]:
    """Return the (cell, line, code) triples of `# expect:` comments in code cells (read line by line: cells hold magics)."""
    out: set[tuple[int, int, str]] = set()
    for cell, (source, kind) in enumerate(zip(sources, cell_types), 1):
        if kind != "code":
            continue
        for line_number, line in enumerate(source.split("\n"), 1):
            m = _EXPECT.search(line)
            if m:
                out.update((cell, line_number, code.strip()) for code in m.group(1).split(","))
    return frozenset(out)


def load_notebook_fixtures() -> list[NotebookFixture]:
    """Return the `*.ipynb` fixtures (linted, never run) with their (cell, line, code) expectations."""
    fixtures = []
    for path in sorted(FIXTURES.rglob("*.ipynb")):
        if ".ipynb_checkpoints" in path.parts:
            continue
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        sources = ["".join(c["source"]) if isinstance(c["source"], list) else c["source"] for c in cells]
        expected = parse_notebook_expectations(sources, [c["cell_type"] for c in cells])
        fixtures.append(NotebookFixture(path, expected, tuple(sources)))
    return fixtures
