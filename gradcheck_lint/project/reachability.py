"""Code nothing in the project runs: a finding there rests on the assumption that it runs.

A research repository keeps old variants of its training code: a method of the experiment class that no
script calls any more (`exp.select_with_distance(...)` removed from `run.py`), a `set_temperature` helper
nothing imports, a trainer class nothing builds. A finding in such code describes code that never runs;
whether it is a bug is a matter of reading (the judges of the held-out sets split on it). It is not a
fact read: the analysis reads the function as if something called it. So a `certain` finding whose
innermost enclosing function or method is named nowhere else in the project (any text file under the
project root: scripts, notebooks, shell scripts and configs, where a name may be dispatched from; in a `.py` file,
by its code, not by a line that is only a comment, a string, or an attribute of another object; in documentation,
by its code in backticks, not by its prose), or is a method of a class named nowhere else (nothing builds it),
becomes `possible`, with the assumption said.

What may run without its name written: methods of a class with a base from outside the project (a
framework's hooks, `training_step`, `compute_loss`), `forward` and other dunder methods, decorated
functions (a registry, a command line), anything in a project that runs nothing of its own (no script,
notebook or shell script: a library, called from outside), and anything in a project that looks names up
at run time (`getattr(self, name)`, `getattr(models, args.arch)`, `globals()[name]`, `fire.Fire()`): these
are left as they are. Module-level code always runs.
"""

from __future__ import annotations

import ast
import hashlib
import os
import re
from collections import Counter
from dataclasses import dataclass

from ..analysis.conventions import convention
from ..diagnostics import Certainty, Diagnostic, made_possible
from ..sources import decode_source, parsed_or_none, read_bytes
from .callers import project_files
from .index import MAX_FOREIGN_BYTES, ProjectIndex, marked_root, module_identity

__all__ = ["MAX_PROJECT_TEXT_FILES", "TEXT_SUFFIXES", "ProjectWords", "imports_by_computed_name", "named_elsewhere",
           "project_words", "settle_unreached"]

MAX_PROJECT_TEXT_FILES = 2_000  # a larger project is not read whole for names (its findings are left as they are)
TEXT_SUFFIXES = (".py", ".ipynb", ".sh", ".bash", ".yaml", ".yml", ".json", ".cfg", ".toml", ".ini", ".txt", ".md",
                  ".rst", ".jsonnet", ".gin")
# documentation runs nothing: its prose ("train the model") names no function; its code does (a README's example
# `trainer.train()` is how a library's users call it), in backticks: fenced blocks, inline code, reST literals
_PROSE_SUFFIXES = (".md", ".rst", ".txt")
_DOC_CODE = re.compile(r"(`+)(.+?)\1", re.S)
_WORD = re.compile(r"[A-Za-z_]\w*")
_DEF = re.compile(r"\bdef[ \t]+(\w+)")  # (also in a notebook's JSON, a line of a cell's source)
_CLASS = re.compile(r"\bclass[ \t]+(\w+)")
_TOP_DEF = re.compile(r"^(?:async[ \t]+)?def[ \t]+(\w+)", re.M)  # a module-level function of a `.py` file
# a line of a `.py` file that is only a comment: a call commented out (`# train4(queue, model)`) runs nothing
_COMMENT_LINE = re.compile(r"^[ \t]*#[^\n]*", re.M)
_ATTRIBUTE = re.compile(r"\.[ \t]*([A-Za-z_]\w*)")  # `.train` of `model.train()`
_BARE = re.compile(r"(?<![\w.])[A-Za-z_]\w*")  # a word not after a `.`
# string literals, as far as a line-based reading can tell them (triple-quoted ones across lines)
_STRING = re.compile(r'(?s:""".*?"""|' + r"'''.*?''')"
                     + r'|"[^"\\\n]*(?:\\.[^"\\\n]*)*"' + r"|'[^'\\\n]*(?:\\.[^'\\\n]*)*'")
# names looked up at run time: `getattr(self, f"train_{mode}")`, `getattr(module, name)`, `globals()[name]`
# (`getattr(F, activation)`, `getattr(args, key)`: the receivers the conventions table names are no lookup of the
# project's own functions; python-fire with no component makes every function of the module a command)
_DYNAMIC = re.compile(rf"\bgetattr\(\s*(?!(?:{convention('settings_or_library_receiver').pattern})(?:\.\w+)*\s*,)"
                      r"[\w.]+\s*,\s*+(?![\"'][\w.]*[\"']\s*[,)])|\bglobals\(\)\s*\[|\bvars\(\)\s*\[|\bFire\(\s*\)")
