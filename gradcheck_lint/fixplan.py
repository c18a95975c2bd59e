"""Fix plans: what a rule wants changed, said with syntax nodes; `resolve` turns a plan into text edits.

A rule builds a `FixPlan` next to its finding. The engine resolves it against the source text with the
positions it already computes, so diagnostics carry only plain `Fix`/`Edit` values. The helpers below
answer the structural questions a rule asks before it proposes a change (is this call a statement of
its own line? which block holds it? does anything between two statements leave the block?).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from .analysis import TrainingModel
from .analysis.events import Step
from .analysis.names import dotted
from .analysis.syntax import SIMPLE_STATEMENTS, arguments
from .analysis.walk import children
from .diagnostics import Applicability, Certainty, Codemod, Edit, Fix, Span

SAFE, UNSAFE = Applicability.SAFE, Applicability.UNSAFE


@dataclass(frozen=True, slots=True)
class ReplaceNode:
    """Replace the source of one node (its parentheses excluded) with `code`."""

    node: ast.AST
    code: str


@dataclass(frozen=True, slots=True)
class InsertAfter:
    """Insert the statement `code` right after the simple statement `anchor`, at its indentation."""

    anchor: ast.stmt
    code: str


@dataclass(frozen=True, slots=True)
class MoveAfter:
    """Move the simple statement `moved` (with its trailing comment) to right after `anchor`."""

    moved: ast.stmt
    anchor: ast.stmt


@dataclass(frozen=True, slots=True)
class Transform:
    """A structural change left to a libcst codemod at fix time (`gradcheck_lint.codemods`).

    `nodes` are the statements or expressions it acts on, `args` its named strings. The kinds:
    `insert_before` (nodes: a statement; args: `code`), `call_method` (nodes: an expression; args:
    `method`), `drop_division` (nodes: a `x / N` expression; args: `remove` = "1" to delete its whole
    statement instead, for `x = x / N` and `x /= N`), `wrap_with` (nodes: the first and the last
    statement of one block; args: `context`, `import`).
    """

    kind: str
    nodes: tuple[ast.AST, ...]
    args: tuple[tuple[str, str], ...] = ()


Action = ReplaceNode | InsertAfter | MoveAfter | Transform


@dataclass(frozen=True, slots=True)
class FixPlan:
    """A rule's proposed change, before positions are known."""

    description: str
    actions: tuple[Action, ...]
    applicability: Applicability = SAFE


