"""What a path's knowledge of one comparison says of another comparing the same two operands."""

from __future__ import annotations

import ast

import pytest

from gradcheck_lint import check_source
from gradcheck_lint.analysis.relations import implied, relation


def rel(text: str):  # type: ignore[no-untyped-def]
    found = relation(ast.parse(text, mode="eval").body)
    assert found is not None, text
    return found


@pytest.mark.parametrize(
    ("known", "truth", "asked", "expected"),
    [
        ("i == n", True, "i < n", False),
        ("i == n", True, "i <= n", True),
        ("i == n", True, "n > i", False),  # operands in the other order
        ("i == n", False, "i < n", None),
        ("i < n", True, "i == n", False),
        ("i < n", False, "i >= n", True),
        ("i >= n", True, "n <= i", True),
        ("i != n", False, "i == n", True),
        ("i > n", True, "i != n", True),
    ],
)
def test_implied_truths(known: str, truth: bool, asked: str, expected: bool | None) -> None:
    assert implied(rel(known), truth, rel(asked)) is expected


@pytest.mark.parametrize("text", ["mode == 'train'", "x is None", "a < b < c", "f(i) == n", "1 == 2", "x == None"])
def test_only_two_ordered_operands_relate(text: str) -> None:
    assert relation(ast.parse(text, mode="eval").body) is None


HEAD = """\
import torch
model = torch.nn.Linear(3, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loader = [(torch.randn(4, 3), torch.randn(4, 1)) for _ in range(5)]
it = 0
while it < 12:
    for x, y in loader:
        torch.nn.functional.mse_loss(model(x), y).backward()
        it += 1
"""


@pytest.mark.parametrize(
    ("leave", "codes"),
    [
        ("if it == 12:\n            break\n", []),  # the `while` ends with the break: no later step
        ("if it >= 12:\n            break\n", []),
        ("if it % 5 == 0:\n            break\n", ["GL001"]),  # training goes on: the next step applies them
        ("if it == 6:\n            break\n", ["GL001"]),  # another operand: nothing follows
    ],
)
def test_a_break_that_ends_the_while_loop_skips_no_later_step(leave: str, codes: list[str]) -> None:
    body = "        " + leave + "        opt.step()\n        opt.zero_grad()\n"
    assert [d.code for d in check_source(HEAD + body)] == codes
