"""Shared helpers of the test-suite: fixture discovery and `# expect:` comment parsing."""

from __future__ import annotations

import contextlib
import io
import re
import signal
import tokenize
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

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
    fixtures = []
    for path in sorted(FIXTURES.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        head = "\n".join(text.splitlines()[:5])
        fixtures.append(Fixture(path, parse_expectations(text), bool(_STATIC_ONLY.search(head))))
    return fixtures


# A file that takes this long is hung: far above the analysis's own 30-second safety net.
HANG_SECONDS = 120.0


class AnalysisHang(BaseException):
    """The body ran past the hang guard (a BaseException, so the engine's `except Exception` cannot swallow it)."""


@contextlib.contextmanager
def hang_guard(seconds: float = HANG_SECONDS) -> Iterator[None]:
    """Raise `AnalysisHang` if the body runs longer than `seconds` (main thread, POSIX; elsewhere no guard)."""

    def expire(signum: int, frame: object) -> None:
        raise AnalysisHang(f"no answer after {seconds:.0f} s")

    if not hasattr(signal, "setitimer"):
        yield
        return
    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
