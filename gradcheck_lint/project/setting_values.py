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
import dataclasses
import json
import os
import re

from ..analysis.names import dotted
from ..analysis.walk import breadth_first, child_nodes, own_nodes
from .index import ProjectIndex
from .launches import foreign_launches_removed
from .parsed_options import (
    Scope,
    defines_option,
    destination,
    option_spellings,
    options_named,
    options_rewritten,
    parses_only,
    script_options,
)
from .project_calls import calls_of, defaults_where, never_constructed, rebound, unpassed
from .reachability import ProjectWords, project_words

__all__ = ["OFF", "ONE", "Scope", "Wanted", "alias_of", "count_read", "defines_option", "field_has", "files_naming",
           "option_has", "options_named", "parses_only", "script_options", "valued"]

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


@dataclasses.dataclass(frozen=True)
class Wanted:
    """The value a decision needs a setting to have on every run: as Python constants (compared with their type: `True`
    is not one), and as the value of a line of a config file, a shell script or a document (a regular expression)."""

    name: str
    values: tuple[object, ...]
    text: str

    def accepts(self, node: ast.expr | None) -> bool:
        return isinstance(node, ast.Constant) and any(
            node.value is v or type(node.value) is type(v) and node.value == v for v in self.values)


# a window of one micro-batch: the count 1, or None (no count at all)
ONE = Wanted("one", (1, None), r"1")
# a switch off: False, 0 or None (a GradScaler built `enabled=args.fp16`, of an option whose default is False)
OFF = Wanted("off", (False, 0, None), r"(?:[Ff]alse|FALSE|0|[Nn]o|[Oo]ff|null|None|~)")



def alias_of(expr: ast.expr, fn: Scope, tree: ast.Module, depth: int = 0) -> ast.expr:
    """What a name stands for when it is an alias bound once: `grad_accm = args.gradient_accumulation` (in `fn`, or in
    the module's own code when `fn` neither binds it nor takes it as a parameter), followed up to three times; the
    expression itself otherwise."""
    if not isinstance(expr, ast.Name) or depth > 2:
        return expr
    scopes: list[Scope] = [fn]
    if not isinstance(fn, ast.Module):
        params = {a.arg for a in (*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs, fn.args.vararg,
                                  fn.args.kwarg) if a is not None}
        if expr.id in params:
            return expr
        scopes.append(tree)
    if any(isinstance(n, (ast.Global, ast.Nonlocal)) and expr.id in n.names for n in ast.walk(tree)):
        return expr  # rebound from a function
    for scope in scopes:
        stores = [n for n in own_nodes(scope) if isinstance(n, ast.Name) and n.id == expr.id
                  and not isinstance(n.ctx, ast.Load)]
        if not stores:
            continue
        values = [n.value for n in own_nodes(scope) if isinstance(n, ast.Assign) and len(n.targets) == 1
                  and any(t is n.targets[0] for t in stores)]
        if len(stores) != 1 or len(values) != 1:
            return expr
        return alias_of(values[0], scope, tree, depth + 1)
    return expr


def count_read(count: ast.expr) -> ast.expr:
    """The setting a window count reads, through what keeps a count of one one: `max(n, 1)` (Kiny007, lockbox 44:
    `Accelerator(gradient_accumulation_steps=max(args.gradient_accumulation_steps, 1))`), `int(n)`."""
    while isinstance(count, ast.Call) and isinstance(count.func, ast.Name) and not count.keywords:
        args, name = count.args, count.func.id
        if name == "int" and len(args) == 1:
            count = args[0]
        elif name == "max" and len(args) == 2 and any(isinstance(a, ast.Constant) and a.value == 1
                                                                   and type(a.value) is int for a in args):
            count = next(a for a in args if not (isinstance(a, ast.Constant) and a.value == 1))
        else:
            break
    return count


