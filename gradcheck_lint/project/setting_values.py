"""What value a setting has on every run the project makes: a command-line option's default that nothing of the
project overrides, a settings field that every place of the project that may set it sets alike.

Two questions are asked of it: is an accumulation count one on every run (`project.unset_defaults`: a window of one
micro-batch), and is a switch off on every run (`project.off_switches`: a GradScaler built `enabled=args.fp16`, of an
option whose default is False). A setting is read as the script's parsed command line (`args.fp16`, `args` bound by
`parser.parse_args()`), or as a field of a settings object (`cfg.grad_accum_iters`, `self.accum`, `config["fp16"]`),
set by keywords, assignments, dict literals, command-line defaults and the lines of config files, shell scripts and
documents. Any other mention may set it: nothing is decided.
"""

from __future__ import annotations

import ast
import json
import os
import re

from ..analysis.names import dotted
from ..analysis.walk import breadth_first, child_nodes, own_nodes
from .index import ProjectIndex
from .project_calls import calls_of, defaults_of_none, defaults_of_one, is_one, never_constructed, rebound, unpassed
from .reachability import ProjectWords, project_words

__all__ = ["field_of_one", "files_naming", "one_valued", "option_of_one", "parses_only", "script_options"]

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)

def script_options(fn: ast.FunctionDef | ast.AsyncFunctionDef, tree: ast.Module, name: str) -> bool:
    """`name` is the script's parsed command line: every binding of it in `fn` is `parser.parse_args(...)` (or the
    first of `parse_known_args(...)`: GBDE's `args = parser.parse_args()` in `main()`, lockbox 42), or `fn` does not
    bind it and every binding of it in the module's own code (outside functions and classes) is."""
    if any(a.arg == name for a in (*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs,
                                   *((fn.args.vararg,) if fn.args.vararg else ()),
                                   *((fn.args.kwarg,) if fn.args.kwarg else ()))):
        return False
    if any(isinstance(n, ast.Name) and n.id == name and not isinstance(n.ctx, ast.Load) for n in own_nodes(fn)):
        return parses_only(list(fn.body), name)
    return parses_only(list(tree.body), name)


def parses_only(body: list[ast.stmt], name: str) -> bool:
    """Every binding of `name` in `body` (not in functions or classes nested in it) is `x.parse_args(...)` (or the first
    of `x.parse_known_args(...)`), and there is one."""
    bindings = 0
    todo: list[ast.AST] = list(body)
    while todo:
        node = todo.pop()
        if isinstance(node, (*_FUNCTIONS, ast.ClassDef, ast.Lambda)):
            continue
        if isinstance(node, ast.Name) and node.id == name and not isinstance(node.ctx, ast.Load):
            return False  # bound otherwise (a loop, a `with`, a `global` write...): not read
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.value, ast.Call) \
                and isinstance(node.value.func, ast.Attribute):
            target, parse = node.targets[0], node.value.func.attr
            if parse == "parse_args" and isinstance(target, ast.Name) and target.id == name or \
                    parse == "parse_known_args" and isinstance(target, ast.Tuple) and len(target.elts) == 2 \
                    and isinstance(target.elts[0], ast.Name) and target.elts[0].id == name:
                bindings += 1
                todo.append(node.value)
                continue
        todo.extend(child_nodes(node))
    return bindings > 0


def option_of_one(field: str, tree: ast.Module, index: ProjectIndex, path: str) -> bool:
    """The script's command-line option `field` is one on every run the project makes: the script's places that set it
    (its option's default, `args.field = ...`) set one, and there is such a place; nothing changes the parsed options
    wholesale (`vars(args).update(...)`, `setattr(args, ...)`, `args.__dict__`); no launch script, config or document
    of the project names it other than setting one, and no other Python file spells the option (`"--field"`, a command
    line it builds); nowhere is it spelt with dashes. Other scripts' options of that name are other objects."""
    if any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in ("vars", "setattr")
           or isinstance(n, ast.Attribute) and n.attr == "__dict__" for n in breadth_first(tree)):
        return False
    found = _setters_of_one(tree, field, index, path)
    if not found:
        return False
    naming = files_naming(field, index)
    if naming is None:
        return False
    option = re.compile(rf"--{re.escape(field)}\b")
    for file, _digest in naming:
        if os.path.abspath(file) == path:
            continue
        text = index.text_of(file) or ""
        if file.endswith(".py"):
            module = index.load(file) if option.search(text) else None
            if option.search(text) and (module is None or _spells_option_otherwise(module.tree, option)):
                return False
        elif file.endswith(".ipynb"):
            if option.search(text):
                return False
        elif _text_setters_of_one(text, field) is None:
            return False
    return True


