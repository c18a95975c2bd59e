"""The fixes that move or wrap code, as libcst codemods; imported only when fixing.

A rule describes such a fix with a `Codemod` (plain values: a kind, the spans of the nodes it acts on,
named strings). At fix time `edits()` parses the text with libcst, finds those nodes by position, makes
the change on the lossless tree (comments and formatting elsewhere stay as written) and returns the
change as line edits, which `gradcheck_lint.fixes` applies like any other fix.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Sequence

import libcst as cst
from libcst.metadata import CodeRange, MetadataWrapper, PositionProvider

from .diagnostics import Codemod, Edit, Span

__all__ = ["CodemodError", "edits", "transform"]


class CodemodError(Exception):
    """The codemod does not fit the text (its nodes are not where the diagnostic says)."""


def edits(text: str, codemod: Codemod) -> tuple[Edit, ...]:
    """Return the line edits that make `codemod`'s change to the `\\n`-separated `text`; () when it does not fit."""
    try:
        new = transform(text, codemod)
    except (CodemodError, cst.ParserSyntaxError, RecursionError, ValueError):
        return ()
    return line_edits(text, new)


def line_edits(old: str, new: str) -> tuple[Edit, ...]:
    """The differing runs of lines between two texts, as edits replacing whole lines of `old`."""
    a, b = _lines(old), _lines(new)
    out = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag != "equal":
            out.append(Edit(Span(i1 + 1, 1, i2 + 1, 1), "".join(b[j1:j2])))
    return tuple(out)


def _lines(text: str) -> list[str]:
    out, start = [], 0
    while True:
        end = text.find("\n", start)
        if end < 0:
            if start < len(text):
                out.append(text[start:])
            return out
        out.append(text[start:end + 1])
        start = end + 1


def transform(text: str, codemod: Codemod) -> str:
    """Apply one codemod to a source text and return the new text.

    Raises:
        CodemodError: the nodes the codemod names are not found, or not in the shape it needs.
        libcst.ParserSyntaxError: libcst cannot parse the text.
    """
    wrapper = MetadataWrapper(cst.parse_module(text))
    positions = wrapper.resolve(PositionProvider)
    finder = _Finder(wrapper.module, positions, text)
    kind = codemod.kind
    if kind == "insert_before":
        return _insert_before(finder, codemod)
    if kind == "call_method":
        return _call_method(finder, codemod)
    if kind == "drop_division":
        return _drop_division(finder, codemod)
    if kind == "wrap_with":
        return _wrap_with(finder, codemod)
    raise CodemodError(f"unknown codemod {kind!r}")


# -- finding nodes by position ------------------------------------------------------------------
class _Finder:
    def __init__(self, module: cst.Module, positions: object, text: str) -> None:
        self.module = module
        self.positions: dict[cst.CSTNode, CodeRange] = dict(positions)  # type: ignore[call-overload]
        self.lines = text.split("\n")

    def segment(self, span: Span) -> str:
        if not (1 <= span.line <= span.end_line <= len(self.lines)):
            raise CodemodError("span outside the text")
        if span.line == span.end_line:
            return self.lines[span.line - 1][span.column - 1: span.end_column - 1]
        return "\n".join([self.lines[span.line - 1][span.column - 1:], *self.lines[span.line: span.end_line - 1],
                          self.lines[span.end_line - 1][: span.end_column - 1]])

    def expression(self, span: Span) -> cst.BaseExpression:
        """The expression written at `span` (parentheses around it belong to the node found)."""
        want = self.segment(span)
        start, end = (span.line, span.column - 1), (span.end_line, span.end_column - 1)
        found: list[tuple[int, cst.BaseExpression]] = []
        for node, r in self.positions.items():
            if not isinstance(node, cst.BaseExpression):
                continue
            if (r.start.line, r.start.column) > start or (r.end.line, r.end.column) < end:
                continue
            bare = node.with_changes(lpar=(), rpar=()) if getattr(node, "lpar", None) else node
            if self.module.code_for_node(bare) == want:
                found.append((len(self.module.code_for_node(node)), node))
        if not found:
            raise CodemodError(f"no expression {want!r} at line {span.line}")
        return min(found, key=lambda f: f[0])[1]

    def statement(self, span: Span) -> cst.BaseStatement:
        """The statement starting at `span` (a simple one must be alone on its line)."""
        start = (span.line, span.column - 1)
        for node, r in self.positions.items():
            if (r.start.line, r.start.column) != start:
                continue
            if isinstance(node, cst.BaseCompoundStatement):
                return node
            if isinstance(node, cst.SimpleStatementLine):
                if len(node.body) != 1:
                    raise CodemodError("the statement shares its line")
                return node
        raise CodemodError(f"no statement at line {span.line}")


