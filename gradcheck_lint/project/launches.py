"""How the project launches its scripts: one process each, or several.

A data-parallel wrapper synchronises gradients only where the script runs on several processes: accelerate's
`prepare` wraps the model in DDP under `accelerate launch` on several processes and not under `python train.py`;
a `DDP(model)` built under `if world_size > 1:` is never built in one. A finding about micro-batches synchronised
for nothing (GL006) rests on the script being launched on several processes. Where the project writes how it is
run (a README's `python train_lora.py`, a shell script's `torchrun --nproc_per_node=1 train.py`), every launch it
writes starts one process, and nothing in the project asks for several (no multi-process launch of any script, no
configuration file with `num_processes: 8` or `distributed_type: MULTI_GPU`, no Python file that starts processes
itself with `mp.spawn`), that the code runs on several processes is not a fact read: the finding (in the script
launched or in a module it imports) becomes `possible`, the assumption said (flan-ul2-alpaca's `python
train_lora.py` on one A100, lockbox 42).

The commands and settings that start several processes are data (`launchers.toml`). Nothing is decided when the
project writes no launch of a script of its own (the user may launch it any way), or runs nothing of its own (a
library).
A command line gives its options to the script it launches, and its processes to that script's run:
`python train_llm.py --gradient_accumulation_steps 16` in a README sets the option of `train_llm.py`'s parser, not
that of `train.py`, which defines an option of the same name (MachineDetector, lockbox 44), and `torchrun
--nproc_per_node 8 run_squad.py` runs `run_squad.py` on eight processes, not `run_swag.py` beside it. Where the
launched script is a file of the project whose run imports nothing that leads to the checked file (or a script path
the project does not have), the line is another run's (`foreign_launches_removed`, `runs_elsewhere`). Nothing is
decided where the script is not named (`python $SCRIPT`), lies outside the project, or where a file on the way
imports by a computed name (`importlib.import_module(name)`, `__import__`, `runpy`, `exec`).
"""

from __future__ import annotations

import functools
import os
import re
import sys
from dataclasses import dataclass

from ..diagnostics import Certainty, Diagnostic, made_possible
from ..sources import decode_source, read_bytes
from .index import ProjectIndex, marked_root, nested_root
from .reachability import imports_by_computed_name, project_words

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

__all__ = ["foreign_launches_removed", "launched_script", "runs_elsewhere", "script_names",
           "settle_one_process_launches"]

_CODES = frozenset({"GL006"})  # the findings that rest on several processes
_ASSUMPTION = ("that the script runs on several processes, where every launch the project writes starts one "
               "(`python train.py`)")
_DATA = os.path.join(os.path.dirname(__file__), "launchers.toml")
# a Python file that starts the processes of a run itself (or hands the script to something that does)
_STARTS_PROCESSES = re.compile(r"\b(?:spawn|start_processes|notebook_launcher|debug_launcher|elastic_launch|launch|"
                               r"Process)\s*\(|\bsubmitit\b|\btorchrun\b|\btorch\.distributed\.(?:launch|run)\b")
_CONTINUED = re.compile(r"\\[ \t]*\r?\n")  # a shell line continued on the next


@dataclass(frozen=True)
class _Launcher:
    name: str
    pattern: re.Pattern[str]
    processes: tuple[re.Pattern[str], ...]


@dataclass(frozen=True)
class _Table:
    launchers: tuple[_Launcher, ...]
    single: tuple[re.Pattern[str], ...]
    settings: tuple[tuple[re.Pattern[str], bool], ...]  # (pattern, whether any match asks for several)


@functools.cache
def _table() -> _Table:
    with open(_DATA, "rb") as fh:
        data = tomllib.load(fh)
    launchers = tuple(_Launcher(row["name"], re.compile(row["pattern"]),
                                tuple(re.compile(p) for p in row.get("processes", ())))
                      for row in data.get("launcher", ()))
    single = tuple(re.compile(row["pattern"]) for row in data.get("single", ()))
    settings = tuple((re.compile(row["pattern"]), bool(row.get("always", False))) for row in data.get("setting", ()))
    return _Table(launchers, single, settings)


