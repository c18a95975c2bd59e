"""Settings no run of the project sets: a keyword default of one that no call of the project passes.

A training function often takes its accumulation count as a keyword whose default is one window of one
micro-batch, and the project's script calls it without that keyword:

    # util/framework.py                                 # train_demo.py
    def train(self, model, name, ..., grad_iter=1):     framework.train(model, prefix, fp16=opt.fp16,
        ...                                                             train_iter=opt.train_iter, ...)
        loss = model.loss(logits, label) / grad_iter
        loss.backward()
        if it % grad_iter == 0:
            optimizer.step()

Every run the project makes has a window of one there: a finding about the window (the loss not divided,
the gate stepping on the first micro-batch, micro-batches synced for nothing) describes what the code
would do if a caller set the keyword, which none does (Few-NERD, lockbox 31: a certain GL004 on
`it % grad_iter == 0` with `it` from 0). That the window is larger is not a fact read. So a certain finding
of the window's codes in a function whose every window count (`x % n`) is such a keyword becomes
`possible`, the assumption said. The keyword may be set from outside the project (a library's user): the
finding stays, under `--show-possible`.

A window may also count by a field of a settings object (`iteration % cfg.grad_accum_iters`, in the function or in
the test its callers in the same file hand it): the same holds when every place of the project that may set the field
(a keyword `grad_accum_iters=...`, an assignment `cfg.grad_accum_iters = ...`, a `namedtuple` field list) sets one, a
literal or a keyword of default one no call passes; any other mention of the name (a config file, a command-line
option, a dict key, a dataclass field) may set it, and nothing is decided. A field of `self` is set, through `self`,
only by its class, its bases and the classes deriving from it.

The calls are found by the function's name in the project's Python files (a method's as `.name(`), parsed;
a call is taken for one of this function when it gives at least the arguments the function requires.
Nothing is decided when no such call is found, when a call hands `*args` or `**kwargs`, when the function
is handed on other than in a call (a module function's name, or a method through `self`, as a callback or
in `functools.partial`; a method handed on through another object's name is not read), when more than
`MAX_FILES_READ` files name it, or when the project runs nothing of its own (a library, called from outside).
"""

from __future__ import annotations

import ast
import dataclasses
import json
import os
import re
from collections.abc import Iterator

from ..analysis.apimodels import catalogue_for
from ..analysis.names import ImportMap, dotted
from ..analysis.syntax import innermost_function
from ..analysis.walk import breadth_first, child_nodes, own_nodes
from ..diagnostics import Applicability, Certainty, Diagnostic
from ..messages import about_a_window
from ..sources import parsed_or_none
from .callers import project_files
from .index import ProjectIndex
from .reachability import ProjectWords, project_words

__all__ = ["MAX_FILES_READ", "settle_unset_defaults"]

MAX_FILES_READ = 24  # project files parsed looking for the calls of one function
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_ENTRY = re.compile(r"__main__|^[A-Za-z_][\w.]*\(", re.M)  # a script: a `__main__` guard or a top-level call
_WINDOW_ENDS = frozenset({"step", "zero_grad"})  # what a window's gate runs
# what a function named but not called is handed to: an argument, a binding, a container, a return
_HANDING = (ast.Call, ast.keyword, ast.Assign, ast.AnnAssign, ast.Return, ast.Tuple, ast.List, ast.Dict, ast.Set)


def settle_unset_defaults(found: list[Diagnostic], text: str, index: ProjectIndex, path: str
                          ) -> tuple[list[Diagnostic], tuple[tuple[str, str], ...]] | None:
    """`found` (the findings of the file at `path`, whose source is `text`) with its certain window findings in a
    function whose window counts are keywords of default one that no call of the project passes made possible, and
    the project files the decisions read (with their SHA-256); None when nothing was decided."""
    if not any(_settleable(d) for d in found):
        return None
    tree = parsed_or_none(text)
    if tree is None:
        return None
    saved, index.recording = index.recording, {}
    try:
        decided: dict[int, str | None] = {}  # id of a function -> the assumption, when its windows are unset
        out: list[Diagnostic] = []
        for d in found:
            fn = innermost_function(tree, d.line) if _settleable(d) else None
            if fn is not None:
                if id(fn) not in decided:
                    decided[id(fn)] = _unset_windows(fn, _class_of(tree, fn), tree, index, path)
                assumption = decided[id(fn)]
                if assumption is not None:
                    fix = dataclasses.replace(d.fix, applicability=Applicability.UNSAFE) if d.fix is not None else None
                    d = dataclasses.replace(d, certainty=Certainty.POSSIBLE, fix=fix,
                                            assumptions=tuple(sorted({*d.assumptions, assumption})))
            out.append(d)
        read = dict(index.recording)
    finally:
        index.recording = saved
    if out == found:
        return None
    read.pop(path, None)
    return out, tuple(sorted(read.items()))