def option_has(field: str, tree: ast.Module, index: ProjectIndex, path: str, want: Wanted) -> bool:
    """The script's command-line option `field` has the value `want` on every run the project makes: the script's
    places that set it (its option's default, `args.field = ...`) set that, and there is such a place; nothing changes
    the parsed options wholesale (`vars(args).update(...)`, `setattr(args, ...)`, `args.__dict__`); no launch script,
    config or document of the project names it other than setting that value, and no other Python file spells the
    option (`"--field"`, or a spelling the script's parser gives it: `-gacc` of `add_argument("-gacc",
    "--gradient-accumulation")`, in a command line it builds). Other scripts' options of that name are other objects."""
    if options_rewritten(tree):
        return False
    spellings = frozenset({f"--{field}", *option_spellings(tree, field)})
    found = _setters(tree, field, index, path, want, spellings=spellings)
    if not found:
        return False
    naming = files_naming(field, index, spellings)
    if naming is None:
        return False
    option = _spelling_pattern(spellings)
    for file, _digest in naming:
        if os.path.abspath(file) == path:
            continue
        # (a command line launching another script, whose run cannot reach this file, gives that script its options)
        text = foreign_launches_removed(index.text_of(file) or "", index, path)
        if file.endswith(".py"):
            module = index.load(file) if option.search(text) else None
            if option.search(text) and (module is None or _spells_option_otherwise(module.tree, option, index, path)):
                return False
        elif file.endswith(".ipynb"):
            if option.search(text):
                return False
        elif _text_setters(text, field, want, spellings) is None:
            return False
    return True


def _spelling_pattern(spellings: frozenset[str]) -> re.Pattern[str]:
    """Any of the option's spellings, standing alone (`-gacc`, not `-gaccum`)."""
    return re.compile("|".join(rf"(?<![\w-]){re.escape(s)}(?![\w-])" for s in sorted(spellings)))


def _spells_option_otherwise(tree: ast.Module, option: re.Pattern[str], index: ProjectIndex, path: str) -> bool:
    """A string of the module spells the option other than as one of its own parser's (`add_argument("--field")`):
    a command line it builds (`["python", "train.py", "--field", "4"]`) may give the script's option a value. A
    command line of another script written in a string (`python train_lora.py --field 2` in a usage text) is left
    out when that script's run cannot reach the file at `path`."""
    todo: list[tuple[ast.AST, ast.AST | None]] = [(tree, None)]
    while todo:
        node, parent = todo.pop()
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            continue  # a docstring
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and option.search(node.value) and not (
                isinstance(parent, ast.Call) and isinstance(parent.func, ast.Attribute)
                and parent.func.attr == "add_argument") \
                and option.search(foreign_launches_removed(node.value, index, path)):
            return True
        todo.extend((child, node) for child in child_nodes(node))
    return False


def files_naming(field: str, index: ProjectIndex, spellings: frozenset[str] = frozenset()
                 ) -> tuple[tuple[str, str], ...] | None:
    """The project files that name the settings field, or spell one of `spellings` (the options of a script's parser
    whose destination it is), recorded as read with their SHA-256; None when the project runs nothing of its own, or
    some file spells the field with dashes (`--accumulation-steps`: an option whose destination it is, spelt
    otherwise) and that spelling is not among `spellings` (whose every mention the caller reads)."""
    words = project_words(index.root)
    if words is None or not words.runs_something:
        return None
    naming = dict(words.naming(field))
    if spellings:
        pattern = _spelling_pattern(spellings)
        for file, found in words.files:
            if file not in naming and any(all(w in found.counts for w in re.findall(r"[A-Za-z_]\w*", s))
                                          for s in spellings) and pattern.search(index.text_of(file) or ""):
                naming[file] = found.digest
    if index.recording is not None:
        index.recording.update(naming)
    if f"--{field.replace('_', '-')}" not in spellings and _dashed(field, words, index):
        return None
    return tuple(sorted(naming.items()))


def _dashed(field: str, words: ProjectWords, index: ProjectIndex) -> bool:
    """Some file of the project spells the field with dashes (`--accumulation-steps`: an option that sets it)."""
    parts = field.split("_")
    if len(parts) < 2 or not all(parts):
        return False
    dashed = re.compile(rf"(?<!\w){re.escape('-'.join(parts))}(?![\w-])")
    return any(all(p in found.counts for p in parts) and dashed.search(index.text_of(file) or "")
               for file, found in words.files)


