"""Floor division has no gradient: its result is a number, never a graph (minFM's window
`(total_batch_size + global_batch_size - 1) // global_batch_size`, read off a model built in another file,
was taken for a loss, so `loss / target_n_accum_steps` did not count as divided)."""

from __future__ import annotations

import ast

from gradcheck_lint.analysis.interpreter import Interpreter

SOURCE = """\
import torch
m = torch.nn.Linear(2, 2)
x = torch.randn(2)
floored = m(x).sum() // 2
divided = m(x).sum() / 2
m(x).sum().backward()
opt = torch.optim.SGD(m.parameters(), lr=0.1)
opt.step()
"""


def _module_values() -> dict[str, object]:
    interp = Interpreter(ast.parse(SOURCE), SOURCE)
    interp.run()
    return dict(interp.module_env)


def test_floor_division_of_a_graph_is_a_number() -> None:
    env = _module_values()
    assert not env["floored"].reach  # type: ignore[attr-defined]


def test_true_division_keeps_the_graph() -> None:
    env = _module_values()
    assert env["divided"].reach  # type: ignore[attr-defined]
