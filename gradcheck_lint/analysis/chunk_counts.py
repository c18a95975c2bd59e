"""How many micro-batches a list of chunks holds: `self.var_L = torch.chunk(data, chunks=self.mega_batch_factor)`
in one method, `for var_L, var_ref in zip(self.var_L, self.var_ref):` in another (DL-Art-School's SRGAN). The
loop's window is the number of chunks, `self.mega_batch_factor`, whatever it is named, not `len(self.var_L)`:
a loss divided by it is divided by the window.

Read from the syntax of the module: every assignment of that reference (`self.var_L = ...`, also a list
comprehension over the chunks) must cut its value into the same number of chunks."""

from __future__ import annotations

import ast

from .syntax import code
from .walk import iter_tree

_CHUNKING = frozenset({"chunk", "tensor_split"})
_cache: dict[int, tuple[ast.Module, dict[str, str | None]]] = {}


def chunk_count(call: ast.expr) -> str | None:
    """The number of chunks a `torch.chunk(x, n)`, `x.chunk(n)`, `chunk(x, chunks=n)` (or `tensor_split`)
    makes, as source; also through a list comprehension over one. None for anything else."""
    if isinstance(call, ast.ListComp) and len(call.generators) == 1:
        return chunk_count(call.generators[0].iter)
    if not isinstance(call, ast.Call):
        return None
    func = call.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
    if name not in _CHUNKING:
        return None
    given = next((k.value for k in call.keywords if k.arg in ("chunks", "sections", "indices_or_sections")), None)
    if given is not None:
        return code(given)
    positional = [a for a in call.args if not isinstance(a, ast.Starred)]
    # `x.chunk(n)` (a method of the tensor) or `torch.chunk(x, n)` (the tensor first)
    method = isinstance(func, ast.Attribute) and not (isinstance(func.value, ast.Name) and func.value.id == "torch")
    index = 0 if method else 1
    return code(positional[index]) if len(positional) > index else None


def chunks_held(module: ast.Module, ref: str) -> str | None:
    """The number of chunks every assignment of `ref` in the module cuts its value into (None: not all agree,
    or one is no chunking)."""
    known = _cache.get(id(module))
    if known is None or known[0] is not module:
        known = _cache[id(module)] = (module, _scan(module))
    return known[1].get(ref)


def _scan(module: ast.Module) -> dict[str, str | None]:
    found: dict[str, str | None] = {}
    for node in iter_tree(module):
        if not isinstance(node, ast.Assign) or len(node.targets) != 1:
            continue
        target = node.targets[0]
        if not isinstance(target, (ast.Name, ast.Attribute)):
            continue
        key = code(target)
        count = chunk_count(node.value)
        if key in found and found[key] != count:
            found[key] = None
        else:
            found[key] = count
    return found
