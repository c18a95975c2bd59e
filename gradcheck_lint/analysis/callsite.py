"""One call the interpreter is applying an API model's effects to: its syntax, receiver and evaluated
arguments, and which of them an effect's argument reference names."""

from __future__ import annotations

import ast
from dataclasses import dataclass

from .apimodels import ArgRef, Effect
from .syntax import Arg, arguments, code
from .values import Entity, Value


@dataclass
class CallSite:
    """One call being interpreted: its syntax, its receiver and its evaluated arguments."""

    call: ast.Call
    receiver: Value | None
    receiver_node: ast.expr | None
    pos: list[Value]
    kw: dict[str, Value]
    owner: Entity | None = None  # the receiver's entity whose API type the row belongs to
    certain: bool = True  # resolved by qualified name or a known object, not by a name heuristic
    attr: str = ""  # the method's name, for a method call

    @property
    def receiver_text(self) -> str:
        return code(self.receiver_node) if self.receiver_node is not None else ""

    def _positional(self) -> list[Arg]:
        out = []
        for a in arguments(self.call):
            if a.keyword is not None:
                continue
            if a.star:
                break  # positions after `*args` are unknown
            out.append(a)
        return out

    def arg(self, ref: ArgRef | None) -> tuple[Value, ast.expr | None] | None:
        """The value and syntax an argument reference names here (None: not given)."""
        if ref is None:
            return None
        if ref.receiver and self.receiver is not None:
            return self.receiver, self.receiver_node
        if ref.all_positional:
            vals = self.values(ref)
            if not vals:
                return None
            if len(vals) == 1:
                return vals[0], self._positional()[0].value if self._positional() else None
            return Value(items=tuple((str(i), v) for i, v in enumerate(vals))), None
        positional = self._positional()
        for p in ref.positions:
            if p < len(positional):
                return self.pos[p], positional[p].value
        for k in ref.keywords:
            if k in self.kw:
                node = next(a.value for a in arguments(self.call) if a.keyword == k)
                return self.kw[k], node
        return None

    def happens(self, effect: Effect) -> bool:
        """The effect's `given` argument, if it names one, is passed here (else the effect does not happen)."""
        return effect.given is None or self.arg(effect.given) is not None

    def values(self, ref: ArgRef | None) -> list[Value]:
        """Every value an argument reference names (`args`: each positional argument)."""
        if ref is not None and ref.all_positional:
            unnamed = [a for a in arguments(self.call) if a.keyword is None]
            out: list[Value] = []
            for a, v in zip(unnamed, self.pos):
                if not a.star:
                    out.append(v)
                elif (parts := v.spread()) is not None:
                    out += parts  # `prepare(*[model, optimizer])`: a list built in sight
            return out
        found = self.arg(ref)
        return [found[0]] if found else []


def literal_bool(node: ast.AST | None) -> bool | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, bool):
        return node.value
    return None
