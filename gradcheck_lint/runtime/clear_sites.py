"""Name a clear the guard saw only by its effect (`p.grad = None`, `model.zero_grad()` of a model it
does not wrap, the `zero_grad()` of an optimizer not known yet): the clearing statement is looked up in
the source, between the two calls the guard did see (the last backward or step before it, and the
backward or step that noticed it), around the loop holding both when none is written between them
(a `continue` after the backward, the clear at the top of the next iteration, then the step)."""

from __future__ import annotations

import ast
from dataclasses import dataclass

from .evidence import Site
from .source_calls import _Parsed, char_col, describe, parsed, segment


@dataclass(frozen=True, slots=True)
class _Clear:
    line: int
    byte_col: int
    site: Site


class _FileClears:
    """The clears of one file, and its functions' extents."""

    def __init__(self, path: str, p: _Parsed) -> None:
        self.clears: list[_Clear] = []
        self.functions: list[tuple[int, int, ast.AST]] = []  # (first line, last line, node)
        self.calls: list[tuple[int, int, str]] = []  # (line, byte col, called name)
        self.loops: list[tuple[int, int]] = []  # (first line, last line)
        for node in ast.walk(p.tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.functions.append((node.lineno, node.end_lineno or node.lineno, node))
            elif isinstance(node, (ast.For, ast.AsyncFor, ast.While)):
                self.loops.append((node.lineno, node.end_lineno or node.lineno))
            site = _clear_site(path, p, node)
            if site is not None:
                self.clears.append(_Clear(node.lineno, node.col_offset, site))  # type: ignore[attr-defined]
            if isinstance(node, ast.Call):
                name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
                self.calls.append((node.lineno, node.col_offset, name))
        self.clears.sort(key=lambda c: (c.line, c.byte_col))
        self.calls.sort()

    def function_at(self, line: int) -> tuple[int, int]:
        """The extent of the innermost function around a line (the whole file outside functions)."""
        best = (1, 10**9)
        for first, last, _node in self.functions:
            if first <= line <= last and last - first < best[1] - best[0]:
                best = (first, last)
        return best

    def loop_around(self, first: int, last: int) -> tuple[int, int] | None:
        """The extent of the innermost loop holding lines `first` to `last`."""
        around = [(a, b) for a, b in self.loops if a <= first and last <= b]
        return min(around, key=lambda ab: ab[1] - ab[0]) if around else None

    def clears_of_function(self, name: str) -> list[_Clear]:
        out: list[_Clear] = []
        for first, last, node in self.functions:
            if getattr(node, "name", None) == name:
                out += [c for c in self.clears if first <= c.line <= last]
        return out


def _clear_site(path: str, p: _Parsed, node: ast.AST) -> Site | None:
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        attr, value = node.func.attr, node.func.value
        if attr == "zero_grad" or (attr in ("zero_", "fill_") and _is_grad(value)):
            c = describe(p, node)
            return Site(path, c.line, c.text, col=c.col, receiver=c.receiver, first_arg=c.first_arg, method=c.method)
    if isinstance(node, (ast.Assign, ast.AnnAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        if any(isinstance(t, ast.Attribute) and t.attr == "grad" for t in targets):
            return Site(path, node.lineno, segment(p, node), col=char_col(p, node.lineno, node.col_offset), method="=")
    return None


def _is_grad(node: ast.AST) -> bool:
    """`p.grad`, `p.grad.data`."""
    if isinstance(node, ast.Attribute) and node.attr == "data":
        node = node.value
    return isinstance(node, ast.Attribute) and node.attr == "grad"


_FILES: dict[str, _FileClears | None] = {}
_FOUND: dict[tuple[Site, Site], Site | None] = {}


def _clears_of(path: str) -> _FileClears | None:
    if path not in _FILES:
        p = parsed(path)
        _FILES[path] = _FileClears(path, p) if p is not None else None
    return _FILES[path]


def clear_between(before: Site | None, now: Site) -> Site | None:
    """The clearing statement that most probably ran after `before` and before `now` (None: not found).

    Looks in the function around `now`: the last clear before `now` (after `before` when both are in
    that function), wrapping around a loop (after `before` to the end). Then in same-file functions
    called between them. Results are cached per pair of places.
    """
    key = (before or now, now)
    if key in _FOUND:
        return _FOUND[key]
    found = _lookup(before, now)
    if len(_FOUND) < 10_000:
        _FOUND[key] = found
    return found


def _lookup(before: Site | None, now: Site) -> Site | None:
    fc = _clears_of(now.path)
    if fc is None:
        return None
    first, last = fc.function_at(now.line)
    here = (now.line, now.col)
    start = (before.line, before.col) if before is not None and before.path == now.path and first <= before.line <= last else None

    def pos(c: _Clear) -> tuple[int, int]:
        return (c.site.line, c.site.col)

    inside = [c for c in fc.clears if first <= c.line <= last]
    if start is not None and start < here:
        between = [c for c in inside if start < pos(c) < here]
        loop = fc.loop_around(start[0], here[0]) if not between else None
        if loop is not None:
            # none written between them: the path went around the loop holding both (a `continue` after
            # `before`): the last clear from the loop's top to `before`, else after `now` to its end
            body = [c for c in inside if loop[0] <= c.line <= loop[1]]
            between = [c for c in body if pos(c) < start] or [c for c in body if pos(c) > here]
    elif start is not None:  # `before` comes later in the text: the loop wrapped around
        between = [c for c in inside if pos(c) < here] or [c for c in inside if pos(c) > start]
    else:
        between = [c for c in inside if pos(c) < here] or inside
    if between:
        return between[-1].site
    # a same-file function called in that stretch, which clears
    lo = start if start is not None and start < here else (first, 0)
    for line, col, name in reversed(fc.calls):
        if first <= line <= last and lo < (line, col + 1) < here and name:
            called = fc.clears_of_function(name)
            if called:
                return called[-1].site
    return None
