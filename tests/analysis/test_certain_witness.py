"""GL001 is graded by a certain witness where any path holds one. A `try: loss.backward() except ...:` leaves, for the
same backward, a certain stale contribution on the normal path and an uncertain twin on the handler's (the exception
may have come before any gradient was written); the check took the first one met, the uncertain one, and a real
missing clear (air-hockey-rl's GAT trainer, lockbox 12 after its opening: it does not count there) was `possible`."""

from __future__ import annotations

from gradcheck_lint.engine import analyse_text


def found(text: str) -> list[tuple[str, int, str]]:
    return sorted((d.code, d.span.line, d.certainty.value) for d in analyse_text(text, "train.py").diagnostics)


TRAINER = """\
import torch
from torch import nn


class Trainer:
    def __init__(self):
        self.model = nn.Linear(4, 1)
        self.opt = torch.optim.Adam(self.model.parameters(), lr=1e-4)

    def train(self, loader):
        for x, y in loader:
            CLEAR
            loss = ((self.model(x) - y) ** 2).mean()
            try:
                loss.backward()
            except Exception as e:
                print(e)
            self.opt.step()
"""


def test_the_normal_paths_stale_gradients_make_the_finding_certain() -> None:
    assert found(TRAINER.replace("            CLEAR\n", "")) == [("GL001", 17, "certain")]
    assert found(TRAINER.replace("CLEAR", "self.opt.zero_grad()")) == []