# the parameter of an attribute hook (`def __getattr__(self, attr):`, a module's `def __getattr__(name):`)
_ATTRIBUTE_HOOK = re.compile(r"\bdef[ \t]+__getattr(?:ibute)?__[ \t]*\([ \t]*(?:self[ \t]*,[ \t]*)?(\w+)")


def _forwarding_left_out(text: str) -> str:
    """The text without the lookups an attribute hook makes of the name it was asked for (`def __getattr__(self, attr):
    return getattr(self.stream, attr)`): such a lookup reaches only names the code spells at the access (`log.flush`),
    which count where they are spelt; it makes no name up (5yearsKim's `Unbuffered` stream, lockbox 42)."""
    hooks = set(_ATTRIBUTE_HOOK.findall(text))
    if not hooks:
        return text
    names = "|".join(sorted(map(re.escape, hooks)))
    return re.sub(rf"\bgetattr\([ \t]*[\w.]+[ \t]*,[ \t]*(?:{names})[ \t]*[,)]", " ", text)


# a script: a `__main__` guard, or a call statement at the top level (`exp.train()`, `main()`)
_ENTRY = re.compile(r"__main__|^[A-Za-z_][\w.]*\(", re.M)
_PLAIN_BASES = frozenset({"object", "Module", "nn.Module", "torch.nn.Module", "ABC", "abc.ABC"})
_HARMLESS_DECORATORS = frozenset({"staticmethod", "classmethod"})
# words of the ways to import a module by a name made at run time (`importlib.import_module(f"models.{name}")`)
_IMPORTS_BY_NAME = ("import_module", "__import__", "importlib", "spec_from_file_location", "load_source", "run_path",
                    "run_module", "iter_modules", "walk_packages")
_UNIMPORTED = ("that code nothing in the project imports runs (its module is named in no other file: left over, or "
               "imported from outside the project)")
_ASSUMPTION = ("that code nothing in the project calls runs (it is named nowhere else: left over, or called from "
               "outside the project)")


@dataclass(frozen=True)
class _FileWords:
    """One text file's words (how often each occurs), the names its `def` and `class` statements give (how
    often), the classes it defines, and whether it looks names up at run time; kept while the file's size
    and modification time stay."""

    stamp: tuple[int, int]
    digest: str
    counts: dict[str, int]
    defined: dict[str, int]
    classes: frozenset[str]
    dynamic: bool
    entry: bool
    top_defined: frozenset[str] = frozenset()  # its module-level functions (a `.py` file's)
    # a `.py` file's words in its code (not in strings or comments) standing alone, and those after a `.`
    # (`model.train()`): None for other files, whose every word may name a function (a config's `_target_`)
    bare: dict[str, int] | None = None
    attributes: dict[str, int] | None = None


@dataclass(frozen=True)
class ProjectWords:
    """The project's text files, read for names."""

    files: tuple[tuple[str, _FileWords], ...]

    @property
    def dynamic(self) -> bool:
        return any(f.dynamic for _, f in self.files)

    @property
    def runs_something(self) -> bool:
        """Some file of the project is run (a script, a notebook, a shell script): else it is a library, whose
        functions are called from outside."""
        return any(f.entry for _, f in self.files)

    @property
    def digests(self) -> tuple[tuple[str, str], ...]:
        return tuple((path, f.digest) for path, f in self.files)

    def naming(self, name: str) -> tuple[tuple[str, str], ...]:
        """The files that hold the name (with their SHA-256)."""
        return tuple((path, f.digest) for path, f in self.files if name in f.counts)

    def count(self, name: str) -> int:
        return sum(f.counts.get(name, 0) for _, f in self.files)

    def definitions(self, name: str) -> int:
        return sum(f.defined.get(name, 0) for _, f in self.files)

    def calls_of_function(self, name: str, home: str) -> tuple[int, int]:
        """(occurrences, definitions) of the name of a module-level function of `home`, leaving out the other files
        that define a module-level function of that name themselves: their calls are of their own copy (a script
        copied into siblings, each with its own `train_qascore`, two of them calling theirs)."""
        stem = _module_stem(home)
        kept = [(path, f) for path, f in self.files if path == home or name not in f.top_defined]
        # in a `.py` file, the name standing alone in code (a call, an import, a reference); `model.train()` names a
        # method of another object and `"train"` a split of a dataset, not the module-level `train`: an attribute
        # counts only in another file that names `home`'s module (`evaluate_glue.train(...)`)
        named = sum(f.counts.get(name, 0) if f.bare is None else
                    f.bare.get(name, 0) + (f.attributes or {}).get(name, 0) * (path != home and stem in f.counts)
                    for path, f in kept)
        return named, sum(f.defined.get(name, 0) for _, f in kept)

    def looks_up(self, home: str) -> bool:
        """A file that may look up a module-level function of `home` by a name made at run time: `home` itself, or a
        file naming its module (`getattr(evaluate_glue, name)`). A vendored library's own `getattr(self, name)` never
        reaches the scripts beside it."""
        stem = _module_stem(home)
        return any(f.dynamic and (path == home or stem in f.counts) for path, f in self.files)

    def defines_class(self, name: str) -> bool:
        return any(name in f.classes for _, f in self.files)


