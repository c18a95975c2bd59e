"""The call expression at a frame's position, read from the source file with `ast` (never the whole line).

CPython 3.11+ gives every instruction a source span (`code.co_positions()`); the span of the CALL a
frame is executing is exactly the call expression (`loss.backward()`, `scaler.step(opt)`). Older
interpreters give only the line: the call is then picked on that line by its method's name.
"""

from __future__ import annotations

import ast
import linecache
from dataclasses import dataclass
from types import CodeType


@dataclass(frozen=True, slots=True)
class CallText:
    """A call in the user's source: where it starts (line, 1-based character column) and its parts."""

    line: int
    col: int
    text: str  # the call expression, as written (`loss.backward()`)
    receiver: str  # `opt` in `opt.step()`; "" when the callee is not an attribute
    method: str  # `step` in `opt.step()`; the function's name for a plain call
    first_arg: str  # source of the first positional argument, "" when there is none


class _Parsed:
    __slots__ = ("source", "lines", "calls_by_span", "calls_by_line", "tree")

    def __init__(self, source: str) -> None:
        self.source = source
        self.lines = source.splitlines(keepends=True)
        self.tree = ast.parse(source)
        self.calls_by_span: dict[tuple[int, int, int, int], ast.Call] = {}
        self.calls_by_line: dict[int, list[ast.Call]] = {}
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Call) and node.end_lineno is not None and node.end_col_offset is not None:
                self.calls_by_span[(node.lineno, node.col_offset, node.end_lineno, node.end_col_offset)] = node
                self.calls_by_line.setdefault(node.lineno, []).append(node)
        for calls in self.calls_by_line.values():
            calls.sort(key=lambda c: c.col_offset)


_PARSED: dict[str, _Parsed | None] = {}


def parsed(path: str) -> _Parsed | None:
    """The file's syntax tree and calls, parsed once per path (None: unreadable or not Python)."""
    if path in _PARSED:
        return _PARSED[path]
    lines = linecache.getlines(path)
    result: _Parsed | None
    try:
        result = _Parsed("".join(lines)) if lines else None
    except (SyntaxError, ValueError, RecursionError):
        result = None
    _PARSED[path] = result
    return result


def segment(p: _Parsed, node: ast.AST) -> str:
    """The source text of a node, as written."""
    text = ast.get_source_segment(p.source, node)
    return text if text is not None else ast.unparse(node)


def char_col(p: _Parsed, line: int, byte_col: int) -> int:
    """A 1-based character column from ast's 0-based UTF-8 byte offset."""
    if not 0 < line <= len(p.lines):
        return byte_col + 1
    return len(p.lines[line - 1].encode("utf-8")[:byte_col].decode("utf-8", "replace")) + 1


def describe(p: _Parsed, call: ast.Call) -> CallText:
    func = call.func
    if isinstance(func, ast.Attribute):
        receiver, method = segment(p, func.value), func.attr
    else:
        receiver, method = "", func.id if isinstance(func, ast.Name) else ""
    first = segment(p, call.args[0]) if call.args and not isinstance(call.args[0], ast.Starred) else ""
    return CallText(call.lineno, char_col(p, call.lineno, call.col_offset), segment(p, call), receiver, method, first)


def call_at(path: str, code: CodeType, lasti: int, line: int, methods: tuple[str, ...] = ()) -> CallText | None:
    """The call expression the frame (`code` at instruction offset `lasti`) is executing.

    Args:
        path: the source file.
        code: the frame's code object.
        lasti: the frame's `f_lasti`.
        line: the frame's current line (used when positions are not available).
        methods: the method names expected there (`backward`, `step`), for choosing on a line.

    Returns:
        The call, or None when the file cannot be read or no call is found.
    """
    p = parsed(path)
    if p is None:
        return None
    positions = getattr(code, "co_positions", None)
    if positions is not None and lasti >= 0:
        try:
            span = list(positions())[lasti // 2]  # (line, end line, column, end column)
        except IndexError:
            span = None
        if span is not None and None not in span:
            node = p.calls_by_span.get((span[0], span[2], span[1], span[3]))  # keyed as ast gives them
            if node is not None:
                return describe(p, node)
    on_line = p.calls_by_line.get(line, [])
    named = [c for c in on_line if isinstance(c.func, ast.Attribute) and c.func.attr in methods]
    chosen = named or on_line
    return describe(p, chosen[0]) if chosen else None