def _spells_option_otherwise(tree: ast.Module, option: re.Pattern[str]) -> bool:
    """A string of the module spells the option other than as one of its own parser's (`add_argument("--field")`):
    a command line it builds (`["python", "train.py", "--field", "4"]`) may give the script's option a value."""
    todo: list[tuple[ast.AST, ast.AST | None]] = [(tree, None)]
    while todo:
        node, parent = todo.pop()
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            continue  # a docstring
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and option.search(node.value) and not (
                isinstance(parent, ast.Call) and isinstance(parent.func, ast.Attribute)
                and parent.func.attr == "add_argument"):
            return True
        todo.extend((child, node) for child in child_nodes(node))
    return False


def files_naming(field: str, index: ProjectIndex) -> tuple[tuple[str, str], ...] | None:
    """The project files that name the settings field (recorded as read, with their SHA-256); None when the project runs
    nothing of its own, or some file spells the field with dashes (`--accumulation-steps`: an option whose destination
    it is, spelt otherwise)."""
    words = project_words(index.root)
    if words is None or not words.runs_something:
        return None
    naming = words.naming(field)
    if index.recording is not None:
        index.recording.update(naming)
    return None if _dashed(field, words, index) else naming


def _dashed(field: str, words: ProjectWords, index: ProjectIndex) -> bool:
    """Some file of the project spells the field with dashes (`--accumulation-steps`: an option that sets it)."""
    parts = field.split("_")
    if len(parts) < 2 or not all(parts):
        return False
    dashed = re.compile(rf"(?<!\w){re.escape('-'.join(parts))}(?![\w-])")
    return any(all(p in found.counts for p in parts) and dashed.search(index.text_of(file) or "")
               for file, found in words.files)


def field_of_one(field: str, index: ProjectIndex, path: str, family: tuple[str, frozenset[str]] | None = None) -> bool:
    """Every place of the project that may set the settings field `field` sets it to one (or None, no count at all),
    and there is such a place: a keyword `field=...` of a call (a config's constructor), an assignment `x.field = ...`,
    a namedtuple's field list whose constructions name it, a key of a dict literal (`{"field": 1}`, the settings an
    object is made from); the value a literal, or a parameter of default one that no call passes. A notebook's code
    cells are read so too, and so is a command-line option's default (`add_argument("--field", default=1)`), and the
    lines of a config file, a shell script or a document that set it to one (`field: 1`, `"field": 1`, `--field 1`).
    Any other mention (a line of such a file that sets another value or says something else, an option with no default
    or required, an item store `d["field"] = n`, a class-level field a parser may fill) may set it: not shown."""
    naming = files_naming(field, index)
    if naming is None:
        return False
    sources = 0
    for file, _digest in naming:
        if file.endswith(".ipynb"):
            tree = _notebook_code(file)
        elif file.endswith(".py"):
            module = index.load(file)
            tree = module.tree if module is not None else None
        else:
            lines = _text_setters_of_one(index.text_of(file) or "", field)
            if lines is None:
                return False  # a config, a script or a document that may set it to something else
            sources += lines
            continue
        if tree is None:
            return False
        found = _setters_of_one(tree, field, index, path, family, home=os.path.abspath(file) == path)
        if found is None:
            return False
        sources += found
    return sources > 0


