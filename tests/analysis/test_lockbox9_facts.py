"""Facts of lockbox 9's false alarms, found after its opening (they do not count on it): items of a tuple handed in
are two objects (`optimizer[0]`, `optimizer[1]`), not the tuple stepped twice; a tuple-unpacking assignment binds
each name afresh in the iteration."""

from __future__ import annotations

from gradcheck_lint.api import check_source

TUPLE = '''
import torch


def train(model, optimizer, loader):
    for inputs, labels in loader:
        outputs = model(inputs)
        loss = torch.nn.functional.cross_entropy(outputs, labels)
        loss.backward()
        if isinstance(optimizer, tuple):
            optimizer[0].step()
            optimizer[1].step()
            optimizer[0].zero_grad()
            optimizer[1].zero_grad()
        else:
            optimizer.step()
            optimizer.zero_grad()
'''


def test_items_of_a_tuple_of_optimizers_are_two_optimizers() -> None:
    """TFC's CLOCS: each item stepped, then each cleared; the else arm steps the one optimizer."""
    assert check_source(TUPLE) == []


UGBA = '''
import torch


class Trojan(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.feat = torch.nn.Linear(4, 4)
        self.weight = torch.nn.Linear(4, 2)

    def forward(self, x):
        return self.feat(x), self.weight(x)


class Attack:
    def __init__(self, shadow):
        self.trojan = Trojan()
        self.shadow_model = shadow

    def fit(self, features, epochs, inner):
        optimizer_shadow = torch.optim.Adam(self.shadow_model.parameters(), lr=0.01)
        for i in range(epochs):
            for j in range(inner):
                optimizer_shadow.zero_grad()
                trojan_feat, trojan_weights = self.trojan(features)
                trojan_weights = torch.cat([torch.ones([len(trojan_feat), 1]), trojan_weights], dim=1)
                trojan_weights = trojan_weights.flatten()
                poison_x = torch.cat([features, trojan_feat]).detach()
                loss_inner = self.shadow_model(poison_x).mean() + 0 * trojan_weights.detach().sum()
                loss_inner.backward()
                optimizer_shadow.step()
'''


def test_a_name_bound_by_tuple_unpacking_in_the_iteration_is_no_accumulator() -> None:
    """DeepRobust's UGBA: `trojan_feat, trojan_weights = self.trojan(x)`, then `trojan_weights = torch.cat([...,
    trojan_weights])`: rebuilt from this iteration's forward, nothing carried over."""
    assert check_source(UGBA) == []