def _settleable(d: Diagnostic) -> bool:
    return d.certainty is Certainty.CERTAIN and about_a_window(d.code, d.message) and d.cell is None


def _class_of(tree: ast.Module, fn: ast.AST) -> ast.ClassDef | None:
    for node in breadth_first(tree):
        if isinstance(node, ast.ClassDef) and any(child is fn for child in node.body):
            return node
    return None


def _defaults_of_one(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> dict[str, int | None]:
    """The parameters whose default is the literal 1: their positional index (None: keyword-only)."""
    args = fn.args
    positional = [*args.posonlyargs, *args.args]
    out: dict[str, int | None] = {}
    for arg, default in zip(positional[len(positional) - len(args.defaults):], args.defaults):
        if _is_one(default):
            out[arg.arg] = positional.index(arg)
    for arg, kw_default in zip(args.kwonlyargs, args.kw_defaults):
        if kw_default is not None and _is_one(kw_default):
            out[arg.arg] = None
    return out


def _is_one(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and type(node.value) is int and node.value == 1


def _window_counts(fn: ast.AST, imports: ImportMap) -> list[ast.expr]:
    """What the function's window gates count by: the right operands of `%` in the test of an `if` whose body steps
    an optimizer or clears gradients (`if it % grad_iter == 0: optimizer.step()`; not `if it % val_step == 0:`), the
    count of a loop over one window's micro-batches (`for _ in range(self.gradient_accumulate_every)`), and the window a framework the function builds is given (`Accelerator(gradient_accumulation_steps=cfg.accum)`: the
    keywords of the catalogue's `window` for that constructor)."""
    out: list[ast.expr] = []
    catalogue = catalogue_for()
    for node in own_nodes(fn):
        if isinstance(node, ast.If) and any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                                            and n.func.attr in _WINDOW_ENDS for stmt in node.body
                                            for n in breadth_first(stmt)):
            out += [n.right for n in breadth_first(node.test) if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Mod)]
        elif isinstance(node, ast.For) and (count := _window_loop_count(node)) is not None:
            out.append(count)
        elif isinstance(node, ast.Call) and node.keywords and (qualified := imports.qualify(node.func)) is not None:
            windows = catalogue.window_keywords(qualified)
            out += [k.value for k in node.keywords if k.arg in windows]
    return out


def _window_loop_count(loop: ast.For) -> ast.expr | None:
    """`n` of a loop over the micro-batches of one window, `for _ in range(n)`: its body runs a backward and no step
    (the step follows the loop); None for any other loop."""
    if not (isinstance(loop.iter, ast.Call) and isinstance(loop.iter.func, ast.Name) and loop.iter.func.id == "range"
            and len(loop.iter.args) == 1 and not loop.iter.keywords):
        return None
    called = {n.func.attr for stmt in loop.body for n in breadth_first(stmt)
              if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)}
    return loop.iter.args[0] if "backward" in called and not called & _WINDOW_ENDS else None