# -- structural questions a rule asks --------------------------------------------------------------
_SCOPES = (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
_EXITS = (ast.Continue, ast.Break, ast.Return, ast.Raise)
_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


def source(model: TrainingModel, node: ast.AST) -> str:
    """Return the exact source text of a node, without parentheses around it."""
    return model.source_of(node).segment(node)


def statement_of(model: TrainingModel, node: ast.AST) -> ast.stmt | None:
    """Return the simple statement that is exactly this expression (`opt.step()` on its own), else None."""
    if isinstance(node, SIMPLE_STATEMENTS):
        return node
    parent = model.parent(node)
    if isinstance(parent, ast.Expr) and parent.value is node:
        return parent
    return None


def body_of(model: TrainingModel, stmt: ast.stmt) -> list[ast.stmt] | None:
    """The statement list (a block, a branch, a handler, the module) holding `stmt`."""
    parent = model.parent(stmt)
    for field in ("body", "orelse", "finalbody"):
        body = getattr(parent, field, None)
        if isinstance(body, list) and any(s is stmt for s in body):
            return body
    return None


def _neighbours(model: TrainingModel, stmt: ast.stmt) -> tuple[ast.stmt | None, ast.stmt | None]:
    body = body_of(model, stmt) or []
    at = next((i for i, s in enumerate(body) if s is stmt), None)
    if at is None:
        return None, None
    return (body[at - 1] if at > 0 else None), (body[at + 1] if at + 1 < len(body) else None)


def starts_line(model: TrainingModel, stmt: ast.stmt) -> bool:
    """Nothing but indentation precedes the statement on its line (not `if x: a`, not `a; b`'s `b`)."""
    line = model.source_of(stmt).lines[stmt.lineno - 1]
    return not line.encode("utf-8")[: stmt.col_offset].strip(b" \t\f")


def on_one_line(a: ast.stmt, b: ast.stmt) -> bool:
    """The two statements share a line (`a; b`)."""
    return a.lineno <= (b.end_lineno or b.lineno) and b.lineno <= (a.end_lineno or a.lineno)


def line_mates(model: TrainingModel, stmt: ast.stmt) -> list[ast.stmt]:
    """The statements of `stmt`'s block written on its line(s), itself included, in order."""
    body = body_of(model, stmt) or [stmt]
    return [s for s in body if on_one_line(s, stmt)]


def alone_on_line(model: TrainingModel, small: ast.stmt) -> bool:
    """Tell whether the statement is its whole line: no `;` neighbours, not the body of a one-line `if x:`."""
    return starts_line(model, small) and len(line_mates(model, small)) == 1


def block_of(model: TrainingModel, small: ast.stmt) -> list[ast.stmt] | None:
    """Return the indented block (or module body) listing this statement, when it starts its own line."""
    return body_of(model, small) if starts_line(model, small) else None


def scope_of(model: TrainingModel, node: ast.AST) -> ast.AST | None:
    """Return the function, class, lambda or module whose names the node sees."""
    current: ast.AST | None = model.parent(node)
    while current is not None and not isinstance(current, _SCOPES):
        current = model.parent(current)
    return current


def following(model: TrainingModel, small: ast.stmt) -> ast.stmt | None:
    """Return the statement that runs right after this one in its block, if it is a simple statement."""
    nxt = _neighbours(model, small)[1]
    return nxt if isinstance(nxt, SIMPLE_STATEMENTS) else None


def call_of(small: ast.stmt | None) -> ast.Call | None:
    """Return the call a statement consists of (`opt.step()`), else None."""
    if isinstance(small, ast.Expr) and isinstance(small.value, ast.Call):
        return small.value
    return None


def is_reference(expr: ast.AST) -> bool:
    """Tell whether an expression is a name or attribute chain (`opt`, `self.opt_d`), safe to evaluate again."""
    return dotted(expr) is not None


def exits_between(model: TrainingModel, a: ast.stmt, b: ast.stmt) -> bool:
    """Tell whether a statement between two of one block can leave it (`continue`, `break`, `return`, `raise`)."""
    stmts = body_of(model, a)
    if stmts is None or block_of(model, a) is None or block_of(model, b) is None:
        return True
    ia = next((i for i, s in enumerate(stmts) if s is a), None)
    ib = next((i for i, s in enumerate(stmts) if s is b), None)
    if ia is None or ib is None:
        return True
    lo, hi = sorted((ia, ib))

    def exits(node: ast.AST) -> bool:  # a return/break/continue/raise, not inside a nested definition
        if isinstance(node, _EXITS):
            return True
        return not isinstance(node, _DEFINITIONS) and any(exits(child) for child in children(node))

    return any(exits(stmt) for stmt in stmts[lo + 1: hi])


def same_expression(a: ast.AST, b: ast.AST) -> bool:
    """The two expressions are written alike (positions aside)."""
    return ast.dump(a) == ast.dump(b)


def after_step(model: TrainingModel, step: Step) -> tuple[ast.expr, ast.stmt] | None:
    """Return the stepping optimizer's expression and the statement ending the step (`scaler.update()` too)."""
    call = step.node
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "step"):
        return None
    small = statement_of(model, call)
    if small is None:
        return None
    args = arguments(call)
    positional = [a for a in args if a.keyword is None]
    receiver = call.func.value
    if not args:
        return receiver, small
    if step.call_text.endswith("()") or len(positional) != 1:
        return None  # `opt.step(closure)`: the clear belongs inside the closure
    nxt = following(model, small)
    update = call_of(nxt)
    if (nxt is not None and update is not None and isinstance(update.func, ast.Attribute) and update.func.attr == "update"
            and not arguments(update) and same_expression(update.func.value, receiver)):
        return positional[0].value, nxt
    return positional[0].value, small


# -- resolution: the engine's half ---------------------------------------------------------------
class _Unresolvable(Exception):
    """The plan does not fit the source as written; no fix is offered."""


