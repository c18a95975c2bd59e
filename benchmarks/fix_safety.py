"""Apply every safe fix gradlint offers on a tree, each on its own, and check that it holds: the fixed text
parses, the finding it fixes is gone, and gradlint reports nothing new on it.

    python benchmarks/fix_safety.py PATH [PATH ...] [--show]
    python benchmarks/fix_safety.py --sweep [--set all]   # the realbugs sweep's repositories, from the mirror

Every analysis rule is on, with no configuration (as a new user). Prints the number of safe fixes, and
each one that fails with why; exits 1 when one fails (a safe fix must never be wrong), else 0.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gradcheck_lint.config import Settings
from gradcheck_lint.discovery import iter_python_files
from gradcheck_lint.fixcheck import FixOutcome, check_safe_fixes
from gradcheck_lint.registry import all_rules
from gradcheck_lint.sources import read_source


def check_tree(paths: list[str], settings: Settings, label: str = "") -> tuple[int, list[tuple[str, FixOutcome]]]:
    """Return the number of safe fixes under `paths` and the failing ones, with their files."""
    count, failing = 0, []
    for path in iter_python_files(paths, settings):
        if path.endswith(".ipynb"):
            continue  # notebooks are never rewritten
        text = read_source(path).text
        if text is None:
            continue
        for outcome in check_safe_fixes(text, path, settings):
            count += 1
            if not outcome.ok:
                failing.append((f"{label}{os.path.relpath(path, paths[0]) if label else path}", outcome))
    return count, failing


def _sweep(which: str, settings: Settings) -> tuple[int, list[tuple[str, FixOutcome]]]:
    sys.path.insert(0, str(Path(__file__).resolve().parent / "realbugs"))
    import run as realbugs  # type: ignore[import-not-found]

    repos = realbugs.tomllib.loads((realbugs.HERE / "sweep.toml").read_text(encoding="utf-8"))["repo"]
    total, failing = 0, []
    for entry in repos:
        if which != "all" and entry["set"] != which:
            continue
        repo_dir = realbugs.snapshot(entry["repo"])
        if repo_dir is None:
            continue
        with tempfile.TemporaryDirectory() as tmp:
            realbugs.extract_python_files(repo_dir, entry["commit"], Path(tmp))
            n, bad = check_tree([tmp], settings, label=f"{entry['repo']}:")
            total += n
            failing += bad
    return total, failing


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*")
    parser.add_argument("--sweep", action="store_true", help="the repositories of benchmarks/realbugs/sweep.toml")
    parser.add_argument("--set", default="all", choices=["heldout", "dev", "fresh", "all"])
    args = parser.parse_args(argv)
    if not args.paths and not args.sweep:
        parser.error("give paths or --sweep")
    settings = Settings.default().with_enabled(all_rules())
    start = time.perf_counter()
    total, failing = _sweep(args.set, settings) if args.sweep else check_tree(args.paths, settings)
    print(f"safe fixes: {total}, failing: {len(failing)} ({time.perf_counter() - start:.0f} s)")
    for where, o in failing:
        d = o.diagnostic
        why = "does not parse" if not o.parses else "; ".join(
            ([] if o.resolved else ["its finding stays"]) + [f"new {n.code} at line {n.line}: {n.message[:140]}" for n in o.new])
        print(f"  {where}:{d.line}:{d.column} {d.code} {d.fix.description if d.fix else ''}: {why}")
    return 1 if failing else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
