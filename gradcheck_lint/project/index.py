"""The project index: which files make up the project a file sits in, and what its imports name.

A file's project is the nearest directory above it holding `pyproject.toml`, `setup.py`, `setup.cfg` or
`.git` (else the file's own directory). Imports of the project's own modules (absolute, relative,
`from x import *`, re-exports in a package's `__init__.py`) are resolved to the function or class they
name. Only files under the project root are ever read: installed packages, third-party or not, stay in
the hands of the API-model catalogue. Files are parsed lazily, when a call into them is met, once per
content (a changed file is parsed again).
"""

from __future__ import annotations

import ast
import contextlib
import functools
import hashlib
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from ..analysis.definitions import ClassInfo
from ..analysis.flow import Function
from ..analysis.names import ImportMap
from ..analysis.syntax import FUNCTIONS, Source, register_foreign, unregister_foreign
from ..analysis.walk import breadth_first, children
from ..sources import at_line_starts, decode_source, parsed_or_none, read_bytes

ROOT_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", ".git")
# A project file larger than this is not read for its definitions (generated code, vendored bundles).
MAX_FOREIGN_BYTES = 1_000_000
_MAX_HOPS = 12  # re-exports followed for one name

__all__ = ["ForeignModule", "ProjectIndex", "Target", "find_root", "index_for", "module_identity"]


def find_root(path: str, fallback: str | None = None, trees: tuple[str, ...] = ()) -> str:
    """The project root of `path`: the nearest directory upwards with a project marker; else the top-most of
    `trees` (the directories named on the command line) and `fallback` (the directory gradlint runs from, or
    its configuration's) that holds the file; else the file's directory.

    A tree without a marker (an unpacked archive, a folder of scripts) still has its scripts in subfolders
    import the packages beside them (`bin/train.py`: `from src.optim import Optimizer`, run from the top):
    the directory the user runs gradlint from is the best guess of where they run the scripts from, and a
    directory they name (`gradlint /data/unpacked-tree`, run from elsewhere) is the tree they mean."""
    start = os.path.dirname(os.path.abspath(path))
    found = _root_of(start)
    if found is not None:
        return found
    candidates = [*trees, fallback] if fallback is not None else list(trees)
    holding = [top for top in map(os.path.abspath, candidates)
               if start == top or start.startswith(top.rstrip(os.sep) + os.sep)]
    return min(holding, key=len) if holding else start


def marked_root(root: str) -> bool:
    """`root` holds a project marker: the project is known whole (not a folder of scripts, a guess of where it ends)."""
    return any(os.path.exists(os.path.join(root, m)) for m in ROOT_MARKERS)


def nested_root(path: str, root: str) -> bool:
    """A directory between the file at `path` and `root` holds a project marker: the file is another project's."""
    current = os.path.dirname(os.path.abspath(path))
    top = os.path.abspath(root)
    while current.startswith(top + os.sep):
        if any(os.path.exists(os.path.join(current, m)) for m in ROOT_MARKERS):
            return True
        current = os.path.dirname(current)
    return False


_ROOTS: dict[str, str | None] = {}


def _root_of(directory: str) -> str | None:
    """The nearest directory upwards holding a project marker, or None."""
    if directory in _ROOTS:
        return _ROOTS[directory]
    current = directory
    found = None
    while True:
        if any(os.path.exists(os.path.join(current, m)) for m in ROOT_MARKERS):
            found = current
            break
        parent = os.path.dirname(current)
        if parent == current:
            break
        current = parent
    _ROOTS[directory] = found
    return found


def module_identity(path: str) -> tuple[str, str, bool]:
    """(the directory imports of `path` start from, its dotted module name, whether it is a package's
    `__init__.py`): the enclosing directories holding an `__init__.py` make the package."""
    path = os.path.abspath(path)
    directory, filename = os.path.split(path)
    stem = filename[:-3] if filename.endswith(".py") else filename
    is_init = stem == "__init__"
    parts = [] if is_init else [stem]
    while os.path.isfile(os.path.join(directory, "__init__.py")):
        directory, package = os.path.split(directory)
        parts.insert(0, package)
        if not package:
            break
    return directory, ".".join(parts), is_init


