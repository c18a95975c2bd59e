"""Which names hold the script's parsed command line, and what its parser says of an option.

`args.accumulation_steps` counts a window by an option of the script when `args` is bound by `parser.parse_args()`
(in the function, in the module's own code, or by a function of the script that returns it: `args = parse_args()`),
or is a parameter that every call of its function in the script hands such a name (`train_epoch(model, loader,
args)`). The module may also change its options wholesale (`setattr(args, ...)`, `vars(args).update(cfg)`): then no
option's value is read from its parser. An option's destination and spellings are argparse's (`dest`, else the first
long option, dashes made `_`).
"""

from __future__ import annotations

import ast
import os

from ..analysis.walk import breadth_first, child_nodes, own_nodes
from .index import ProjectIndex
from .project_calls import plausible_calls
from .reachability import named_elsewhere, project_words

__all__ = ["defines_option", "destination", "option_spellings", "options_named", "options_rewritten", "parses_only",
           "script_options"]

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
Scope = ast.FunctionDef | ast.AsyncFunctionDef | ast.Module  # a function, or the module's own code


def script_options(fn: Scope, tree: ast.Module, name: str) -> bool:
    """`name` is the script's parsed command line: every binding of it in `fn` is `parser.parse_args(...)` (or the
    first of `parse_known_args(...)`: GBDE's `args = parser.parse_args()` in `main()`, lockbox 42), or `fn` does not
    bind it and every binding of it in the module's own code (outside functions and classes) is."""
    if isinstance(fn, ast.Module):
        return parses_only(list(tree.body), name, tree)
    if any(a.arg == name for a in (*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs,
                                   *((fn.args.vararg,) if fn.args.vararg else ()),
                                   *((fn.args.kwarg,) if fn.args.kwarg else ()))):
        return False
    if any(isinstance(n, ast.Name) and n.id == name and not isinstance(n.ctx, ast.Load) for n in own_nodes(fn)):
        return parses_only(list(fn.body), name, tree)
    return parses_only(list(tree.body), name, tree)


def options_named(fn: Scope, tree: ast.Module, name: str, index: ProjectIndex, path: str, depth: int = 0) -> bool:
    """`name` in `fn` is the script's parsed command line (`script_options`), or a parameter of a function of this
    file that every call of it in the project hands the script's parsed command line (`train_epoch(model, loader,
    args)` under `args = parser.parse_args()`, or handed on so from a caller, a few levels deep); calls in another file
    hand that file's objects, and any such call leaves it unknown."""
    if script_options(fn, tree, name):
        return True
    if isinstance(fn, ast.Module) or depth >= 3 or fn.args.vararg is not None or fn.args.kwarg is not None:
        return False
    positional = [a.arg for a in (*fn.args.posonlyargs, *fn.args.args)]
    if name not in positional and name not in [a.arg for a in fn.args.kwonlyargs]:
        return False
    cls = next((c for c in breadth_first(tree) if isinstance(c, ast.ClassDef) and any(b is fn for b in c.body)), None)
    if cls is not None:
        return False  # a method: its calls through other objects are not followed here
    # the calls of this file, each with the function (or the module's own code) it is made in; every call the project
    # makes must be one of them (another file's call hands that file's objects)
    here = [(node, scope) for scope in (tree, *(f for f in breadth_first(tree) if isinstance(f, _FUNCTIONS)))
            for node in own_nodes(scope) if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id == fn.name]
    if not here:
        return False
    words = project_words(index.root)
    if words is not None and not named_elsewhere(os.path.abspath(path), words, index):
        # no other file of the project can import this module (none names it): its functions are called from it
        # only, and the calls of a common name elsewhere (`train(args, ...)` of another script) are other functions'.
        # Its own name must be used in calls only (not handed on: `mp.spawn(train, ...)`)
        called = {id(c.func) for c, _s in here}
        if any(isinstance(n, ast.Name) and n.id == fn.name and id(n) not in called for n in breadth_first(tree)):
            return False
    else:
        calls = plausible_calls(fn, None, index, path)
        if not calls or sorted((c.lineno, c.col_offset) for c in calls) != sorted(
                (c.lineno, c.col_offset) for c, _s in here):
            return False
    for call, scope in here:
        given = next((k.value for k in call.keywords if k.arg == name), None)
        if given is None and name in positional and positional.index(name) < len(call.args):
            given = call.args[positional.index(name)]
        if not (isinstance(given, ast.Name) and options_named(scope, tree, given.id, index, path, depth + 1)):
            return False
    return True


