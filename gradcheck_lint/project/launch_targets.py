"""Which script a written command line runs, and whether that run can reach a given file.

A command line gives its options to the script it launches: `python train_llm.py --gradient_accumulation_steps 16`
in a README sets the option of `train_llm.py`'s parser, not that of `train.py`, which defines an option of the same
name (MachineDetector, lockbox 44; train_reward, lockbox 43). When the launched script is a file of the project whose
run imports nothing that leads to the checked file, the values on that line are another run's, and a setting read in
the checked file is not given them.

Nothing is decided where the script is not a file of the project (a variable, `python $SCRIPT`; a script of another
project), or where a file on the way imports by a computed name (`importlib.import_module(name)`, `__import__`,
`runpy`, `exec`): such a run may reach any file.
"""

from __future__ import annotations

import os
import re

from .index import ProjectIndex
from .launches import launched_script, script_names
from .reachability import project_words

__all__ = ["foreign_launches_removed"]

_CONTINUED = re.compile(r"\\[ \t]*$")  # a shell line continued on the next
# an import whose module is computed at run time: the run may reach any file
_DYNAMIC_IMPORT = re.compile(r"\bimport_module\s*\(|\b__import__\s*\(|\brunpy\b|\bexec\s*\(|\bimportlib\.util\b")
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
        while end < len(lines) - 1 and _CONTINUED.search(lines[end]):
            end += 1
        command = " ".join(_CONTINUED.sub(" ", line) for line in lines[start:end + 1])
        script = launched_script(command)
        if script is not None and _elsewhere(script, index, path):
            for i in range(start, end + 1):
                out[i] = ""
        start = end + 1
    return "\n".join(out)


_LAUNCH_WORDS = re.compile(r"\bpython|\btorchrun\b|\baccelerate\b|\bdeepspeed\b|\bmpirun\b|\bsrun\b|\bhorovodrun\b|"
                           r"\bcolossalai\b|\blightning\b|\bfabric\b|torch\.distributed")


def _elsewhere(script: str, index: ProjectIndex, path: str) -> bool:
    """The launched `script` names files of the project, and the run of none of them can reach `path`; or it is a
    script path within the project (relative, no `..`, no variable) that names no file of it (a script renamed or
    removed since: `accelerate launch train_accelerate.py` beside `train_accelerate(TODO).py`), whose run reaches
    nothing here."""
    words = project_words(index.root)
    if words is None:
        return False
    target = os.path.abspath(path)
    named = [os.path.abspath(f) for f, _w in words.files
             if f.endswith(".py") and script_names(script, f, index.root)]
    if not named:
        return script.endswith(".py") and _within_project(script)
    return not any(_reaches(index, f, target) for f in named)


def _within_project(script: str) -> bool:
    """A script path that can only name a file under the project's root: relative, without `..`, `~` or a variable."""
    return not (script.startswith(("/", "~")) or ".." in script or "$" in script or "%" in script or "{" in script
                or "\\" in script or ":" in script)


def _reaches(index: ProjectIndex, start: str, target: str) -> bool:
    """The run of the script `start` may import the file `target` (or it is that file): a walk over the project
    modules each imports (at any depth, in any function); True too where a file on the way imports by a computed name,
    or the walk passes `_MOST_FILES`."""
    seen = {start}
    todo = [start]
    found = False
    while todo and not found:
        file = todo.pop()
        if file == target:
            found = True
            break
        text = index.text_of(file)
        if text is None or _DYNAMIC_IMPORT.search(text) or len(seen) > _MOST_FILES:
            found = True  # not read, or a computed import: it may lead anywhere
            break
        for other in index.imported_files(file, text):
            if other not in seen:
                seen.add(other)
                todo.append(other)
    return found
