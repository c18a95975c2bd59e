"""Fix plans: what a rule wants changed, said with syntax nodes; `resolve` turns a plan into text edits.

A rule builds a `FixPlan` next to its finding. The engine resolves it against the source text with the
positions it already computes, so diagnostics carry only plain `Fix`/`Edit` values. The helpers below
answer the structural questions a rule asks before it proposes a change (is this call a statement of
its own line? which block holds it? does anything between two statements leave the block?).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence, Union

import libcst as cst

from .analysis import TrainingModel
from .analysis.events import Step
from .analysis.names import dotted
from .analysis.walk import children
from .diagnostics import Applicability, Certainty, Edit, Fix, Span

SAFE, UNSAFE = Applicability.SAFE, Applicability.UNSAFE


@dataclass(frozen=True, slots=True)
class ReplaceNode:
    """Replace the source of one node (its parentheses excluded) with `code`."""

    node: cst.CSTNode
    code: str


@dataclass(frozen=True, slots=True)
class InsertAfter:
    """Insert the statement `code` right after the small statement `anchor`, at its indentation."""

    anchor: cst.BaseSmallStatement
    code: str


@dataclass(frozen=True, slots=True)
class MoveAfter:
    """Move the small statement `moved` (with its trailing comment) to right after `anchor`."""

    moved: cst.BaseSmallStatement
    anchor: cst.BaseSmallStatement


Action = Union[ReplaceNode, InsertAfter, MoveAfter]


@dataclass(frozen=True, slots=True)
class FixPlan:
    """A rule's proposed change, before positions are known."""

    description: str
    actions: tuple[Action, ...]
    applicability: Applicability = SAFE


# -- structural questions a rule asks --------------------------------------------------------------
_SCOPES = (cst.Module, cst.FunctionDef, cst.ClassDef, cst.Lambda)
_EXITS = (cst.Continue, cst.Break, cst.Return, cst.Raise)


def source(model: TrainingModel, node: cst.CSTNode) -> str:
    """Return the exact source text of a node, without its own parentheses."""
    if getattr(node, "lpar", None):
        node = node.with_changes(lpar=[], rpar=[])
    return model.module.code_for_node(node)


def statement_of(model: TrainingModel, node: cst.CSTNode) -> cst.BaseSmallStatement | None:
    """Return the small statement that is exactly this expression (`opt.step()` on its own), else None."""
    if isinstance(node, cst.BaseSmallStatement):
        return node
    if isinstance(node, cst.SimpleStatementLine) and len(node.body) == 1:
        return node.body[0]
    parent = model.parent(node)
    if isinstance(parent, cst.Expr) and parent.value is node:
        return parent
    return None


def line_of(model: TrainingModel, small: cst.BaseSmallStatement) -> cst.SimpleStatementLine | cst.SimpleStatementSuite | None:
    """Return the line (`a; b`, or the body of `if x: a`) holding a small statement."""
    parent = model.parent(small)
    return parent if isinstance(parent, (cst.SimpleStatementLine, cst.SimpleStatementSuite)) else None


def alone_on_line(model: TrainingModel, small: cst.BaseSmallStatement) -> bool:
    """Tell whether the statement is its whole line: no `;` neighbours, not the body of a one-line `if x:`."""
    line = line_of(model, small)
    return isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1


def block_of(model: TrainingModel, small: cst.BaseSmallStatement) -> tuple[cst.CSTNode, Sequence[cst.CSTNode]] | None:
    """Return the block (indented block or module) listing this statement's line, and its body."""
    line = line_of(model, small)
    if not isinstance(line, cst.SimpleStatementLine):
        return None
    block = model.parent(line)
    if isinstance(block, (cst.IndentedBlock, cst.Module)):
        return block, block.body
    return None


def scope_of(model: TrainingModel, node: cst.CSTNode) -> cst.CSTNode | None:
    """Return the function, class, lambda or module whose names the node sees."""
    current: cst.CSTNode | None = model.parent(node)
    while current is not None and not isinstance(current, _SCOPES):
        current = model.parent(current)
    return current


def following(model: TrainingModel, small: cst.BaseSmallStatement) -> cst.BaseSmallStatement | None:
    """Return the statement that runs right after this one in its block, if it is a simple statement."""
    line = line_of(model, small)
    if line is None:
        return None
    body = list(line.body)
    index = next((i for i, s in enumerate(body) if s is small), None)
    if index is None:
        return None
    if index + 1 < len(body):
        return body[index + 1]
    found = block_of(model, small)
    if found is None:
        return None
    stmts = list(found[1])
    at = next((i for i, s in enumerate(stmts) if s is line), None)
    if at is None or at + 1 >= len(stmts):
        return None
    nxt = stmts[at + 1]
    return nxt.body[0] if isinstance(nxt, cst.SimpleStatementLine) and nxt.body else None


def call_of(small: cst.BaseSmallStatement | None) -> cst.Call | None:
    """Return the call a statement consists of (`opt.step()`), else None."""
    if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
        return small.value
    return None


def is_reference(expr: cst.BaseExpression) -> bool:
    """Tell whether an expression is a name or attribute chain (`opt`, `self.opt_d`), safe to evaluate again."""
    return dotted(expr) is not None