def settle_one_process_launches(found: list[Diagnostic], text: str, index: ProjectIndex, path: str
                                ) -> tuple[list[Diagnostic], tuple[tuple[str, str], ...]] | None:
    """`found` (the findings of the file at `path`, whose source is `text`) with its certain findings that rest on
    several processes made possible where every launch of a script the project writes starts one, and the project
    files read (with their SHA-256); None when nothing was read."""
    if not any(_settleable(d) for d in found):
        return None
    words = project_words(index.root)
    if words is None or not words.runs_something or not marked_root(index.root):
        return None  # (a folder of scripts without a marker may be part of a project: its launches are not known)
    read: dict[str, str] = {}
    several = bool(_STARTS_PROCESSES.search(text))
    scripts = [_names_of(file, index.root) for file, _w in words.files
               if file.endswith(".py") and not nested_root(file, index.root)]
    launched_once = False
    for file, file_words in words.files:
        if os.path.abspath(file) == os.path.abspath(path):
            continue
        if file.endswith(".py") and not any(w in file_words.counts for w in _PROCESS_WORDS):
            continue
        if nested_root(file, index.root):
            continue  # a project of its own inside this one (an example with its own README): its launches are its own
        read[file] = file_words.digest
        launches = _launches_of(file, file_words.digest)
        # (processes started for another script's run, which cannot reach this file, are that run's: `torchrun
        # --nproc_per_node 8 run_squad.py` beside `run_swag.py`; a Python file that starts processes, likewise)
        if file.endswith(".py"):
            several = several or launches.several and _reaches(index, os.path.abspath(file), os.path.abspath(path))
        else:
            several = several or launches.configured or any(
                script is None or not runs_elsewhere(script, index, path) for script in launches.several_scripts)
        launched_once = launched_once or any(_names(script, names) for script in launches.once for names in scripts)
    if several or not launched_once:
        return list(found), tuple(sorted(read.items()))
    out: list[Diagnostic] = []
    for d in found:
        if _settleable(d):
            d = made_possible(d, _ASSUMPTION)
        out.append(d)
    return out, tuple(sorted(read.items()))


@dataclass(frozen=True)
class _FileLaunches:
    several: bool  # the file launches several processes, asks for them, or starts them itself
    once: tuple[str, ...]  # the scripts it launches in one process
    several_scripts: tuple[str | None, ...] = ()  # the scripts it launches on several processes (None: not named)
    configured: bool = False  # a setting of the file asks for several processes (`num_processes: 8`)


_PROCESS_WORDS = ("spawn", "start_processes", "notebook_launcher", "debug_launcher", "elastic_launch", "launch",
                  "Process", "submitit", "torchrun")  # the words of `_STARTS_PROCESSES`
_LAUNCHES: dict[tuple[str, str], _FileLaunches] = {}  # by path and SHA-256


def _launches_of(path: str, digest: str) -> _FileLaunches:
    """What a project file says of launches: a Python file, whether it starts processes itself; any other text file,
    its commands and settings."""
    known = _LAUNCHES.get((path, digest))
    if known is not None:
        return known
    data = read_bytes(path)
    content = "" if isinstance(data, str) else decode_source(data).text or ""
    if path.endswith(".py"):
        found = _FileLaunches(bool(_STARTS_PROCESSES.search(content)), ())
    else:
        configured = _asks_for_several(content)
        several, once, several_scripts = configured, [], []
        for command in _commands(content):
            kind, script = _launch(command)
            several = several or kind == "several"
            if kind == "one" and script is not None:
                once.append(script)
            elif kind == "several":
                several_scripts.append(launched_script(command))
        found = _FileLaunches(several, tuple(once), tuple(several_scripts), configured)
    _LAUNCHES[(path, digest)] = found
    return found


def _settleable(d: Diagnostic) -> bool:
    return d.certainty is Certainty.CERTAIN and d.code in _CODES and d.cell is None


def _commands(text: str) -> list[str]:
    """The lines of a text file, a shell line continued with `\\` joined to the next."""
    return _CONTINUED.sub(" ", text).splitlines()


def _launch(command: str) -> tuple[str | None, str | None]:
    """("several", None) for a command that starts several processes (or an unknown number: `--nproc_per_node
    $NGPUS`), ("one", the script or module it runs) for a launch of one process (`python train.py`, `torchrun
    --nproc_per_node=1 train.py`), (None, None) for anything else."""
    table = _table()
    for launcher in table.launchers:
        if launcher.pattern.search(command) is None:
            continue
        counts = [m.group(1).strip("\"'") for p in launcher.processes for m in p.finditer(command)]
        if counts and all(c == "1" for c in counts):
            return "one", _script_after(command, launcher.pattern)
        return "several", None
    for single in table.single:
        m = single.search(command)
        if m is not None:
            return "one", m.group(1).strip("\"'")
    return None, None


def launched_script(command: str) -> str | None:
    """The script or module a command line runs, on one process or several (`python train.py`, `torchrun
    --nproc_per_node=8 app/train.py`, `python -m app.train`), or None (no launch, or none named)."""
    table = _table()
    for launcher in table.launchers:
        if launcher.pattern.search(command) is not None:
            return _script_after(command, launcher.pattern)
    for single in table.single:
        m = single.search(command)
        if m is not None:
            script = m.group(1).strip("\"'")
            return script if script.endswith(".py") or re.fullmatch(r"[A-Za-z_][\w.]*", script) else None
    return None


def script_names(script: str, path: str, root: str) -> bool:
    """A launch's `script` names the project file at `path` (see `_names`)."""
    return _names(script, _names_of(path, root))