class _BlockEditor(cst.CSTTransformer):
    """Rewrite the statement list holding a given statement (a block's or the module's)."""

    def __init__(self, target: cst.BaseStatement,
                 edit: Callable[[list[cst.BaseStatement], int, Sequence[cst.BaseStatement]], list[cst.BaseStatement]]) -> None:
        super().__init__()
        self.target, self.edit, self.done = target, edit, False

    def _rewrite(self, original: Sequence[cst.BaseStatement], updated: Sequence[cst.BaseStatement]) -> list[cst.BaseStatement] | None:
        at = next((i for i, s in enumerate(original) if s is self.target), None)
        if at is None or len(original) != len(updated):
            return None
        self.done = True
        return self.edit(list(updated), at, original)

    def leave_IndentedBlock(self, original_node: cst.IndentedBlock, updated_node: cst.IndentedBlock) -> cst.IndentedBlock:
        body = self._rewrite(original_node.body, updated_node.body)
        return updated_node if body is None else updated_node.with_changes(body=body or [cst.SimpleStatementLine([cst.Pass()])])

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        body = self._rewrite(original_node.body, updated_node.body)
        return updated_node if body is None else updated_node.with_changes(body=body)


class _Replacer(cst.CSTTransformer):
    def __init__(self, target: cst.CSTNode, make: Callable[[cst.CSTNode], cst.CSTNode]) -> None:
        super().__init__()
        self.target, self.make, self.done = target, make, False

    def on_leave(self, original_node: cst.CSTNode, updated_node: cst.CSTNode) -> cst.CSTNode:  # type: ignore[override]
        if original_node is self.target:
            self.done = True
            return self.make(updated_node)
        return updated_node


def _run(module: cst.Module, visitor: _BlockEditor | _Replacer) -> cst.Module:
    new = module.visit(visitor)
    if not visitor.done:
        raise CodemodError("the node to change was not found in a block")
    return new


# -- the codemods --------------------------------------------------------------------------------
def _insert_before(finder: _Finder, codemod: Codemod) -> str:
    """Insert the statement `code` right before the statement at spans[0], in its block."""
    target = finder.statement(codemod.spans[0])
    new = cst.parse_statement(codemod.arg("code") + "\n")

    def edit(body: list[cst.BaseStatement], at: int, original: Sequence[cst.BaseStatement]) -> list[cst.BaseStatement]:
        old = body[at]
        # Comments and blank lines above the statement stay above both.
        moved = new.with_changes(leading_lines=old.leading_lines)
        return [*body[:at], moved, old.with_changes(leading_lines=()), *body[at + 1:]]

    return _run(finder.module, _BlockEditor(target, edit)).code


_ATOMS = (cst.Name, cst.Attribute, cst.Call, cst.Subscript, cst.Integer, cst.Float, cst.SimpleString)


def _call_method(finder: _Finder, codemod: Codemod) -> str:
    """`expr` -> `expr.method()`, in parentheses when `expr` does not bind tighter than `.`."""
    target = finder.expression(codemod.spans[0])
    method = codemod.arg("method")

    def make(node: cst.CSTNode) -> cst.CSTNode:
        assert isinstance(node, cst.BaseExpression)
        if not isinstance(node, _ATOMS) and not getattr(node, "lpar", None):
            node = node.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
        return cst.Call(func=cst.Attribute(value=node, attr=cst.Name(method)))

    return _run(finder.module, _Replacer(target, make)).code


