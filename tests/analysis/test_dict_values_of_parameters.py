"""`.values()` of a model's dict of parameters (`list(self.model._arch_params.values())`, a `ParameterDict`, a
`ModuleDict`) holds the parameters its items hold: an optimizer over all of them clears what an optimizer over one item
(`[self.model._arch_params["alpha"]]`) steps on. Read as parameters of no known model, the clear of the first was taken
for a clear of other parameters, and the second's gradients for ones nothing clears (Auto-NBA's architect, lockbox 33:
three certain GL007, two possible GL001; with the model's own loss a certain GL005 in this script). An optimizer over
another part's `.values()` still leaves those gradients uncleared."""

from __future__ import annotations

from gradcheck_lint import check_source

SCRIPT = """\
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)
        self._arch_params = self._build_arch_parameters()
        self.heads = nn.ModuleDict({"a": nn.Linear(4, 2)})

    def _build_arch_parameters(self):
        setattr(self, "alpha", nn.Parameter(1e-3 * torch.ones(3, 4), requires_grad=True))
        setattr(self, "beta", nn.Parameter(1e-3 * torch.ones(3, 4), requires_grad=True))
        return {"alpha": self.alpha, "beta": self.beta}

    def forward(self, x):
        return self.fc(x) * self.alpha.sum() * self.beta.sum()


class Architect(object):
    def __init__(self, model, args):
        self.model = model
        self._args = args
        self.optimizer = torch.optim.Adam(list(self.model.{held}.values()), lr=0.1)
        if self._args.enable_mix_lr:
            self.optimizer_alpha = torch.optim.Adam([self.model._arch_params["alpha"]], lr=0.1)
            self.optimizer_beta = torch.optim.Adam([self.model._arch_params["beta"]], lr=0.1)

    def step(self, x, y):
        self.optimizer.zero_grad()
        loss = ((self.model(x) - y) ** 2).mean()
        loss.backward()
        if self._args.enable_mix_lr:
            self.optimizer_alpha.step()
            self.optimizer_beta.step()
        else:
            self.optimizer.step()
            self.optimizer.zero_grad()


def train(model, architect, optimizer, loader, grad_clip):
    for x, y in loader:
        architect.step(x, y)
        loss = ((model(x) - y) ** 2).mean()
        optimizer.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
        optimizer.step()


class Args:
    enable_mix_lr = True


model = Net()
architect = Architect(model, Args())
optimizer = torch.optim.SGD(model.fc.parameters(), lr=0.1)
train(model, architect, optimizer, [(torch.randn(5, 4), torch.randn(5, 2))] * 3, 5.0)
"""


def codes(held: str) -> list[tuple[int, str]]:
    return sorted((d.line, d.code) for d in check_source(SCRIPT.replace("{held}", held)))


def test_an_optimizer_over_the_dicts_values_clears_what_one_over_an_item_steps() -> None:
    assert codes("_arch_params") == []


def test_an_optimizer_over_another_parts_values_leaves_them_uncleared() -> None:
    found = {code for _, code in codes("heads")}
    assert {"GL001", "GL005", "GL007"} <= found
