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

from ..analysis.apimodels import catalogue_for
from ..analysis.names import ImportMap
from ..analysis.syntax import innermost_function
from ..analysis.walk import breadth_first, own_nodes
from ..diagnostics import Certainty, Diagnostic, made_possible
from ..messages import about_a_window
from ..sources import parsed_or_none
from .index import ProjectIndex
from .project_calls import MAX_FILES_READ, defaults_of_one, rebound, unpassed
from .setting_values import ONE, Scope, alias_of, count_read, defines_option, field_has, option_has, options_named

__all__ = ["MAX_FILES_READ", "settle_unset_defaults"]

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_WINDOW_ENDS = frozenset({"step", "zero_grad"})  # what a window's gate runs


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
    with index.reads_recorded() as read:
        decided: dict[int, str | None] = {}  # id of a function -> the assumption, when its windows are unset
        out: list[Diagnostic] = []
        for d in found:
            fn = _scope_of(tree, d.line) if _settleable(d) else None
            if fn is not None:
                if id(fn) not in decided:
                    decided[id(fn)] = _unset_windows(fn, _class_of(tree, fn), tree, index, path)
                assumption = decided[id(fn)]
                if assumption is not None:
                    d = made_possible(d, assumption)
            out.append(d)
    if out == found:
        return None
    read.pop(path, None)
    return out, tuple(sorted(read.items()))


def _settleable(d: Diagnostic) -> bool:
    return d.certainty is Certainty.CERTAIN and about_a_window(d.code, d.message) and d.cell is None


def _scope_of(tree: ast.Module, line: int) -> Scope | None:
    """The innermost function whose lines hold `line`, or the module when the line is in its own code (a script's
    training loop written at the top level)."""
    fn = innermost_function(tree, line)
    if fn is not None:
        return fn
    top = next((s for s in tree.body if s.lineno <= line <= (s.end_lineno or s.lineno)), None)
    return tree if top is not None and not isinstance(top, ast.ClassDef) else None


def _class_of(tree: ast.Module, fn: ast.AST) -> ast.ClassDef | None:
    for node in breadth_first(tree):
        if isinstance(node, ast.ClassDef) and any(child is fn for child in node.body):
            return node
    return None






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


def _unset_windows(fn: Scope, cls: ast.ClassDef | None, tree: ast.Module,
                   index: ProjectIndex, path: str) -> str | None:
    """The assumption a window finding in `fn` rests on, when every window count of `fn` (or, when `fn` has no gate of
    its own, of the tests its callers in this file hand it) is a keyword of default one that no call of the project
    passes, or a settings field that every setter of the project sets to one; None when that is not shown."""
    ones = defaults_of_one(fn) if not isinstance(fn, ast.Module) else {}
    imports = ImportMap.of(tree)
    counts: list[tuple[ast.expr, Scope]] = [(n, fn) for n in _window_counts(fn, imports)] or (
        [(n, fn) for n in _handed_counts(fn, cls, tree)] + _callers_windows(fn, cls, tree, imports)
        if not isinstance(fn, ast.Module) else [])
    keywords: set[str] = set()
    fields: dict[str, tuple[str, frozenset[str]] | None] = {}
    options: set[str] = set()
    for n, scope in counts:
        n = count_read(alias_of(n, scope, tree))  # `grad_accm = args.gradient_accumulation`, then `batch % grad_accm`
        if isinstance(n, ast.Name) and scope is fn and n.id in ones and not rebound(fn, n.id):
            keywords.add(n.id)
        elif isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and defines_option(tree, n.attr) \
                and options_named(scope, tree, n.value.id, index, path):
            # `args.accumulation_steps`, `args` the script's own parsed command line (or a parameter every call of the
            # function in this file hands it), of an option its own parser defines (one of a parser imported is read
            # as a settings field, below)
            options.add(n.attr)
        elif isinstance(n, ast.Attribute):
            # `cfg.grad_accum_iters`, `self.accum`: a settings field; one of `self` is set by this class's family only
            # through `self` (another class's `self.accum = 2` is another object's field)
            own = isinstance(n.value, ast.Name) and n.value.id == "self" and cls is not None
            family = (cls.name, frozenset(b.id for b in cls.bases if isinstance(b, ast.Name))) if own and cls else None
            fields[n.attr] = family if fields.get(n.attr, family) == family else None
        else:
            return None  # a window counted by anything else (a constant, another name)
    if not counts or keywords and (isinstance(fn, ast.Module) or not unpassed(fn, cls, keywords, ones, index, path)):
        return None
    if not all(field_has(name, index, path, ONE, fields[name]) for name in sorted(fields)):
        return None
    if not all(option_has(name, tree, index, path, ONE) for name in sorted(options)):
        return None
    shown = ", ".join(f"`{n}`" for n in sorted(keywords | set(fields) | options))
    if options and not fields and not keywords:
        return (f"that {shown} is set above 1 (the script's command-line option has default 1 and nothing of the "
                "project gives it another value: every run of the project has windows of one micro-batch there)")
    if not fields and not options and not isinstance(fn, ast.Module):
        return (f"that {shown} is set above its default 1 (no call of `{fn.name}` in the project passes it: every run "
                "of the project has windows of one micro-batch there)")
    return (f"that {shown} is set above 1 (every place of the project that sets it sets 1 or a default of 1 no call "
            "passes: every run of the project has windows of one micro-batch there)")






















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


def _callers_windows(fn: ast.FunctionDef | ast.AsyncFunctionDef, cls: ast.ClassDef | None, tree: ast.Module,
                     imports: ImportMap) -> list[tuple[ast.expr, Scope]]:
    """The window counts of the functions of this file that call `fn` (a helper that runs one micro-batch's
    backward and clip, `train_step(...)`, called by a loop whose `if (i + 1) % args.accum == 0:` steps: the window
    is the caller's), each with the caller it is read in; none when some caller counts no window."""
    out: list[tuple[ast.expr, Scope]] = []
    for caller in breadth_first(tree):
        if not isinstance(caller, _FUNCTIONS) or caller is fn:
            continue
        if not any(isinstance(node, ast.Call) and _calls_fn(node, fn, cls) for node in own_nodes(caller)):
            continue
        counts = _window_counts(caller, imports)
        if not counts:
            return []
        out += [(n, caller) for n in counts]
    return out


def _calls_fn(call: ast.Call, fn: ast.FunctionDef | ast.AsyncFunctionDef, cls: ast.ClassDef | None) -> bool:
    """`call` calls `fn`, by its name: a module function as `name(...)`, a method as `self.name(...)`."""
    func = call.func
    if cls is None:
        return isinstance(func, ast.Name) and func.id == fn.name
    return (isinstance(func, ast.Attribute) and func.attr == fn.name and isinstance(func.value, ast.Name)
            and func.value.id in ("self", "cls"))








































