"""Shared helpers of the test-suite: fixture discovery and `# expect:` comment parsing."""

from __future__ import annotations

import contextlib
import functools
import io
import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import tokenize
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from click.testing import CliRunner, Result

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
FIXTURES = ROOT / "fixtures"
T = TypeVar("T")
RULES_DIR = ROOT / "rules"
# One way to write an expected finding, everywhere (fixtures, blind programs, readings, rule folders):
# `# expect: GL003` on the very line the diagnostic anchors to, a certain finding; `GL003 (possible)`
# for one the analysis reports as only possible. Several on one line: `# expect: GL001, GL005`.
_ONE_EXPECT = r"GL\d{3}(?:\s*\(possible\))?"
_EXPECT = re.compile(rf"#\s*expect:\s*({_ONE_EXPECT}(?:\s*,\s*{_ONE_EXPECT})*)")
_STATIC_ONLY = re.compile(r"#\s*gradlint-fixture:\s*static-only\b")
_RUNTIME_BLIND = re.compile(r"#\s*gradlint-fixture:\s*runtime-blind\s+(GL\d{3}(?:\s*,\s*GL\d{3})*)\s+--\s*\S")
_RAISES = re.compile(r"#\s*gradlint-fixture:\s*raises\s+(\w+)\s+--\s*(\S.*)")
_RUNTIME_ALSO = re.compile(r"#\s*gradlint-fixture:\s*runtime-also\s+(GL\d{3}(?:\s*,\s*GL\d{3})*)\s+--\s*\S")


@dataclass(frozen=True)
class Fixture:
    path: Path
    expected: frozenset[tuple[int, str]]
    static_only: bool
    runtime_blind: frozenset[str] = frozenset()  # codes the guard cannot see in this script (documented why)
    runtime_also: frozenset[str] = frozenset()  # codes the guard reports as it sees the run (documented why)
    raises: tuple[str, str] | None = None  # (exception type, text of its message) the script raises by design
    possible: frozenset[tuple[int, str]] = frozenset()  # the expected findings written `GLxxx (possible)`

    @property
    def id(self) -> str:
        return str(self.path.relative_to(FIXTURES))


def lines_of(code: str, text: str, path: str = "train.py") -> list[int]:
    """The lines a one-file check of `text` (dedented, default settings) reports `code` at, in order."""
    from gradcheck_lint import check_source
    from gradcheck_lint.config import Settings
    found = check_source(textwrap.dedent(text), path, settings=Settings.default())
    return [d.span.line for d in found if d.code == code]


def parse_expected_findings(source: str) -> frozenset[tuple[int, str, str]]:
    """Return the (line, code, certainty) triples written as `# expect: GL001, GL005 (possible)` comments."""
    out: set[tuple[int, str, str]] = set()
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type != tokenize.COMMENT:
            continue
        m = _EXPECT.search(tok.string)
        if m:
            out.update((tok.start[0], *_code_and_certainty(part)) for part in m.group(1).split(","))
    return frozenset(out)


def _code_and_certainty(part: str) -> tuple[str, str]:
    code = part.strip()[:5]
    return code, "possible" if "possible" in part else "certain"


def parse_expectations(source: str) -> frozenset[tuple[int, str]]:
    """Return the (line, code) pairs written as `# expect: GL001, GL005` comments."""
    return frozenset((line, code) for line, code, _certainty in parse_expected_findings(source))


def found_findings(diagnostics: Iterable[Any]) -> frozenset[tuple[int, str, str]]:
    """The (line, code, certainty) triples of diagnostics, to compare with `parse_expected_findings`."""
    return frozenset((d.line, d.code, d.certainty.value) for d in diagnostics)


def load_fixtures() -> list[Fixture]:
    """Return the `*.py` fixtures (runnable scripts) with their expectations (a new list each call)."""
    return list(_load_fixtures())


