"""GL002 names a clear that drops micro-batches of a window that still steps. A clear under the window's own
gate, right after an `if` that skips the update on the losses' values (OmniTokenizer's
`if optim_disc and optim_gen: opt2.step()` then `opt2.zero_grad()`), drops only whole windows whose update was
skipped on purpose: not GL002. A clear on every micro-batch, or one that a window test holds apart from the
step, still is."""

import textwrap

from gradcheck_lint import check_source
from gradcheck_lint.config import Settings

LOOP = """
import torch

model = torch.nn.Linear(4, 1)
opt = torch.optim.Adam(model.parameters())
N = 4
for step, x in enumerate([torch.randn(2, 4)] * 16):
    loss = model(x).pow(2).mean()
    (loss / N).backward()
    if (step + 1) % N == 0:
        update = True
        if loss.item() > 100.0:
            update = False
        if {test}:
            opt.step()
{clear}
"""


def _gl002(test: str, clear: str) -> list[int]:
    text = textwrap.dedent(LOOP.format(test=test, clear=clear))
    return [d.span.line for d in check_source(text, "loop.py", settings=Settings.default()) if d.code == "GL002"]


def test_a_window_whose_update_a_loss_test_skipped_is_dropped_whole() -> None:
    assert _gl002("update", "        opt.zero_grad()") == []


def test_a_clear_on_every_micro_batch_still_drops_the_window() -> None:
    assert _gl002("update", "    opt.zero_grad()") == [16]


def test_a_step_held_back_by_a_second_window_test_is_not_a_skip() -> None:
    # `(step + 1) % (2 * N) == 0`: the clear drops every other window that should have been summed in
    assert _gl002("(step + 1) % (2 * N) == 0", "        opt.zero_grad()") == [16]