def exits_between(model: TrainingModel, a: cst.BaseSmallStatement, b: cst.BaseSmallStatement) -> bool:
    """Tell whether a statement between two of one block can leave it (`continue`, `break`, `return`, `raise`)."""
    found = block_of(model, a)
    line_a, line_b = line_of(model, a), line_of(model, b)
    if found is None or line_a is None or line_b is None:
        return True
    stmts = list(found[1])
    ia = next((i for i, s in enumerate(stmts) if s is line_a), None)
    ib = next((i for i, s in enumerate(stmts) if s is line_b), None)
    if ia is None or ib is None:
        return True
    lo, hi = sorted((ia, ib))

    def exits(node: cst.CSTNode) -> bool:  # a return/break/continue/raise, not inside a nested def
        if isinstance(node, _EXITS):
            return True
        return not isinstance(node, cst.FunctionDef) and any(exits(child) for child in children(node))

    return any(exits(stmt) for stmt in stmts[lo + 1: hi])


def after_step(model: TrainingModel, step: Step) -> tuple[cst.BaseExpression, cst.BaseSmallStatement] | None:
    """Return the stepping optimizer's expression and the statement ending the step (`scaler.update()` too)."""
    call = step.node
    if not (isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) and call.func.attr.value == "step"):
        return None
    small = statement_of(model, call)
    if small is None:
        return None
    positional = [a for a in call.args if a.keyword is None]
    receiver = call.func.value
    if not call.args:
        return receiver, small
    if step.call_text.endswith("()") or len(positional) != 1:
        return None  # `opt.step(closure)`: the clear belongs inside the closure
    nxt = following(model, small)
    update = call_of(nxt)
    if (nxt is not None and update is not None and isinstance(update.func, cst.Attribute) and update.func.attr.value == "update"
            and not update.args and update.func.value.deep_equals(receiver)):
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


def _insert_after(model: TrainingModel, lines: _Lines, anchor: cst.BaseSmallStatement, code: str) -> Edit:
    line = line_of(model, anchor)
    if line is None:
        raise _Unresolvable("anchor is not a statement")
    if alone_on_line(model, anchor):
        span = model.span(line)
        at, before = lines.after_line(span.end_line)
        return Edit(at, f"{before}{_indent(lines, span)}{code}\n")
    end = model.span(anchor)
    at = Span(end.end_line, end.end_column, end.end_line, end.end_column)
    return Edit(at, f"; {code}")


def _remove(model: TrainingModel, lines: _Lines, small: cst.BaseSmallStatement) -> tuple[Edit, str]:
    """Return the edit deleting a statement, and its text (with its comment when alone on its line)."""
    line = line_of(model, small)
    if line is None:
        raise _Unresolvable("not a statement")
    own = model.span(small)
    if alone_on_line(model, small):
        span = model.span(line)
        _indent(lines, span)
        text = "\n".join([lines.line(span.line)[span.column - 1:], *lines.lines[span.line: span.end_line]]).rstrip()
        if span.end_line < len(lines.lines):
            return Edit(Span(span.line, 1, span.end_line + 1, 1), ""), text
        return Edit(Span(span.line, 1, span.end_line, len(lines.line(span.end_line)) + 1), ""), text
    body = list(line.body)
    index = next(i for i, s in enumerate(body) if s is small)
    if len(body) == 1:
        raise _Unresolvable("the statement is the whole body of its block")
    text = source(model, small.with_changes(semicolon=cst.MaybeSentinel.DEFAULT))
    if index + 1 < len(body):
        nxt = model.span(body[index + 1])
        return Edit(Span(own.line, own.column, nxt.line, nxt.column), ""), text
    prev = model.span(body[index - 1])
    return Edit(Span(prev.end_line, prev.end_column, own.end_line, own.end_column), ""), text


def _edits(model: TrainingModel, lines: _Lines, action: Action) -> list[Edit]:
    if isinstance(action, ReplaceNode):
        return [Edit(model.span(action.node), action.code)]
    if isinstance(action, InsertAfter):
        return [_insert_after(model, lines, action.anchor, action.code)]
    removal, text = _remove(model, lines, action.moved)
    return [removal, _insert_after(model, lines, action.anchor, text)]


def _overlap(a: Edit, b: Edit) -> bool:
    sa, sb = a.span, b.span
    start_a, end_a = (sa.line, sa.column), (sa.end_line, sa.end_column)
    start_b, end_b = (sb.line, sb.column), (sb.end_line, sb.end_column)
    if start_a == end_a and start_b == end_b:
        return start_a == start_b
    return start_a < end_b and start_b < end_a


def resolve(model: TrainingModel, text: str, plan: FixPlan | None, certainty: Certainty) -> Fix | None:
    """Turn a rule's plan into text edits; None when the plan does not fit the source (never raises)."""
    if plan is None:
        return None
    try:
        lines = _Lines(text)
        edits = sorted(e for action in plan.actions for e in _edits(model, lines, action))
    except Exception:  # noqa: BLE001 - a fix that cannot be placed is dropped, the diagnostic stays
        return None
    if not edits or any(_overlap(a, b) for i, a in enumerate(edits) for b in edits[i + 1:]):
        return None
    applicability = plan.applicability if certainty is Certainty.CERTAIN else UNSAFE
    return Fix(plan.description, tuple(edits), applicability)
