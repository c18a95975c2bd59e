"""Shared helpers of the test-suite: fixture discovery and `# expect:` comment parsing."""

from __future__ import annotations

import io
import re
import tokenize
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
RULES_DIR = ROOT / "rules"
_EXPECT = re.compile(r"#\s*expect:\s*(GL\d{3}(?:\s*,\s*GL\d{3})*)")
_STATIC_ONLY = re.compile(r"#\s*gradlint-fixture:\s*static-only\b")
_RUNTIME_BLIND = re.compile(r"#\s*gradlint-fixture:\s*runtime-blind\s+(GL\d{3}(?:\s*,\s*GL\d{3})*)\s+--\s*\S")


@dataclass(frozen=True)
class Fixture:
    path: Path
    expected: frozenset[tuple[int, str]]
    static_only: bool
    runtime_blind: frozenset[str] = frozenset()  # codes the guard cannot see in this script (documented why)

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
    fixtures = []
    for path in sorted(FIXTURES.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        head = "\n".join(text.splitlines()[:5])
        blind = _RUNTIME_BLIND.search(head)
        codes = frozenset(c.strip() for c in blind.group(1).split(",")) if blind else frozenset()
        fixtures.append(Fixture(path, parse_expectations(text), bool(_STATIC_ONLY.search(head)), codes))
    return fixtures
