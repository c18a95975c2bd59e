"""Which tensors PyTorch saves for backward, from the table generated out of its `derivatives.yaml`
(`apimodels/saved/torch_saved_tensors.toml`, made by `benchmarks/gen_saved_tensors.py`).

A backward through a graph raises after an optimizer step only if some op of that graph saved a
parameter the step changed in place (or a view of it): a linear or convolution layer saves its weight,
`exp` saves only its result, an embedding only its indices.
"""

from __future__ import annotations

import ast
import functools
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from .walk import breadth_first

_PATH = os.path.join(os.path.dirname(__file__), "apimodels", "saved", "torch_saved_tensors.toml")


@dataclass(frozen=True, slots=True)
class SavedTable:
    """Saved arguments by operator, by composite Python function, and saved parameters by torch.nn module."""

    ops: dict[str, frozenset[str]]
    composites: dict[str, frozenset[str]]
    layers: dict[str, frozenset[str]]

    def layer_saves(self, qualified: str) -> frozenset[str] | None:
        """The parameters a torch.nn module's forward saves (empty: none); None when the module is not in the table."""
        return self.layers.get(qualified)

    def op_saves(self, name: str) -> frozenset[str] | None:
        """The arguments (and `result`) an operator or composite function saves; None when unknown."""
        base = name.rsplit(".", 1)[-1]
        found = self.composites.get(base)
        return found if found is not None else self.ops.get(base)


@functools.lru_cache(maxsize=1)
def saved_table() -> SavedTable:
    """The generated table, read once."""
    with open(_PATH, "rb") as fh:
        data = tomllib.load(fh)
    return SavedTable(
        ops={k: frozenset(v) for k, v in data.get("ops", {}).items()},
        composites={k: frozenset(v["saves"]) for k, v in data.get("composites", {}).items()},
        layers={k: frozenset(v) for k, v in data.get("layers", {}).items()},
    )


# A class of the user's found through the names of another (`self.encoder = GraphCNN(...)` in `Job_Actor`, both read):
# the class definition and how its own file's names qualify, or None when it is not read
ClassReader = Callable[[str], "tuple[ast.ClassDef, Callable[[ast.AST], str | None]] | None"]
_MAX_NESTING = 4  # classes of the user's opened one inside another


def class_saves(cls: ast.ClassDef, qualify: Callable[[ast.AST], str | None], table: SavedTable,
                read: ClassReader | None = None, _seen: frozenset[int] = frozenset()) -> bool | None:
    """A module class of the analysed file builds a torch.nn layer that saves its weight (`self.fc =
    nn.Linear(...)`, also inside `nn.Sequential(...)`), or builds a class of the user's (`read`: found in the
    project) that does, in turn: its forward passes save parameters. None when nothing so built is seen (its own
    `nn.Parameter`s and the ops on them are not followed)."""
    for node in breadth_first(cls):
        if isinstance(node, ast.Call) and _builds_saving(node, qualify, table, read, _seen | {id(cls)}):
            return True
    return None


def _builds_saving(call: ast.Call, qualify: Callable[[ast.AST], str | None], table: SavedTable,
                   read: ClassReader | None, seen: frozenset[int]) -> bool:
    """The call builds a torch.nn layer that saves its weight, or a class of the user's whose layers do."""
    qualified = qualify(call.func)
    if qualified is None:
        return False
    if table.layer_saves(qualified):
        return True
    if read is None or len(seen) > _MAX_NESTING or qualified.startswith("torch."):
        return False
    found = read(qualified)
    if found is None or id(found[0]) in seen:
        return False
    return class_saves(found[0], found[1], table, read, seen) is True


def attribute_saves(cls: ast.ClassDef, attr: str, qualify: Callable[[ast.AST], str | None], table: SavedTable,
                    read: ClassReader | None = None) -> bool | None:
    """What the submodule a module class stores as `self.<attr>` saves for backward, by the layers built for
    it (`self.Q1 = nn.Linear(...)`, also inside `nn.Sequential(...)`: a weight; `self.emb = nn.Embedding(...)`:
    nothing; a class of the user's that `read` finds: its own layers). None when what is stored there is not seen
    to be made of layers of the table (a call out of sight)."""
    none_saved: list[bool] = []
    for node in breadth_first(cls):
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Attribute) and t.attr == attr and isinstance(t.value, ast.Name)
                                                and t.value.id == "self" for t in node.targets):
            for call in (n for n in breadth_first(node.value) if isinstance(n, ast.Call)):
                if _builds_saving(call, qualify, table, read, frozenset({id(cls)})):
                    return True
            qualified = qualify(node.value.func) if isinstance(node.value, ast.Call) else None
            none_saved.append(qualified is not None and table.layer_saves(qualified) == frozenset())
    return False if none_saved and all(none_saved) else None