def _unset_windows(fn: ast.FunctionDef | ast.AsyncFunctionDef, cls: ast.ClassDef | None, tree: ast.Module,
                   index: ProjectIndex, path: str) -> str | None:
    """The assumption a window finding in `fn` rests on, when every window count of `fn` (or, when `fn` has no gate of
    its own, of the tests its callers in this file hand it) is a keyword of default one that no call of the project
    passes, or a settings field that every setter of the project sets to one; None when that is not shown."""
    ones = _defaults_of_one(fn)
    counts = _window_counts(fn, ImportMap.of(tree)) or _handed_counts(fn, cls, tree)
    keywords: set[str] = set()
    fields: dict[str, tuple[str, frozenset[str]] | None] = {}
    options: set[str] = set()
    for n in counts:
        if isinstance(n, ast.Name) and n.id in ones and not _rebound(fn, n.id):
            keywords.add(n.id)
        elif isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and _script_options(fn, tree, n.value.id):
            options.add(n.attr)  # `args.accumulation_steps`, `args` the script's own parsed command line
        elif isinstance(n, ast.Attribute):
            # `cfg.grad_accum_iters`, `self.accum`: a settings field; one of `self` is set by this class's family only
            # through `self` (another class's `self.accum = 2` is another object's field)
            own = isinstance(n.value, ast.Name) and n.value.id == "self" and cls is not None
            family = (cls.name, frozenset(b.id for b in cls.bases if isinstance(b, ast.Name))) if own and cls else None
            fields[n.attr] = family if fields.get(n.attr, family) == family else None
        else:
            return None  # a window counted by anything else (a constant, another name)
    if not counts or keywords and not _unpassed(fn, cls, keywords, ones, index, path):
        return None
    if not all(_field_of_one(name, index, path, fields[name]) for name in sorted(fields)):
        return None
    if not all(_option_of_one(name, tree, index, path) for name in sorted(options)):
        return None
    shown = ", ".join(f"`{n}`" for n in sorted(keywords | set(fields) | options))
    if options and not fields and not keywords:
        return (f"that {shown} is set above 1 (the script's command-line option has default 1 and nothing of the "
                "project gives it another value: every run of the project has windows of one micro-batch there)")
    if not fields and not options:
        return (f"that {shown} is set above its default 1 (no call of `{fn.name}` in the project passes it: every run "
                "of the project has windows of one micro-batch there)")
    return (f"that {shown} is set above 1 (every place of the project that sets it sets 1 or a default of 1 no call "
            "passes: every run of the project has windows of one micro-batch there)")


def _script_options(fn: ast.FunctionDef | ast.AsyncFunctionDef, tree: ast.Module, name: str) -> bool:
    """`name` is the script's parsed command line: every binding of it in `fn` is `parser.parse_args(...)` (or the
    first of `parse_known_args(...)`: GBDE's `args = parser.parse_args()` in `main()`, lockbox 42), or `fn` does not
    bind it and every binding of it in the module's own code (outside functions and classes) is."""
    if any(a.arg == name for a in (*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs,
                                   *((fn.args.vararg,) if fn.args.vararg else ()),
                                   *((fn.args.kwarg,) if fn.args.kwarg else ()))):
        return False
    if any(isinstance(n, ast.Name) and n.id == name and not isinstance(n.ctx, ast.Load) for n in own_nodes(fn)):
        return _parses_only(list(fn.body), name)
    return _parses_only(list(tree.body), name)


def _parses_only(body: list[ast.stmt], name: str) -> bool:
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


def _option_of_one(field: str, tree: ast.Module, index: ProjectIndex, path: str) -> bool:
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
    naming = _files_naming(field, index)
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


def _files_naming(field: str, index: ProjectIndex) -> tuple[tuple[str, str], ...] | None:
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


def _unpassed(fn: ast.FunctionDef | ast.AsyncFunctionDef, cls: ast.ClassDef | None, names: set[str],
              ones: dict[str, int | None], index: ProjectIndex, path: str) -> bool:
    """Some call of `fn` is found in the project and none passes any of `names` (by keyword or by place)."""
    calls = _plausible_calls(fn, cls, index, path)
    if not calls:
        return False
    skip = 1 if _is_method(fn, cls) else 0
    for call in calls:
        given = {k.arg for k in call.keywords}
        for name in names:
            place = ones[name]
            if name in given or place is not None and place - skip < len(call.args):
                return False
    return True