def absolute_imports(module: ast.Module, package: str, relative: list[ast.ImportFrom] | None = None) -> ImportMap:
    """The module's imports, with relative ones made absolute against `package` (`from .losses import f`
    in package `proj` is `proj.losses.f`); a relative import that climbs out of the package stays bare.
    `relative`: the module's relative imports, when already known."""
    imports = ImportMap.of(module)
    if relative is None:
        relative = [s for s in breadth_first(module) if isinstance(s, ast.ImportFrom) and s.level]
    for stmt in relative:
        base = _relative_base(package, stmt.level, stmt.module)
        if base is None:
            continue
        for alias in stmt.names:
            if alias.name != "*":
                imports.aliases[alias.asname or alias.name] = f"{base}.{alias.name}" if base else alias.name
    return imports


def _relative_base(package: str, level: int, module: str | None) -> str | None:
    parts = package.split(".") if package else []
    if level - 1 > len(parts):
        return None
    parts = parts[: len(parts) - (level - 1)]
    if module:
        parts.append(module)
    return ".".join(parts)


def star_imports(module: ast.Module, package: str) -> list[str]:
    """The modules a module star-imports (`from .layers import *`), absolute."""
    out = []
    for stmt in module.body:
        if isinstance(stmt, ast.ImportFrom) and any(a.name == "*" for a in stmt.names):
            base = _relative_base(package, stmt.level, stmt.module) if stmt.level else stmt.module
            if base:
                out.append(base)
    return out


@dataclass(eq=False)
class ForeignModule:
    """One file of the project read for its definitions: its tree, text, imports, functions and classes."""

    path: str
    name: str
    package: str
    base_dir: str
    tree: ast.Module
    source: Source
    digest: str
    imports: ImportMap
    functions: dict[str, Function] = field(default_factory=dict)
    class_nodes: dict[str, ast.ClassDef] = field(default_factory=dict)
    # names the module's own top-level code binds once, directly (`criterion = nn.MSELoss()`, `DEVICE = ...`):
    # the expression each is bound to
    globals: dict[str, ast.expr] = field(default_factory=dict)
    stars: list[str] = field(default_factory=list)
    parents: dict[int, ast.AST] = field(default_factory=dict)
    nodes: set[int] = field(default_factory=set)
    _by_catalogue: dict[int, object] = field(default_factory=dict)  # id(catalogue) -> ModuleContext

    def holds(self, node: ast.AST) -> bool:
        return id(node) in self.nodes

    def owner(self, node: ast.AST) -> Function | None:
        """The outermost function (or method) holding `node`."""
        found = None
        current: ast.AST | None = node
        while current is not None:
            if isinstance(current, FUNCTIONS):
                found = current
            current = self.parents.get(id(current))
        return found  # type: ignore[return-value]


@dataclass(frozen=True)
class Target:
    """What a qualified name of the project resolves to."""

    module: ForeignModule
    function: Function | None = None
    class_name: str | None = None
    method: str | None = None
    variable: str | None = None  # a name the module's top-level code binds once (`ForeignModule.globals`)


