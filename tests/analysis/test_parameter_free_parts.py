"""A part of a model stored from a value handed in (`self._criterion = criterion`) is judged by the object handed in,
never by its owner's class: FairDARTS' search (lockbox 34, a certain GL002 of kind 1/6).

The loss module is chosen by a setting between two classes of another file, both parameter-free. The architect's step
backpropagates the validation loss through `self.model._loss(...)`, which calls `self._criterion`; the loop then clears
the weights' gradients that pass left (first-order DARTS: a by-product, cleared on purpose) and backpropagates its own
loss. Before, the part `model._criterion` was judged by `Network`'s class (which holds parameters), so the clear was
read as dropping gradients of the criterion's own parameters that the weights' loss never refills: "the step sees no
gradient", certain. The criterion holds no parameter: every object it may be (both classes) is parameter-free."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from gradcheck_lint.engine import analyse_text
from support import project_tree

LOSSES = """\
import torch
import torch.nn as nn
import torch.nn.functional as F


class ConvSeparateLoss(nn.modules.loss._Loss):
    def __init__(self, weight=0.1):
        super().__init__()
        self.weight = weight

    def forward(self, input1, target1, input2):
        loss1 = F.cross_entropy(input1, target1)
        loss2 = -F.mse_loss(input2, torch.full_like(input2, 0.5))
        return loss1 + self.weight * loss2, loss1.item(), loss2.item()


class TriSeparateLoss(nn.modules.loss._Loss):
    def __init__(self, weight=0.1):
        super().__init__()
        self.weight = weight

    def forward(self, input1, target1, input2):
        loss1 = F.cross_entropy(input1, target1)
        loss2 = -F.l1_loss(input2, torch.full_like(input2, 0.5))
        return loss1 + self.weight * loss2, loss1.item(), loss2.item()
"""

MODEL = """\
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.autograd import Variable


class Cell(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.op = nn.Linear(c, c)

    def forward(self, s0, s1, weights):
        return self.op(s1) * weights.mean()


class Network(nn.Module):
    def __init__(self, c, num_classes, layers, criterion):
        super().__init__()
        self._criterion = criterion
        self.stem = nn.Sequential(nn.Linear(4, c))
        self.cells = nn.ModuleList()
        for _ in range(layers):
            self.cells += [Cell(c)]
        self.classifier = nn.Linear(c, num_classes)
        self._initialize_alphas()

    def forward(self, input):
        s1 = self.stem(input)
        for cell in self.cells:
            s1 = cell(s1, s1, F.sigmoid(self.alphas_normal))
        return self.classifier(s1.view(s1.size(0), -1))

    def _loss(self, input1, target1, input2):
        logits = self(input1)
        return self._criterion(logits, target1, input2)

    def _initialize_alphas(self):
        self.alphas_normal = Variable(torch.zeros(4, 8), requires_grad=True)
        self.alphas_reduce = Variable(torch.zeros(4, 8), requires_grad=True)

    def arch_parameters(self):
        return [self.alphas_normal, self.alphas_reduce]
"""

ARCHITECT = """\
import torch
import torch.nn.functional as F


class Architect(object):
    def __init__(self, model, lr):
        self.model = model
        self.optimizer = torch.optim.Adam(self.model.arch_parameters(), lr=lr)

    def step(self, input_valid, target_valid):
        self.optimizer.zero_grad()
        aux = torch.cat([F.sigmoid(self.model.alphas_normal), F.sigmoid(self.model.alphas_reduce)], dim=0)
        loss, loss1, loss2 = self.model._loss(input_valid, target_valid, aux)
        loss.backward()
        self.optimizer.step()
        return loss1, loss2
"""

TRAIN = """\
import argparse

import torch
import torch.nn.functional as F
from torch.autograd import Variable

from architect import Architect
from model_search import Network
from separate_loss import ConvSeparateLoss, TriSeparateLoss

parser = argparse.ArgumentParser()
parser.add_argument("--sep_loss", default="l2")


def train(train_queue, valid_queue, model, architect, criterion, model_optimizer):
    for step, (input, target) in enumerate(train_queue):
        input = Variable(input)
        input_search, target_search = next(iter(valid_queue))
        loss1, loss2 = architect.step(input_search, target_search)
        CLEAR_BEFORE
        logits = model(input)
        aux = torch.cat([F.sigmoid(model.alphas_normal), F.sigmoid(model.alphas_reduce)], dim=0)
        loss, _, _ = criterion(logits, target, aux)
        loss.backward()
        CLEAR_AFTER
        before = model.classifier.weight.detach().clone()
        model_optimizer.step()
        assert not torch.equal(before, model.classifier.weight), "the step saw no gradient"


def main():
    criterion = ConvSeparateLoss(0.1) if args.sep_loss == "l2" else TriSeparateLoss(0.1)
    model = Network(8, 3, 2, criterion)
    model_optimizer = torch.optim.SGD(model.parameters(), 0.1)
    architect = Architect(model, 0.01)
    queue = [(torch.randn(2, 4), torch.tensor([0, 1])) for _ in range(3)]
    train(queue, queue, model, architect, criterion, model_optimizer)
    print("trained")


if __name__ == "__main__":
    args = parser.parse_args()
    main()
"""

CLEAR = "model_optimizer.zero_grad()"


def _project(root: Path, train: str) -> Path:
    project_tree(root, {"separate_loss.py": LOSSES, "model_search.py": MODEL, "architect.py": ARCHITECT,
                        "train_search.py": train})
    return root / "train_search.py"


def _found(path: Path) -> list[tuple[str, int, str]]:
    return [(d.code, d.line, d.certainty.value) for d in analyse_text(path.read_text(), str(path)).diagnostics]


def test_the_architect_pass_leftovers_cleared_before_the_weights_pass_are_not_reported(tmp_path: Path) -> None:
    path = _project(tmp_path, TRAIN.replace("CLEAR_BEFORE", CLEAR).replace("CLEAR_AFTER", "pass"))
    assert _found(path) == []


def test_the_script_steps_on_the_weights_gradients_with_either_loss(tmp_path: Path) -> None:
    """What the analysis now says, checked by running it: the step sees the weights' gradients (its assertion holds),
    with each of the two loss classes."""
    path = _project(tmp_path, TRAIN.replace("CLEAR_BEFORE", CLEAR).replace("CLEAR_AFTER", "pass"))
    for choice in ("l2", "l1"):
        run = subprocess.run([sys.executable, str(path), "--sep_loss", choice], cwd=tmp_path, capture_output=True,
                             text=True, timeout=120)
        assert run.returncode == 0 and "trained" in run.stdout, run.stderr


def test_a_clear_between_the_weights_backward_and_their_step_is_still_reported(tmp_path: Path) -> None:
    """The control: the same project with the clear moved between the weights' backward and their step."""
    path = _project(tmp_path, TRAIN.replace("CLEAR_BEFORE", "pass").replace("CLEAR_AFTER", CLEAR))
    clear_line = next(i for i, text in enumerate(path.read_text().splitlines(), 1) if CLEAR in text)
    assert ("GL002", clear_line, "certain") in _found(path)
    run = subprocess.run([sys.executable, str(path)], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert run.returncode != 0 and "the step saw no gradient" in run.stderr