def _setters_of_one(tree: ast.Module, field: str, index: ProjectIndex, path: str,
                    family: tuple[str, frozenset[str]] | None = None, home: bool = True) -> int | None:
    """How many places of `tree` set the field `field` (all to one); None when one may set it to something else.
    With `family` (the name of the class whose `self.field` counts the window, and the names of its bases), a
    `self.field = ...` in another class (not that class of the checked file, `home`, not a base, not deriving from
    it: a class of the same name in another file is another class) sets another object's field and is left out."""
    sources = 0
    todo: list[tuple[ast.AST, ast.AST | None, ast.FunctionDef | ast.AsyncFunctionDef | None, ast.ClassDef | None]]
    todo = [(tree, None, None, None)]
    while todo:
        node, parent, fn, cls = todo.pop()
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            continue  # a docstring (a string standing as a statement) sets nothing
        if isinstance(node, ast.Attribute) and node.attr == field and not isinstance(node.ctx, ast.Load) \
                and family is not None and _another_class(node, cls, family, home):
            pass  # another class's own field of that name
        elif isinstance(node, ast.Attribute) and node.attr == field and not isinstance(node.ctx, ast.Load) \
                and never_constructed(fn, cls, index, path):
            pass  # set in the constructor of a class no run makes
        elif isinstance(node, ast.Attribute) and node.attr == field and not isinstance(node.ctx, ast.Load):
            if not (isinstance(parent, ast.Assign) and one_valued(parent.value, fn, cls, index, path)):
                return None  # `cfg.field = n`, `cfg.field += 1`, `for cfg.field in ...`
            sources += 1
        elif isinstance(node, ast.keyword) and node.arg == field:
            if isinstance(node.value, ast.Attribute) and node.value.attr == field:
                pass  # the field handed on under its own name (`Accelerator(field=cfg.field)`): it sets nothing new
            elif not one_valued(node.value, fn, cls, index, path):
                return None
            else:
                sources += 1
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and re.search(rf"\b{re.escape(field)}\b",
                                                                                        node.value):
            value = _dict_value(parent, node) if node.value == field and isinstance(parent, ast.Dict) else None
            option = _option_default(parent, node, field)
            if option is not None:
                # `parser.add_argument("--field", type=int, default=1)`: what a run that does not give the option has
                if not one_valued(option, fn, cls, index, path):
                    return None
                sources += 1
            elif value is not None:
                # `{"field": 1}`, a dict literal of settings an object is made from (`setattr(self, key, d[key])`)
                if not one_valued(value, fn, cls, index, path):
                    return None
                sources += 1
            elif _message(node.value, field):
                pass  # `"Invalid field parameter: {}, should be >= 1"`: words about it set nothing
            elif not (node.value == field and _namedtuple_field(parent, tree, field, index, path)):
                return None  # `"--field"` of a command line, `d["field"] = n`, `setattr(cfg, "field", n)`
        elif isinstance(node, (ast.AnnAssign, ast.Assign)) and fn is None and cls is not None and any(
                isinstance(t, ast.Name) and t.id == field for t in _targets(node)):
            if not (_plain_namespace(cls) and node.value is not None and is_one(node.value)):
                return None  # a class-level field (a dataclass's default: a parser may fill it)
            sources += 1  # `class CFG: accumulation_steps = 1`, read as `CFG.accumulation_steps` (MS-swing, lockbox 37)
        if isinstance(node, ast.ClassDef):
            fn, cls = None, node
        elif isinstance(node, _FUNCTIONS):  # a method's class, for its calls (`.name(`); none for a nested function
            fn, cls = node, cls if isinstance(parent, ast.ClassDef) else None
        todo.extend((child, node, fn, cls) for child in child_nodes(node))
    return sources


def _message(text: str, field: str) -> bool:
    """A string that names the field among other words, not as an option (`"Invalid gradient_accumulation_steps
    parameter: {}"`, GBDE's check, lockbox 42): a message, not a key or a command line."""
    return len(text.split()) > 1 and f"-{field}" not in text and f"{field}=" not in text.replace(" =", "=")


# a line of a config file, a shell script or a document that sets a field to one: `field: 1`, `field = 1`, `"field": 1,`
# (YAML, TOML/INI, JSON), `--field 1`, `--field=1` (a command line)
_TEXT_ONE = r"""^\s*(?:-\s+)?["']?{f}["']?\s*[:=]\s*1\s*,?\s*(?:#.*)?$|--{f}(?:\s+|=)1(?![\w.])"""


def _text_setters_of_one(text: str, field: str) -> int | None:
    """How many lines of a text file (not Python) set `field` to one; None when some line names it otherwise."""
    one = re.compile(_TEXT_ONE.format(f=re.escape(field)))
    named = re.compile(rf"\b{re.escape(field)}\b")
    sources = 0
    for line in text.splitlines():
        if not named.search(line):
            continue
        if len(named.findall(line)) != 1 or not one.search(line):
            return None
        sources += 1
    return sources


