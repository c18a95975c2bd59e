"""Parameters picked from a module by a test (`[p for n, p in model.named_parameters() if "first" in n]`) are a
part of the module named by that test: two optimizers over the two embedding tables of one model, each picked by
its own name (recohut's LINE notebook, a false certain GL001 of lockbox 21: "`optimizer_s.step()` applies
gradients that `loss_f.backward()` already contributed to `optimizer_f.step()`"), own different parameters.
The analysis does not know which of them a loss reaches, so what one loss leaves in the other's part is at most
`possible`; a loop over one picked set is read as before."""

from __future__ import annotations

from gradcheck_lint.api import check_source
from gradcheck_lint.diagnostics import Certainty

HEAD = '''
import torch
from torch import nn


class TwoTables(nn.Module):
    def __init__(self, n, d):
        super().__init__()
        self.first = nn.Embedding(n, d)
        self.second = nn.Embedding(n, d)

    def forward(self, src, dst):
        a = (self.first(src) * self.first(dst)).sum(-1)
        b = (self.second(src) * self.second(dst)).sum(-1)
        return {"first": -nn.functional.logsigmoid(a).mean(), "second": -nn.functional.logsigmoid(b).mean()}


def params_of(model, table):
    return [p for n, p in model.named_parameters() if table in n]


model = TwoTables(100, 16)
'''

TWO = HEAD + '''
optimizer_f = torch.optim.SGD(params_of(model, "first"), lr=0.1)
optimizer_s = torch.optim.SGD(PICK_SECOND, lr=0.1)

for epoch in range(10):
    src, dst = torch.randint(0, 100, (32,)), torch.randint(0, 100, (32,))
    optimizer_f.zero_grad()
    optimizer_s.zero_grad()
    losses = model(src, dst)
    losses["first"].backward()
    optimizer_f.step()
    losses["second"].backward()
    optimizer_s.step()
'''

ONE = HEAD + '''
optimizer = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=1e-3)
for epoch in range(10):
    src, dst = torch.randint(0, 100, (32,)), torch.randint(0, 100, (32,))
    optimizer.zero_grad()
    losses = model(src, dst)
    (losses["first"] + losses["second"]).backward()
    optimizer.step()
'''


def certain(source: str) -> list[str]:
    return [d.code for d in check_source(source, "train.py") if d.certainty is Certainty.CERTAIN]


def test_two_optimizers_of_tables_picked_by_name_are_not_one() -> None:
    for pick in ('params_of(model, "second")', '[p for n, p in model.named_parameters() if n.startswith("second")]'):
        assert certain(TWO.replace("PICK_SECOND", pick)) == [], pick


def test_the_same_test_picks_the_same_parameters() -> None:
    """Both optimizers over the first table: the second step applies what the first already applied."""
    assert "GL001" in certain(TWO.replace("PICK_SECOND", 'params_of(model, "first")'))


def test_one_optimizer_over_a_picked_set_is_cleared_by_its_zero_grad() -> None:
    assert certain(ONE) == []


def test_one_optimizer_over_a_picked_set_without_a_clear_still_accumulates() -> None:
    assert certain(ONE.replace("    optimizer.zero_grad()\n", "")) == ["GL001"]


def test_a_helper_choosing_the_test_by_a_string_it_is_handed() -> None:
    """`get_params_group(model, 'first')` whose `if type == 'first':` picks the comprehension: the literal this call
    handed decides the test, so each optimizer owns its own table."""
    source = TWO.replace('''def params_of(model, table):
    return [p for n, p in model.named_parameters() if table in n]''', '''def params_of(model, type):
    if type == "first":
        groups = [{"params": [p for n, p in model.named_parameters() if "first" in n]}]
    if type == "second":
        groups = [{"params": [p for n, p in model.named_parameters() if "second" in n]}]
    return groups''').replace("PICK_SECOND", 'params_of(model, "second")')
    assert certain(source) == []
