"""Lint many files: the result cache first, then the files it misses over a pool of processes.

The parent reads each file once to compute its cache key and a cost estimate. Hits are answered at
once. With one job, misses are analysed there and then; otherwise worker processes analyse the files
that can hold a training step (the dearest first, so that one slow file does not finish last), a
bounded number in flight, so memory does not grow with the number of files, while the parent answers
the files the prefilter rules out (sending them to a worker would cost more than reading them): it reads
the others' text too, and a file the prefilter lets through after all (a script whose training calls sit in
the project modules it imports) goes to a worker. Results are gathered by file and sorted, so the output never
depends on which worker finished first. A file that kills its worker (a native crash in a parser,
say) is retried alone in a fresh process and, if it kills that one too, reported as GL000; the other
files are still checked.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass

from .cache import ResultCache, file_key
from .config import Settings
from .diagnostics import Diagnostic
from .engine import FileReport, analyse_text, prepare, screened, unanalysable
from .notebooks import analyse_notebook_bytes, is_notebook
from .sources import decode_source, read_bytes

# Below this many files to analyse, starting processes costs more than it saves.
MIN_FILES_FOR_POOL = 2
IN_FLIGHT_PER_WORKER = 4
INLINE_BATCH = 8

__all__ = ["RunStats", "analyse_bytes", "available_cores", "lint_each_file", "lint_files"]

# A file's report, its cache key, and its findings with their fixes verified (with their key), if asked for.
Analysed = tuple[FileReport, str | None, tuple[str, list[Diagnostic]] | None]
# What verifies a file's fixes (path, bytes, findings, settings): a cache entry, or None (`fixes.verified_entry`).
Verifier = Callable[[str, bytes, list[Diagnostic], Settings], tuple[str, list[Diagnostic]] | None]


@dataclass
class RunStats:
    """What one run did, for `--statistics`-style reporting and the benchmarks."""

    files: int = 0
    cached: int = 0
    analysed: int = 0
    workers: int = 0


def available_cores() -> int:
    """The cores this process may run on (its CPU affinity where the OS tells, else the CPU count)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def analyse_bytes(data: bytes | str, path: str, settings: Settings) -> FileReport:
    """Analyse one file's bytes (a `str` is the reason they could not be read); never raises."""
    if is_notebook(path):
        return analyse_notebook_bytes(data, path, settings)
    if isinstance(data, str):
        return FileReport([unanalysable(path, data)])
    src = decode_source(data)
    if src.text is None:
        return FileReport([unanalysable(path, src.error or "cannot be read")])
    return analyse_text(src.text, path, settings)


def _estimated_cost(data: bytes | str) -> int:
    """A rough cost of analysing a file, for scheduling: nothing for one the prefilter will skip; else
    its size, plus a share per optimizer step and per backward pass (the events whose path states the
    interpreter carries). On 70 training files of the benchmark trees it correlates 0.65 with the time."""
    if not isinstance(data, bytes) or b"backward" not in data or b"step" not in data:
        return 0
    return len(data) + 20_000 * (data.count(b"step(") + data.count(b"backward("))


def _screen_path(path: str, settings: Settings, keyed: bool) -> Analysed | None:
    """`_analyse_path` for a file the textual prefilter rules out (with the project modules it imports);
    None for a file that needs the analysis (a script calling a training helper of another file)."""
    data = read_bytes(path)
    src = decode_source(data) if isinstance(data, bytes) and not is_notebook(path) else None
    if src is None or src.text is None:  # a notebook, or a file that cannot be read: as before
        return analyse_bytes(data, path, settings), _key(data, path, settings, keyed), None
    report = screened(src.text, path, settings)
    return None if report is None else (report, _key(data, path, settings, keyed), None)


def _key(data: bytes | str, path: str, settings: Settings, keyed: bool) -> str | None:
    if not keyed or not isinstance(data, bytes):
        return None
    return file_key(data, path, settings)


def _analyse_path(path: str, settings: Settings, keyed: bool, verify: Verifier | None = None) -> Analysed:
    """Worker task: read and analyse `path`; with `keyed`, also return the key of the bytes actually read,
    and with `verify`, what it gives the file's findings (`fixes.verified_entry`: them with their fixes
    verified, and their cache key): the process that analysed the file checks its fixes, with the project
    read already, instead of the parent after every file is done."""
    data = read_bytes(path)
    report = analyse_bytes(data, path, settings)
    key = _key(data, path, settings, keyed)
    if key is None or verify is None or not isinstance(data, bytes) or not report.reproducible:
        return report, key, None
    return report, key, verify(path, data, report.diagnostics, settings)



def lint_files(files: Iterable[str], settings: Settings, *, jobs: int = 1, cache: ResultCache | None = None,
               stats: RunStats | None = None, verify: Verifier | None = None) -> list[Diagnostic]:
    """Diagnostics of `files` (in a fixed order whatever the scheduling); `jobs` worker processes at most.

    With one job, each file is analysed as soon as it is read; otherwise the misses go to the pool,
    whose workers read them again (the parent keeps no file contents). With a `cache` and `verify`
    (`fixes.verified_entry`), the fixes of each file analysed in a worker are verified there too, into the
    cache, where `fixes.verify_fixes` finds them."""
    return [d for found in lint_each_file(files, settings, jobs=jobs, cache=cache, stats=stats, verify=verify)
            for d in found]