def field_has(field: str, index: ProjectIndex, path: str, want: Wanted,
              family: tuple[str, frozenset[str]] | None = None) -> bool:
    """Every place of the project that may set the settings field `field` sets it to the value `want` (one: or None, no
    count at all; off: False, 0 or None), and there is such a place: a keyword `field=...` of a call (a config's constructor), an assignment `x.field = ...`,
    a namedtuple's field list whose constructions name it, a key of a dict literal (`{"field": 1}`, the settings an
    object is made from); the value a literal, or a parameter of default one that no call passes. A notebook's code
    cells are read so too, and so is a command-line option's default (`add_argument("--field", default=1)`), and the
    lines of a config file, a shell script or a document that set it to one (`field: 1`, `"field": 1`, `--field 1`).
    Any other mention (a line of such a file that sets another value or says something else, an option with no default
    or required, an item store `d["field"] = n`, a class-level field a parser may fill) may set it: not shown."""
    # the option strings that may set it (`--accumulation-steps` of `add_argument(...)`, whose default is read; on a
    # command line, the value given)
    spellings = frozenset({f"--{field}", f"--{field.replace('_', '-')}"})
    naming = files_naming(field, index, spellings)
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
            lines = _text_setters(foreign_launches_removed(index.text_of(file) or "", index, path), field, want,
                                  spellings)
            if lines is None:
                return False  # a config, a script or a document that may set it to something else
            sources += lines
            continue
        if tree is None:
            return False
        found = _setters(tree, field, index, path, want, family, home=os.path.abspath(file) == path,
                         spellings=spellings)
        if found is None:
            return False
        sources += found
    return sources > 0


