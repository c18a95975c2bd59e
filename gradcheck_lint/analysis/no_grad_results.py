"""What a tensor computed with autograd off holds: no graph, neither of its inputs nor its own.

    with torch.no_grad():
        discount = torch.cumprod(continues, 0)   # depends on no parameter, holds no forward pass
    actor_optimizer.step()
    fabric.backward(-(discount * critic_values).mean())

`discount` keeps no graph of the actor's forward that `continues` came from, so the backward after the step
does not run through it (sheeprl's dreamer: 37 possible GL009 once the graphs a value holds, `Value.built`,
were kept through `no_grad`). The same holds for what a `@torch.no_grad()` function returns. A name bound to
another under no_grad (`held = loss`, `total = self.total`) is the same tensor: it keeps its graph, and reaches
what it reached.
"""

from __future__ import annotations

import ast
from dataclasses import replace

from .values import Value

__all__ = ["made_without_grad"]

# attributes of a tensor that are computed (a view or a detached copy), not another name for it
_COMPUTED = frozenset({"data", "T", "mT", "H", "mH", "real", "imag"})


def made_without_grad(value: Value, source: ast.expr | None) -> Value:
    """`value`, computed by `source` where autograd is off: it reaches no parameter and holds no graph.
    Objects (models, optimizers) are not tensors and stay as they are, as does another name for a tensor."""
    if value.entities or value.modules or _alias(source):
        return value
    items = value.items
    if items:  # `return q, v`: each item as its own element (a name of them is the tensor it names)
        elements = source.elts if isinstance(source, (ast.Tuple, ast.List)) and len(source.elts) == len(items) \
            else [None] * len(items)
        items = tuple((k, made_without_grad(v, e)) for (k, v), e in zip(items, elements, strict=True))
    return replace(value, reach=frozenset(), vague=frozenset(), opaque=False, built=frozenset(), graph=False,
                   items=items)


def _alias(source: ast.expr | None) -> bool:
    if isinstance(source, ast.Attribute):
        return source.attr not in _COMPUTED and _alias(source.value)
    return isinstance(source, ast.Name)
