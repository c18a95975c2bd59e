"""The syntax tree the analysis reads: CPython's `ast`, with the source text it was parsed from.

CPython's parser is about ten times cheaper than libcst's and its nodes carry their positions, so
nothing has to be computed to place a diagnostic. What `ast` leaves out the analysis gets from the text:
`code()` is a node's source, whitespace-normalised; `Source.span()` turns CPython's UTF-8 byte columns
into the character columns editors count. The helpers below answer the questions the interpreter and the
rules ask of nodes (is this the integer 1? what are this call's arguments, in order?).
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from collections.abc import Iterable, Iterator
from typing import NamedTuple

from ..diagnostics import Span
from .walk import breadth_first, child_nodes

__all__ = [
    "Arg", "FUNCTIONS", "LOOPS", "SIMPLE_STATEMENTS", "TESTS", "WITHS", "Source", "arguments", "code", "forget_code", "int_value", "is_int",
    "is_number", "keyword_value", "parameters", "read_source", "rebound_by", "starts_with_paren",
]

FUNCTIONS: tuple[type, ...] = (ast.FunctionDef, ast.AsyncFunctionDef)
LOOPS: tuple[type, ...] = (ast.For, ast.AsyncFor)
WITHS: tuple[type, ...] = (ast.With, ast.AsyncWith)
# Expressions written as a test (`(i + 1) % N == 0`, `a and b`, `not done`): a name or a parameter bound to
# one stands for that test.
TESTS = (ast.Compare, ast.BoolOp, ast.UnaryOp)
# Statements that hold no other statement: what the interpreter runs in one go and a fix moves.
SIMPLE_STATEMENTS: tuple[type, ...] = (
    ast.Expr, ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Return, ast.Break, ast.Continue, ast.Raise, ast.Assert,
    ast.Pass, ast.Delete, ast.Import, ast.ImportFrom, ast.Global, ast.Nonlocal,
)


class Source:
    """The text of one module, split into lines, answering where a node is and what it says."""

    __slots__ = ("text", "lines", "_ascii")

    def __init__(self, text: str) -> None:
        self.text = text
        self.lines = text.split("\n")  # the engine gives universal newlines, the way CPython counts lines
        self._ascii = text.isascii()

    def _column(self, line: int, byte_col: int) -> int:
        """The character offset of a UTF-8 byte offset on a (1-based) line."""
        if self._ascii:
            return byte_col
        text = self.lines[line - 1] if 0 < line <= len(self.lines) else ""
        if text.isascii():
            return byte_col
        return len(text.encode("utf-8")[:byte_col].decode("utf-8", errors="replace"))

    def span(self, node: ast.AST) -> Span:
        """1-based line and column range of a node (columns in characters, end exclusive)."""
        line, end_line = node.lineno, node.end_lineno or node.lineno  # type: ignore[attr-defined]
        col = self._column(line, node.col_offset)  # type: ignore[attr-defined]
        end_col = self._column(end_line, node.end_col_offset if node.end_col_offset is not None else node.col_offset)  # type: ignore[attr-defined]
        return Span(line, col + 1, end_line, end_col + 1)

    def segment(self, node: ast.AST) -> str:
        """The exact source text of a node (without the parentheses around it)."""
        line, end_line = node.lineno - 1, (node.end_lineno or node.lineno) - 1  # type: ignore[attr-defined]
        col = self._column(line + 1, node.col_offset)  # type: ignore[attr-defined]
        end_col = self._column(end_line + 1, node.end_col_offset)  # type: ignore[attr-defined]
        lines = self.lines
        if line == end_line:
            return lines[line][col:end_col]
        return "\n".join([lines[line][col:], *lines[line + 1: end_line], lines[end_line][:end_col]])


# The module being analysed: rules and the interpreter ask for nodes' text without carrying it around.
_CURRENT: list[Source] = []
# code() of that module's nodes; the interpreter asks for the same nodes' text on every loop iteration.
# Holding the node keeps its id from being reused.
_CODE: dict[int, tuple[ast.AST, str]] = {}


# Nodes of other files of the project (read by `gradcheck_lint.project`), whose text is not the current
# module's: id -> their file's Source. The project index holds their trees, so the ids stay theirs.
_FOREIGN: dict[int, Source] = {}


def register_foreign(ids: set[int], source: Source) -> None:
    """Make `code()` read the nodes `ids` (of another file of the project) from `source`."""
    for i in ids:
        _FOREIGN[i] = source


def unregister_foreign(ids: set[int]) -> None:
    for i in ids:
        _FOREIGN.pop(i, None)


def read_source(text: str) -> Source:
    """Make `text` the module whose nodes `code()` reads (until `forget_code()`)."""
    forget_code()
    source = Source(text)
    _CURRENT.append(source)
    return source


def made_here(tree: ast.AST) -> None:
    """A tree the analysis made (a copy with positions of another file): the text of each of its nodes is
    its unparsed form, not a segment of the file being analysed."""
    for node in breadth_first(tree):
        _CODE[id(node)] = (node, " ".join(ast.unparse(node).split()))


def made_nodes(nodes: Iterable[ast.AST]) -> None:
    """Nodes the analysis made (and only those, not the user's nodes they hold): their text is their
    unparsed form, whatever positions they carry."""
    for node in nodes:
        _CODE[id(node)] = (node, " ".join(ast.unparse(node).split()))


def forget_code() -> None:
    """Drop the current module and the cached texts (called when a file's analysis ends)."""
    _CURRENT.clear()
    _CODE.clear()
    _ARGS.clear()
    _LOCALS.clear()


def code(node: ast.AST) -> str:
    """Source text of a node, whitespace-normalised (`opt.step()`, `(i + 1) % N == 0`)."""
    if type(node) is ast.Name:
        return node.id
    hit = _CODE.get(id(node))
    if hit is not None and hit[0] is node:
        return hit[1]
    source = _FOREIGN.get(id(node)) if _FOREIGN else None
    if source is None and _CURRENT:
        source = _CURRENT[-1]
    segment = None
    if source is not None and hasattr(node, "lineno"):
        try:
            segment = source.segment(node)
        except IndexError:  # positions outside the file it is read from: no segment of it
            segment = None
    if segment is not None:
        text = " ".join(segment.split())
        if "\n" in segment:  # a call written over several lines reads as one: `clip(model.parameters(), 1.0)`
            text = _SPACE_BEFORE_CLOSE.sub("", _SPACE_AFTER_OPEN.sub(r"\1", text))
    else:  # a node made by the analysis itself, or a comprehension clause (which has no position)
        text = " ".join(ast.unparse(node).split())
    _CODE[id(node)] = (node, text)
    return text


_SPACE_AFTER_OPEN = re.compile(r"([(\[{]) ")
_SPACE_BEFORE_CLOSE = re.compile(r" (?=[)\]}])")


def starts_with_paren(outer: ast.AST, inner: ast.AST) -> bool:
    """`outer` begins before `inner` though `inner` is its first part: `inner` is in parentheses
    (`(loss / n).backward`, `(i) % N`)."""
    return (outer.lineno, outer.col_offset) != (inner.lineno, inner.col_offset)  # type: ignore[attr-defined]


def is_int(node: ast.AST | None, value: int | None = None) -> bool:
    """An integer literal (not a bool), equal to `value` when given."""
    if type(node) is not ast.Constant or type(node.value) is not int:
        return False
    return value is None or node.value == value


def int_value(node: ast.AST | None) -> int | None:
    return node.value if is_int(node) else None  # type: ignore[union-attr]


def is_number(node: ast.AST | None) -> bool:
    """An int or float literal (not a bool)."""
    return type(node) is ast.Constant and type(node.value) in (int, float)


def is_infinity(node: ast.AST | None) -> bool:
    """A literal infinity: `float("inf")`, `float('Infinity')`, `math.inf`, `np.inf`, `torch.inf`."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "float" and len(node.args) == 1:
        arg = node.args[0]
        return isinstance(arg, ast.Constant) and isinstance(arg.value, str) and arg.value.strip().lower().lstrip("+") \
            in ("inf", "infinity")
    return isinstance(node, ast.Attribute) and node.attr == "inf" and isinstance(node.value, ast.Name) \
        and node.value.id in ("math", "np", "numpy", "torch")


def reads_grad_of(expr: ast.AST, owner: ast.expr) -> bool:
    """`expr` is computed from `owner.grad` itself (`p.grad.detach().clone()`, `p.grad[mask]`)."""
    want = ast.dump(owner)
    return any(isinstance(sub, ast.Attribute) and sub.attr == "grad" and ast.dump(sub.value) == want
               for sub in ast.walk(expr))


def innermost_function(tree: ast.AST, line: int) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    """The innermost function or method whose lines hold `line`."""
    best: ast.FunctionDef | ast.AsyncFunctionDef | None = None
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.lineno <= line <= (node.end_lineno or node.lineno):
            if best is None or node.lineno >= best.lineno:
                best = node
    return best


class Arg(NamedTuple):
    """One argument of a call: `keyword=value`, `*value` (star "*"), `**value` (star "**") or plain."""

    keyword: str | None
    value: ast.expr
    star: str = ""


_ARGS: dict[int, tuple[ast.Call, list[Arg]]] = {}


def arguments(call: ast.Call) -> list[Arg]:
    """The call's arguments in source order (positional and starred first, then keywords)."""
    hit = _ARGS.get(id(call))
    if hit is not None and hit[0] is call:
        return hit[1]
    out = [Arg(None, a.value, "*") if type(a) is ast.Starred else Arg(None, a) for a in call.args]
    out += [Arg(None, k.value, "**") if k.arg is None else Arg(k.arg, k.value) for k in call.keywords]
    if len(_ARGS) > 50_000:
        _ARGS.clear()
    _ARGS[id(call)] = (call, out)
    return out


def keyword_value(call: ast.Call, name: str) -> ast.expr | None:
    for k in call.keywords:
        if k.arg == name:
            return k.value
    return None


class Param(NamedTuple):
    name: str
    default: ast.expr | None


def parameters(fn: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> tuple[list[Param], list[Param], list[str]]:
    """(positional parameters, keyword-only parameters, names of `*args`/`**kwargs`), with defaults."""
    a = fn.args
    positional = [*a.posonlyargs, *a.args]
    defaults: list[ast.expr | None] = [None] * (len(positional) - len(a.defaults)) + list(a.defaults)
    pos = [Param(p.arg, d) for p, d in zip(positional, defaults)]
    kwonly = [Param(p.arg, d) for p, d in zip(a.kwonlyargs, a.kw_defaults)]
    stars = [s.arg for s in (a.vararg, a.kwarg) if s is not None]
    return pos, kwonly, stars


def assignment_targets(node: ast.AST) -> list[ast.expr]:
    """What an assignment statement assigns to (`a = b = x`: both; `a += x`, `a: int = x`: `a`); [] for
    any other node."""
    if isinstance(node, ast.Assign):
        return list(node.targets)
    if isinstance(node, (ast.AugAssign, ast.AnnAssign)):
        return [node.target]
    return []


def unpacked_targets(targets: Iterable[ast.expr]) -> list[ast.expr]:
    """The names and references assignment targets bind: the elements of a tuple or list target, each
    (`feat, weights = model(x)`: `feat` and `weights`)."""
    out: list[ast.expr] = []
    for t in targets:
        if isinstance(t, (ast.Tuple, ast.List)):
            out.extend(unpacked_targets(e.value if isinstance(e, ast.Starred) else e for e in t.elts))
        else:
            out.append(t)
    return out


def binding_targets(node: ast.AST) -> list[ast.expr]:
    """Everything a node binds: an assignment's targets, a walrus's, a `for` loop's or comprehension's."""
    if isinstance(node, (ast.NamedExpr, ast.For, ast.AsyncFor, ast.comprehension)):
        return [node.target]
    return assignment_targets(node)


def rebound_by(target: ast.AST) -> Iterator[ast.Name | ast.Attribute | ast.Subscript]:
    """The references an assignment to `target` changes: `x = v` rebinds `x`; `self.a.b = v` sets the
    attribute `self.a.b` and rebinds neither `self` nor `self.a` (the same objects, one attribute more);
    `x[k] = v` changes what `x` holds (and `x.a[k] = v` what `x.a` holds)."""
    if isinstance(target, (ast.Tuple, ast.List)):
        for e in target.elts:
            yield from rebound_by(e)
    elif isinstance(target, ast.Starred):
        yield from rebound_by(target.value)
    elif isinstance(target, (ast.Name, ast.Attribute)):
        yield target
    elif isinstance(target, ast.Subscript):
        yield target
        if isinstance(target.value, (ast.Name, ast.Attribute, ast.Subscript)):
            yield from rebound_by(target.value)


def stored_names(node: ast.AST) -> set[str]:
    """The names a loop stores into, as a flag's test names them (`x = ...`: `x`; `args.x += 1`: `x`;
    `cfg[k] = ...`: `cfg`, whose contents change)."""
    out: set[str] = set()
    for n in breadth_first(node):
        targets = n.targets if isinstance(n, ast.Assign) else [n.target] if isinstance(n, (ast.AugAssign, ast.AnnAssign, ast.For, ast.AsyncFor, ast.NamedExpr)) else []
        for t in targets:
            _store_names(t, out)
    return out


def carried_names(loop: ast.AST) -> frozenset[str]:
    """The plain names a loop's iteration reads before it assigns them, in the order the code runs: what
    they hold at that read was made by the previous iteration (`state = get_state(next_obs)` at the end of
    the body, read by `get_action(state)` at its top). The loop's own target is assigned first. A name
    assigned first and read later (in any branch: `if a: x = ...` then `f(x)`) is not carried: the
    iteration makes it anew. Reads inside functions and lambdas defined in the loop run later, and are
    not counted."""
    order = _FirstUse()
    if isinstance(loop, (ast.For, ast.AsyncFor)):
        order.expr(loop.target, store=True)
    elif isinstance(loop, ast.While):
        order.expr(loop.test)
    order.stmts(getattr(loop, "body", []))
    return frozenset(order.carried)


class _FirstUse:
    """Which names a block of statements reads before it writes them (see `carried_names`)."""

    def __init__(self) -> None:
        self.seen: set[str] = set()
        self.carried: set[str] = set()

    def read(self, name: str) -> None:
        if name not in self.seen:
            self.seen.add(name)
            self.carried.add(name)

    def write(self, name: str) -> None:
        self.seen.add(name)

    def stmts(self, body: list[ast.stmt]) -> None:
        for stmt in body:
            self.stmt(stmt)

    def stmt(self, s: ast.stmt) -> None:
        if isinstance(s, ast.Assign):
            self.expr(s.value)
            for t in s.targets:
                self.expr(t, store=True)
        elif isinstance(s, ast.AugAssign):
            if isinstance(s.target, ast.Name):
                self.read(s.target.id)  # `x += v` reads `x` first
            self.expr(s.value)
            self.expr(s.target, store=True)
        elif isinstance(s, ast.AnnAssign):
            if s.value is not None:
                self.expr(s.value)
                self.expr(s.target, store=True)
        elif isinstance(s, (ast.For, ast.AsyncFor)):
            self.expr(s.iter)
            self.expr(s.target, store=True)
            self.stmts(s.body)
            self.stmts(s.orelse)
        elif isinstance(s, (ast.While, ast.If)):
            self.expr(s.test)
            self.stmts(s.body)
            self.stmts(s.orelse)
        elif isinstance(s, (ast.With, ast.AsyncWith)):
            for item in s.items:
                self.expr(item.context_expr)
                if item.optional_vars is not None:
                    self.expr(item.optional_vars, store=True)
            self.stmts(s.body)
        elif isinstance(s, ast.Try) or type(s).__name__ == "TryStar":
            self.stmts(getattr(s, "body", []))
            for h in getattr(s, "handlers", []):
                if h.type is not None:
                    self.expr(h.type)
                if h.name:
                    self.write(h.name)
                self.stmts(h.body)
            self.stmts(getattr(s, "orelse", []))
            self.stmts(getattr(s, "finalbody", []))
        elif isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            for d in s.decorator_list:
                self.expr(d)
            self.write(s.name)
        elif isinstance(s, ast.Delete):
            for t in s.targets:
                self.expr(t, store=True)
        elif isinstance(s, ast.Match):
            self.expr(s.subject)
            for case in s.cases:
                self.stmts(case.body)
        else:
            for child in child_nodes(s):
                if isinstance(child, ast.expr):
                    self.expr(child)

    def expr(self, e: ast.AST, store: bool = False) -> None:
        if isinstance(e, ast.Name):
            (self.write if store or not isinstance(e.ctx, ast.Load) else self.read)(e.id)
        elif isinstance(e, (ast.Tuple, ast.List)) and store:
            for elt in e.elts:
                self.expr(elt, store=True)
        elif isinstance(e, ast.Starred) and store:
            self.expr(e.value, store=True)
        elif isinstance(e, (ast.Attribute, ast.Subscript)) and store:
            self.expr(e.value)  # `a.b = ...`, `a[i] = ...` read `a` (and `i`)
            if isinstance(e, ast.Subscript):
                self.expr(e.slice)
        elif isinstance(e, ast.NamedExpr):
            self.expr(e.value)
            self.expr(e.target, store=True)
        elif isinstance(e, ast.Lambda):
            return  # runs later, if at all
        elif isinstance(e, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            bound = set(stored_names(ast.Module(body=[ast.For(target=g.target, iter=g.iter, body=[], orelse=[])
                                                      for g in e.generators], type_ignores=[])))
            self.expr(e.generators[0].iter)
            for n in breadth_first(e):
                if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id not in bound:
                    self.read(n.id)
        else:
            for child in child_nodes(e):
                self.expr(child)


def _store_names(target: ast.AST, out: set[str]) -> None:
    if isinstance(target, (ast.Tuple, ast.List)):
        for e in target.elts:
            _store_names(e, out)
    elif isinstance(target, ast.Starred):
        _store_names(target.value, out)
    elif isinstance(target, ast.Name):
        out.add(target.id)
    elif isinstance(target, ast.Attribute):
        out.add(target.attr)
    elif isinstance(target, ast.Subscript):  # `flags["fp16"] = ...` changes what `flags` holds
        base = target.value
        while isinstance(base, (ast.Subscript, ast.Attribute)):
            base = base.value
        if isinstance(base, ast.Name):
            out.add(base.id)


_LOCALS: dict[int, tuple[ast.AST, frozenset[str]]] = {}


def local_names(fn: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> frozenset[str]:
    """The names a function binds itself (parameters, stores, imports, nested definitions), minus those it
    declares `global`: any other name it reads is a module global, one object for every call. Names bound in
    its nested functions count too, which can only make fewer names global."""
    hit = _LOCALS.get(id(fn))
    if hit is not None and hit[0] is fn:
        return hit[1]
    out: set[str] = {a.arg for a in (*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs)}
    out |= {a.arg for a in (fn.args.vararg, fn.args.kwarg) if a is not None}
    declared: set[str] = set()
    for n in breadth_first(fn):
        if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load):
            out.add(n.id)
        elif isinstance(n, (ast.Import, ast.ImportFrom)):
            out |= {(a.asname or a.name).split(".")[0] for a in n.names}
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and n is not fn:
            out.add(n.name)
        elif isinstance(n, ast.ExceptHandler) and n.name:
            out.add(n.name)
        elif isinstance(n, (ast.Global, ast.Nonlocal)):
            declared |= set(n.names)
    found = frozenset(out - declared)
    _LOCALS[id(fn)] = (fn, found)
    return found


_ALIASES: dict[int, tuple[ast.AST, dict[str, tuple[str, int]]]] = {}


def reference_aliases(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> dict[str, tuple[str, int]]:
    """Local names a function binds once, to an attribute it reads (`grad_scaler = self.grad_scaler`):
    name -> (the attribute's text, the line of that binding). A test of the name after that line tests the
    attribute, the same fact another function tests under its own alias or by its full name. Not a name
    bound anywhere else in the function (a loop target, a second assignment, a parameter), nor one whose
    attribute the function assigns (the name would keep the value from before)."""
    hit = _ALIASES.get(id(fn))
    if hit is not None and hit[0] is fn:
        return hit[1]
    stores: Counter[str] = Counter(a.arg for a in (*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs))
    stores.update(a.arg for a in (fn.args.vararg, fn.args.kwarg) if a is not None)
    bound: dict[str, tuple[str, int]] = {}
    assigned_attributes: set[str] = set()
    for n in breadth_first(fn):
        if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load):
            stores[n.id] += 1
        elif isinstance(n, ast.Attribute) and not isinstance(n.ctx, ast.Load):
            text = _dotted(n)
            if text:
                assigned_attributes.add(text)
        elif isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name) \
                and isinstance(n.value, ast.Attribute):
            text = _dotted(n.value)
            if text:
                bound[n.targets[0].id] = (text, n.lineno)
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and n is not fn:
            stores[n.name] += 1
    found = {name: ref for name, ref in bound.items() if stores[name] == 1 and ref[0] not in assigned_attributes}
    _ALIASES[id(fn)] = (fn, found)
    return found


def _dotted(expr: ast.AST) -> str | None:
    parts: list[str] = []
    while isinstance(expr, ast.Attribute):
        parts.append(expr.attr)
        expr = expr.value
    if isinstance(expr, ast.Name) and parts:
        return ".".join([expr.id, *reversed(parts)])
    return None
