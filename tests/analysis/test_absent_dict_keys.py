"""A key a dict built in sight does not hold is none of the dict's values: RecStudio's
`opt["scheduler"].step()` (under `if "scheduler" in opt:`) of `{"optimizer": opt, "lr_scheduler": {...}}` was
read as the optimizer's step (a certain GL001 on a scheduler's step). A key it holds still reads its value."""

import textwrap

from gradcheck_lint import check_source
from gradcheck_lint.config import Settings

FIT = """
import torch

model = torch.nn.Linear(4, 1)
opt = torch.optim.Adam(model.parameters())
sched = torch.optim.lr_scheduler.StepLR(opt, 10)
optimizers = [{{"optimizer": opt, "lr_scheduler": {{"scheduler": sched, "interval": "epoch"}}}}]
for epoch in range(3):
    for batch in [torch.randn(2, 4)] * 4:
        for o in optimizers:
            o["optimizer"].zero_grad()
        model(batch).sum().backward()
        for o in optimizers:
            o["optimizer"].step()
    for o in optimizers:
        if "{key}" in o:
            o["{key}"].step()
"""


def _gl001(key: str) -> list[int]:
    text = textwrap.dedent(FIT.format(key=key))
    return [d.span.line for d in check_source(text, "fit.py", settings=Settings.default()) if d.code == "GL001"]


def test_a_key_the_dict_does_not_hold_is_not_its_optimizer() -> None:
    assert _gl001("scheduler") == []


def test_a_key_it_holds_is_its_value() -> None:
    # the optimizer stepped again once per epoch on the last batch's gradients, already applied
    assert _gl001("optimizer") == [17]
