"""Two facts about what a module's result holds, each read only as far as it was seen.

A copy of a module (`fast = copy.deepcopy(self.model)`, MAML's fast weights) is of its original's class, not of
`copy.deepcopy`: where the original's `forward` is not read (a class of another file, a model made out of sight),
neither is the copy's, so which items of its result hold a graph is unknown. A meta-learning trainer of lockbox 22
summed `output['acc']` of such a copy (an accuracy its forward returned by `.item()`): six false certain GL008.

A backward pass through one item of a result made out of sight (`loss = out["loss"]; loss.backward()`, or
`out["loss"].backward()`) proves that item holds a graph, not the others: `out["acc"]` stays unknown, `out["loss"]`
kept across iterations is a graph kept alive (a miss before: the item was never tied to the backward)."""

from __future__ import annotations

from gradcheck_lint.engine import analyse_text

MAML = '''
import torch
from copy import deepcopy

from meta.models import SentimentClassifier


class BaseTrainer:
    def __init__(self, config):
        self.config = config
        self.model = SentimentClassifier(config["hidden"])

    def save_checkpoint(self, path):
        torch.save({"model_state": self.model.state_dict()}, path)


class FOMAMLTrainer(BaseTrainer):
    def outer_loop(self, domains):
        meta_acc = 0
        for domain in domains:
            results = self.inner_loop(domain)
            meta_acc += results["accuracy"]
        return meta_acc / len(domains)

    def inner_loop(self, batches):
        fast_weight_net = deepcopy(self.model)
        inner_opt = torch.optim.Adam(fast_weight_net.parameters(), lr=self.config["fast_lr"])
        for x, y in batches:
            output = fast_weight_net(x=x, labels=y)
            loss = output["loss"]
            loss.backward()
            inner_opt.step()
            inner_opt.zero_grad()
        query_acc = 0
        for x, y in batches:
            output = fast_weight_net(x=x, labels=y)
            query_acc += output[KEY]
        return {"accuracy": query_acc / len(batches)}
'''

HANDED_IN = '''
import torch


def train(model, loader, lr):
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    total = 0
    for x, y in loader:
        out = model(x, labels=y)
        BACKWARD
        optimizer.step()
        optimizer.zero_grad()
        total += out[KEY]
    return total
'''

LIBRARY_COPY = '''
import copy

import torch


def adapt(base, batches, lr):
    fast = copy.deepcopy(base)
    optimizer = torch.optim.SGD(fast.parameters(), lr=lr)
    losses = []
    for x, y in batches:
        loss = torch.nn.functional.mse_loss(fast(x), y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss)
    return losses


adapt(torch.nn.Linear(4, 1), [(torch.randn(8, 4), torch.randn(8, 1))] * 3, 0.1)
'''


def gl008(text: str, certain_only: bool = True) -> list[int]:
    return [d.span.line for d in analyse_text(text, "train.py").diagnostics
            if d.code == "GL008" and not (certain_only and d.possible)]


def line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


def test_an_item_of_a_copy_of_a_model_made_out_of_sight_is_not_known_to_hold_a_graph() -> None:
    assert gl008(MAML.replace("KEY", '"acc"')) == []


def test_the_item_backpropagated_through_a_copy_is_a_graph_kept_alive() -> None:
    # the inner loop keeps the loss item of the copy's result it backpropagated: a graph each step keeps
    text = MAML.replace("            inner_opt.zero_grad()\n",
                        "            inner_opt.zero_grad()\n            self.kept.append(output[\"loss\"])\n")
    assert gl008(text.replace("KEY", '"acc"')) == [line_of(text, "self.kept.append")]


def test_another_item_than_the_one_backpropagated_holds_no_known_graph() -> None:
    for backward in ('loss = out["loss"]\n        loss.backward()', 'out["loss"].backward()'):
        text = HANDED_IN.replace("BACKWARD", backward)
        assert gl008(text.replace("KEY", '"acc"'), certain_only=False) == []


def test_the_item_backpropagated_kept_across_iterations_is_found() -> None:
    for backward in ('loss = out["loss"]\n        loss.backward()', 'out["loss"].backward()'):
        text = HANDED_IN.replace("BACKWARD", backward).replace("KEY", '"loss"')
        assert gl008(text) == [line_of(text, "total += out")]


def test_a_rebound_container_is_not_the_one_backpropagated() -> None:
    # `loss` names an item of the first result; `out` is bound anew before the backward
    text = HANDED_IN.replace("BACKWARD", 'loss = out["loss"]\n        out = model(x)\n        loss.backward()')
    assert gl008(text.replace("KEY", '"loss"')) == []


def test_a_copy_of_a_library_module_is_still_read() -> None:
    assert gl008(LIBRARY_COPY) == [line_of(LIBRARY_COPY, "losses.append(loss)")]