class ProjectIndex:
    """The project under one root: modules by name, parsed on first use and kept while unchanged."""

    def __init__(self, root: str) -> None:
        self.root = root
        self._files: dict[str, tuple[tuple[int, int], ForeignModule | None]] = {}
        self._located: dict[tuple[str, str], str | None] = {}
        self._search_dirs: dict[str, list[str]] = {}
        self._texts: dict[str, str] = {}
        self._resolved: dict[tuple[str, str], Target | None] = {}
        self._digests: dict[str, str] = {}
        self._imports: dict[str, list[tuple[str | None, tuple[str, ...], str | None]]] = {}
        self._probes: dict[str, dict[object, bool]] = {}  # the prefilter's answers for a file's text (see _texts)
        # the files read for the analysis under way, with their SHA-256 (its result depends on them)
        self.recording: dict[str, str] | None = None

    @contextlib.contextmanager
    def reads_recorded(self) -> Iterator[dict[str, str]]:
        """Record the files read while the block runs (with their SHA-256) into the dict it is given, apart from the
        recording under way, which is restored after."""
        saved = self.recording
        read: dict[str, str] = {}
        self.recording = read
        try:
            yield read
        finally:
            self.recording = saved

    # ------------------------------------------------------------------ files
    def search_dirs(self, home_base: str) -> list[str]:
        """Where an absolute import of a file whose imports start at `home_base` is looked for (found once
        per `home_base`, as `locate` keeps what it found: every file of a package asks again)."""
        known = self._search_dirs.get(home_base)
        if known is None:
            out = [home_base]
            for d in (self.root, os.path.join(self.root, "src")):
                if d not in out and os.path.isdir(d):
                    out.append(d)
            # (a project whose top directory is itself a package, `__init__.py` at the root: its files' imports
            # start above the root, and only what lies inside the root is read there, `locate`)
            top_package = home_base == os.path.dirname(self.root) \
                and os.path.isfile(os.path.join(self.root, "__init__.py"))
            known = self._search_dirs[home_base] = [
                d for d in out if _inside(d, self.root) or top_package and d == home_base]
        return known

    def locate(self, dotted: str, home_base: str) -> str | None:
        """The file of module `dotted` in the project (`a.b` -> `a/b.py` or `a/b/__init__.py`), or None."""
        key = (dotted, home_base)
        if key in self._located:
            return self._located[key]
        found = None
        rel = dotted.replace(".", os.sep)
        for d in self.search_dirs(home_base):
            for candidate in (os.path.join(d, rel + ".py"), os.path.join(d, rel, "__init__.py")):
                if os.path.isfile(candidate) and _inside(candidate, self.root):
                    found = candidate
                    break
            if found:
                break
        self._located[key] = found
        return found

    def load(self, path: str) -> ForeignModule | None:
        """The parsed module of `path` (again if the file changed), or None if it cannot be read or parsed."""
        try:
            st = os.stat(path)
        except OSError:
            return None
        stamp = (st.st_mtime_ns, st.st_size)
        known = self._files.get(path)
        if known is not None and known[0] == stamp:
            if known[1] is not None and self.recording is not None:
                self.recording[path] = known[1].digest
            return known[1]
        if known is not None and known[1] is not None:
            unregister_foreign(known[1].nodes)
        module = _parse(path) if st.st_size <= MAX_FOREIGN_BYTES else None
        self._files[path] = (stamp, module)
        if module is not None and module.stars:
            self.merge_star_aliases(module.imports, module.stars, module.base_dir,
                                    frozenset((*module.functions, *module.class_nodes)))
        if module is not None and self.recording is not None:
            self.recording[path] = module.digest
        return module

    def merge_star_aliases(self, imports: ImportMap, stars: list[str], base_dir: str, own: frozenset[str] = frozenset(),
                           depth: int = 3) -> None:
        """The names a star import brings, under the names the module does not bind itself (`own`): the star
        module's functions and classes (`from net import *` then `Net()` is `net.Net`), and its import aliases
        (`from utils import *` of a `utils.py` that does `import torch.nn as nn`: `nn` is `torch.nn` here too)."""
        seen: set[str] = set()
        todo = [(star, depth) for star in stars]
        while todo:
            star, left = todo.pop(0)
            path = self.locate(star, base_dir)
            if path is None or path in seen:
                continue
            seen.add(path)
            module = self.load(path)
            if module is None:
                continue
            for name in (*module.functions, *module.class_nodes):
                if not name.startswith("_") and name not in own:
                    imports.aliases.setdefault(name, f"{star}.{name}")
            for name, target in module.imports.aliases.items():
                if not name.startswith("_") and "." not in name and name not in own:
                    imports.aliases.setdefault(name, target)
            if left > 1:
                todo.extend((inner, left - 1) for inner in module.stars)

    # ------------------------------------------------------------------ names
    def resolve(self, qual: str, home_base: str, catalogue_packages: frozenset[str] = frozenset()) -> Target | None:
        """The project function, class or method `qual` names, following re-exports; None when `qual`
        is not the project's (an installed package, a name of the file itself)."""
        return self._resolve(qual, home_base, catalogue_packages, 0)

    def _resolve(self, qual: str, home_base: str, packages: frozenset[str], hops: int) -> Target | None:
        key = (qual, home_base)
        if key in self._resolved:
            found = self._resolved[key]
            if found is None or self.load(found.module.path) is found.module:  # still the file's content
                return found
        found = self._resolve_now(qual, home_base, packages, hops)
        self._resolved[key] = found
        return found

    def _resolve_now(self, qual: str, home_base: str, packages: frozenset[str], hops: int) -> Target | None:
        if hops > _MAX_HOPS:
            return None
        parts = qual.split(".")
        if parts[0] in packages:
            return None
        for cut in range(len(parts) - 1, 0, -1):
            path = self.locate(".".join(parts[:cut]), home_base)
            if path is None:
                continue
            module = self.load(path)
            if module is None:
                return None
            return self._member(module, parts[cut:], packages, hops)
        return None

    def _member(self, module: ForeignModule, rest: list[str], packages: frozenset[str], hops: int) -> Target | None:
        name = rest[0]
        if name in module.functions and len(rest) == 1:
            return Target(module, function=module.functions[name])
        if name in module.class_nodes and len(rest) <= 2:
            return Target(module, class_name=name, method=rest[1] if len(rest) == 2 else None)
        if name in module.globals and len(rest) == 1:
            return Target(module, variable=name)
        alias = module.imports.aliases.get(name)
        if alias is not None and alias != name:  # a re-export: `from .losses import compute_loss`
            return self._resolve(".".join([alias, *rest[1:]]), module.base_dir, packages, hops + 1)
        sub = self.locate(f"{module.name}.{name}", module.base_dir) if module.path.endswith("__init__.py") else None
        if sub is not None and len(rest) > 1:  # `import pkg` then `pkg.losses.f(...)`
            inner = self.load(sub)
            return None if inner is None else self._member(inner, rest[1:], packages, hops + 1)
        for star in module.stars:
            found = self._resolve(".".join([star, *rest]), module.base_dir, packages, hops + 1)
            if found is not None:
                return found
        return None

    def imported_texts(self, path: str, text: str, depth: int = 1) -> list[tuple[str, dict[object, bool]]]:
        """The text of the project modules `path` imports (and they import, `depth` levels deep), for
        the textual prefilter: a file whose training calls all sit in imported helpers is still read. A
        package's `__init__.py` is read with the modules it takes the imported names from (`from pkg import
        f` of an `__init__.py` doing `from .losses import f`: losses.py, not the package's other modules).
        Each text comes with the memo the prefilter keeps of its answers (kept while the process runs, as
        the text is)."""
        home_base, name, is_init = module_identity(path)
        package = name if is_init else name.rpartition(".")[0]
        seen = {os.path.abspath(path)}
        script_dir = os.path.dirname(os.path.abspath(path))
        out: list[tuple[str, dict[object, bool]]] = []
        # a package's `__init__.py` read so far -> the names taken from it (None: all of them)
        taken: dict[str, frozenset[str] | None] = {}
        todo: list[tuple[str, str, str, int, str, frozenset[str] | None]] = [(text, home_base, package, 0, "", None)]
        while todo:
            body, base, pkg, level, key, names = todo.pop()
            listed = self._imports.get(key) if key else None
            if listed is None:
                listed = _imported_modules(body, pkg)
                if key:
                    self._imports[key] = listed
            for bound, dotted, member in listed:
                if names is not None and bound is not None and bound not in names:
                    continue  # another name of the package, not taken by this import
                for candidate in dotted:
                    found = self.locate(candidate, base)
                    if found is None and not key and script_dir != base:
                        found = self.locate(candidate, script_dir)  # a script's own folder (see ProjectView.target)
                    if found is None:
                        continue
                    # `from pkg import f` takes only `f` of the package; any other import, all its names
                    taking = member is not None and candidate == dotted[-1] and len(dotted) > 1
                    wants = frozenset({member}) if taking and member is not None else None
                    reexports = found.endswith("__init__.py")
                    if found in seen:
                        if not reexports or found not in taken:
                            continue
                        before = taken[found]
                        if before is None or wants is not None and wants <= before:
                            continue
                        taken[found] = None if wants is None else before | wants
                        other = self._text(found)
                        wants = None if wants is None else wants - before  # only the names not read yet
                    else:
                        seen.add(found)
                        other = self._text(found)
                        if other is None:
                            continue
                        out.append((other, self._probes.setdefault(found, {})))
                        if reexports:
                            taken[found] = wants
                    if other is None:
                        continue
                    # a package's `__init__.py` only re-exports, mostly: what it imports is read at the same depth;
                    # so is the module of a class the checked file extends (`class GanEnv(I2IEnv)`): the loop it
                    # inherits may sit in a base of that class, which its own module imports (nunif's `BaseEnv.train`).
                    # (Only the checked file's own bases: following every module's, a library's class hierarchies
                    # made a fifth more of its files pass the prefilter.)
                    extended = not key and bound is not None and _extends(body, bound)
                    if level + 1 < depth or reexports or extended:
                        obase, oname, oinit = module_identity(found)
                        opkg = oname if oinit else oname.rpartition(".")[0]
                        todo.append((other, obase, opkg, level + (not (reexports or extended)), found,
                                     wants if reexports else None))
        return out

    def imported_files(self, path: str, text: str) -> list[str]:
        """The project files the module at `path` (of source `text`) imports, at any depth of its code (a package's
        `__init__.py` for `import pkg`, and `pkg/mod.py` for `from pkg import mod`)."""
        home_base, name, is_init = module_identity(path)
        package = name if is_init else name.rpartition(".")[0]
        script_dir = os.path.dirname(os.path.abspath(path))
        listed = self._imports.get(path)
        if listed is None:
            listed = self._imports[path] = _imported_modules(text, package)
        out: list[str] = []
        for _bound, dotted, _member in listed:
            for candidate in dotted:
                found = self.locate(candidate, home_base)
                if found is None and script_dir != home_base:
                    found = self.locate(candidate, script_dir)
                if found is not None:
                    out.append(os.path.abspath(found))
                    # (`import a.b` runs `a/__init__.py` first)
                    parts = candidate.split(".")
                    for i in range(1, len(parts)):
                        parent = self.locate(".".join(parts[:i]), home_base)
                        if parent is not None:
                            out.append(os.path.abspath(parent))
                    break
        return out

    def text_of(self, path: str) -> str | None:
        """The text of a project file (kept while the process runs; its digest is recorded as read)."""
        return self._text(path)

    def _text(self, path: str) -> str | None:
        known = self._texts.get(path)
        if known is None:
            digest = ""
            try:
                if os.path.getsize(path) > MAX_FOREIGN_BYTES:
                    return None
            except OSError:
                return None
            # (never a plain open: a named pipe called `x.py` in the project would block the run for good)
            data = read_bytes(path)
            if isinstance(data, str):
                known = ""  # not a regular file, or unreadable: its reason belongs to its own check, if it is given
            else:
                known = decode_source(data).text or ""
                digest = hashlib.sha256(data).hexdigest()
            self._texts[path] = known
            self._digests[path] = digest
        if self.recording is not None and self._digests.get(path):
            self.recording[path] = self._digests[path]
        return known

    def module_of_file(self, path: str) -> ForeignModule | None:
        return self.load(os.path.abspath(path))


