"""Attributes of a module class that its `parameters()` does not see.

`nn.Module.__setattr__` registers a value as a part of the module only when it is a module or a parameter. A
plain container kept on a module (`self.models = {}` filled later with `self.models[t] = deepcopy(self.net)`, a
list of snapshots, a cache of per-task heads) is an attribute like any other: the modules it holds are not the
module's parameters, so an optimizer built over `self.parameters()` never steps them and `self.zero_grad()` never
clears them. Reading such an attribute as a part of the module (a path of its holder) would make a backward through
`self.models[t](x)` write into the optimizer's parameters, which it does not.

An attribute is such a container when every statement of the class (and of its bases read) that binds
`self.attr` binds a display or a constructor of a builtin or `collections` container (`{}`, `[]`, `dict()`,
`OrderedDict()`, `defaultdict(list)`), or None, and at least one binds a container; `add_module`,
`register_module`, `setattr` with that name, or any other value keeps it a possible part.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable

from .definitions import ClassInfo
from .names import last_name
from .walk import iter_tree

_CONTAINER_CALLS = frozenset({"dict", "list", "tuple", "set", "OrderedDict", "defaultdict", "deque"})
_CONTAINER_NODES = (ast.Dict, ast.List, ast.Tuple, ast.Set, ast.DictComp, ast.ListComp, ast.SetComp)
_REGISTERING = frozenset({"add_module", "register_module", "register_parameter", "register_buffer", "setattr"})
_PLAIN, _NONE, _OTHER = "plain", "none", "other"
# what each class read binds, by its node (the node kept with it: an id is reused once a tree is freed), a bounded
# number of classes at a time (a language server reads file after file)
_READ: dict[int, tuple[ast.ClassDef, dict[str, set[str]]]] = {}
_KEPT = 4096


def plain_container(owner: ClassInfo, attr: str, ancestors: Callable[[ClassInfo], Iterable[ClassInfo]]) -> bool:
    """Whether `self.attr` of a module of class `owner` is always a plain container, never a part of it."""
    kinds: set[str] = set()
    for info in (owner, *ancestors(owner)):
        kinds |= _bindings(info).get(attr, {_OTHER} if _dynamic(info) else set())
    return _PLAIN in kinds and _OTHER not in kinds


def _bindings(info: ClassInfo) -> dict[str, set[str]]:
    """What each statement of the class binds to each `self.<attr>` (read once per class)."""
    known = _READ.get(id(info.node))
    if known is not None and known[0] is info.node:
        return known[1]
    found: dict[str, set[str]] = {}
    for node in iter_tree(info.node):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                for name in _self_attributes(target):
                    plain = isinstance(target, ast.Attribute)  # (a tuple target: what each gets is not read here)
                    found.setdefault(name, set()).add(_kind(node.value) if plain else _OTHER)
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)) and node.value is not None:
            for name in _self_attributes(node.target):
                kind = _kind(node.value)
                # `self.models += [m]` keeps a list a list
                found.setdefault(name, set()).add(_NONE if isinstance(node, ast.AugAssign) and kind == _PLAIN else kind)
        elif isinstance(node, ast.Call) and last_name(node.func) in _REGISTERING and node.args:
            named = node.args[1] if last_name(node.func) == "setattr" and len(node.args) > 1 else node.args[0]
            if isinstance(named, ast.Constant) and isinstance(named.value, str):
                found.setdefault(named.value, set()).add(_OTHER)
            else:
                found.setdefault("", set()).add(_OTHER)  # a name computed at run time: any attribute
    if len(_READ) > _KEPT:
        _READ.clear()
    _READ[id(info.node)] = (info.node, found)
    return found


def _dynamic(info: ClassInfo) -> bool:
    """The class binds attributes by names computed at run time (`setattr(self, name, m)`)."""
    return "" in _bindings(info)


def _self_attributes(target: ast.expr) -> list[str]:
    if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self":
        return [target.attr]
    if isinstance(target, (ast.Tuple, ast.List)):
        return [name for item in target.elts for name in _self_attributes(item)]
    return []


def _kind(value: ast.expr) -> str:
    if isinstance(value, ast.Constant) and value.value is None:
        return _NONE
    if isinstance(value, _CONTAINER_NODES):
        return _PLAIN
    if isinstance(value, ast.Call) and last_name(value.func) in _CONTAINER_CALLS:
        return _PLAIN
    return _OTHER
