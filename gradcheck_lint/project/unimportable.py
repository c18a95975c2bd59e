"""Modules that cannot be imported: a top-level import names a module of the project that does not exist.

NMTGMinor keeps `onmt/train_utils/accent_gan_trainer.py`, whose first lines run `from .trainer import
BaseTrainer` after `onmt/train_utils/trainer.py` was deleted: importing the module raises ImportError before
any of its code is defined, and running it as a script fails on the relative import too. Its training loop
never runs, and findings there describe code that cannot run (two certain false alarms, lockbox 18).

Only what the files on disk settle: an import at the module's top level (not under `try`, `if` or a
function), relative (`from .trainer import ...`: the sibling must exist) or absolute under a package of the
project (`from onmt.train_utils.trainer import ...` where `onmt/` is the project's own package), of a module
path one part of which is neither a file nor a directory. A part that a build step may make is not called
missing: a file of the same stem with any extension (`_C.so`, `ops.pyx`), C, C++, CUDA or Cython sources in
its directory, or a name that reads as generated (`_version`, `*_pb2`).

A directory of the project without `__init__.py` is a namespace package: another installed portion of the same
name could hold the missing module, so it counts as the project's package only where the file's other imports
use it for modules it does hold (YOLOv7-CB's `segment/train.py` imports `utils.general` and `utils.autoanchor`
from its `utils/` folder, which has no `__init__.py`, and `utils.segment.loss`, which the repository does not
hold: a certain GL003 there described code that cannot run, lockbox 37).
"""

from __future__ import annotations

import ast
import os
from dataclasses import dataclass

from ..analysis.conventions import convention
from .index import ProjectIndex, module_identity

# names build steps write: setuptools-scm's `_version.py`, protobuf's `*_pb2.py`, compiled extensions
_GENERATED = convention("built_module")
# the digest a result's dependency carries for a file that must stay absent (`cache`: re-checked once it appears)
ABSENT = "absent"
_SOURCES = (".c", ".cc", ".cpp", ".cxx", ".cu", ".cuh", ".pyx", ".pxd", ".so", ".pyd")


@dataclass(frozen=True)
class MissingImport:
    """The import statement that cannot run, the module it names, and where that module would be."""

    stmt: ast.stmt
    module: str
    candidates: tuple[str, ...]  # the files whose appearance would make it importable


def missing_import(tree: ast.Module, path: str, index: ProjectIndex) -> MissingImport | None:
    """The first top-level import of the module that names a module of the project that does not exist."""
    home, package, is_init = module_identity(path)
    imported = [m for stmt in tree.body for m in _absolute_names(stmt)]
    for stmt in tree.body:
        if isinstance(stmt, ast.ImportFrom) and stmt.level:
            found = _relative(stmt, path, package, is_init)
        elif isinstance(stmt, ast.ImportFrom) and stmt.module:
            found = _absolute(stmt, stmt.module, home, index, imported)
        elif isinstance(stmt, ast.Import):
            found = next((m for m in (_absolute(stmt, a.name, home, index, imported) for a in stmt.names) if m), None)
        else:
            continue
        if found is not None:
            return found
    return None


def _relative(stmt: ast.ImportFrom, path: str, package: str, is_init: bool) -> MissingImport | None:
    if not stmt.module:
        return None  # `from . import x`: `x` may be a name the package's `__init__` binds
    depth = len(package.split(".")) if package else 0
    own = depth if is_init else depth - 1  # how many package levels hold the file
    if stmt.level - 1 > own - 1 or own < 1:
        return None  # above the top package: another error, or a file read outside its package
    directory = os.path.dirname(os.path.abspath(path))
    for _ in range(stmt.level - 1):
        directory = os.path.dirname(directory)
    return _walk(stmt, directory, stmt.module.split("."), "." * stmt.level + stmt.module)


def _absolute_names(stmt: ast.stmt) -> list[str]:
    """The modules a top-level absolute import statement names."""
    if isinstance(stmt, ast.ImportFrom) and not stmt.level and stmt.module:
        return [stmt.module]
    if isinstance(stmt, ast.Import):
        return [a.name for a in stmt.names]
    return []


def _absolute(stmt: ast.stmt, dotted: str, home: str, index: ProjectIndex,
              imported: list[str]) -> MissingImport | None:
    parts = dotted.split(".")
    if len(parts) < 2:
        return None  # a top-level name: installed, or on a path the run sets
    top = next((os.path.join(d, parts[0]) for d in index.search_dirs(home)
                if os.path.isfile(os.path.join(d, parts[0], "__init__.py"))), None)
    if top is None:
        top = _namespace(parts[0], home, index, imported)
    if top is None:
        return None  # not a package of the project: the catalogue's, or installed
    return _walk(stmt, top, parts[1:], dotted)


def _namespace(name: str, home: str, index: ProjectIndex, imported: list[str]) -> str | None:
    """The project's directory `name` without `__init__.py` (a namespace package), when another module the file
    imports from it is there (`utils.general` of `utils/general.py`): the file runs with that directory as its
    package. None otherwise."""
    for d in index.search_dirs(home):
        folder = os.path.join(d, name)
        if not os.path.isdir(folder):
            continue
        for other in imported:
            first, _, rest = other.partition(".")
            if first != name or not rest:
                continue
            child = os.path.join(folder, rest.split(".")[0])
            if os.path.isfile(child + ".py") or os.path.isdir(child):
                return folder
        return None
    return None


def _walk(stmt: ast.stmt, directory: str, parts: list[str], shown: str) -> MissingImport | None:
    for part in parts:
        here = os.path.join(directory, part)
        if os.path.isdir(here):
            directory = here
            continue
        if os.path.isfile(here + ".py") or _may_be_built(directory, part):
            return None
        return MissingImport(stmt, shown, (here + ".py", os.path.join(here, "__init__.py")))
    return None


def _may_be_built(directory: str, part: str) -> bool:
    if _GENERATED.fullmatch(part):
        return True
    try:
        names = os.listdir(directory)
    except OSError:
        return True
    return any(n.startswith(part + ".") or n.endswith(_SOURCES) for n in names)
