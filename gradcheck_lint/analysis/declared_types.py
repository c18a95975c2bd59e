"""What a parameter's annotation says it is: an object of a class the project defines.

`def train(model: Seq2Seq, optimizer, ...)`, run on its own (no caller in sight hands `model` in), was read
as an object known only by its name: a module whose forward is not read, so what it returns (`out.loss_value`,
a float made with `.item()` in the forward of another file) was taken for a tensor with a graph. The
annotation names the class, and the class is read: its methods are what calls on the object run
(`model(x)` its forward, `model.backward(Y)` a NumPy network's own method, not a tensor's backward).

Only classes of the project are taken from annotations: a class of an installed package (`nn.Module`,
`torch.optim.Optimizer`) says no more than the name-based reading already does, and a name that resolves to
nothing (a `TypeVar`, a protocol of another package) is no fact. The object is still one made out of sight:
what its `__init__` was given, and so which parameters it holds, is not read.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from .names import dotted

if TYPE_CHECKING:
    from .definitions import ClassInfo
    from .parts import ObjectsHost

_OPTIONAL = frozenset({"Optional", "typing.Optional"})
_UNION = frozenset({"Union", "typing.Union"})


def declared_class(annotation: ast.expr | None, interp: ObjectsHost) -> ClassInfo | None:
    """The class of the project `annotation` names (`Net`, `models.Net`, `"Net"`, `Optional[Net]`,
    `Net | None`); None for anything else (a library type, a union of two classes, an unknown name)."""
    node = _one_class(annotation)
    if node is None:
        return None
    text = dotted(node)
    if text is None:
        return None
    if "." not in text and text not in interp.imports.aliases:
        local = interp.classes.get(text)
        if local is not None:
            return local
    project = interp.project
    qual = interp.imports.qualify(node)
    if project is None or qual is None:
        return None
    found = project.target(qual)
    return found[1] if found is not None and found[0] is None else None


def _one_class(annotation: ast.expr | None) -> ast.expr | None:
    """The one non-None type an annotation names, unwrapped from a string, `Optional[...]` or `X | None`."""
    node = annotation
    for _ in range(4):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            try:
                node = ast.parse(node.value, mode="eval").body
            except SyntaxError:
                return None
            continue
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
            sides = [s for s in (node.left, node.right) if not _is_none(s)]
            if len(sides) != 1:
                return None
            node = sides[0]
            continue
        if isinstance(node, ast.Subscript):
            head = dotted(node.value)
            inner = node.slice
            if head in _OPTIONAL:
                node = inner
                continue
            if head in _UNION and isinstance(inner, ast.Tuple):
                sides = [s for s in inner.elts if not _is_none(s)]
                if len(sides) != 1:
                    return None
                node = sides[0]
                continue
            return None
        break
    return node if isinstance(node, (ast.Name, ast.Attribute)) else None


def _is_none(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is None or dotted(node) in ("None", "type(None)")