_FILES: dict[str, _FileWords] = {}


def _module_stem(path: str) -> str:
    """The name other files import the module at `path` by (its file name without the suffix)."""
    return os.path.splitext(os.path.basename(path))[0]


def settle_unreached(found: list[Diagnostic], text: str, index: ProjectIndex, path: str | None = None
                     ) -> tuple[list[Diagnostic], tuple[tuple[str, str], ...]] | None:
    """`found` (the findings of the file whose source is `text`) with its certain findings in code nothing in the
    project names made possible, and the project files the decisions read (with their SHA-256): every text file
    for a finding made possible (one may come to name it), those naming it for one left certain (they may stop);
    None when nothing was decided. `path`: the file's own (absolute), whose calls of its own functions count."""
    if not any(_settleable(d) for d in found):
        return None
    tree = parsed_or_none(text)
    if tree is None:
        return None
    places = {id(d): _enclosing(tree, d.line) for d in found if _settleable(d)}
    words = project_words(index.root)
    if words is None or not words.runs_something:
        return None
    # (only in a project known whole, by its marker: a folder of scripts may be imported from beside it)
    unimported = path is not None and marked_root(index.root) and _library_module(tree) and _unimported(path, words, index)
    if not any(places.values()) and not unimported:
        return None
    # names used only by code that runs when the module is imported (`if __name__ != "__main__":`), in a module no
    # other file imports: that code never runs, and what it calls is named by nothing that runs (dowobeha's
    # `train_seq2seq(...)`, turned off by its author so, lockbox 44)
    unused = _import_time_names(tree) if path is not None and marked_root(index.root) \
        and not named_elsewhere(path, words, index) else Counter()
    out: list[Diagnostic] = []
    read: dict[str, str] = {}
    for d in found:
        place = places.get(id(d))
        if unimported and _settleable(d):
            d = made_possible(d, _UNIMPORTED)
            read.update(words.digests)
        elif place is not None and _unnamed(place, words, path, unused):
            # (a safe fix is offered only on a certain finding)
            d = made_possible(d, _ASSUMPTION)
            read.update(words.digests)
        elif place is not None:
            read.update(words.naming(place.name))
        out.append(d)
    return out, tuple(sorted(read.items()))


_DEFINING = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Assign, ast.AnnAssign)


def _library_module(tree: ast.Module) -> bool:
    """The module's own code only defines (imports, functions, classes, assignments, its docstring, imports tried): run
    as a script it would train nothing; its training runs where something imports it."""
    for stmt in tree.body:
        if isinstance(stmt, _DEFINING) or isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
            continue
        if isinstance(stmt, ast.Try) and all(isinstance(s, (ast.Import, ast.ImportFrom, ast.Assign, ast.Pass))
                                             for block in (stmt.body, *(h.body for h in stmt.handlers))
                                             for s in block):
            continue
        return False
    return True


def _import_time_names(tree: ast.Module) -> Counter[str]:
    """The names standing alone in the module's code that runs only when it is imported: the body of a top-level
    `if __name__ != "__main__":`, the `else` of `if __name__ == "__main__":`."""
    out: Counter[str] = Counter()
    for stmt in tree.body:
        if not (isinstance(stmt, ast.If) and isinstance(stmt.test, ast.Compare) and len(stmt.test.ops) == 1
                and isinstance(stmt.test.left, ast.Name) and stmt.test.left.id == "__name__"
                and isinstance(stmt.test.comparators[0], ast.Constant) and stmt.test.comparators[0].value == "__main__"):
            continue
        block = stmt.body if isinstance(stmt.test.ops[0], ast.NotEq) else \
            stmt.orelse if isinstance(stmt.test.ops[0], ast.Eq) else []
        out.update(n.id for b in block for n in ast.walk(b) if isinstance(n, ast.Name))
    return out


