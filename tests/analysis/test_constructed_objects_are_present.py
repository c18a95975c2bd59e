"""An object a catalogue class constructs (`torch.optim.Adam(...)`) is never None: `if opt is not None:` around
the clear and around the step of two loops over one list of them goes one way on every path (RecStudio's
trainer: read as independent tests, a path skipped the clear and took the step, a certain GL001)."""

import textwrap

from gradcheck_lint import check_source
from gradcheck_lint.config import Settings

LOOPS = """
import torch

model = torch.nn.Linear(4, 1)
optimizers = [torch.optim.Adam(model.parameters())]
for batch in range(10):
    for opt in optimizers:
        if opt is {clear_test} None:
            opt.zero_grad()
    model(torch.randn(2, 4)).sum().backward()
    for opt in optimizers:
        if opt is not None:
            opt.step()
"""


def _gl001(clear_test: str) -> list[tuple[int, str]]:
    text = textwrap.dedent(LOOPS.format(clear_test=clear_test))
    return [(d.span.line, d.certainty.value) for d in check_source(text, "loops.py", settings=Settings.default())
            if d.code == "GL001"]


def test_guards_of_a_constructed_optimizer_agree() -> None:
    assert _gl001("not") == []


def test_a_clear_guarded_by_the_wrong_test_never_runs() -> None:
    assert _gl001("") == [(13, "certain")]
