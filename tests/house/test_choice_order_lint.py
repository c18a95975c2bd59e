"""No choice of the analysis follows the order of a set hashed by address.

An entity's hash holds `hash(None)` (the address of `None` before Python 3.12); loop and condition stacks
are tuples of node addresses. A loop over such a set, or a sort of such tuples as they are, comes out in
another order in each process, and whatever it picks first (a class whose method is read, a window, a
witness) changed from run to run (`tests/analysis/test_choice_order.py`). The ordered ways in are
`Value.in_order()` / `Value.of_kind()` and `TrainingModel.stacks_in_order()` / `if_stacks_in_order()`;
any() / all() and set comprehensions over the sets are free of order and stay allowed.
"""

from __future__ import annotations

import ast

from support import ROOT

SCANNED = [ROOT / "gradcheck_lint" / part for part in ("analysis", "project", "checks")]
# attributes that hold sets hashed by address: entities, and stacks of loop / condition ids
ADDRESS_SETS = frozenset({"entities", "loop_stacks", "if_stacks"})


def _hazards(tree: ast.AST) -> list[tuple[int, str]]:
    out: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        looped = node.iter.values[0] if isinstance(node, ast.For) and isinstance(node.iter, ast.BoolOp) else getattr(node, "iter", None)
        if isinstance(node, ast.For) and isinstance(looped, ast.Attribute) and looped.attr in ADDRESS_SETS:
            out.append((node.lineno, f"a loop over `.{looped.attr}` in set order"))  # (`x.if_stacks or {()}` too)
        if isinstance(node, ast.Call):
            if any(k.arg == "key" and isinstance(k.value, ast.Name) and k.value.id == "id" for k in node.keywords):
                out.append((node.lineno, "ordered by `id`"))
            if (isinstance(node.func, ast.Name) and node.func.id in ("sorted", "min", "max") and node.args
                    and isinstance(node.args[0], ast.Attribute) and node.args[0].attr in ADDRESS_SETS
                    and not any(k.arg == "key" for k in node.keywords)):
                out.append((node.lineno, f"`{node.func.id}` of `.{node.args[0].attr}` by address"))
    return out


def test_the_lint_sees_each_hazard() -> None:
    sample = ast.parse(
        "for e in value.entities:\n    pass\n"
        "for s in step.loop_stacks or {()}:\n    pass\n"
        "x = sorted(backward.if_stacks)\n"
        "y = sorted(nodes, key=id)\n"
        "ok = any(e.uid for e in value.entities) or sorted(b.loop_stacks, key=len) or value.in_order()\n"
    )
    assert [line for line, _ in _hazards(sample)] == [1, 3, 5, 6]


def test_no_choice_in_the_package_follows_address_order() -> None:
    found = [f"{path.relative_to(ROOT)}:{line}: {what}"
             for base in SCANNED for path in sorted(base.rglob("*.py"))
             for line, what in _hazards(ast.parse(path.read_text(encoding="utf-8")))]
    assert not found, "\n".join(found)