def named_elsewhere(path: str, words: ProjectWords, index: ProjectIndex, launches: bool = False) -> bool:
    """Another file of the project may import the module at `path`: a Python file or notebook that names it (its file
    name without `.py`) or imports modules by a name made at run time, or another text file that names it other than as
    a file to run (`python seq2seq.py` in a shell script or a document runs it as a script, not imported); with
    `launches`, also as a file to run."""
    stem = _module_stem(path)
    launched = re.compile(rf"\b{re.escape(stem)}\.py\b")
    for p, f in words.files:
        if os.path.abspath(p) == path:
            continue
        if p.endswith((".py", ".ipynb")):
            if stem in f.counts or any(w in f.counts for w in _IMPORTS_BY_NAME) and imports_by_computed_name(p, index):
                return True
        elif stem in f.counts and (launches or f.counts[stem] > len(launched.findall(index.text_of(p) or ""))):
            return True
    return False


# the calls that import (or run) a module named by a value: with a literal naming no module of the project
# (`__import__("transformers", fromlist=[name])`, the installed package), `__import__` and `import_module` reach nothing
# of it; any other such call may reach any file
_COMPUTED_IMPORTS = frozenset({"__import__", "import_module", "spec_from_file_location", "load_source", "run_path",
                               "run_module", "iter_modules", "walk_packages", "exec"})
_COMPUTED: dict[tuple[str, str], bool] = {}  # by path and text


def imports_by_computed_name(path: str, index: ProjectIndex) -> bool:
    """The project file at `path` may import a module of the project by a name made at run time: a call of
    `importlib.import_module`, `__import__`, `runpy`, `exec`, a loader... whose module is not a string naming a module
    outside the project (`__import__("transformers", ...)` of a project whose own copy is `python_transformers`: the
    installed package; T5VQVAE, lockbox 46). A file that cannot be read or parsed may."""
    text = index.text_of(path)
    if text is None:
        return True
    if not any(name in text for name in _COMPUTED_IMPORTS):
        return False  # (no call of the kind can be in it)
    key = (path, text)
    if key in _COMPUTED:
        return _COMPUTED[key]
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        _COMPUTED[key] = True
        return True
    home = module_identity(path)[0]
    found = False
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        if name not in _COMPUTED_IMPORTS:
            continue
        first = node.args[0] if node.args else None
        named = first.value if isinstance(first, ast.Constant) and isinstance(first.value, str) else None
        if name in ("__import__", "import_module") and named is not None and not named.startswith(".") \
                and index.locate(named, home) is None and index.locate(named.split(".")[0], home) is None:
            continue  # a module outside the project, named by a literal
        found = True
        break
    if len(_COMPUTED) > 4096:
        _COMPUTED.clear()
    _COMPUTED[key] = found
    return found


def _unimported(path: str, words: ProjectWords, index: ProjectIndex) -> bool:
    """The module at `path` (whose own code only defines: `_library_module`) is no script (no `__main__` guard, no call
    at its top level) and no other file of the project
    names it (its file name without `.py`, as an import, a launch or a document would), in a project that imports
    nothing by a name made at run time: nothing of the project runs its code (And1210's three copies of a diffusion
    trainer module nothing imports, lockbox 42)."""
    name = os.path.basename(path)
    if name in ("__init__.py", "__main__.py") or not name.endswith(".py"):
        return False
    own = next((f for p, f in words.files if os.path.abspath(p) == path), None)
    return own is not None and not own.entry and not named_elsewhere(path, words, index, launches=True)


def _settleable(d: Diagnostic) -> bool:
    return d.certainty is Certainty.CERTAIN and d.code.startswith("GL0") and d.code != "GL000" and d.cell is None


@dataclass(frozen=True)
class _Place:
    """The outermost function or method a finding sits in: its name, and the class it is a method of."""

    name: str
    decorated: bool
    cls: ast.ClassDef | None


