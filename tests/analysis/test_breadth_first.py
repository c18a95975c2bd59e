"""`walk.breadth_first` is `ast.walk` and `walk.child_nodes` is `list(ast.iter_child_nodes(...))`, faster: the
very same nodes (operator and context nodes too) in the same order, on every fixture, on gradlint's own source
and on trees built by hand. The analysis calls them wherever it used the `ast` ones (a count of nodes,
`project.context._size`, is a budget: it must not move)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from gradcheck_lint.analysis.walk import breadth_first, child_nodes

ROOT = Path(__file__).resolve().parents[2]


def _same(tree: ast.AST) -> None:
    walked, ours = list(ast.walk(tree)), list(breadth_first(tree))
    assert len(ours) == len(walked)
    assert all(a is b for a, b in zip(walked, ours))
    for node in walked:
        theirs, mine = list(ast.iter_child_nodes(node)), child_nodes(node)
        assert len(mine) == len(theirs) and all(a is b for a, b in zip(theirs, mine))


@pytest.mark.parametrize("folder", ["fixtures", "gradcheck_lint"])
def test_same_nodes_in_the_same_order_as_ast_walk(folder: str) -> None:
    files = sorted((ROOT / folder).rglob("*.py"))
    assert files
    for path in files:
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError):
            continue
        _same(tree)


def test_parts_of_a_tree_and_trees_built_by_hand() -> None:
    tree = ast.parse("def f(a, *b, c=1, **d):\n    x: int = a[1:2, ...] + (yield c)\n"
                     "    match x:\n        case [1, *rest] | {'k': _} if rest: return f'{x!r:>{a}}'\n"
                     "from . import y as z\nglobal q\n")
    for node in ast.walk(tree):
        _same(node)
    _same(ast.BinOp(ast.Name("n", ast.Load()), ast.Add(), ast.Constant(1)))  # no positions, no parent
    _same(ast.Call(ast.Name("f"), [], []))  # `ctx` left out: a missing field is skipped, as ast.walk does