def _setters(tree: ast.Module, field: str, index: ProjectIndex, path: str, want: Wanted,
             family: tuple[str, frozenset[str]] | None = None, home: bool = True,
             spellings: frozenset[str] = frozenset()) -> int | None:
    """How many places of `tree` set the field `field` (all to the value `want`); None when one may set it to something
    else. A read sets nothing (`cfg["field"]`; `cfg.get("field")`, whose default must have that value too); an option
    string of the script's own parser (`spellings`, `"-gacc"`) is its option, whose default is read. With `family` (the name of the class whose `self.field` counts the window, and the names of its bases), a
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
            if not (isinstance(parent, ast.Assign) and valued(parent.value, fn, cls, index, path, want)):
                return None  # `cfg.field = n`, `cfg.field += 1`, `for cfg.field in ...`
            sources += 1
        elif isinstance(node, ast.keyword) and node.arg == field:
            if isinstance(handed := count_read(node.value), ast.Attribute) and handed.attr == field:
                pass  # the field handed on under its own name (`Accelerator(field=max(cfg.field, 1))`): nothing new
            elif not valued(node.value, fn, cls, index, path, want):
                return None
            else:
                sources += 1
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and (
                re.search(rf"\b{re.escape(field)}\b", node.value) or node.value in spellings) and (
                "\n" not in node.value or re.search(rf"\b{re.escape(field)}\b",
                                                    foreign_launches_removed(node.value, index, path))):
            # (a text of command lines, `python train_lora.py --field 2`, launching another script whose run cannot
            # reach the checked file, gives that script its option: left out above)
            value = _dict_value(parent, node) if node.value == field and isinstance(parent, ast.Dict) else None
            option = _option_default(parent, node, field)
            read = node.value == field and _read(parent, node, fn, cls, index, path, want)
            if option is not None:
                # `parser.add_argument("--field", type=int, default=1)`: what a run that does not give the option has
                if not valued(option, fn, cls, index, path, want):
                    return None
                sources += 1
            elif value is not None:
                # `{"field": 1}`, a dict literal of settings an object is made from (`setattr(self, key, d[key])`)
                if not valued(value, fn, cls, index, path, want):
                    return None
                sources += 1
            elif read:
                pass  # `cfg["field"]`, `cfg.get("field")`: what it holds read, not set
            elif _message(node.value, field):
                pass  # `"Invalid field parameter: {}, should be >= 1"`: words about it set nothing
            elif not (node.value == field and _namedtuple_field(parent, tree, field, index, path)):
                return None  # `"--field"` of a command line, `d["field"] = n`, `setattr(cfg, "field", n)`
        elif isinstance(node, (ast.AnnAssign, ast.Assign)) and fn is None and cls is not None and any(
                isinstance(t, ast.Name) and t.id == field for t in _targets(node)):
            if not (_plain_namespace(cls) and want.accepts(node.value)):
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


# a line of a config file, a shell script or a document that sets a field to a value: `field: 1`, `field = 1`,
# `"field": 1,` (YAML, TOML/INI, JSON), `--field 1`, `--field=1` (a command line; `{o}`, any spelling of the option)
_TEXT_VALUE = r"""^\s*(?:-\s+)?["']?{f}["']?\s*[:=]\s*{v}\s*,?\s*(?:#.*)?$|(?:{o})(?:\s+|=){v}(?![\w.])"""


def _text_setters(text: str, field: str, want: Wanted, spellings: frozenset[str] = frozenset()) -> int | None:
    """How many lines of a text file (not Python) set `field` to the value `want` (as a key, or as a command-line
    option: `--field`, or one of `spellings`); None when some line names it otherwise."""
    options = {f"--{field}", *spellings}
    spelt = "|".join(rf"(?<![\w-]){re.escape(s)}" for s in sorted(options))
    setting = re.compile(_TEXT_VALUE.format(f=re.escape(field), v=want.text, o=spelt))
    named = re.compile(rf"\b{re.escape(field)}\b|{spelt}(?![\w-])")
    sources = 0
    for line in text.splitlines():
        if not named.search(line):
            continue
        if len(named.findall(line)) != 1 or not setting.search(line):
            return None
        sources += 1
    return sources


def _option_default(parent: ast.AST | None, node: ast.Constant, field: str) -> ast.expr | None:
    """The default of the command-line option `node` spells, when `node` is an option string of `add_argument(...)`
    whose destination is `field` (as argparse finds it, `_destination`) and that has a plain default: given
    explicitly (no `nargs` or `const`, not required: `required=False` is the default said), or that of a flag
    (`action="store_true"`: False; `"store_false"`: True); None otherwise."""
    if not (isinstance(parent, ast.Call) and isinstance(parent.func, ast.Attribute)
            and parent.func.attr == "add_argument" and any(a is node for a in parent.args)):
        return None
    options = [a.value for a in parent.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
    if not all(o.startswith("-") for o in options) or destination(parent, options) != field:
        return None
    keywords = {k.arg: k.value for k in parent.keywords}
    required = keywords.get("required")
    if None in keywords or {"nargs", "const"} & set(keywords) or required is not None and not (
            isinstance(required, ast.Constant) and required.value is False):
        return None
    action = keywords.get("action")
    if action is not None:
        flag = action.value if isinstance(action, ast.Constant) else None
        if flag not in ("store_true", "store_false"):
            return None
        return keywords.get("default", ast.Constant(flag == "store_false"))
    return keywords.get("default")


def _read(parent: ast.AST | None, node: ast.Constant, fn: ast.FunctionDef | ast.AsyncFunctionDef | None,
          cls: ast.ClassDef | None, index: ProjectIndex, path: str, want: Wanted) -> bool:
    """The field's name is a key read: `cfg["field"]` (not stored into), or `cfg.get("field")` whose default (None when
    not given) has the value `want`."""
    if isinstance(parent, ast.Subscript) and parent.slice is node:
        return isinstance(parent.ctx, ast.Load)
    if isinstance(parent, ast.Call) and isinstance(parent.func, ast.Attribute) and parent.func.attr == "get" \
            and parent.args and parent.args[0] is node and not parent.keywords and len(parent.args) <= 2:
        return len(parent.args) == 1 or valued(parent.args[1], fn, cls, index, path, want)
    return False


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


def valued(value: ast.expr, fn: ast.FunctionDef | ast.AsyncFunctionDef | None, cls: ast.ClassDef | None,
           index: ProjectIndex, path: str, want: Wanted) -> bool:
    """`value` has the value `want` on every run the project makes: a literal of it, or a parameter of `fn` of such a
    default that `fn` does not rebind and no call of the project passes."""
    if isinstance(value, ast.Constant):
        return want.accepts(value)
    if not isinstance(value, ast.Name) or fn is None or rebound(fn, value.id):
        return False
    wanted = defaults_where(fn, want.accepts)
    return value.id in wanted and unpassed(fn, cls, {value.id}, wanted, index, path)


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