# Import statements, found where they start a line (`sources.at_line_starts`: from the literal, not tried at every
# line start as `^[ \t]*from` under re.MULTILINE was: `_imported_modules` on accelerate + timm 0.078 -> 0.013 s).
# Every match lies within one line.
_FROM = re.compile(r"from[ \t]+(\.*)([\w.]*)[ \t]+import[ \t]+\(?([^)#\n]*)")
_IMPORT = re.compile(r"import[ \t]+([\w., \t]+)")


def _extends(text: str, name: str) -> bool:
    """A class statement of `text` names `name` among its bases (`class GanEnv(env.I2IEnv, Mixin):`)."""
    return name in _base_words(text)


_CLASS_BASES = re.compile(r"^[ \t]*class[ \t]+\w+[ \t]*\(([^)]*)\)", re.M)


@functools.lru_cache(maxsize=64)
def _base_words(text: str) -> frozenset[str]:
    """The words of every class statement's bases in `text`, read once per text."""
    if "class" not in text:
        return frozenset()
    return frozenset(w for bases in _CLASS_BASES.findall(text) for w in re.findall(r"\w+", bases))


def _imported_modules(text: str, package: str) -> list[tuple[str | None, tuple[str, ...], str | None]]:
    """The modules a text imports, each as (the name it binds, None for a star; its candidates, `from a
    import b`: `a.b`, then `a`; the name it takes from the last candidate: `b`)."""
    out: list[tuple[str | None, tuple[str, ...], str | None]] = []
    for m in at_line_starts(_FROM, text):
        dots, module, names = m.group(1), m.group(2), m.group(3)
        base = _relative_base(package, len(dots), module or None) if dots else module
        if not base and not dots:
            continue
        for n in names.split(","):
            words = n.split()
            n = n.strip().split(" ")[0]
            if n and n != "*":
                bound = words[2] if len(words) >= 3 and words[1] == "as" else n
                out.append((bound, (f"{base}.{n}" if base else n, *((base,) if base else ())), n))
        if "*" in names and base:
            out.append((None, (base,), None))
    for m in at_line_starts(_IMPORT, text):
        for part in m.group(1).split(","):
            words = part.split()
            name = part.strip().split(" ")[0]
            if name:
                bound = words[2] if len(words) >= 3 and words[1] == "as" else name.split(".")[0]
                out.append((bound, (name,), None))
    return out


