"""Real historical gradient bugs, and a sweep of unseen repositories: what gradlint finds in them.

    python benchmarks/realbugs/run.py bugs [--only GL001,GL003] [--show] [--extract DIR]
    python benchmarks/realbugs/run.py sweep [--set heldout|dev|all] [--show]

`manifest.toml` lists real bugs from public repositories (metadata only: repository, buggy and
fixed commits, path, the labelled lines, category, why); `sweep.toml` lists repositories of training
code; `verdicts.toml` holds a verdict for every finding of the sweep. The code itself is never
committed: each repository is read from a fetched snapshot, a bare git directory at
`$GRADLINT_MIRROR/<owner>+<name>/repo` (default `/work/.mirror`; the search tool's `fetch` makes them).

`bugs`: each buggy version is linted (every analysis rule on, as a new user would, with no
configuration). A bug counts as *found* when a diagnostic of its category is reported on one of its
labelled lines, or names one of them ("at line N"); found *by default* when that diagnostic is
`certain` (the default output shows only those), else found only with `--show-possible`. Its fixed version is *clean* when it has no
diagnostic of that category, except at a line `fixed_still_buggy` lists: another instance of the
same bug that the fix commit left, read by hand (each with why). `sweep`: every Python file of each repository at its recorded commit is
linted; each finding is matched with `verdicts.toml` (`true`, `false`, or not yet read). Both print
figures and exit 0; nothing here is a test.
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from gradcheck_lint import check_source
from gradcheck_lint.api import check_file, check_paths
from gradcheck_lint.config import Settings
from gradcheck_lint.diagnostics import Diagnostic
from gradcheck_lint.discovery import iter_python_files
from gradcheck_lint.engine import analyse_text
from gradcheck_lint.notebooks import analyse_notebook
from gradcheck_lint.project.index import MAX_FOREIGN_BYTES, forget_index
from gradcheck_lint.project.reachability import TEXT_SUFFIXES
from gradcheck_lint.registry import all_rules

HERE = Path(__file__).resolve().parent
MIRROR = Path(os.environ.get("GRADLINT_MIRROR", "/work/.mirror"))
ANALYSIS = frozenset(all_rules())


def snapshot(repo: str) -> Path | None:
    path = MIRROR / repo.replace("/", "+") / "repo"
    return path if path.is_dir() else None


def git_show(repo_dir: Path, commit: str, path: str) -> str | None:
    run = subprocess.run(["git", "-C", str(repo_dir), "show", f"{commit}:{path}"], capture_output=True)
    return run.stdout.decode("utf-8", "replace") if run.returncode == 0 else None


# sources a build step turns into importable modules: their presence keeps an import of them possible
_BUILT = (b".pyx", b".pxd", b".c", b".cc", b".cpp", b".cu", b".so", b".pyd", b".pyi")


def extract_python_files(repo_dir: Path, commit: str, into: Path, notebooks: bool = False) -> int:
    """Write every `.py` file of `commit` (and `.ipynb` with `notebooks`) under `into`, one blob at a
    time: a snapshot may lack some large files (images kept out of the mirror), which makes `git archive`
    stop half-way."""
    suffixes = (b".py", b".ipynb") if notebooks else (b".py",)
    # the other text files a checkout has, where a script, a notebook or a config may name a function
    # (`project.reachability` reads them); written but not counted
    texts = tuple(s.encode() for s in TEXT_SUFFIXES if s.encode() not in suffixes and s != ".ipynb")
    listing = subprocess.run(["git", "-C", str(repo_dir), "ls-tree", "-r", "-z", commit], capture_output=True).stdout
    wanted = []
    present = []  # files only whose presence counts (`project.unimportable`): built sources, linked modules
    for row in listing.split(b"\0"):
        if not row:
            continue
        meta, _, path = row.partition(b"\t")
        mode, kind, blob = meta.split()
        if kind == b"blob" and mode != b"120000" and path.endswith(suffixes + texts):
            wanted.append((blob, path.decode("utf-8", "surrogateescape")))
        elif kind == b"blob" and (path.endswith(_BUILT) or mode == b"120000" and path.endswith(b".py")):
            present.append(path.decode("utf-8", "surrogateescape"))
    for path in present:
        target = into / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.touch()
    batch = subprocess.run(["git", "-C", str(repo_dir), "cat-file", "--batch"], input=b"".join(b + b"\n" for b, _ in wanted),
                           capture_output=True).stdout
    offset, written = 0, 0
    for _blob, path in wanted:
        end = batch.index(b"\n", offset)
        header = batch[offset:end].split()
        if len(header) < 3 or header[1] != b"blob":  # `<sha> missing`
            offset = end + 1
            continue
        size = int(header[2])
        counted = path.endswith(tuple(x.decode() for x in suffixes))
        if counted or size <= MAX_FOREIGN_BYTES:
            target = into / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(batch[end + 1 : end + 1 + size])
        offset = end + 1 + size + 1
        written += counted
    return written


def settings() -> Settings:
    return Settings.default().with_enabled(ANALYSIS)


@dataclass
class Outcome:
    bug: dict  # type: ignore[type-arg]
    status: str  # found | missed | unavailable
    clean: bool | None
    by_default: bool  # found by a certain diagnostic: in the default output, not only with --show-possible
    reported: list[Diagnostic]
    fixed_reported: list[Diagnostic]


def names_line(d: Diagnostic, lines: set[int]) -> bool:
    return d.line in lines or any(int(n) in lines for n in re.findall(r"\bat line (\d+)", d.message))


def _lint(text: str, repo_dir: Path, commit: str, path: str, chosen: Settings, tree: bool,
          also: tuple[str, ...] = ()) -> list[Diagnostic]:
    """Lint one file's text: alone (`tree` False, as before), or inside the whole tree at `commit` (its
    `.py` files extracted into a temporary project), so calls into other files of the project are read;
    `also` names other files of the tree linted too (a bug whose evidence spans files)."""
    if path.endswith(".ipynb"):  # a notebook is read as its cells, and its findings put back on the JSON's lines
        found = analyse_notebook(text, path, chosen).diagnostics
        return [_on_json_lines(d, text) for d in found]
    if not tree:
        return check_source(text, path, settings=chosen)
    with tempfile.TemporaryDirectory(prefix="gradlint-tree-") as tmp:
        root = Path(tmp)
        extract_python_files(repo_dir, commit, root)
        (root / ".git").mkdir(exist_ok=True)  # the project root marker
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
        found: list[Diagnostic] = []
        try:
            found = analyse_text(text, str(target), chosen).diagnostics
            for other in also:
                if other != path and (root / other).is_file():
                    found += analyse_text((root / other).read_text(encoding="utf-8", errors="replace"), str(root / other), chosen).diagnostics
        finally:
            forget_index(str(root))
        return [dataclasses.replace(d, path=os.path.relpath(d.path, root),
                                    related=tuple(dataclasses.replace(r, path=os.path.relpath(r.path, root)) for r in d.related))
                for d in found]


def notebook_json_lines(text: str) -> dict[tuple[int, int], int]:
    """(cell, line in the cell) -> line of the notebook's JSON text, for notebooks written as nbformat
    writes them (each cell's `"source"` a list of strings, one per line): the manifest labels a notebook's
    bug by the line of its JSON, the linter by cell and line."""
    places: dict[tuple[int, int], int] = {}
    lines = text.splitlines()
    cell, i = 0, 0
    while i < len(lines):
        stripped = lines[i].strip()
        if stripped.startswith('"cell_type"'):
            cell += 1
        if stripped.startswith('"source"') and cell:
            if stripped.endswith("["):
                j, k = i + 1, 1
                while j < len(lines) and lines[j].strip() not in ("]", "],"):
                    places[(cell, k)] = j + 1
                    j, k = j + 1, k + 1
                i = j
            else:  # one string: every line of the cell is on this JSON line
                for k in range(1, stripped.count("\\n") + 2):
                    places[(cell, k)] = i + 1
        i += 1
    return places


def _on_json_lines(d: Diagnostic, text: str) -> Diagnostic:
    """A notebook's diagnostic moved from (cell, line) to the line of the JSON text."""
    places = notebook_json_lines(text)
    if d.cell is None:
        return d
    start = places.get((d.cell, d.span.line), d.span.line)
    end = places.get((d.cell, d.span.end_line), start)
    return dataclasses.replace(d, span=dataclasses.replace(d.span, line=start, end_line=end), cell=None)


_EVIDENCE = re.compile(r"([\w./-]+\.py):(\d+)")


def evidence_places(bug: dict) -> set[tuple[str, int]]:  # type: ignore[type-arg]
    """The labelled lines of a bug as (path, line): its own lines in its file, and the `path:line` its
    evidence strings name (a bug whose evidence spans files)."""
    places = {(bug["buggy_path"], n) for n in bug["lines"]}
    for text in bug.get("evidence", []):
        for path, line in _EVIDENCE.findall(text):
            places.add((path, int(line)))
    return places


def hits_bug(d: Diagnostic, bug: dict, places: set[tuple[str, int]]) -> bool:  # type: ignore[type-arg]
    """A finding of the bug's code at one of its places, or naming one (its message's `at line N` in
    the bug's file, or a related location)."""
    if d.code != bug["category"]:
        return False
    def at(path: str, line: int) -> bool:
        return any(line == n and (path == p or path.endswith("/" + p) or p.endswith("/" + path)) for p, n in places)
    if at(d.path, d.line) or any(at(r.path, r.span.line) for r in d.related):
        return True
    return d.path.endswith(bug["buggy_path"]) and names_line(d, set(bug["lines"]))


def check_bug(bug: dict, chosen: Settings, tree: bool = True) -> Outcome:  # type: ignore[type-arg]
    repo_dir = snapshot(bug["repo"])
    if repo_dir is None:
        return Outcome(bug, "unavailable", None, False, [], [])
    buggy = git_show(repo_dir, bug["buggy_commit"], bug["buggy_path"])
    if buggy is None:
        return Outcome(bug, "unavailable", None, False, [], [])
    places = evidence_places(bug)
    also = tuple(sorted({p for p, _ in places} - {bug["buggy_path"]}))
    reported = [d for d in _lint(buggy, repo_dir, bug["buggy_commit"], bug["buggy_path"], chosen, tree, also) if d.code in ANALYSIS]
    hits = [d for d in reported if hits_bug(d, bug, places)]
    found, by_default = bool(hits), any(not d.possible for d in hits)
    clean = None
    fixed_reported: list[Diagnostic] = []
    if bug.get("fixed", True):
        fixed = git_show(repo_dir, bug["fixed_commit"], bug["fixed_path"])
        if fixed is not None:
            fixed_reported = [d for d in _lint(fixed, repo_dir, bug["fixed_commit"], bug["fixed_path"], chosen, tree) if d.code in ANALYSIS]
            # a finding read by hand as another, real instance the fix left (`fixed_still_buggy`) is no
            # false alarm: the fixed version is clean when every finding of the category is one of those
            still = {entry["line"] for entry in bug.get("fixed_still_buggy", [])}
            clean = not any(d.code == bug["category"] and d.line not in still for d in fixed_reported)
    return Outcome(bug, "found" if found else "missed", clean, by_default, reported, fixed_reported)


def run_bugs(args: argparse.Namespace) -> int:
    manifest = tomllib.loads(Path(args.manifest).read_text(encoding="utf-8")).get("bug", [])  # (a miner may find none)
    only = set(args.only.split(",")) if args.only else None
    chosen = settings()
    outcomes = []
    start = time.perf_counter()
    for bug in manifest:
        if only and bug["category"] not in only:
            continue
        outcomes.append(check_bug(bug, chosen, tree=not args.single_file))
        if args.extract:
            _extract(bug, Path(args.extract))
    table: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    for o in outcomes:
        row = table[o.bug["category"]]
        row[o.status] += 1
        row["default"] += o.by_default
        if o.clean is not None:
            row["fixed checked"] += 1
            row["fixed clean"] += o.clean
    print("found: with --show-possible; default: by a certain finding, in the default output")
    print(f"{'code':6} {'bugs':>5} {'found':>6} {'default':>8} {'missed':>7} {'unavail':>8} {'recall':>7} {'default':>8} {'fixed clean':>12}")
    totals: collections.Counter[str] = collections.Counter()
    for code in sorted(table):
        row = table[code]
        totals.update(row)
        _row(code, row)
    _row("all", totals)
    in_scope = collections.Counter()
    for code in ("GL001", "GL002", "GL003", "GL004", "GL005"):
        in_scope.update(table.get(code, collections.Counter()))
    _row("GL001-5", in_scope)
    print(f"({time.perf_counter() - start:.1f} s)")
    for o in outcomes:
        b = o.bug
        if o.status != "found" or args.show:
            mark = {"found": "found " if o.by_default else "found?", "missed": "MISSED", "unavailable": "n/a   "}[o.status]
            print(f"\n{mark} {b['id']} {b['category']} {b['repo']} {b['buggy_path']}@{b['buggy_commit'][:8]} lines {b['lines']}")
            print(f"       why: {b['why']}")
            if b.get("miss_reason") and o.status == "missed":
                print(f"       miss: {b['miss_reason']}")
            for d in o.reported:
                print(f"       reported {d.line}:{d.column} {d.code} [{d.certainty.value}] {d.message[:160]}")
        if o.clean is False:
            print(f"\nNOT CLEAN {b['id']} {b['category']} fixed {b['fixed_path']}@{b['fixed_commit'][:8]}")
            for d in o.fixed_reported:
                if d.code == b["category"]:
                    print(f"       reported {d.line}:{d.column} {d.code} [{d.certainty.value}] {d.message[:160]}")
    return 0


def _row(code: str, row: collections.Counter[str]) -> None:
    n = row["found"] + row["missed"]
    recall = f"{100 * row['found'] / n:.0f} %" if n else "-"
    default = f"{100 * row['default'] / n:.0f} %" if n else "-"
    clean = f"{row['fixed clean']}/{row['fixed checked']}" if row["fixed checked"] else "-"
    print(f"{code:6} {n + row['unavailable']:5d} {row['found']:6d} {row['default']:8d} {row['missed']:7d} {row['unavailable']:8d} {recall:>7} "
          f"{default:>8} {clean:>12}")


def _extract(bug: dict, into: Path) -> None:  # type: ignore[type-arg]
    repo_dir = snapshot(bug["repo"])
    if repo_dir is None:
        return
    for which, commit, path in (("buggy", bug["buggy_commit"], bug["buggy_path"]), ("fixed", bug["fixed_commit"], bug["fixed_path"])):
        text = git_show(repo_dir, commit, path)
        if text is not None:
            target = into / bug["id"] / which / Path(path).name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")


# -- the sweep ----------------------------------------------------------------------------------
def load_verdicts(path: Path = HERE / "verdicts.toml") -> dict[tuple[str, str, int, str], dict]:  # type: ignore[type-arg]
    if not path.exists():
        return {}
    rows = tomllib.loads(path.read_text(encoding="utf-8")).get("finding", [])
    return {(r["repo"], r["path"], r["line"], r["code"]): r for r in rows}


def run_sweep(args: argparse.Namespace) -> int:
    repos = tomllib.loads(Path(args.manifest).read_text(encoding="utf-8"))["repo"]
    verdicts = load_verdicts(Path(args.verdicts))
    chosen = settings()
    counts: collections.Counter[str] = collections.Counter()
    per_code: collections.Counter[str] = collections.Counter()
    by_certainty: collections.Counter[str] = collections.Counter()  # "true certain", "false possible", ...
    unread = []
    times: list[tuple[float, str, str]] = []  # with --times: (seconds, repo, path) per file
    start = time.perf_counter()
    files = 0
    for entry in repos:
        if args.set != "all" and entry.get("set", args.set) != args.set:
            continue
        repo_dir = snapshot(entry["repo"])
        if repo_dir is None:
            print(f"n/a {entry['repo']}: fetch github:{entry['repo']}")
            counts["unavailable"] += 1
            continue
        with tempfile.TemporaryDirectory() as tmp:
            extract_python_files(repo_dir, entry["commit"], Path(tmp), notebooks=args.notebooks)
            (Path(tmp) / ".git").mkdir(exist_ok=True)  # the project root marker a checkout has (as `bugs` does)
            if args.times:  # one file at a time, in this process, timed (slower than the pool)
                found, checked = [], 0
                for path in iter_python_files([tmp]):
                    began = time.perf_counter()
                    found += check_file(path, settings=chosen)
                    times.append((time.perf_counter() - began, entry["repo"], os.path.relpath(path, tmp)))
                    checked += 1
            else:
                found, checked = check_paths([tmp], chosen, jobs=args.jobs)
            files += checked
            for d in found:
                if d.code not in ANALYSIS:
                    if d.code == "GL000":
                        counts["unanalysable"] += 1
                    continue
                rel = os.path.relpath(d.path, tmp)
                key = (entry["repo"], rel, d.line, d.code)
                verdict = verdicts.get(key, {}).get("verdict", "unread")
                counts[verdict] += 1
                by_certainty[f"{verdict} {d.certainty.value}"] += 1
                per_code[f"{d.code} {verdict}"] += 1
                if verdict == "unread" or args.show:
                    unread.append(f"{verdict:6} {entry['repo']} {rel}:{d.line}:{d.column} {d.code} [{d.certainty.value}] {d.message}")
    print(f"repositories ({args.set}): {sum(1 for e in repos if args.set == 'all' or e.get('set', args.set) == args.set)}, files {files}, "
          f"{time.perf_counter() - start:.0f} s")
    print("findings:", dict(counts))
    shown = {k: v for k, v in by_certainty.items() if k.endswith("certain")}
    print("default output (certain):", dict(sorted(shown.items())), "| only with --show-possible:",
          dict(sorted((k, v) for k, v in by_certainty.items() if k.endswith("possible"))))
    print("per code:", dict(sorted(per_code.items())))
    if times:
        print("slowest files (one process, no cache):")
        for seconds, repo, rel in sorted(times, reverse=True)[:5]:
            print(f"  {seconds:6.2f} s  {repo} {rel}")
    for line in unread:
        print(line)
    return 0


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="what", required=True)
    bugs = sub.add_parser("bugs")
    bugs.add_argument("--only", help="comma-separated codes")
    bugs.add_argument("--manifest", default=str(HERE / "manifest.toml"), help="the bugs (default: this benchmark's manifest.toml)")
    bugs.add_argument("--show", action="store_true", help="list found bugs too")
    bugs.add_argument("--single-file", action="store_true",
                      help="lint each file alone, as extracted from git (default: inside its whole tree at the commit)")
    bugs.add_argument("--extract", help="write the buggy and fixed files under this directory (never commit them)")
    sweep = sub.add_parser("sweep")
    sweep.add_argument("--set", default="heldout", choices=["heldout", "dev", "fresh", "all"])
    sweep.add_argument("--manifest", default=str(HERE / "sweep.toml"), help="the repositories (default: this benchmark's sweep.toml)")
    sweep.add_argument("--verdicts", default=str(HERE / "verdicts.toml"), help="the verdicts read so far")
    sweep.add_argument("--show", action="store_true", help="list findings that have a verdict too")
    sweep.add_argument("--jobs", type=int, default=2)
    sweep.add_argument("--notebooks", action="store_true", help="lint the repositories' notebooks too")
    sweep.add_argument("--times", action="store_true", help="time each file in this process and print the five slowest")
    args = parser.parse_args(argv)
    return run_bugs(args) if args.what == "bugs" else run_sweep(args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