def _drop_division(finder: _Finder, codemod: Codemod) -> str:
    """`x / N` -> `x`; with `remove`, delete the whole statement at spans[0] (`x = x / N`, `x /= N`)."""
    if codemod.arg("remove"):
        target_stmt = finder.statement(codemod.spans[0])

        def edit(body: list[cst.BaseStatement], at: int, original: Sequence[cst.BaseStatement]) -> list[cst.BaseStatement]:
            old = body[at]
            rest = body[at + 1:]
            if rest and old.leading_lines:  # keep the comments written above the deleted statement
                rest[0] = rest[0].with_changes(leading_lines=[*old.leading_lines, *rest[0].leading_lines])
            return [*body[:at], *rest]

        return _run(finder.module, _BlockEditor(target_stmt, edit)).code
    target = finder.expression(codemod.spans[0])
    if not (isinstance(target, cst.BinaryOperation) and isinstance(target.operator, cst.Divide)):
        raise CodemodError("not a division")

    def make(node: cst.CSTNode) -> cst.CSTNode:
        assert isinstance(node, cst.BinaryOperation)
        left = node.left
        if node.lpar and not left.lpar and not isinstance(left, _ATOMS):  # `(a * b / n).backward()` -> `(a * b).backward()`
            left = left.with_changes(lpar=node.lpar, rpar=node.rpar)
        return left

    return _run(finder.module, _Replacer(target, make)).code


def _wrap_with(finder: _Finder, codemod: Codemod) -> str:
    """Put the statements from spans[0] to spans[1] (one block) in `with <context>:`; add `import <import>`."""
    first, last = finder.statement(codemod.spans[0]), finder.statement(codemod.spans[1])
    header = cst.parse_statement(f"with {codemod.arg('context')}:\n    pass\n")
    assert isinstance(header, cst.With)

    def edit(body: list[cst.BaseStatement], at: int, original: Sequence[cst.BaseStatement]) -> list[cst.BaseStatement]:
        end = next((i for i in range(at, len(original)) if original[i] is last), None)
        if end is None:
            raise CodemodError("the last statement is not in the first one's block")
        inner = [body[at].with_changes(leading_lines=()), *body[at + 1: end + 1]]
        wrapped = header.with_changes(body=cst.IndentedBlock(body=inner), leading_lines=body[at].leading_lines)
        return [*body[:at], wrapped, *body[end + 1:]]

    module = _run(finder.module, _BlockEditor(first, edit))
    imported = codemod.arg("import")
    if imported and not _imports(module, imported):
        module = _add_import(module, imported)
    return module.code


def _imports(module: cst.Module, name: str) -> bool:
    for stmt in module.body:
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                if isinstance(small, cst.Import) and any(
                        a.asname is None and module.code_for_node(a.name) == name for a in small.names):
                    return True
    return False


def _add_import(module: cst.Module, name: str) -> cst.Module:
    """Add `import name` among the module's leading imports (before the first that sorts after it)."""
    body = list(module.body)
    new = cst.parse_statement(f"import {name}\n")
    at = None
    last_import = None
    for i, stmt in enumerate(body):
        if isinstance(stmt, cst.SimpleStatementLine) and all(isinstance(s, (cst.Import, cst.ImportFrom)) for s in stmt.body):
            small = stmt.body[0]
            if isinstance(small, cst.ImportFrom) and isinstance(small.module, cst.Name) and small.module.value == "__future__":
                last_import = i
                continue
            if isinstance(small, cst.Import) and module.code_for_node(small.names[0].name) > name and at is None:
                at = i
            last_import = i
            continue
        if i == 0 and isinstance(stmt, cst.SimpleStatementLine) and isinstance(stmt.body[0], cst.Expr) \
                and isinstance(stmt.body[0].value, (cst.SimpleString, cst.ConcatenatedString)):
            last_import = i  # the docstring
            continue
        break
    if at is not None:
        old = body[at]
        body[at:at + 1] = [new.with_changes(leading_lines=old.leading_lines), old.with_changes(leading_lines=())]
    else:
        body.insert(0 if last_import is None else last_import + 1, new)
    return module.with_changes(body=body)