def _never_constructed(fn: ast.FunctionDef | ast.AsyncFunctionDef | None, cls: ast.ClassDef | None,
                       index: ProjectIndex, path: str) -> bool:
    """`fn` is the `__init__` of a class the project runs and never constructs (every construction read, none giving
    the arguments it requires; a base class whose subclasses do not call it; not a decorated class, not in a project
    that looks names up at run time): what it assigns is set by no run."""
    if fn is None or fn.name != "__init__" or cls is None or cls.decorator_list:
        return False  # (a decorated class may be registered, and made through its registry)
    words = project_words(index.root)
    return words is not None and not words.dynamic and _plausible_calls(fn, cls, index, path) == []


def _is_method(fn: ast.FunctionDef | ast.AsyncFunctionDef, cls: ast.ClassDef | None) -> bool:
    return cls is not None and bool(fn.args.args) and fn.args.args[0].arg in ("self", "cls") \
        and not any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in fn.decorator_list)


def _plausible_calls(fn: ast.FunctionDef | ast.AsyncFunctionDef, cls: ast.ClassDef | None, index: ProjectIndex,
                     path: str) -> list[ast.Call] | None:
    """The calls of `fn` in the project that give at least the arguments it requires (a call of another function of
    that name, `model.train()`, gives fewer); None when they are not all read: a call that hands on `*args` or
    `**kwargs`, or see `_calls` and `_constructions`."""
    method = _is_method(fn, cls)
    required = len(fn.args.posonlyargs) + len(fn.args.args) - len(fn.args.defaults) - (1 if method else 0)
    calls = _constructions(cls, index, path) if method and fn.name == "__init__" and cls is not None \
        else _calls(fn.name, method, index, path)
    if calls is None:
        return None
    out = []
    for call in calls:
        if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
            return None  # `train(*args, **kwargs)`: what it passes is not read
        if len(call.args) + len(call.keywords) >= required:
            out.append(call)
    return out


def _handed_counts(fn: ast.FunctionDef | ast.AsyncFunctionDef, cls: ast.ClassDef | None, tree: ast.Module
                   ) -> list[ast.expr]:
    """What the window tests handed to `fn` by its callers in the same file count by: the right operands of `%` in
    an argument of a call of `fn`, or in what the caller bound the argument's name to (`if_accum_grad = iteration %
    cfg.grad_accum_iters != 0`, then `train_one_step(model, ..., if_accum_grad)`)."""
    out: list[ast.expr] = []
    for caller in breadth_first(tree):
        if not isinstance(caller, _FUNCTIONS) or caller is fn:
            continue
        bound: dict[str, list[ast.expr]] = {}
        calls = []
        for node in own_nodes(caller):
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        bound.setdefault(target.id, []).append(node.value)
            elif isinstance(node, ast.Call) and _calls_fn(node, fn, cls):
                calls.append(node)
        for call in calls:
            for arg in [*call.args, *(k.value for k in call.keywords)]:
                for expr in [arg, *(bound.get(arg.id, []) if isinstance(arg, ast.Name) else [])]:
                    out += [n.right for n in breadth_first(expr) if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Mod)]
    return out


def _calls_fn(call: ast.Call, fn: ast.FunctionDef | ast.AsyncFunctionDef, cls: ast.ClassDef | None) -> bool:
    """`call` calls `fn`, by its name: a module function as `name(...)`, a method as `self.name(...)`."""
    func = call.func
    if cls is None:
        return isinstance(func, ast.Name) and func.id == fn.name
    return (isinstance(func, ast.Attribute) and func.attr == fn.name and isinstance(func.value, ast.Name)
            and func.value.id in ("self", "cls"))


