"""Lint directories of real training code and print, per directory, what the analysis saw.

    python benchmarks/realworld.py [--cap N] DIR [DIR ...]

Per directory: Python files, files that can train (contain `backward`), training loops found (loops
holding an optimizer step), backward calls, optimizer steps, findings per rule, files that failed
(GL000), files where the 64-path-state cap dropped paths (each is listed), and the time taken; then the
five slowest files (one process, no cache). Every finding is listed after the table, to be read one by one.
"""

from __future__ import annotations

import ast
import collections
import sys
import time

from gradcheck_lint.analysis import TrainingModel
from gradcheck_lint.api import check_file
from gradcheck_lint.discovery import iter_python_files
from gradcheck_lint.engine import might_train
from gradcheck_lint.registry import catalogue
from gradcheck_lint.sources import read_source


def survey(directory: str) -> tuple[dict[str, object], list[str]]:
    start = time.perf_counter()
    files = training = loops = backwards = steps = failed = capped = 0
    per_rule: collections.Counter[str] = collections.Counter()
    lines: list[str] = []
    for path in iter_python_files([directory]):
        files += 1
        began = time.perf_counter()
        found = check_file(path)
        TIMES.append((time.perf_counter() - began, path))
        for d in found:
            if d.code == "GL000":
                failed += 1
            else:
                per_rule[d.code] += 1
            lines.append(f"{d.path}:{d.line}:{d.column}: {d.code} {d.message}")
        src = read_source(path).text
        if src is None or not might_train(src):
            continue
        training += 1
        try:
            model = TrainingModel(ast.parse(src), src)
        except Exception:
            continue
        backwards += len(model.backwards)
        steps += len(model.steps)
        loops += len({stack[-1] for s in model.steps.values() for stack in s.loop_stacks if stack})
        if model.cap_hits:
            capped += 1
            lines.append(f"{path}: the 64-state cap dropped paths {model.cap_hits} times")
    row = {"dir": directory, "files": files, "training files": training, "loops": loops, "backward": backwards,
           "steps": steps, **{code: per_rule.get(code, 0) for code in catalogue()}, "failed": failed, "capped files": capped,
           "seconds": round(time.perf_counter() - start, 1)}
    return row, lines


TIMES: list[tuple[float, str]] = []  # seconds per file, for the slowest five


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__)
        return 2
    if argv[0] == "--cap":  # analyse with another path-state cap, to see whether the cap decides a verdict
        from gradcheck_lint.analysis import gradstate

        gradstate.STATE_CAP = int(argv[1])
        argv = argv[2:]
    rows, findings = [], []
    for directory in argv:
        row, lines = survey(directory)
        rows.append(row)
        findings += lines
    headers = list(rows[0])
    widths = [max(len(str(h)), *(len(str(r[h])) for r in rows)) for h in headers]
    print("  ".join(str(h).ljust(w) for h, w in zip(headers, widths)))
    for r in rows:
        print("  ".join(str(r[h]).ljust(w) for h, w in zip(headers, widths)))
    print()
    print("slowest files:")
    for seconds, path in sorted(TIMES, reverse=True)[:5]:
        print(f"  {seconds:6.2f} s  {path}")
    print()
    for line in findings:
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