def _script_after(command: str, launcher: re.Pattern[str]) -> str | None:
    """The first word after the launcher that names a Python file (`torchrun --nproc_per_node=1 app/train.py`)."""
    m = launcher.search(command)
    assert m is not None
    return next((w.strip("\"'") for w in command[m.end():].split() if w.strip("\"'").endswith(".py")), None)


def _names_of(path: str, root: str) -> tuple[str, str]:
    """The script's path from the project root (`app/train.py`) and its module (`app.train`)."""
    rel = os.path.relpath(os.path.abspath(path), os.path.abspath(root)).replace(os.sep, "/")
    return rel, rel[:-3].replace("/", ".") if rel.endswith(".py") else rel


def _names(script: str, names: tuple[str, str]) -> bool:
    """A launch's `script` (`train.py`, `./scripts/../app/train.py`, `app.train`) names the file: its path from the root
    ends with the script's path, or its module with the script's module."""
    rel, module = names
    script = script.replace("\\", "/")
    while script.startswith("./"):
        script = script[2:]
    if script.endswith(".py"):
        tail = script.rsplit("../", 1)[-1]
        return rel == tail or rel.endswith("/" + tail)
    return bool(script) and (module == script or module.endswith("." + script))


def _asks_for_several(content: str) -> bool:
    """A configuration file's setting asks for several processes: a count of more than one (or one not written as a
    number), or a multi-process kind."""
    for pattern, always in _table().settings:
        for m in pattern.finditer(content):
            if always or not m.group(1).isdigit() or int(m.group(1)) > 1:
                return True
    return False


_CONTINUED_LINE = re.compile(r"\\[ \t]*$")  # a physical line continued on the next
_MOST_FILES = 2_000  # a run importing more project files than this is taken to reach any


def foreign_launches_removed(text: str, index: ProjectIndex, path: str) -> str:
    """`text` (a shell script, a document, a string of a Python file) with the lines of every command that launches
    another script of the project, one whose run cannot reach the file at `path`, blanked (the line count kept)."""
    if not _LAUNCH_WORDS.search(text):
        return text
    lines = text.split("\n")
    out = list(lines)
    start = 0
    while start < len(lines):
        end = start
        while end < len(lines) - 1 and _CONTINUED_LINE.search(lines[end]):
            end += 1
        command = " ".join(_CONTINUED_LINE.sub(" ", line) for line in lines[start:end + 1])
        script = launched_script(command)
        if script is not None and runs_elsewhere(script, index, path):
            for i in range(start, end + 1):
                out[i] = ""
        start = end + 1
    return "\n".join(out)


_LAUNCH_WORDS = re.compile(r"\bpython|\btorchrun\b|\baccelerate\b|\bdeepspeed\b|\bmpirun\b|\bsrun\b|\bhorovodrun\b|"
                           r"\bcolossalai\b|\blightning\b|\bfabric\b|torch\.distributed")


def runs_elsewhere(script: str, index: ProjectIndex, path: str) -> bool:
    """The launched `script` names files of the project, and the run of none of them can reach `path`. A script the
    project does not have may be a placeholder for any of its scripts (`torchrun --nproc_per_node N train_xxx.py` in
    minimind's README) or one renamed since: nothing is decided."""
    words = project_words(index.root)
    if words is None:
        return False
    target = os.path.abspath(path)
    named = [os.path.abspath(f) for f, _w in words.files
             if f.endswith(".py") and script_names(script, f, index.root)]
    if not named and script.endswith(".py") and not (script.startswith(("/", "~")) or ".." in script
                                                     or any(c in script for c in "$%{:")):
        # a path within the project written before the files moved (`./examples/single_model_scripts/
        # run_multiple_choice.py` of a file now at `optimus/examples/run_multiple_choice.py`): its files of that name
        base = os.path.basename(script.replace("\\", "/"))
        named = [os.path.abspath(f) for f, _w in words.files if os.path.basename(f) == base]
    return bool(named) and not any(_reaches(index, f, target) for f in named)


def _reaches(index: ProjectIndex, start: str, target: str) -> bool:
    """The run of the script `start` may import the file `target` (or it is that file): a walk over the project
    modules each imports (at any depth, in any function); True too where a file on the way imports by a computed name
    (`reachability.imports_by_computed_name`), or the walk passes `_MOST_FILES`."""
    seen = {start}
    todo = [start]
    found = False
    while todo and not found:
        file = todo.pop()
        if file == target:
            found = True
            break
        text = index.text_of(file)
        if text is None or imports_by_computed_name(file, index) or len(seen) > _MOST_FILES:
            found = True  # not read, or a computed import: it may lead anywhere
            break
        for other in index.imported_files(file, text):
            if other not in seen:
                seen.add(other)
                todo.append(other)
    return found
