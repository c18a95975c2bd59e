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
first. What these runs find in the subclass's own code is reported there. What they find in a base's code of
another file is reported at the subclass's class statement, naming the base's lines: the base's own file
never runs its loop with this subclass (pygod's `DeepDetector.fit` backpropagates the generator loss a GAN
subclass's `forward_model` returns twice, after the generator's step).
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING

from .definitions import ClassInfo
from .walk import iter_tree

if TYPE_CHECKING:
    from .definitions import Definitions
    from .flow import Function

_LOOPS = (ast.For, ast.AsyncFor, ast.While)


def inherited_loops(info: ClassInfo, definitions: Definitions,
                    reached: Callable[[Function], Iterable[Function]]) -> Iterator[Function]:
    """The methods `info` inherits, not overrides, that hold a loop and reach one of `info`'s own methods
    (`reached`: what a call of a method runs, its calls on `self` resolved as `info`'s instances resolve them)."""
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
            if any(isinstance(n, _LOOPS) for n in iter_tree(fn)) and any(id(f) in mine for f in reached(fn)):
                yield fn
