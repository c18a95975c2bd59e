"""A base class's training loop, run with a subclass as `self`.

A trainer framework keeps its loop in a base class (`BaseTrainer.train_model`: for each batch, forward, loss,
backward, step, then `self.train_step_end(loss=loss)`), and a subclass, often in another file, overrides the
hooks that loop calls (`process_loss`, `train_step_end`). Each class's own methods are run with that class as
`self`, so the loop only ever calls the base's hooks (no-ops, or a plain loss), and the subclass's override
is run alone, without the loop around it: what it stores across batches (`self.loss_dict[batch] = loss`) or
how its loss is computed never meets the loop's iterations.

So for each class of the checked file, the methods it inherits (from a base of this file or of another file
of the project) that loop and, through the calls they make on `self`, reach a method the class itself defines
are run again with the class as `self`. Methods are looked up as the instance looks them up: the overrides
first. What these runs find in the subclass's own code is reported there; what they find in the base's code
is reported with the base's file (as any code of another file reached from nowhere in this one).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from typing import TYPE_CHECKING

from .definitions import ClassInfo
from .walk import iter_tree

if TYPE_CHECKING:
    from .definitions import Definitions
    from .flow import Function

_LOOPS = (ast.For, ast.AsyncFor, ast.While)
_REACH_LIMIT = 40  # methods followed from one inherited loop (a trainer's loop calls a few hooks deep)


def inherited_loops(info: ClassInfo, definitions: Definitions) -> Iterator[Function]:
    """The methods `info` inherits, not overrides, that hold a loop and reach one of `info`'s own methods
    through calls on `self` (transitively, as `info`'s instances resolve them)."""
    own = {name for name in info.methods if not name.startswith("__")}
    if not own:
        return
    mine = {id(fn) for fn in info.methods.values()}
    seen = set(info.methods)
    for ancestor in definitions.ancestors(info):
        for name, fn in ancestor.methods.items():
            if name in seen or name.startswith("__"):
                continue
            seen.add(name)
            if _loops(fn) and _reaches(fn, info, mine, definitions):
                yield fn


def _loops(fn: Function) -> bool:
    return any(isinstance(n, _LOOPS) for n in iter_tree(fn))


def _reaches(fn: Function, info: ClassInfo, mine: set[int], definitions: Definitions) -> bool:
    """Whether `fn`, run on an instance of `info`, calls (through `self.m(...)`, transitively) a method that
    `info` itself defines."""
    todo, seen = [fn], {id(fn)}
    while todo and len(seen) < _REACH_LIMIT:
        current = todo.pop()
        for node in iter_tree(current):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and isinstance(node.func.value, ast.Name) and node.func.value.id == "self"):
                continue
            callee = definitions.find_method(info, node.func.attr)
            if callee is None or id(callee) in seen:
                continue
            if id(callee) in mine:
                return True
            seen.add(id(callee))
            todo.append(callee)
    return False
