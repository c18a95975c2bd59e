"""The syntax layer over CPython's `ast`: positions in characters, nodes' text, the shapes it normalises."""

from __future__ import annotations

import ast

import pytest

from gradcheck_lint import check_source
from gradcheck_lint.analysis.syntax import (
    Source,
    arguments,
    code,
    forget_code,
    parameters,
    read_source,
    starts_with_paren,
)
from gradcheck_lint.fixes import fix_source

HEAD = "import torch\nmodel = torch.nn.Linear(2, 1)\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n"


@pytest.mark.parametrize("prefix", ["", "x = 'é'; ", "名前 = '日本語'; ", "s = '🙂🙂'; "])
def test_columns_count_characters_not_bytes(prefix: str) -> None:
    """CPython reports UTF-8 byte offsets; diagnostics and fixes use the characters an editor counts."""
    line = f"    {prefix}opt.step()"
    src = HEAD + f"for x in range(3):\n    model(x).sum().backward()\n{line}\n"
    [diag] = check_source(src)
    assert (diag.code, diag.line) == ("GL001", 6)
    assert diag.column == line.index("opt.step()") + 1
    assert diag.span.end_column == diag.column + len("opt.step()")


def test_a_fix_after_non_ascii_text_lands_in_place() -> None:
    """Edits are placed by character columns: the fixed file parses and holds the clear after the step."""
    src = HEAD + "for i, x in enumerate(range(8)):\n    (model(x).sum() / 4).backward()  # 損失\n    if i % 4 == 0:  # 🙂\n        opt.step()\n        opt.zero_grad()\n"
    fixed = fix_source(src, "train.py", None, unsafe=True)
    assert "if (i + 1) % 4 == 0:  # 🙂" in fixed.text
    ast.parse(fixed.text)
    assert fixed.applied == 1 and not fixed.after


def test_segments_and_code() -> None:
    text = "y = (a +\n     b) .  c(  1,\n k = 2)\nz = 'é' + f(é)\n"
    tree = ast.parse(text)
    source = read_source(text)
    try:
        call = tree.body[0].value
        assert source.segment(call) == "(a +\n     b) .  c(  1,\n k = 2)"
        assert code(call) == "(a + b) . c(1, k = 2)"  # a multi-line call reads as one line: no space after `(`
        assert starts_with_paren(call.func, call.func.value)  # `(a + b)` is in parentheses
        assert code(tree.body[1].value.right) == "f(é)"
        span = source.span(tree.body[1].value.right)
        assert (span.line, span.column, span.end_column) == (4, 11, 15)  # characters, 1-based, end exclusive
    finally:
        forget_code()
    assert code(ast.parse("a  +  b", mode="eval").body) == "a + b"  # without a current source: unparsed


def test_arguments_in_source_order() -> None:
    call = ast.parse("f(a, *b, k=1, **d)", mode="eval").body
    assert [(a.keyword, code(a.value), a.star) for a in arguments(call)] == [
        (None, "a", ""), (None, "b", "*"), ("k", "1", ""), (None, "d", "**")]


def test_parameters_pair_defaults_with_names() -> None:
    fn = ast.parse("def f(a, /, b, c=1, *args, d, e=2, **kw): pass").body[0]
    pos, kwonly, stars = parameters(fn)
    assert [(p.name, p.default is not None) for p in pos] == [("a", False), ("b", False), ("c", True)]
    assert [(p.name, p.default is not None) for p in kwonly] == [("d", False), ("e", True)]
    assert stars == ["args", "kwargs"][:1] + ["kw"]


def test_source_without_non_ascii_maps_bytes_directly() -> None:
    source = Source("a = 1\n")
    node = ast.parse("a = 1\n").body[0]
    assert source.span(node).column == 1 and source.segment(node) == "a = 1"


@pytest.mark.parametrize("header", ["async def train(model, opt, loader):", "def train(model, opt, loader):"])
def test_async_functions_are_analysed_like_functions(header: str) -> None:
    src = HEAD + header + "\n    async for x in loader:\n        model(x).sum().backward()\n        opt.step()\n"
    assert [(d.code, d.line) for d in check_source(src)] == [("GL001", 7)]


def test_while_one_is_an_endless_loop() -> None:
    src = HEAD + "i = 0\nwhile 1:\n    model(i).sum().backward()\n    opt.step()\n    i += 1\n"
    assert [(d.code, d.line) for d in check_source(src)] == [("GL001", 7)]


def test_one_line_function_bodies_are_followed() -> None:
    """`def step(): opt.step()` on one line is a helper like any other (libcst's tree hid its body)."""
    src = HEAD + "def update(): opt.step()\nfor x in range(3):\n    model(x).sum().backward()\n    update()\n"
    assert [d.code for d in check_source(src)] == ["GL001"]
