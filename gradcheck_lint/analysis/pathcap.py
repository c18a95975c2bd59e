"""What the cap on path states left out of a file's analysis, said to the user (the GL099 notice).

Past `gradstate.STATE_CAP` path states at one program point, the simplest are kept and the others
dropped: findings on the dropped paths may be missed. Where that happened is counted work, like the
work budget, so the notice is the same on every machine. It names each function once (in the order
of the code), the loops (or statements outside any loop) where paths were dropped, and how often.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass, field

from .flow import Frame
from .gradstate import CAP, STATE_CAP

SHOWN = 5  # functions named in the notice; the rest are counted
_LOOPS = (ast.For, ast.AsyncFor, ast.While)  # `syntax.LOOPS` and `while`


@dataclass
class _Place:
    line: int
    kind: str  # "the loop at line" or "line"
    count: int = 0


@dataclass
class _Where:
    """The cuts made in one function: by place (a loop, or a statement outside any loop)."""

    name: str
    order: tuple[str, int]  # (file, line) of the function, for the order of the notice
    places: dict[int, _Place] = field(default_factory=dict)  # by id of the loop or statement
    times: int = 0
    most: tuple[int, int] = (0, 0)  # the largest cut: (states dropped, states met)


def paths_left_out(loops: dict[int, ast.AST], file_of: Callable[[ast.AST], str | None]) -> str | None:
    """The notice text for the cuts recorded in `gradstate.CAP` during this file's analysis (None: no
    path was dropped). `loops`: loop ids (of frames) -> their nodes; `file_of`: the other file of the
    project a node is in (None: this file)."""
    if not CAP.cuts:
        return None
    functions: dict[int, _Where] = {}
    for stmt, frame, met, kept in CAP.cuts:
        fn = frame.function if isinstance(frame, Frame) else None
        where = functions.get(id(fn))
        if where is None:
            where = functions[id(fn)] = _describe(fn, frame, file_of)
        place = stmt if isinstance(stmt, _LOOPS) else _innermost_loop(fn, frame, loops, file_of) or stmt
        if isinstance(place, ast.AST):
            kind = "the loop at line" if isinstance(place, _LOOPS) else "line"
            where.places.setdefault(id(place), _Place(getattr(place, "lineno", 0), kind)).count += 1
        where.times += 1
        where.most = max(where.most, (met - kept, met))
    ordered = sorted(functions.values(), key=lambda w: (w.order, w.name))
    parts = [_say(w) for w in ordered[:SHOWN]]
    if len(ordered) > SHOWN:
        parts.append(f"and in {len(ordered) - SHOWN} more functions")
    return (f"paths were left out where more than {STATE_CAP} path states met at one point (the simplest and those holding the most gradients were kept; "
            f"findings on the others may be missing): " + "; ".join(parts))


def _innermost_loop(fn: ast.AST | None, frame: object, loops: dict[int, ast.AST],
                    file_of: Callable[[ast.AST], str | None]) -> ast.AST | None:
    """The innermost loop of `fn`'s own code around the statement (not one of a caller whose code this
    function was inlined into, nor a per-call loop assumed for a step function)."""
    for loop_id in reversed(frame.loops if isinstance(frame, Frame) else ()):
        node = loops.get(loop_id)
        if not isinstance(node, _LOOPS):
            continue
        if fn is None:
            if file_of(node) is None:
                return node
        elif (isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) and fn.lineno <= node.lineno <= (fn.end_lineno or fn.lineno)
              and file_of(node) == file_of(fn)):
            return node
        return None
    return None


def _describe(fn: ast.AST | None, frame: object, file_of: Callable[[ast.AST], str | None]) -> _Where:
    if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return _Where("in the module's top-level code", ("", 0))
    cls = getattr(frame, "cls", None)
    name = f"{cls.name}.{fn.name}" if cls is not None and hasattr(cls, "name") else fn.name
    other = file_of(fn)
    at = f"{other}, line {fn.lineno}" if other else f"line {fn.lineno}"
    return _Where(f"in `{name}` ({at})", (other or "", fn.lineno))


def _say(w: _Where) -> str:
    places = sorted(w.places.values(), key=lambda p: (p.line, p.kind))
    times = "once" if w.times == 1 else f"{w.times} times"
    if len(places) == 1:
        said = f"{times} at {places[0].kind} {places[0].line}"
    else:
        said = f"{times}: " + ", ".join(f"{p.count} at {p.kind} {p.line}" for p in places)
    dropped, met = w.most
    return f"{w.name}, {said} (at most {dropped} of {met} paths dropped at once)"
