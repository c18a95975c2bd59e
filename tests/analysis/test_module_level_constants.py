"""A loop over `range(n)` where `n` is a module-level literal 1 bound once runs its body once: no second step sees
what the first left. Module-level code includes the `if __name__ == "__main__":` block (dh_ai's timing demos,
lockbox 21: `num_epochs = 1` there, a certain GL001 on a step that runs once)."""

import textwrap

from gradcheck_lint import check_source
from gradcheck_lint.config import Settings

DEMO = """import torch
import torch.nn.functional as F
from torch import nn, optim
from tqdm import tqdm

if __name__ == "__main__":
    num_epochs = {epochs}
{rebind}    model = nn.Linear(10, 3)
    x = torch.randn(20, 10)
    y = torch.randint(0, 3, (20,))
    optimizer = optim.Adam(model.parameters(), lr=0.001)
    for epoch in tqdm(range(num_epochs)):
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
"""


def _gl001(epochs: int, rebind: str = "") -> list[int]:
    source = textwrap.dedent(DEMO).replace("{epochs}", str(epochs)).replace("{rebind}", rebind)
    return [d.span.line for d in check_source(source, "model.py", settings=Settings.default()) if d.code == "GL001"]


def test_one_epoch_fixed_under_the_main_guard_runs_once() -> None:
    assert _gl001(1) == []


def test_more_epochs_or_a_rebound_count_still_step_again() -> None:
    assert _gl001(3) == [15]
    assert _gl001(1, rebind="    num_epochs = int(input())\n") == [16]
