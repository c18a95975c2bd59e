"""A conditional expression that asks whether a value is a tensor (`hasattr(x, "item")`, `torch.is_tensor(x)`,
`isinstance(x, torch.Tensor)`) takes its other arm only for what is no tensor: `x` there holds no graph.
world-models' `cum_mse += losses['mse'].item() if hasattr(losses['mse'], 'item') else losses['mse']` (the
loss is a tensor or the int 0) was a certain GL008 on lockbox 5 (a path that cannot happen)."""

from __future__ import annotations

import pytest

from gradcheck_lint import check_source

LOOP = """\
import torch
model = torch.nn.Linear(4, 1)
opt = torch.optim.Adam(model.parameters())
total = 0
for x in loader:
    opt.zero_grad()
    loss = (model(x) ** 2).mean()
    loss.backward()
    opt.step()
    total += {kept}
"""


@pytest.mark.parametrize(("kept", "codes"), [
    ("loss.item() if hasattr(loss, 'item') else loss", []),
    ("loss.item() if torch.is_tensor(loss) else loss", []),
    ("float(loss.detach()) if isinstance(loss, torch.Tensor) else loss", []),
    ("loss if hasattr(loss, 'item') else 0.0", ["GL008"]),  # the tensor arm keeps the graph
    ("loss.item() if hasattr(loss, 'shape_hint') else loss", ["GL008"]),  # no tensor attribute: no narrowing
    ("loss.item() if hasattr(other, 'item') else loss", ["GL008"]),  # another value was tested
])
def test_the_arm_for_what_is_no_tensor_holds_no_graph(kept: str, codes: list[str]) -> None:
    assert [d.code for d in check_source(LOOP.format(kept=kept))] == codes