@functools.lru_cache(maxsize=1)
def _load_fixtures() -> tuple[Fixture, ...]:
    """Read once per process: a dozen test modules take the list at collection, and tokenizing the
    fixtures' comments costs about 0.4 s a time."""
    fixtures = []
    for path in sorted(FIXTURES.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        head = "\n".join(text.splitlines()[:10])
        blind = _RUNTIME_BLIND.search(head)
        codes = frozenset(c.strip() for c in blind.group(1).split(",")) if blind else frozenset()
        also = _RUNTIME_ALSO.search(head)
        extra = frozenset(c.strip() for c in also.group(1).split(",")) if also else frozenset()
        raised = _RAISES.search(head)
        raises = (raised.group(1), raised.group(2).strip()) if raised else None
        expected = parse_expected_findings(text)
        fixtures.append(Fixture(path, frozenset((line, code) for line, code, _ in expected), bool(_STATIC_ONLY.search(head)),
                                codes, extra, raises, frozenset((line, code) for line, code, c in expected if c == "possible")))
    return tuple(fixtures)


_PROCESS_STATE = re.compile(r"^\s*(?:import|from)\s+(?:torch\.distributed|lightning|pytorch_lightning|accelerate|transformers)\b", re.M)


def made_once(tmp_path_factory: Any, name: str, make: Callable[[], T]) -> T:
    """`make()`, made by one process of the session and read (unpickled) by the others.

    pytest-xdist runs a module-scoped (or session-scoped) fixture once in each worker that runs one of
    its tests; a costly one (seconds of CPU) is made by the first worker to ask, under a lock in the
    session's temporary directory, which every worker shares. A value naming files keeps them under
    that worker's temporary directory, which lives until the session ends."""
    import pickle

    from filelock import FileLock

    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent  # the session's directory, holding one directory per worker
    store = base / f"made-once-{name}.pickle"
    with FileLock(str(store) + ".lock"):
        if store.is_file():
            value: T = pickle.loads(store.read_bytes())
            return value
        value = make()
        store.write_bytes(pickle.dumps(value))
        return value


def made_fixture_file_diagnostics(tmp_path_factory: Any) -> dict[str, tuple[Any, ...]]:
    """`check_file` of every fixture (the `*.py` scripts and the notebooks), built-in settings, by absolute path:
    made once for the session (`made_once`). The same call on the same file gave the same list to each test that
    made it: test_fixtures' expectations and message tests, the message snapshots, test_autofix's `fix_run`
    (three to four analyses of each buggy fixture in a run, ~6 s of CPU for a pass over all of them)."""
    from gradcheck_lint import check_file

    paths = sorted(FIXTURES.rglob("*.py")) + [f.path for f in load_notebook_fixtures()]
    return made_once(tmp_path_factory, "fixture_file_diagnostics",
                     lambda: {str(p): tuple(check_file(str(p))) for p in paths})


@dataclass(frozen=True)
class FreshReport:
    """A `gradlint` run over every fixture that analysed each file afresh, and the result cache it filled."""

    run: subprocess.CompletedProcess[str]
    cache_dir: Path  # the run's own result cache: empty before it, every fixture's result after it


def made_fresh_fixtures_report(tmp_path_factory: Any) -> FreshReport:
    """`gradlint --show-possible --format json <FIXTURES>` (the absolute path) from ROOT with PYTHONHASHSEED=1, on an
    empty result cache of its own: every file analysed, none answered from a cache. Made once for the session
    (`made_once`): the hash-seed test compares it with a run under another seed, the fixtures-directory test reads
    its findings, and runs of the same files reported at the same paths read its cache (a full analysis of the
    fixtures is ~17 s of CPU; test_cli's run and the hash-seed test's first run each made one)."""

    def make() -> FreshReport:
        cache_dir = tmp_path_factory.mktemp("fresh-fixtures-report-cache")
        env = {**os.environ, "PYTHONHASHSEED": "1", "GRADLINT_CACHE_DIR": str(cache_dir)}
        command = [sys.executable, "-m", "gradcheck_lint", "--show-possible", "--format", "json", str(FIXTURES)]
        run = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, env=env, timeout=600)
        return FreshReport(run, cache_dir)

    return made_once(tmp_path_factory, "fresh_fixtures_report", make)


def run_groups(fixtures: list[Fixture]) -> list[list[Fixture]]:
    """Fixtures grouped for running in worker processes: those that set up process-wide state (a
    torch.distributed process group, Lightning, Accelerate, Transformers) each in a process of their
    own, all the others together in one. Run one after another in one process, a gloo process group
    once hung for minutes after a framework fixture."""
    isolated = [f for f in fixtures if _PROCESS_STATE.search(f.path.read_text(encoding="utf-8"))]
    rest = [f for f in fixtures if f not in isolated]
    return ([rest] if rest else []) + [[f] for f in isolated]


