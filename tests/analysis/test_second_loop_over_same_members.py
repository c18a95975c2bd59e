"""Two loops over one list of optimizers that may hold None, each guarded by `if opt is not None:` (RecStudio's
trainer: the clear in one loop, the step in the other): the second loop's name already holds the same members,
so what the paths know of them stays (one member is cleared where it is stepped). A second loop over another
list keeps both tests independent."""

import textwrap

from gradcheck_lint import check_source
from gradcheck_lint.config import Settings

LOOPS = """
import torch


def make(model, kind):
    if kind is None:
        return None
    return {{"optimizer": torch.optim.Adam(model.parameters())}}


model = torch.nn.Linear(4, 1)
other = torch.nn.Linear(4, 1)
optimizers = [make(model, "adam"), make(model, None)]
others = [make(other, "adam")]
for batch in range(10):
    for opt in optimizers:
        if opt is not None:
            opt["optimizer"].zero_grad()
    (model(torch.randn(2, 4)).sum() + other(torch.randn(2, 4)).sum()).backward()
    for opt in {stepped}:
        if opt is not None:
            opt["optimizer"].step()
"""


def _gl001(stepped: str) -> list[int]:
    text = textwrap.dedent(LOOPS.format(stepped=stepped))
    return [d.span.line for d in check_source(text, "loops.py", settings=Settings.default()) if d.code == "GL001"]


def test_the_same_members_cleared_where_they_are_stepped() -> None:
    assert _gl001("optimizers") == []


def test_members_of_another_list_are_never_cleared() -> None:
    assert _gl001("others") == [22]
