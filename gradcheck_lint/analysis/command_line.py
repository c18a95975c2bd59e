"""Command-line flags the command line cannot turn: `add_argument("--use_amp", action="store_true", default=True)`.

A `store_true` flag whose default is True is True on every run (giving it stores True again), and a `store_false`
flag whose default is False is False; a test of one takes one arm. The flag keeps that value only where nothing else
changes it: a module that assigns the attribute anywhere (`args.use_amp = False`), sets parser defaults
(`set_defaults`), or registers the same destination twice leaves it open. The namespace is the name a module binds
`parse_args()` (or `parse_known_args()`) to, or one of the names the result is conventionally handed on as (`args`,
`opt`, `opts`), read as the attribute's base (`args.use_amp`, `self.args.use_amp`).
"""

from __future__ import annotations

import ast

from .syntax import keyword_value
from .walk import iter_tree

__all__ = ["fixed_flags", "flag_value"]

_NAMESPACES = frozenset({"args", "opt", "opts"})
_FOUND: dict[int, tuple[ast.Module, dict[str, bool], frozenset[str]]] = {}


def fixed_flags(module: ast.Module) -> tuple[dict[str, bool], frozenset[str]]:
    """The module's flags no command line can change (destination -> value) and its namespace names."""
    known = _FOUND.get(id(module))
    if known is not None and known[0] is module:
        return known[1], known[2]
    flags: dict[str, bool] = {}
    seen: set[str] = set()
    assigned: set[str] = set()
    spaces = set(_NAMESPACES)
    defaults = False
    for node in iter_tree(module):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr == "set_defaults":
                defaults = True
            elif node.func.attr == "add_argument":
                dest = _destination(node)
                if dest is None:
                    continue
                if dest in seen:
                    flags.pop(dest, None)
                    assigned.add(dest)
                seen.add(dest)
                action, default = keyword_value(node, "action"), keyword_value(node, "default")
                if (isinstance(action, ast.Constant) and isinstance(default, ast.Constant)
                        and (action.value, default.value) in (("store_true", True), ("store_false", False))):
                    flags[dest] = bool(default.value)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                for part in iter_tree(target):
                    if isinstance(part, ast.Attribute) and isinstance(part.ctx, ast.Store):
                        assigned.add(part.attr)
            value = node.value
            if (isinstance(node, ast.Assign) and isinstance(value, (ast.Call, ast.Subscript))):
                call = value.value if isinstance(value, ast.Subscript) else value
                if (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
                        and call.func.attr in ("parse_args", "parse_known_args")):
                    for target in node.targets:
                        first = target.elts[0] if isinstance(target, ast.Tuple) and target.elts else target
                        if isinstance(first, ast.Name):
                            spaces.add(first.id)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "setattr":
            defaults = True  # `setattr(args, name, value)`: any flag may change
    found = {} if defaults else {k: v for k, v in flags.items() if k not in assigned}
    _FOUND[id(module)] = (module, found, frozenset(spaces))
    if len(_FOUND) > 1_000:
        _FOUND.clear()
    return found, frozenset(spaces)


def flag_value(test: ast.expr, module: ast.Module) -> bool | None:
    """The truth of a test of such a flag (`if args.use_amp:`, `if not self.args.use_amp:`); None otherwise."""
    negated = False
    while isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        negated, test = not negated, test.operand
    if not isinstance(test, ast.Attribute):
        return None
    base = test.value
    base_name = base.id if isinstance(base, ast.Name) else base.attr if isinstance(base, ast.Attribute) else None
    if base_name is None or base_name == "self":
        return None
    flags, spaces = fixed_flags(module)
    if test.attr not in flags or base_name not in spaces:
        return None
    return flags[test.attr] != negated


def _destination(call: ast.Call) -> str | None:
    dest = keyword_value(call, "dest")
    if isinstance(dest, ast.Constant) and isinstance(dest.value, str):
        return dest.value
    names = [a.value for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
    long = [n for n in names if n.startswith("--")]
    if long:
        return long[0][2:].replace("-", "_")
    return names[0].lstrip("-").replace("-", "_") if names else None