def _inside(directory: str, root: str) -> bool:
    try:
        return os.path.commonpath([os.path.abspath(directory), root]) == root
    except ValueError:
        return False


def _parse(path: str) -> ForeignModule | None:
    data = read_bytes(path)
    if isinstance(data, str):
        return None  # unreadable, or not a regular file (a named pipe would block a plain open)
    text = decode_source(data).text
    if text is None:
        return None
    tree = parsed_or_none(text)
    if tree is None:
        return None
    base, name, is_init = module_identity(path)
    package = name if is_init else name.rpartition(".")[0]
    source = Source(text)
    parents: dict[int, ast.AST] = {}
    relative: list[ast.ImportFrom] = []
    todo: list[ast.AST] = [tree]
    while todo:  # one walk: every node's parent, and the relative imports (operators and contexts left out)
        node = todo.pop()
        if type(node) is ast.ImportFrom and node.level:
            relative.append(node)
        for child in children(node):
            parents[id(child)] = node
            todo.append(child)
    module = ForeignModule(path=path, name=name, package=package, base_dir=base, tree=tree, source=source,
                           digest=hashlib.sha256(data).hexdigest(), imports=absolute_imports(tree, package, relative),
                           stars=star_imports(tree, package), parents=parents)
    module.nodes = set(parents)
    module.nodes.add(id(tree))
    from ..analysis.definitions import toplevel_statements

    bound: dict[str, list[ast.expr | None]] = {}
    for stmt in toplevel_statements(tree.body):
        if isinstance(stmt, FUNCTIONS):
            module.functions[stmt.name] = stmt
        elif isinstance(stmt, ast.ClassDef):
            module.class_nodes[stmt.name] = stmt
        elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            bound.setdefault(stmt.targets[0].id, []).append(stmt.value)
        elif isinstance(stmt, _BINDINGS):
            for target in ast.walk(stmt):  # bound otherwise too (a tuple, `+=`, a loop): not one known expression
                if isinstance(target, ast.Name) and isinstance(target.ctx, ast.Store):
                    bound.setdefault(target.id, []).append(None)
    # (a placeholder, `model = None`, that a function fills through `global model`, or one set from outside as
    # `config.model = ...`, is not what the name holds when it is read)
    declared = {n for node in ast.walk(tree) if isinstance(node, ast.Global) for n in node.names}
    module.globals = {name: value for name, values in bound.items() if len(values) == 1
                      for value in values if value is not None and not _is_none(value)
                      and name not in declared and name not in module.functions and name not in module.class_nodes}
    register_foreign(module.nodes, source)
    return module