class _Lines:
    """Line texts of the (newline-normalised) source, for indentation and line ends."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.lines = text.split("\n")

    def line(self, number: int) -> str:
        if not 1 <= number <= len(self.lines):
            raise _Unresolvable(f"line {number} out of range")
        return self.lines[number - 1]

    def after_line(self, number: int) -> tuple[Span, str]:
        """Return the empty span at the start of the next line, and the text to put before an inserted line."""
        if number < len(self.lines):
            return Span(number + 1, 1, number + 1, 1), ""
        end = len(self.line(number)) + 1  # the last line has no newline
        return Span(number, end, number, end), "\n"


def _indent(lines: _Lines, span: Span) -> str:
    prefix = lines.line(span.line)[: span.column - 1]
    if prefix.strip(" \t\f"):
        raise _Unresolvable("statement does not start its line")
    return prefix


def _insert_after(model: TrainingModel, lines: _Lines, anchor: ast.stmt, code: str) -> Edit:
    if alone_on_line(model, anchor):
        span = model.span(anchor)
        at, before = lines.after_line(span.end_line)
        return Edit(at, f"{before}{_indent(lines, span)}{code}\n")
    end = model.span(anchor)
    at = Span(end.end_line, end.end_column, end.end_line, end.end_column)
    return Edit(at, f"; {code}")


def _remove(model: TrainingModel, lines: _Lines, small: ast.stmt) -> tuple[Edit, str]:
    """Return the edit deleting a statement, and its text (with its comment when alone on its line)."""
    own = model.span(small)
    if alone_on_line(model, small):
        _indent(lines, own)
        text = "\n".join([lines.line(own.line)[own.column - 1:], *lines.lines[own.line: own.end_line]]).rstrip()
        if own.end_line < len(lines.lines):
            return Edit(Span(own.line, 1, own.end_line + 1, 1), ""), text
        return Edit(Span(own.line, 1, own.end_line, len(lines.line(own.end_line)) + 1), ""), text
    mates = line_mates(model, small)
    index = next(i for i, s in enumerate(mates) if s is small)
    if len(mates) == 1:
        raise _Unresolvable("the statement is the whole body of its block")
    text = source(model, small)
    if index + 1 < len(mates):
        nxt = model.span(mates[index + 1])
        return Edit(Span(own.line, own.column, nxt.line, nxt.column), ""), text
    prev = model.span(mates[index - 1])
    return Edit(Span(prev.end_line, prev.end_column, own.end_line, own.end_column), ""), text


def _edits(model: TrainingModel, lines: _Lines, action: Action) -> list[Edit]:
    if isinstance(action, ReplaceNode):
        return [Edit(model.span(action.node), action.code)]
    if isinstance(action, InsertAfter):
        return [_insert_after(model, lines, action.anchor, action.code)]
    if isinstance(action, Transform):
        raise _Unresolvable("a codemod is resolved at fix time")
    removal, text = _remove(model, lines, action.moved)
    return [removal, _insert_after(model, lines, action.anchor, text)]


def _overlap(a: Edit, b: Edit) -> bool:
    sa, sb = a.span, b.span
    start_a, end_a = (sa.line, sa.column), (sa.end_line, sa.end_column)
    start_b, end_b = (sb.line, sb.column), (sb.end_line, sb.end_column)
    if start_a == end_a and start_b == end_b:
        return start_a == start_b
    return start_a < end_b and start_b < end_a


def _nodes(action: Action) -> tuple[ast.AST, ...]:
    if isinstance(action, ReplaceNode):
        return (action.node,)
    if isinstance(action, InsertAfter):
        return (action.anchor,)
    if isinstance(action, MoveAfter):
        return (action.moved, action.anchor)
    return action.nodes


def resolve(model: TrainingModel, text: str, plan: FixPlan | None, certainty: Certainty) -> Fix | None:
    """Turn a rule's plan into text edits; None when the plan does not fit the source (never raises)."""
    if plan is None:
        return None
    if any(model.is_foreign(node) for action in plan.actions for node in _nodes(action)):
        return None  # it would edit another file of the project: a fix edits the file checked only
    applicability = plan.applicability if certainty is Certainty.CERTAIN else UNSAFE
    transforms = [a for a in plan.actions if isinstance(a, Transform)]
    if transforms:
        if len(plan.actions) != 1:
            return None  # a codemod is the whole fix
        try:
            spans = tuple(model.span(node) for node in transforms[0].nodes)
        except Exception:
            return None
        return Fix(plan.description, (), applicability, Codemod(transforms[0].kind, spans, transforms[0].args))
    try:
        lines = _Lines(text)
        edits = sorted(e for action in plan.actions for e in _edits(model, lines, action))
    except Exception:
        return None
    if not edits or any(_overlap(a, b) for i, a in enumerate(edits) for b in edits[i + 1:]):
        return None
    return Fix(plan.description, tuple(edits), applicability)