def _field_of_one(field: str, index: ProjectIndex, path: str, family: tuple[str, frozenset[str]] | None = None) -> bool:
    """Every place of the project that may set the settings field `field` sets it to one (or None, no count at all),
    and there is such a place: a keyword `field=...` of a call (a config's constructor), an assignment `x.field = ...`,
    a namedtuple's field list whose constructions name it, a key of a dict literal (`{"field": 1}`, the settings an
    object is made from); the value a literal, or a parameter of default one that no call passes. A notebook's code
    cells are read so too, and so is a command-line option's default (`add_argument("--field", default=1)`), and the
    lines of a config file, a shell script or a document that set it to one (`field: 1`, `"field": 1`, `--field 1`).
    Any other mention (a line of such a file that sets another value or says something else, an option with no default
    or required, an item store `d["field"] = n`, a class-level field a parser may fill) may set it: not shown."""
    naming = _files_naming(field, index)
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
                and _never_constructed(fn, cls, index, path):
            pass  # set in the constructor of a class no run makes
        elif isinstance(node, ast.Attribute) and node.attr == field and not isinstance(node.ctx, ast.Load):
            if not (isinstance(parent, ast.Assign) and _one_valued(parent.value, fn, cls, index, path)):
                return None  # `cfg.field = n`, `cfg.field += 1`, `for cfg.field in ...`
            sources += 1
        elif isinstance(node, ast.keyword) and node.arg == field:
            if isinstance(node.value, ast.Attribute) and node.value.attr == field:
                pass  # the field handed on under its own name (`Accelerator(field=cfg.field)`): it sets nothing new
            elif not _one_valued(node.value, fn, cls, index, path):
                return None
            else:
                sources += 1
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and re.search(rf"\b{re.escape(field)}\b",
                                                                                        node.value):
            value = _dict_value(parent, node) if node.value == field and isinstance(parent, ast.Dict) else None
            option = _option_default(parent, node, field)
            if option is not None:
                # `parser.add_argument("--field", type=int, default=1)`: what a run that does not give the option has
                if not _one_valued(option, fn, cls, index, path):
                    return None
                sources += 1
            elif value is not None:
                # `{"field": 1}`, a dict literal of settings an object is made from (`setattr(self, key, d[key])`)
                if not _one_valued(value, fn, cls, index, path):
                    return None
                sources += 1
            elif _message(node.value, field):
                pass  # `"Invalid field parameter: {}, should be >= 1"`: words about it set nothing
            elif not (node.value == field and _namedtuple_field(parent, tree, field, index, path)):
                return None  # `"--field"` of a command line, `d["field"] = n`, `setattr(cfg, "field", n)`
        elif isinstance(node, (ast.AnnAssign, ast.Assign)) and fn is None and cls is not None and any(
                isinstance(t, ast.Name) and t.id == field for t in _targets(node)):
            if not (_plain_namespace(cls) and node.value is not None and _is_one(node.value)):
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


def _one_valued(value: ast.expr, fn: ast.FunctionDef | ast.AsyncFunctionDef | None, cls: ast.ClassDef | None,
                index: ProjectIndex, path: str) -> bool:
    """`value` is one on every run the project makes: the literal 1 (or None), or a parameter of `fn` of default one
    (or None) that `fn` does not rebind and no call of the project passes."""
    if isinstance(value, ast.Constant):
        return value.value is None or type(value.value) is int and value.value == 1
    if not isinstance(value, ast.Name) or fn is None or _rebound(fn, value.id):
        return False
    ones = {**_defaults_of_one(fn), **_defaults_of_none(fn)}
    return value.id in ones and _unpassed(fn, cls, {value.id}, ones, index, path)


def _defaults_of_none(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> dict[str, int | None]:
    """The parameters whose default is None (no count at all): their positional index (None: keyword-only)."""
    args = fn.args
    positional = [*args.posonlyargs, *args.args]
    out: dict[str, int | None] = {}
    for arg, default in zip(positional[len(positional) - len(args.defaults):], args.defaults):
        if isinstance(default, ast.Constant) and default.value is None:
            out[arg.arg] = positional.index(arg)
    for arg, kw_default in zip(args.kwonlyargs, args.kw_defaults):
        if isinstance(kw_default, ast.Constant) and kw_default.value is None:
            out[arg.arg] = None
    return out


def _namedtuple_field(parent: ast.AST | None, tree: ast.Module, field: str, index: ProjectIndex, path: str) -> bool:
    """The string is an entry of the field list of `Name = namedtuple("Name", [..., "field", ...])`, and every
    construction of `Name` in the project gives fewer values by place than the field's place (so only by keyword)."""
    for node in breadth_first(tree):
        if (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                and isinstance(node.value, ast.Call) and len(node.value.args) == 2
                and isinstance(node.value.args[1], (ast.List, ast.Tuple)) and node.value.args[1] is parent
                and dotted(node.value.func) in ("namedtuple", "collections.namedtuple")):
            place = [e.value for e in parent.elts if isinstance(e, ast.Constant)].index(field)
            calls = _calls(node.targets[0].id, False, index, path)
            return calls is not None and all(
                len(c.args) <= place and not any(isinstance(a, ast.Starred) for a in c.args)
                and all(k.arg is not None for k in c.keywords) for c in calls)
    return False


def _rebound(fn: ast.AST, name: str) -> bool:
    """The function assigns the parameter itself (`grad_iter = max(grad_iter, cfg.accum)`)."""
    return any(isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store) for n in own_nodes(fn))


