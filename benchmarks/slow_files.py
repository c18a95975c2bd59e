"""The slowest files of real repositories: per-file CPU time of `gradlint`, each file linted in its own tree.

    python benchmarks/slow_files.py [--mirror DIR] [--workdir DIR] [--top 15] [--max-lines 1000] [REPO...]

Every `.py` file of each repository's HEAD (bare git directories `<mirror>/<owner>+<name>/repo`, by
default `$GRADLINT_MIRROR` or `/work/eval/mirror`) is written under `--workdir` (kept between runs, an
empty `.git` file marking the project root as in a checkout), then linted one file at a time in this
process, every analysis rule on, no cache, as `check_file` does: the project around it is read (its
imports followed), and the project index is kept while a repository's files are linted, as in one
`gradlint` run. The figure per file is CPU seconds (`time.process_time`, less sensitive to other jobs on
the machine than wall time), and the slowest files of at most `--max-lines` lines (the target: none over
1 s) and of any size are printed. `--rerun N` times the printed files again N times each, alone in a
fresh index, and prints the best (the first figure includes reading the project's other files).
Nothing is asserted; the code of the repositories is never committed.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks" / "realbugs"))

from run import extract_python_files, settings  # noqa: E402

from gradcheck_lint.api import check_file  # noqa: E402
from gradcheck_lint.discovery import iter_python_files  # noqa: E402
from gradcheck_lint.project.index import forget_index  # noqa: E402


def extracted(mirror: Path, workdir: Path, name: str) -> Path:
    """The HEAD `.py` files of `name` under `workdir` (written once)."""
    into = workdir / name
    if not (into / ".git").exists():
        into.mkdir(parents=True, exist_ok=True)
        extract_python_files(mirror / name / "repo", "HEAD", into)
        (into / ".git").write_text("", encoding="utf-8")
    return into


def lines_of(path: str) -> int:
    with open(path, "rb") as fh:
        return fh.read().count(b"\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("repos", nargs="*", help="owner+name directories of the mirror (default: all)")
    parser.add_argument("--mirror", type=Path, default=Path(os.environ.get("GRADLINT_MIRROR", "/work/eval/mirror")))
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/gradlint-slow-files"))
    parser.add_argument("--top", type=int, default=15)
    parser.add_argument("--max-lines", type=int, default=1000)
    parser.add_argument("--rerun", type=int, default=0, metavar="N")
    parser.add_argument("--show-over", type=float, default=0.5, metavar="S",
                        help="print each file over S CPU seconds as soon as it is timed (a long sweep shows its way)")
    args = parser.parse_args()
    chosen = settings()
    names = args.repos or sorted(p.name for p in args.mirror.iterdir() if (p / "repo").is_dir())
    rows: list[tuple[float, int, str, str]] = []  # (cpu seconds, lines, repo, relative path)
    began, files = time.perf_counter(), 0
    for name in names:
        tree = extracted(args.mirror, args.workdir, name)
        for path in iter_python_files([str(tree)], chosen):
            cpu = time.process_time()
            check_file(path, settings=chosen)
            rows.append((time.process_time() - cpu, lines_of(path), name, os.path.relpath(path, tree)))
            files += 1
            if rows[-1][0] > args.show_over:
                print(f"  ... {rows[-1][0]:6.2f} s  {rows[-1][1]:6,} lines  {name} {rows[-1][3]}", flush=True)
        forget_index(str(tree))
    print(f"{len(names)} repositories, {files} files, {time.perf_counter() - began:.0f} s wall, "
          f"{sum(r[0] for r in rows):.1f} s CPU in the analysis")
    small = sorted((r for r in rows if r[1] <= args.max_lines), reverse=True)[: args.top]
    large = sorted((r for r in rows if r[1] > args.max_lines), reverse=True)[: args.top]
    for title, chosen_rows in ((f"files of at most {args.max_lines} lines", small), (f"files over {args.max_lines} lines", large)):
        print(f"\nslowest {title} (CPU s, in their tree, one process):")
        for cpu, n, name, rel in chosen_rows:
            again = ""
            if args.rerun:
                best = float("inf")
                for _ in range(args.rerun):
                    forget_index(str(args.workdir / name))
                    start = time.process_time()
                    check_file(str(args.workdir / name / rel), settings=chosen)
                    best = min(best, time.process_time() - start)
                again = f"  (alone, best of {args.rerun}: {best:.2f} s)"
            print(f"  {cpu:6.2f} s  {n:6,} lines  {name} {rel}{again}")


if __name__ == "__main__":
    main()
