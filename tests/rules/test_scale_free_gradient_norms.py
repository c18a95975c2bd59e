"""GL007 on a norm of still-scaled gradients: not when every use of the norm is free of the scale. FGM's
`r_at = epsilon * param.grad / norm` is a direction, the same whatever common factor the GradScaler put on the
gradients, and `norm != 0` and `torch.isnan(norm)` hold alike (SimpleReDial, lockbox 20 false certain). A norm
compared with a threshold, logged, or dividing something else is the scaled number, and is still reported."""

import textwrap

import pytest

from gradcheck_lint import check_source
from gradcheck_lint.config import Settings

FGM_LOOP = """import torch
from torch import nn


class FGM:
    def __init__(self, model):
        self.model = model
        self.backup = {}

    def attack(self, epsilon=1.0, emb_name="embeddings."):
        for name, param in self.model.named_parameters():
            if param.requires_grad and emb_name in name:
                self.backup[name] = param.data.clone()
                norm = torch.norm(param.grad)
                {attack}

    def restore(self, emb_name="embeddings."):
        for name, param in self.model.named_parameters():
            if param.requires_grad and emb_name in name:
                param.data = self.backup[name]
        self.backup = {}


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.embeddings = nn.Embedding(100, 16)
        self.head = nn.Linear(16, 2)

    def forward(self, x, y):
        return nn.functional.cross_entropy(self.head(self.embeddings(x).mean(1)), y)


def train(loader):
    model = Net()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    scaler = torch.cuda.amp.GradScaler()
    fgm = FGM(model)
    for x, y in loader:
        optimizer.zero_grad()
        with torch.autocast("cuda"):
            loss = model(x, y)
        scaler.scale(loss).backward()
        fgm.attack()
        with torch.autocast("cuda"):
            loss_adv = model(x, y)
        scaler.scale(loss_adv).backward()
        fgm.restore()
        scaler.step(optimizer)
        scaler.update()
"""


def _gl007(attack: str) -> list[int]:
    source = textwrap.dedent(FGM_LOOP).replace("{attack}", attack.replace("\n", "\n                "))
    found = check_source(source, "fgm.py", settings=Settings.default())
    return [d.span.line for d in found if d.code == "GL007"]


@pytest.mark.parametrize("attack", [
    "if norm != 0 and not torch.isnan(norm):\n    param.data.add_(epsilon * param.grad / norm)",
    "r_at = epsilon * param.grad / norm\nparam.data.add_(r_at)",
    "if 0 < norm:\n    param.data.add_(epsilon * param.grad / (norm))",
])
def test_a_direction_of_the_gradients_is_free_of_the_scale(attack: str) -> None:
    assert _gl007(attack) == []


@pytest.mark.parametrize("attack", [
    "if norm > 1.0:\n    param.data.add_(epsilon * param.grad / norm)",
    "print(norm)\nparam.data.add_(epsilon * param.grad / norm)",
    "param.data.add_(epsilon * param.data / norm)",
])
def test_the_scaled_number_itself_is_still_reported(attack: str) -> None:
    assert _gl007(attack) == [14]