def _enclosing(tree: ast.Module, line: int) -> _Place | None:
    for node in tree.body:
        if not (node.lineno <= line <= (node.end_lineno or node.lineno)):
            continue
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return _Place(node.name, _decorated(node), None)
        if isinstance(node, ast.ClassDef):
            for member in node.body:
                if (isinstance(member, (ast.FunctionDef, ast.AsyncFunctionDef))
                        and member.lineno <= line <= (member.end_lineno or member.lineno)):
                    return _Place(member.name, _decorated(member), node)
        return None
    return None


def _decorated(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    return any(not (isinstance(d, ast.Name) and d.id in _HARMLESS_DECORATORS) for d in fn.decorator_list)


def _unnamed(place: _Place, words: ProjectWords, home: str | None = None, unused: Counter[str] | None = None) -> bool:
    """Nothing in the project names the function (every occurrence of its name is a `def` of it, or in another file
    that defines a module-level function of that name itself, for a module-level function of `home`, or in `home`'s
    code that never runs, `unused`)."""
    unused = unused or Counter()
    name = place.name
    cls = place.cls
    if cls is not None and any(_external_base(b, words) for b in cls.bases):
        return False  # a framework's class may call it by its name (a hook)
    if cls is not None and not cls.decorator_list and not words.dynamic \
            and words.count(cls.name) - unused[cls.name] <= words.definitions(cls.name):
        return True  # a class nothing names is never built: none of its methods runs
    if place.decorated or (name.startswith("__") and name.endswith("__")) or name == "forward":
        return False
    if cls is None and home is not None:
        if words.looks_up(home):
            return False
        named, defined = words.calls_of_function(name, home)
        return named - unused[name] <= defined
    if words.dynamic:
        return False
    return words.count(name) <= words.definitions(name)


def _external_base(base: ast.expr, words: ProjectWords) -> bool:
    text = ast.unparse(base)
    if text in _PLAIN_BASES:
        return False
    return not words.defines_class(text.rsplit(".", 1)[-1])


def project_words(root: str) -> ProjectWords | None:
    """The project's text files (listed again every few seconds; each read again when its size or
    modification time changes); None for a project of more than `MAX_PROJECT_TEXT_FILES`."""
    listed = project_files(root, TEXT_SUFFIXES, MAX_PROJECT_TEXT_FILES + 1)
    if len(listed) > MAX_PROJECT_TEXT_FILES:
        return None
    files = []
    for path in listed:
        read = _file_words(path)
        if read is not None:
            files.append((path, read))
    return ProjectWords(tuple(files))


def _file_words(path: str) -> _FileWords | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    stamp = (st.st_size, st.st_mtime_ns)
    known = _FILES.get(path)
    if known is not None and known.stamp == stamp:
        return known
    if st.st_size > MAX_FOREIGN_BYTES:
        return None
    data = read_bytes(path)  # (never a plain open: a named pipe would block)
    if isinstance(data, str):
        return None
    text = decode_source(data).text or ""
    code_only = text
    bare = attributes = None
    if path.endswith(".py"):  # its code: no comment-only line; and no string (a `def` in a docstring defines nothing)
        text = _COMMENT_LINE.sub("", text)
        code_only = _STRING.sub(" ", text)
        bare, attributes = Counter(_BARE.findall(code_only)), Counter(_ATTRIBUTE.findall(code_only))
    elif path.endswith(_PROSE_SUFFIXES):
        text = code_only = " ".join(m.group(2) for m in _DOC_CODE.finditer(text))
    counts = Counter(_WORD.findall(text))
    defined: Counter[str] = Counter()
    classes: frozenset[str] = frozenset()
    top: frozenset[str] = frozenset()
    dynamic = False
    entry = path.endswith((".ipynb", ".sh", ".bash")) or path.endswith(".py") and bool(_ENTRY.search(text))
    if path.endswith((".py", ".ipynb")):
        named = _CLASS.findall(code_only)
        # (a class statement names the class no more than a def does)
        defined.update([*_DEF.findall(code_only), *named])
        classes = frozenset(named)
        dynamic = bool(_DYNAMIC.search(_forwarding_left_out(text)))
        top = frozenset(_TOP_DEF.findall(code_only)) if path.endswith(".py") else frozenset()
    found = _FILES[path] = _FileWords(stamp, hashlib.sha256(data).hexdigest(), counts, defined, classes, dynamic, entry,
                                      top, bare, attributes)
    return found