def parses_only(body: list[ast.stmt], name: str, tree: ast.Module | None = None) -> bool:
    """Every binding of `name` in `body` (not in functions or classes nested in it) is `x.parse_args(...)` (or the first
    of `x.parse_known_args(...)`, or with `tree`, a call of a function of that module that returns only such:
    `args = parse_args()` of `def parse_args(): ...; return parser.parse_args()`), and there is one."""
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
        if tree is not None and isinstance(node, ast.Assign) and len(node.targets) == 1 \
                and isinstance(node.targets[0], ast.Name) and node.targets[0].id == name \
                and isinstance(node.value, ast.Call) and isinstance(node.value.func, ast.Name) \
                and _parsing_function(tree, node.value.func.id):
            bindings += 1
            todo.append(node.value)
            continue
        todo.extend(child_nodes(node))
    return bindings > 0


def _parsing_function(tree: ast.Module, name: str) -> bool:
    """The module defines one function `name`, at its top level, and what it returns is the parsed command line only
    (`return parser.parse_args()`, or a name it binds only so)."""
    defined = [s for s in tree.body if isinstance(s, _FUNCTIONS) and s.name == name]
    if len(defined) != 1 or any(isinstance(s, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name
                                                                   for t in s.targets) for s in tree.body):
        return False
    fn = defined[0]
    returns = [n for n in own_nodes(fn) if isinstance(n, ast.Return)]
    return bool(returns) and all(
        r.value is not None and (isinstance(r.value, ast.Call) and isinstance(r.value.func, ast.Attribute)
                                 and r.value.func.attr == "parse_args"
                                 or isinstance(r.value, ast.Name) and parses_only(list(fn.body), r.value.id))
        for r in returns)


# what only reads the namespace's dict (`for k, v in vars(args).items()`, `json.dump(vars(args), f)`,
# `wandb.init(config=vars(args))` copies it): the options are not changed through it
_READS_OF_A_DICT = frozenset({"items", "keys", "values", "get", "copy"})
_CALLS_READING_A_DICT = frozenset({"print", "str", "repr", "len", "sorted", "dict", "list", "pprint", "dump", "dumps",
                                   "info", "debug", "warning", "log", "format"})


def options_rewritten(tree: ast.Module) -> bool:
    """The module may change parsed options wholesale: `setattr(...)`, or the namespace's dict (`vars(args)`,
    `args.__dict__`) used other than read (`vars(args).update(cfg)`, `d = vars(args)`, handed to a call that may
    change it)."""
    todo: list[tuple[ast.AST, ast.AST | None]] = [(tree, None)]
    while todo:
        node, parent = todo.pop()
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "setattr":
            return True
        namespace = isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "vars" \
            or isinstance(node, ast.Attribute) and node.attr == "__dict__" and isinstance(node.ctx, ast.Load)
        if namespace and not _only_read(node, parent):
            return True
        if isinstance(node, ast.Attribute) and node.attr == "__dict__" and not isinstance(node.ctx, ast.Load):
            return True
        todo.extend((child, node) for child in child_nodes(node))
    return False


def _only_read(node: ast.AST, parent: ast.AST | None) -> bool:
    """The namespace dict `node` is only read where it stands: a reading method's receiver, iterated, unpacked into
    a call (`**vars(args)`), or handed to a call that reads or copies a dict (`print`, `json.dump`, `dict`, a log)."""
    if isinstance(parent, ast.Attribute):
        return parent.attr in _READS_OF_A_DICT
    if isinstance(parent, ast.keyword):
        return parent.arg is None
    if isinstance(parent, (ast.For, ast.comprehension)):
        return parent.iter is node
    if isinstance(parent, ast.Call) and node is not parent.func:
        name = parent.func.attr if isinstance(parent.func, ast.Attribute) else \
            parent.func.id if isinstance(parent.func, ast.Name) else ""
        return name in _CALLS_READING_A_DICT
    if isinstance(parent, ast.FormattedValue):
        return True
    return False


def defines_option(tree: ast.Module, field: str) -> bool:
    """The module's own parser has an option whose destination is `field` (`add_argument("--field", ...)`)."""
    return bool(option_spellings(tree, field))


def option_spellings(tree: ast.Module, field: str) -> set[str]:
    """The option strings of the module's `add_argument(...)` calls whose destination is `field` (`-gacc` and
    `--gradient-accumulation` for `gradient_accumulation`)."""
    out: set[str] = set()
    for node in breadth_first(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "add_argument":
            options = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
            if options and all(o.startswith("-") for o in options) and destination(node, options) == field:
                out.update(options)
    return out


def destination(call: ast.Call, options: list[str]) -> str:
    """Where argparse stores an option: its `dest`, else its first long option (else its first), dashes made `_`."""
    dest = next((k.value for k in call.keywords if k.arg == "dest"), None)
    if isinstance(dest, ast.Constant) and isinstance(dest.value, str):
        return dest.value
    longs = [o for o in options if o.startswith("--")]
    return (longs or options)[0].lstrip("-").replace("-", "_")