# statements that bind names other than as `name = value` (a tuple, `+=`, a loop's target, an import)
_BINDINGS = (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.For, ast.With, ast.Import, ast.ImportFrom)


def _is_none(value: ast.expr) -> bool:
    return isinstance(value, ast.Constant) and value.value is None


_INDEXES: dict[str, ProjectIndex] = {}


def index_for(path: str, fallback_root: str | None = None, trees: tuple[str, ...] = ()) -> ProjectIndex | None:
    """The project index of the file at `path` (one per root, kept for the process); None for a path
    that is no file on disk (`<string>`, a notebook cell). `fallback_root`, `trees`: see `find_root`."""
    if not path.endswith(".py") or not os.path.isfile(path):
        return None
    root = find_root(path, fallback_root, trees)
    index = _INDEXES.get(root)
    if index is None:
        index = _INDEXES[root] = ProjectIndex(root)
    return index


def forget_index(root: str) -> None:
    """Drop the index of the project under `root` (a temporary tree that is about to be deleted)."""
    index = _INDEXES.pop(os.path.abspath(root), None)
    if index is not None:
        for _, module in index._files.values():
            if module is not None:
                unregister_foreign(module.nodes)
    for directory in [d for d, r in _ROOTS.items() if r == os.path.abspath(root)]:
        del _ROOTS[directory]


# ClassInfo is re-exported for the context module's type hints
__all__ += ["ClassInfo"]
