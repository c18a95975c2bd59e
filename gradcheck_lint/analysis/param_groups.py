"""An optimizer's parameter groups as a value: `opt.param_groups`, a group of it, and a group's `params` list.

Growing such a list in place (`opt.param_groups[1]["params"].append(p)`, `.extend(ps)`, `+= [p]`, also
through a name or a loop over the groups) adds parameters to the optimizer, as `add_param_group` does:
its `step()` updates them from then on and its `zero_grad()` clears them (`objects.Objects.add_owned`).
The value carries the optimizers it belongs to in its `const`, through subscripts and iteration, and
nowhere else: arithmetic or a call on it is something else.
"""

from __future__ import annotations

from dataclasses import replace

from .values import Entity, Holder, Value

_TAG = "param_groups"
# the list methods that add to a group's parameters
GROWS = frozenset({"append", "extend", "insert"})


def groups_value(opts: list[Entity], holders: frozenset[Holder]) -> Value:
    """`opt.param_groups`: the parameters the optimizers update, as their groups."""
    return Value(params=holders, const=(_TAG, tuple(sorted(o.uid for o in opts))))


def groups_of(value: Value) -> tuple[int, ...]:
    """The uids of the optimizers whose groups (or one group, or its list) `value` is; () for any other value."""
    const = value.const
    if isinstance(const, tuple) and len(const) == 2 and const[0] == _TAG:
        return tuple(const[1])
    return ()


def part_of(whole: Value, part: Value) -> Value:
    """`part` (a subscript or an element of `whole`) still belongs to the groups `whole` belongs to."""
    return replace(part, const=whole.const) if groups_of(whole) and part.const is None else part
