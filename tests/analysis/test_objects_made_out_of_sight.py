"""Objects whose class the project defines, read where the object is used: a `forward` returning an object whose
fields it set (`out.loss_value`, a float made with `.item()`), a field of an object a called function makes anew,
a parameter annotated with a class of the project (`model: Net`, a NumPy network with its own `backward(Y)`), and
a graph known only from a call named `backward` on an object nothing is known of."""

from __future__ import annotations

from pathlib import Path

from gradcheck_lint.config import Settings
from gradcheck_lint.engine import analyse_text
from support import project_tree


def _found(path: Path, codes: frozenset[str] = frozenset({"GL001", "GL002", "GL008"})) -> set[tuple[int, str, str]]:
    report = analyse_text(path.read_text(), str(path), Settings.default().with_enabled(codes))
    return {(d.line, d.code, d.certainty.value) for d in report.diagnostics}


OUTPUT_MODEL = """\
import torch
import torch.nn as nn


class Output(object):
    def __init__(self, loss=0, loss_value: float = 0):
        self.loss = loss
        self.loss_value = loss_value


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 1)

    def forward(self, x, y):
        r = Output()
        err = (self.fc(x) - y).pow(2).mean()
        r.loss = r.loss + err
        r.loss_value += err.item()
        return r
"""

OUTPUT_TRAIN = """\
import torch
from model import Net


def train_batch(model, optimizer, x, y):
    optimizer.zero_grad()
    out = model(x, y)
    out.loss.backward()
    optimizer.step()
    return out.{field}


def train(model, data):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    losses = []
    for x, y in data:
        loss = train_batch(model, optimizer, x, y)
        losses.append(loss)
    return losses


if __name__ == "__main__":
    train(Net(), [(torch.randn(2, 4), torch.randn(2, 1))] * 3)
"""


def test_a_number_field_of_the_object_a_forward_returns_keeps_no_graph(tmp_path: Path) -> None:
    """`out.loss_value` was read as the forward's output, a tensor with its graph (seq2seq-summarizer's GL008);
    and `r.loss = r.loss + err` in the forward as a total kept across the training loop's iterations."""
    root = project_tree(tmp_path / "p", {"model.py": OUTPUT_MODEL, "train.py": OUTPUT_TRAIN.format(field="loss_value")})
    assert _found(root / "train.py") == set()
    assert _found(root / "model.py") == set()


def test_a_tensor_field_of_the_object_a_forward_returns_keeps_its_graph(tmp_path: Path) -> None:
    root = project_tree(tmp_path / "p", {"model.py": OUTPUT_MODEL, "train.py": OUTPUT_TRAIN.format(field="loss")})
    assert _found(root / "train.py") == {(18, "GL008", "certain")}


FIELD_OF_SELF = """\
import torch


class Stats:
    def __init__(self):
        self.total = 0


class Trainer:
    def __init__(self, model):
        self.model = model
        self.opt = torch.optim.SGD(model.parameters(), lr=0.1)
        self.stats = Stats()

    def step(self, x):
        {made}
        self.opt.zero_grad()
        loss = self.model(x).mean()
        loss.backward()
        self.opt.step()
        stats.total = stats.total + loss
        return stats

    def fit(self, data):
        for x in data:
            self.step(x)


Trainer(torch.nn.Linear(4, 1)).fit(torch.randn(8, 2, 4))
"""


def test_a_field_of_an_object_the_call_makes_anew_is_dropped_with_it(tmp_path: Path) -> None:
    root = project_tree(tmp_path / "p", {"t.py": FIELD_OF_SELF.format(made="stats = Stats()")})
    assert _found(root / "t.py") == set()


def test_a_field_of_an_object_kept_across_calls_keeps_every_graph(tmp_path: Path) -> None:
    root = project_tree(tmp_path / "p", {"t.py": FIELD_OF_SELF.format(made="stats = self.stats")})
    assert {code for _line, code, _c in _found(root / "t.py")} == {"GL008"}


NUMPY_NETWORK = """\
import numpy as np


class Network:
    def __init__(self, n):
        self.W = np.zeros((1, n))
        self.dW = np.zeros((1, n))

    def forward(self, X):
        self.X = X
        return self.W @ X

    def backward(self, Y):
        self.dW = (self.W @ self.X - Y) @ self.X.T

    def loss(self, Y, Y_hat):
        return np.mean((Y - Y_hat) ** 2)


class Optimizer:
    def __init__(self, model, lr):
        self.model = model
        self.lr = lr

    def zero_grad(self):
        self.grad = None

    def step(self):
        self.model.W -= self.lr * self.model.dW


def train(model{annotation}, optimizer, batches, epochs):
    losses = []
    for _ in range(epochs):
        for X, Y in batches:
            Y_hat = model.forward(X)
            model.backward(Y)
            optimizer.zero_grad()
            optimizer.step()
            loss = model.loss(Y, Y_hat)
            losses.append(loss)
    return losses
"""


def test_a_parameter_annotated_with_a_class_of_the_project_runs_its_methods(tmp_path: Path) -> None:
    """`model: Network`: `model.backward(Y)` is that NumPy network's method, not a tensor's backward, and the
    loss it returns is `np.mean(...)` (DL-Demos' AdvancedOptimizer: GL008 certain, GL002 possible)."""
    root = project_tree(tmp_path / "p", {"net.py": NUMPY_NETWORK.format(annotation=": Network")})
    assert _found(root / "net.py") == set()


def test_a_graph_known_only_from_a_call_named_backward_is_assumed(tmp_path: Path) -> None:
    """Unannotated, `model` is nothing known: that `model.backward(Y)` is a tensor's backward, and so that what
    `model.loss(...)` returns holds a graph, rests on the call's name: never `certain`."""
    root = project_tree(tmp_path / "p", {"net.py": NUMPY_NETWORK.format(annotation="")})
    assert all(certainty == "possible" for _line, _code, certainty in _found(root / "net.py"))


LOSS_OF_A_PARAMETER = """\
import torch


def train(model, optimizer, data):
    history = []
    for x, y in data:
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        history.append(loss)
    return history


net = torch.nn.Linear(4, 1)
train(net, torch.optim.SGD(net.parameters(), lr=0.1), [(torch.randn(2, 4), torch.randn(2, 1))] * 3)
"""


def test_a_loss_a_forward_read_in_sight_made_stays_certain(tmp_path: Path) -> None:
    root = project_tree(tmp_path / "p", {"t.py": LOSS_OF_A_PARAMETER})
    assert _found(root / "t.py") == {(11, "GL008", "certain")}
