"""Named tuples: `LossTuple = namedtuple("LossTuple", [...])`, `class Losses(NamedTuple): ...`.

Calling such a class builds a tuple whose items are its arguments, by position (keywords at their
field's position), and whose fields read those items by name: `losses.total_loss` is the item the
call gave `total_loss`, and unpacking it (`rpn_loc, ..., total = losses`) gives the items in order.
Read so, a tuple of losses keeps what its items hold: the graph of each loss (bubbliiiing/faster-rcnn's
`FasterRCNNTrainer.train_step` returns `LossTuple(*losses)` after `losses.total_loss.backward()`, and
its caller adds the total into a running sum for the epoch: GL008)."""

from __future__ import annotations

import ast
from collections.abc import Iterable

from .names import ImportMap
from .syntax import Arg
from .values import EMPTY, Value, holding, join

_FACTORIES = frozenset({"collections.namedtuple", "typing.NamedTuple", "typing_extensions.NamedTuple"})
_BASES = frozenset({"typing.NamedTuple", "typing_extensions.NamedTuple", "NamedTuple"})
FIELDS = "named_tuple"  # `Value.const` of an object of a named tuple class: ("named_tuple", fields)


def defined(statements: Iterable[ast.AST], imports: ImportMap) -> dict[str, tuple[str, ...]]:
    """The named tuple classes among module-level statements, by name, with their fields in order (empty
    when they are not written as literals: then every field reads as any of the items)."""
    out: dict[str, tuple[str, ...]] = {}
    for stmt in statements:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name) \
                and isinstance(stmt.value, ast.Call) and imports.qualify(stmt.value.func) in _FACTORIES:
            out[stmt.targets[0].id] = _factory_fields(stmt.value)
        elif isinstance(stmt, ast.ClassDef):
            fields = class_fields(stmt, [q for q in map(imports.qualify, stmt.bases) if q is not None])
            if fields is not None:
                out[stmt.name] = fields
    return out


def class_fields(node: ast.ClassDef, bases: Iterable[str]) -> tuple[str, ...] | None:
    """The fields of `class Losses(NamedTuple): total: Tensor` (bases qualified), or None for another class."""
    if not any(b in _BASES for b in bases):
        return None
    return tuple(s.target.id for s in node.body if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name))


def _factory_fields(call: ast.Call) -> tuple[str, ...]:
    """`namedtuple("T", ["a", "b"])`, `namedtuple("T", "a b")`, `namedtuple("T", "a, b")`,
    `NamedTuple("T", [("a", Tensor), ("b", Tensor)])`; `field_names=` too."""
    spec = call.args[1] if len(call.args) > 1 else next(
        (k.value for k in call.keywords if k.arg in ("field_names", "fields")), None)
    if isinstance(spec, ast.Constant) and isinstance(spec.value, str):
        return tuple(spec.value.replace(",", " ").split())
    if isinstance(spec, (ast.List, ast.Tuple)):
        names: list[str] = []
        for elt in spec.elts:
            if isinstance(elt, (ast.Tuple, ast.List)) and elt.elts:
                elt = elt.elts[0]
            if not (isinstance(elt, ast.Constant) and isinstance(elt.value, str)):
                return ()
            names.append(elt.value)
        return tuple(names)
    return ()


def construct(fields: tuple[str, ...], args: list[Arg], values: list[Value]) -> Value:
    """The tuple a call of a named tuple class builds from its arguments (`args`, evaluated as `values`)."""
    slots: dict[int, Value] = {}
    loose: list[Value] = []  # `LossTuple(*losses)` of a list whose positions are not known: any field
    position = 0
    for arg, value in zip(args, values):
        if arg.star == "**":  # `Losses(**parts)`: any field
            loose.append(holding(value))
        elif arg.star:
            spread = value.spread()
            if spread is None:
                loose.append(holding(value))
                position = len(fields)  # the positions after it are unknown too
                continue
            for item in spread:
                slots[position] = item
                position += 1
        elif arg.keyword is not None:
            if arg.keyword in fields:
                slots[fields.index(arg.keyword)] = value
            else:
                loose.append(value)
        else:
            slots[position] = value
            position += 1
    count = max(len(fields), max(slots, default=-1) + 1)
    rest = [v.as_tensor() for v in loose]
    items = tuple((str(i), join([*([slots[i]] if i in slots else []), *rest])) for i in range(count))
    j = join([v for _, v in items]) if items else EMPTY
    return Value(entities=j.entities, modules=j.modules, params=j.params, reach=j.reach, opaque=j.opaque, vague=j.vague,
                 items=items, const=(FIELDS, fields))


def field_key(value: Value, name: str) -> str | None:
    """The item key of the field `name` of a named tuple built in sight (`"4"` for `total_loss`), or None."""
    const = value.const
    if not (isinstance(const, tuple) and len(const) == 2 and const[0] == FIELDS) or name not in const[1]:
        return None
    return str(const[1].index(name))


def field(value: Value, name: str) -> Value | None:
    """`losses.total_loss` of a named tuple built in sight: the item at that field's position (any item when
    the fields were not read), or None when `value` is no such tuple or has no such field."""
    const = value.const
    if not (isinstance(const, tuple) and len(const) == 2 and const[0] == FIELDS):
        return None
    fields: tuple[str, ...] = const[1]
    if not fields:
        return join([v for _, v in value.items]) if value.items else None
    if name not in fields:
        return None
    return value.item(str(fields.index(name)))