BUGGY = """\
import torch
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for x in torch.randn(8, 4).split(2):
    model(x).sum().backward()
    opt.step()
"""  # GL001 at 6:5 (`opt.step()`): nothing clears the gradients between steps
UNSCALED = """\
import torch
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for i, x in enumerate(torch.randn(16, 4).split(2)):
    model(x).mean().backward()
    if (i + 1) % 4 == 0:
        opt.step()
        opt.zero_grad()
"""  # GL003 at 5:5 (`backward()`): four unscaled losses accumulate into one step


def gradlint(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Run the installed `gradlint` console script, as a user (or pre-commit) does."""
    script = Path(sys.executable).with_name("gradlint")
    command = [str(script)] if script.exists() else [sys.executable, "-m", "gradcheck_lint"]
    return subprocess.run([*command, *args], capture_output=True, text=True, cwd=cwd, timeout=120)


def invoke(*args: str) -> Result:
    """Run `gradlint` in-process with click's runner (fast; the working directory is the test's)."""
    from gradcheck_lint.cli import check

    return CliRunner().invoke(check, list(args), catch_exceptions=False)


def reported(result: subprocess.CompletedProcess[str] | Result, root: Path, cwd: Path | None = None) -> list[tuple[str, int, str]]:
    """The (path relative to root, line, code) triples of a `--format json` run made in `cwd`."""
    return sorted(
        (((cwd or Path.cwd()) / d["path"]).resolve().relative_to(root.resolve()).as_posix(), d["line"], d["code"])
        for d in json.loads(result.stdout)
    )


def write(root: Path, files: dict[str, str]) -> None:
    """Create files (and their directories) under root."""
    for name, text in files.items():
        target = root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")


@dataclass(frozen=True)
class NotebookFixture:
    path: Path
    expected: frozenset[tuple[int, int, str]]  # (cell, line in the cell, code); cells count from 1 among all cells
    sources: tuple[str, ...]  # every cell's source, by cell index - 1

    @property
    def id(self) -> str:
        return str(self.path.relative_to(FIXTURES))


def project_tree(root: Path, files: dict[str, str]) -> Path:
    """A small project under `root` (a `pyproject.toml` marks its root) with these files, dedented."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return root


def parse_notebook_expectations(sources: list[str], cell_types: list[str]) -> frozenset[tuple[int, int, str]]:
    """Return the (cell, line, code) triples of `# expect:` comments in code cells (read line by line: cells hold magics)."""
    out: set[tuple[int, int, str]] = set()
    for cell, (source, kind) in enumerate(zip(sources, cell_types), 1):
        if kind != "code":
            continue
        for line_number, line in enumerate(source.split("\n"), 1):
            m = _EXPECT.search(line)
            if m:
                out.update((cell, line_number, _code_and_certainty(part)[0]) for part in m.group(1).split(","))
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


# A tree without a project marker (an unpacked archive): `bin/train.py` imports `src.optim`'s wrapper, whose
# `pre_step()` clears (CLEARS is the clear, or `pass`). Read from the folder gradlint runs in, or a folder named.
UNMARKED_WRAPPER = """\
    import torch


    class Optimizer:
        def __init__(self, parameters, lr):
            self.opt = torch.optim.Adam(parameters, lr=lr)

        def pre_step(self, step):
            CLEARS
            return step

        def step(self):
            self.opt.step()
"""

UNMARKED_SCRIPT_IN_A_FOLDER = """\
    import torch
    from src.optim import Optimizer


    def main(loader):
        model = torch.nn.Linear(8, 1)
        optimizer = Optimizer(model.parameters(), lr=1e-3)
        for step, (x, y) in enumerate(loader):
            optimizer.pre_step(step)
            loss = torch.nn.functional.mse_loss(model(x), y)
            loss.backward()
            optimizer.step()
"""


def unmarked_tree(top: Path, clears: str) -> Path:
    """The unmarked tree under `top` (`UNMARKED_WRAPPER` with `clears`, `UNMARKED_SCRIPT_IN_A_FOLDER`); its script."""
    (top / "src").mkdir(parents=True)
    (top / "bin").mkdir()
    (top / "src" / "__init__.py").write_text("")
    (top / "src" / "optim.py").write_text(textwrap.dedent(UNMARKED_WRAPPER.replace("CLEARS", clears)))
    script = top / "bin" / "train.py"
    script.write_text(textwrap.dedent(UNMARKED_SCRIPT_IN_A_FOLDER))
    return script