def _calls(name: str, method: bool, index: ProjectIndex, path: str) -> list[ast.Call] | None:
    """The calls of a function (a method: `.name(...)`) in the project's Python files; None when the project runs
    nothing of its own, when too many files name it, or when some file names it other than in a call."""
    needle = re.compile(rf"\b{re.escape(name)}\b")
    found: list[ast.Call] = []
    read = 0
    runs = False
    for file in project_files(index.root):
        text = index.text_of(file)
        if not text:
            continue
        runs = runs or bool(_ENTRY.search(text))
        if not needle.search(text):
            continue
        read += 1
        if read > MAX_FILES_READ:
            return None
        module = index.load(file)
        if module is None:
            return None
        for node, parent in _named(module.tree, name):
            if isinstance(parent, ast.Call) and parent.func is node:
                if method == isinstance(node, ast.Attribute) or not method:
                    found.append(parent)
            elif isinstance(node.ctx, ast.Load) and isinstance(parent, _HANDING) and _itself(node, method):
                return None  # handed on: a callback, `partial(self.train, ...)`, `step = train`
    return found if runs else None


def _constructions(cls: ast.ClassDef, index: ProjectIndex, path: str, depth: int = 0) -> list[ast.Call] | None:
    """The calls that run `cls.__init__`: the class called by its name (`DiffTrainer(model, config)`), and for each
    class of the project deriving from one of that name, its `super().__init__(...)` calls, or, when it has no
    `__init__` of its own, its constructions in turn; None when some are not read (see `_calls`; an `__init__` called
    through the class, `Base.__init__(self, ...)`; a deeper family)."""
    found = _calls(cls.name, False, index, path)
    if found is None or depth > 2:
        return None
    words = project_words(index.root)
    if words is None:
        return None
    for file, _ in words.naming(cls.name):
        module = index.load(file) if file.endswith(".py") else None
        for sub in breadth_first(module.tree) if module is not None else ():
            if not (isinstance(sub, ast.ClassDef) and any(_base_name(b) == cls.name for b in sub.bases)):
                continue
            init = next((f for f in sub.body if isinstance(f, _FUNCTIONS) and f.name == "__init__"), None)
            if init is None:
                more = _constructions(sub, index, path, depth + 1)
                if more is None:
                    return None
                found += more
                continue
            for call in own_nodes(init):
                if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "__init__":
                    if not (isinstance(call.func.value, ast.Call) and isinstance(call.func.value.func, ast.Name)
                            and call.func.value.func.id == "super"):
                        return None  # `Base.__init__(self, ...)`
                    found.append(call)
    return found


def _base_name(base: ast.expr) -> str | None:
    """The name a class statement's base is spelt with (`pkg.Trainer`: `Trainer`)."""
    return base.id if isinstance(base, ast.Name) else base.attr if isinstance(base, ast.Attribute) else None


def _itself(node: ast.Name | ast.Attribute, method: bool) -> bool:
    """A reference that may be the function itself: a module function's name, or a method through `self` (`opt.train`,
    an attribute of some other object, is taken for data: a method handed on through another name is not read)."""
    if not method:
        return isinstance(node, ast.Name)
    return isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")


def _named(tree: ast.Module, name: str) -> Iterator[tuple[ast.Name | ast.Attribute, ast.AST | None]]:
    """The names and attributes spelt `name` in a module, with the node each is a direct child of."""
    todo: list[tuple[ast.AST, ast.AST | None]] = [(tree, None)]
    while todo:
        node, parent = todo.pop()
        if isinstance(node, ast.Name) and node.id == name or isinstance(node, ast.Attribute) and node.attr == name:
            yield node, parent
        todo.extend((child, node) for child in child_nodes(node))