def _option_default(parent: ast.AST | None, node: ast.Constant, field: str) -> ast.expr | None:
    """The default of the command-line option `node` spells, when `node` is an option string of `add_argument(...)`
    whose destination is `field` and that has a plain default (given explicitly: no `required`, `action`, `nargs` or
    `dest` elsewhere); None otherwise."""
    if not (isinstance(parent, ast.Call) and isinstance(parent.func, ast.Attribute)
            and parent.func.attr == "add_argument" and any(a is node for a in parent.args)):
        return None
    options = [a.value for a in parent.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
    longest = max(options, key=lambda o: (o.startswith("--"), len(o)))
    if longest.lstrip("-").replace("-", "_") != field:
        return None
    keywords = {k.arg: k.value for k in parent.keywords}
    if None in keywords or {"required", "action", "nargs", "dest", "const"} & set(keywords):
        return None
    return keywords.get("default")


def _notebook_code(path: str) -> ast.Module | None:
    """The code cells of a notebook as one module, its shell and magic lines (`!pip ...`, `%matplotlib`) left out;
    None when it cannot be read or a cell does not parse."""
    try:
        with open(path, encoding="utf-8") as f:
            cells = json.load(f).get("cells", [])
        body: list[ast.stmt] = []
        for cell in cells:
            if cell.get("cell_type") != "code":
                continue
            source = cell.get("source", "")
            text = "".join(source) if isinstance(source, list) else str(source)
            lines = ["" if line.lstrip().startswith(("%", "!")) else line for line in text.splitlines()]
            body += ast.parse("\n".join(lines)).body
    except (OSError, ValueError, SyntaxError, AttributeError, TypeError, RecursionError, MemoryError):
        return None
    return ast.Module(body=body, type_ignores=[])


def _dict_value(d: ast.Dict, key: ast.Constant) -> ast.expr | None:
    """The value `key` has in the dict literal `d` (None when it is not one of its keys)."""
    return next((v for k, v in zip(d.keys, d.values) if k is key), None)


def _plain_namespace(cls: ast.ClassDef) -> bool:
    """A class of settings written as plain class attributes: no decorator (`@dataclass` makes its fields a
    constructor's parameters), no base (a pydantic or argparse-backed settings class fills them), no keyword."""
    return not cls.decorator_list and not cls.keywords and all(
        isinstance(b, ast.Name) and b.id == "object" for b in cls.bases)


def _another_class(node: ast.Attribute, cls: ast.ClassDef | None, family: tuple[str, frozenset[str]], home: bool
                   ) -> bool:
    """`self.<field> = ...` in a method of a class that is not the counting class (of the checked file), not one of
    its bases and does not derive from it."""
    name, bases = family
    if not (isinstance(node.value, ast.Name) and node.value.id == "self" and cls is not None):
        return False
    ours = home and cls.name == name or cls.name in bases or any(isinstance(b, ast.Name) and b.id == name
                                                                  for b in cls.bases)
    return not ours


def _targets(node: ast.Assign | ast.AnnAssign) -> list[ast.expr]:
    return list(node.targets) if isinstance(node, ast.Assign) else [node.target]


def one_valued(value: ast.expr, fn: ast.FunctionDef | ast.AsyncFunctionDef | None, cls: ast.ClassDef | None,
                index: ProjectIndex, path: str) -> bool:
    """`value` is one on every run the project makes: the literal 1 (or None), or a parameter of `fn` of default one
    (or None) that `fn` does not rebind and no call of the project passes."""
    if isinstance(value, ast.Constant):
        return value.value is None or type(value.value) is int and value.value == 1
    if not isinstance(value, ast.Name) or fn is None or rebound(fn, value.id):
        return False
    ones = {**defaults_of_one(fn), **defaults_of_none(fn)}
    return value.id in ones and unpassed(fn, cls, {value.id}, ones, index, path)


def _namedtuple_field(parent: ast.AST | None, tree: ast.Module, field: str, index: ProjectIndex, path: str) -> bool:
    """The string is an entry of the field list of `Name = namedtuple("Name", [..., "field", ...])`, and every
    construction of `Name` in the project gives fewer values by place than the field's place (so only by keyword)."""
    for node in breadth_first(tree):
        if (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                and isinstance(node.value, ast.Call) and len(node.value.args) == 2
                and isinstance(node.value.args[1], (ast.List, ast.Tuple)) and node.value.args[1] is parent
                and dotted(node.value.func) in ("namedtuple", "collections.namedtuple")):
            place = [e.value for e in parent.elts if isinstance(e, ast.Constant)].index(field)
            calls = calls_of(node.targets[0].id, False, index, path)
            return calls is not None and all(
                len(c.args) <= place and not any(isinstance(a, ast.Starred) for a in c.args)
                and all(k.arg is not None for k in c.keywords) for c in calls)
    return False
