"""A closure an optimizer's `step(closure)` runs is evaluated under `torch.enable_grad()` (every torch optimizer
does so), so `if torch.is_grad_enabled(): optimizer.zero_grad()` in it always clears (the PyTorch neural style
transfer tutorial's L-BFGS closure: read as a clear that may not run, a certain GL001). A closure with no clear
is still GL001."""

import textwrap

from gradcheck_lint import check_source
from gradcheck_lint.config import Settings

STYLE = """
import torch

model = torch.nn.Linear(4, 1)
img = torch.randn(2, 4, requires_grad=True)
optimizer = torch.optim.LBFGS([img])
for i in range(10):
    def closure():
{clear}
        loss = model(img).pow(2).mean()
        if loss.requires_grad:
            loss.backward()
        return loss
    optimizer.step(closure)
"""


def _gl001(clear: str) -> list[int]:
    text = textwrap.dedent(STYLE.format(clear=clear))
    return [d.span.line for d in check_source(text, "style.py", settings=Settings.default()) if d.code == "GL001"]


def test_a_clear_under_is_grad_enabled_runs_in_the_closure() -> None:
    assert _gl001("        if torch.is_grad_enabled():\n            optimizer.zero_grad()") == []


def test_a_closure_without_a_clear_is_still_reported() -> None:
    assert _gl001("        pass") == [14]