def lint_each_file(files: Iterable[str], settings: Settings, *, jobs: int = 1, cache: ResultCache | None = None,
                   stats: RunStats | None = None, verify: Verifier | None = None) -> list[list[Diagnostic]]:
    """The diagnostics of each of `files`, in their order: `lint_files` by file."""
    stats = stats if stats is not None else RunStats()
    results: dict[int, list[Diagnostic]] = {}
    misses: list[tuple[int, str, int]] = []  # (index, path, estimated cost)

    def record(index: int, report: FileReport, key: str | None, verified: tuple[str, list[Diagnostic]] | None) -> None:
        results[index] = report.diagnostics
        if cache is not None and key is not None and report.reproducible:
            cache.put(key, report.diagnostics, report.dependencies)
            if verified is not None:
                cache.put(*verified)

    for index, path in enumerate(files):
        stats.files += 1
        data = read_bytes(path)
        key = file_key(data, path, settings) if cache is not None and isinstance(data, bytes) else None
        found = cache.get(key) if cache is not None and key is not None else None
        if found is not None:
            results[index] = found
            stats.cached += 1
        elif jobs <= 1:
            stats.analysed += 1
            record(index, analyse_bytes(data, path, settings), key, None)
        else:
            misses.append((index, path, _estimated_cost(data)))
    stats.analysed += len(misses)
    dear = [m for m in misses if m[2] > 0]
    workers = min(jobs, len(dear))
    if workers >= MIN_FILES_FOR_POOL:
        stats.workers = workers
        dear.sort(key=lambda m: -m[2])  # the dearest first: the last file to finish should be a cheap one
        prepare(settings)  # before the workers fork: built here once (the screening here needs it too), not in each
        cheap = [(index, path) for index, path, cost in misses if cost == 0]
        done = _in_pool(dear, settings, workers, keyed=cache is not None, inline=cheap, verify=verify)
    else:
        done = ((index, *_analyse_path(path, settings, cache is not None)) for index, path, _ in misses)
    for index, report, key, verified in done:
        record(index, report, key, verified)
    return [results[index] for index in sorted(results)]


def _in_pool(misses: list[tuple[int, str, int]], settings: Settings, workers: int, keyed: bool,
             inline: Sequence[tuple[int, str]] = (), verify: Verifier | None = None,
             ) -> Iterable[tuple[int, FileReport, str | None, tuple[str, list[Diagnostic]] | None]]:
    """Analyse `misses` over `workers` processes, and `inline` here while they work, yielding results
    as they finish."""
    pending = list(reversed(misses))  # popped from the end: largest first
    here = list(reversed(inline))
    crashed: list[tuple[int, str]] = []
    with ProcessPoolExecutor(max_workers=workers, mp_context=_context()) as pool:
        running: dict[Future[Analysed], tuple[int, str]] = {}
        try:
            while pending or running or here:
                while pending and len(running) < workers * IN_FLIGHT_PER_WORKER:
                    index, path, _ = pending.pop()
                    try:
                        running[pool.submit(_analyse_path, path, settings, keyed, verify)] = (index, path)
                    except BrokenProcessPool:
                        crashed.append((index, path))
                if here:  # the parent's share, a few files between looks at the workers
                    for _ in range(min(INLINE_BATCH, len(here))):
                        index, path = here.pop()
                        answered = _screen_path(path, settings, keyed)
                        if answered is None:  # it needs the analysis after all: the next for a worker
                            pending.append((index, path, 0))
                        else:
                            yield (index, *answered)
                    finished, _ = wait(running, timeout=0, return_when=FIRST_COMPLETED) if running else (set(), set())
                else:
                    finished, _ = wait(running, return_when=FIRST_COMPLETED) if running else (set(), set())
                for future in finished:
                    index, path = running.pop(future)
                    try:
                        report, key, verified = future.result()
                    except BrokenProcessPool:
                        crashed.append((index, path))
                        continue
                    yield index, report, key, verified
                if crashed and not running:  # the pool is broken: the rest go one by one
                    crashed.extend((index, path) for index, path, _ in reversed(pending))
                    pending.clear()
        except BaseException:
            pool.shutdown(wait=False, cancel_futures=True)
            raise
    for index, path in sorted(crashed):
        yield (index, *_isolated(path, settings, keyed))


def _isolated(path: str, settings: Settings, keyed: bool) -> Analysed:
    """Analyse one file in a process of its own; a crash there becomes a GL000 for this file alone."""
    with ProcessPoolExecutor(max_workers=1, mp_context=_context()) as pool:
        try:
            return pool.submit(_analyse_path, path, settings, keyed).result()
        except BrokenProcessPool:
            return FileReport([unanalysable(
                path, "crashed the analysis process (the parser died on it)",
                help="this is a bug in gradlint or Python's parser; please report it with the file. Other files were still checked.",
            )], reproducible=False), None, None


def _context():
    """`fork` where it exists and is safe enough (Linux): workers start in milliseconds with the
    parser already imported; elsewhere the platform's default (spawn)."""
    import multiprocessing

    if sys.platform.startswith("linux"):
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context()
