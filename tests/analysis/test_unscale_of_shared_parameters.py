"""The GradScaler's scale is on gradients, not on optimizers: `scaler.unscale_(optimizer_w)` of `SGD(model.parameters())`
unscales the gradient of every parameter that optimizer holds, also those a second optimizer steps too (DARTS's
`Adam([model.alphas])`). A clip of `model.parameters()` right after it reads unscaled gradients only (lockbox 22's
nas-framework: a false certain GL007, after its opening). When the second optimizer holds a parameter the first does
not, that parameter's gradient is still scaled at the clip."""

from __future__ import annotations

from gradcheck_lint.engine import analyse_text

SOURCE = '''
import torch
from torch import nn
from torch.optim import SGD, Adam


class SuperNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Linear(8, 8)
        self.alphas = nn.Parameter(1e-3 * torch.randn(3, 4))
        self.head = nn.Linear(8, 2)

    def forward(self, x):
        w = torch.softmax(self.alphas, dim=1)
        return self.head(self.stem(x) * w.sum())


class Trainer:
    def __init__(self, grad_clip, use_amp):
        self.grad_clip = grad_clip
        self.model = SuperNet()
        self.optimizer_w = SGD(WEIGHTS, lr=0.1)
        self.optimizer_alpha = Adam([self.model.alphas], lr=3e-4)
        self.scaler = torch.cuda.amp.GradScaler(enabled=use_amp)

    def step_weights(self, x, y):
        self.optimizer_w.zero_grad()
        with torch.cuda.amp.autocast():
            loss = nn.CrossEntropyLoss()(self.model(x), y)
        self.scaler.scale(loss).backward()
        if self.grad_clip is not None:
            self.scaler.unscale_(self.optimizer_w)
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.grad_clip)
        self.scaler.step(self.optimizer_w)
        self.scaler.update()

    def step_alpha(self, x, y):
        self.optimizer_alpha.zero_grad()
        with torch.cuda.amp.autocast():
            loss = nn.CrossEntropyLoss()(self.model(x), y)
        self.scaler.scale(loss).backward()
        self.scaler.step(self.optimizer_alpha)
        self.scaler.update()

    def fit(self, train, valid):
        for (x, y), (xv, yv) in zip(train, valid):
            self.step_weights(x, y)
            self.step_alpha(xv, yv)
'''


def gl007(text: str) -> list[int]:
    return [d.span.line for d in analyse_text(text, "train.py").diagnostics if d.code == "GL007"]


def test_an_unscale_of_the_optimizer_holding_every_parameter_unscales_the_other_optimizers_too() -> None:
    assert gl007(SOURCE.replace("WEIGHTS", "self.model.parameters()")) == []


def test_a_parameter_only_the_other_optimizer_holds_is_still_scaled_at_the_clip() -> None:
    text = SOURCE.replace("WEIGHTS", "[*self.model.stem.parameters(), *self.model.head.parameters()]")
    assert gl007(text) == [next(n for n, line in enumerate(text.splitlines(), 1) if "clip_grad_norm_" in line)]
