"""`walk.breadth_first` is `ast.walk` and `walk.child_nodes` is `list(ast.iter_child_nodes(...))`, faster: the
very same nodes (operator and context nodes too) in the same order, on every fixture, on gradlint's own source
and on trees built by hand. The analysis calls them wherever it used the `ast` ones (a count of nodes,
`project.context._size`, is a budget: it must not move)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

from gradcheck_lint.analysis import walk
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


def test_a_module_function_or_class_is_walked_once_per_file(monkeypatch: pytest.MonkeyPatch) -> None:
    walks: list[ast.AST] = []
    inner = walk._breadth_first

    def counted(node: ast.AST) -> Iterator[ast.AST]:
        walks.append(node)
        return inner(node)

    monkeypatch.setattr(walk, "_breadth_first", counted)
    tree = ast.parse("def f(x):\n    return x + 1\n\nclass C:\n    y = f(2)\n")
    fn, expr = tree.body[0], tree.body[1].body[0]
    for _ in range(3):
        _same(tree)
        assert [type(n) for n in breadth_first(fn)] == [type(n) for n in ast.walk(fn)]
        list(breadth_first(expr))
    assert walks.count(tree) == 1 and walks.count(fn) == 1  # kept
    assert walks.count(expr) == 3  # a statement's or an expression's walk is not kept
    walk.forget_walks()  # as each file's analysis ends
    list(breadth_first(tree))
    assert walks.count(tree) == 2


def test_pre_order_walks_of_a_module_are_kept_too(monkeypatch: pytest.MonkeyPatch) -> None:
    walks: list[ast.AST] = []
    inner = walk._pre_order

    def counted(node: ast.AST) -> Iterator[ast.AST]:
        walks.append(node)
        return inner(node)

    monkeypatch.setattr(walk, "_pre_order", counted)
    tree = ast.parse("def f(x):\n    if x:\n        return x + 1\n")
    expected = list(inner(tree))
    assert list(walk.iter_tree(tree)) == expected and list(walk.iter_tree(tree)) == expected
    assert walks.count(tree) == 1
    walk.forget_walks()
    assert list(walk.iter_tree(tree)) == expected and walks.count(tree) == 2
