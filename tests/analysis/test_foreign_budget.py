"""The budgets for reading other files' code: spent on what touches gradients, and what they leave unread is not
taken as known (`project.context.ProjectView.follows`, `gradstate.PathState.unread`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gradcheck_lint.config import Settings
from gradcheck_lint.engine import analyse_text
from gradcheck_lint.project import context
from support import project_tree, unmarked_tree


def _found(path: Path) -> list[tuple[str, int, bool]]:
    report = analyse_text(path.read_text(), str(path), Settings.default(), project=True)
    return [(d.code, d.line, d.possible) for d in report.diagnostics]


# A GAN solver whose training method clears every optimizer through a helper method of its own class
# (BicycleGAN-pytorch's `self.all_zero_grad()`), run from a script in another file that builds the models
# and optimizers (so only the script's analysis knows them). The method's long
# loop body spends the budget of one call from the script before its second iteration reaches the helper.
SOLVER = """\
    import torch
    import torch.nn.functional as F


    def mse(score, target):
        return F.mse_loss(score, torch.full_like(score, target))


    class Solver:
        def __init__(self, D, G, optim_D, optim_G):
            self.D, self.G = D, G
            self.optim_D, self.optim_G = optim_D, optim_G

        def all_zero_grad(self):
            CLEARS

        def train(self, loader, epochs):
            for epoch in range(epochs):
                for real in loader:
                    z = torch.randn(real.size(0), 4)
                    fake = self.G(z)
                    d_real = self.D(real)
                    d_fake = self.D(fake.detach())
                    d_loss = mse(d_real, 1) + mse(d_fake, 0)
                    self.all_zero_grad()
                    d_loss.backward()
                    self.optim_D.step()
                    g_loss = mse(self.D(fake), 1)
                    self.all_zero_grad()
                    g_loss.backward()
                    self.optim_G.step()
"""
SCRIPT = """\
    import torch
    from solver import Solver


    def main():
        D, G = torch.nn.Linear(8, 1), torch.nn.Linear(4, 8)
        optim_D = torch.optim.Adam(D.parameters(), lr=2e-4)
        optim_G = torch.optim.Adam(G.parameters(), lr=2e-4)
        solver = Solver(D, G, optim_D, optim_G)
        solver.train([torch.randn(2, 8) for _ in range(4)], epochs=2)


    if __name__ == "__main__":
        main()
"""


BOTH = "self.optim_D.zero_grad()\n            self.optim_G.zero_grad()"
ONLY_G = "self.optim_G.zero_grad()"


def _gan(tmp_path: Path, clears: str) -> Path:
    root = project_tree(tmp_path, {"solver.py": SOLVER.replace("CLEARS", clears), "train.py": SCRIPT})
    return root / "train.py"


def test_a_helper_that_clears_is_followed_past_the_budget_of_one_call(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    # past the budget of one call from the script, the helper still runs: it touches gradients (before, it
    # was left an opaque call on the second iteration, and the first iteration's gradients read as never
    # cleared: a certain GL001 and a GL005)
    monkeypatch.setattr(context, "FOREIGN_CALL_BUDGET", 5)
    assert _found(_gan(tmp_path, BOTH)) == []


def test_a_helper_that_clears_nothing_still_leaves_stale_gradients(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    # the twin: the helper clears only the generator's: the discriminator's gradients are never cleared
    monkeypatch.setattr(context, "FOREIGN_CALL_BUDGET", 5)
    found = _found(_gan(tmp_path, ONLY_G))
    assert [(c, line) for c, line, possible in found if not possible] in ([("GL001", 10)], [("GL005", 10)]), found


def test_a_helper_left_unread_at_the_cap_makes_stale_gradients_only_possible(tmp_path: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    # past the cap even a helper that touches gradients stays unread: it may have cleared them, so what the
    # gradients hold after it is not certain (a certain GL001 before)
    monkeypatch.setattr(context, "FOREIGN_CALL_BUDGET", 5)
    monkeypatch.setattr(context, "FOREIGN_WORK_CAP", 12)
    found = _found(_gan(tmp_path, BOTH))
    assert all(possible for _code, _line, possible in found), found


# A tree with no project marker (an unpacked archive): a script in a subfolder imports a package beside it
# (`bin/train.py`: `from src.optim import Optimizer`), as when run from the top. The folder gradlint runs
# from (its settings' root) is the project root then; before, the script's own folder was, and the import
# was not found: the wrapper's `pre_step()` that clears was not read, a certain false GL001.


@pytest.mark.parametrize(("clears", "expected"), [("self.opt.zero_grad()", []), ("pass", [("GL001", 12, False)])])
def test_a_tree_without_a_marker_is_read_from_the_folder_gradlint_runs_in(tmp_path: Path, clears: str,
                                                                          expected: list[tuple[str, int, bool]]) -> None:
    script = unmarked_tree(tmp_path, clears)
    report = analyse_text(script.read_text(), str(script), Settings.default(root=str(tmp_path)), project=True)
    assert [(d.code, d.line, d.possible) for d in report.diagnostics] == expected


# cookietts's Tacotron2 trainer (lockbox 13, three certain GL008 false alarms): the loss module of another file
# runs backward and the step itself and returns `loss.item()` among its outputs; the trainer keeps that number
# in a moving average. Past the budget for reading other files, the module's `forward` was not read, and its
# result was taken to hold the graph of the forward passes it was handed: "certain".
CRITERION = """\
    import torch
    import torch.nn as nn


    class Criterion(nn.Module):
        def forward(self, out, y, optimizer=None):
            loss = ((out - y) ** 2).mean()
            reduced = loss.item()
            if optimizer is not None:
                loss.backward()
                optimizer.step()
            return loss, reduced
"""
TRAINER = """\
    import torch
    from criterion import Criterion


    class MovingAverage:
        def __init__(self):
            self.values = []

        def process(self, value):
            self.values.append(value)
            return sum(self.values) / len(self.values)


    def train(loader):
        model = torch.nn.Linear(3, 1)
        criterion = Criterion()
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        average = MovingAverage()
        for x, y in loader:
            opt.zero_grad()
            loss, reduced = criterion(model(x), y, opt)
            average.process(reduced)
"""


def test_a_number_returned_by_a_forward_read_keeps_no_graph(tmp_path: Path) -> None:
    root = project_tree(tmp_path, {"criterion.py": CRITERION, "train.py": TRAINER})
    assert [c for c, _line, _possible in _found(root / "train.py") if c == "GL008"] == []


def test_what_a_forward_past_the_budget_returns_is_assumed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for budget in ("FOREIGN_WORK_BUDGET", "FOREIGN_CALL_BUDGET", "FOREIGN_WORK_CAP"):
        monkeypatch.setattr(context, budget, 0)
    root = project_tree(tmp_path, {"criterion.py": CRITERION, "train.py": TRAINER})
    found = [(line, possible) for c, line, possible in _found(root / "train.py") if c == "GL008"]
    assert found and all(possible for _line, possible in found), found


# stable-diffusion-pytorch's trainer (a lockbox-13 bug): `train_loss += loss` with `loss` from a model of another
# file past the budget, then `loss.backward()`: the backward proves the stored value holds a graph, whoever built it.
MODEL = """\
    import torch


    class Diffusion(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.net = torch.nn.Linear(3, 1)

        def forward(self, x, y):
            return ((self.net(x) - y) ** 2).mean()
"""
EPOCH = """\
    import torch
    from diffusion import Diffusion


    def train(loader):
        model = Diffusion()
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        train_loss = 0.0
        for x, y in loader:
            loss = model(x, y)
            train_loss += loss
            opt.zero_grad()
            loss.backward()
            opt.step()
        return train_loss / len(loader)
"""


def test_a_backward_of_the_value_stored_proves_its_graph(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for budget in ("FOREIGN_WORK_BUDGET", "FOREIGN_CALL_BUDGET", "FOREIGN_WORK_CAP"):
        monkeypatch.setattr(context, budget, 0)
    root = project_tree(tmp_path, {"diffusion.py": MODEL, "train.py": EPOCH})
    assert [(c, line, possible) for c, line, possible in _found(root / "train.py")] == [("GL008", 11, False)]


# arturml/pytorch-wgan-gp (lockbox 23, a certain false GL002): a critic trained each iteration and a generator every
# n-th, both on samples of an inert helper method (`self._sample(n)` returns `self.G(z)`), in a class of another file
# than the script. The helper was followed on the first iterations, then, past the budget of the script's one call,
# left opaque: the generator's loss no longer reached the generator, and its clear of the critic's leak read as
# discarding the only gradients its step would see.
WGAN = """\
    import torch
    from torch.autograd import Variable


    class WGANGP:
        def __init__(self, generator, discriminator, g_optimizer, d_optimizer, latent_shape, n_critic=5, use_cuda=True):
            self.G = generator
            self.D = discriminator
            self.G_opt = g_optimizer
            self.D_opt = d_optimizer
            self.latent_shape = latent_shape
            self.n_critic = n_critic
            self.use_cuda = use_cuda
            self.steps = 0

        def train(self, data_loader, n_epochs):
            for epoch in range(1, n_epochs + 1):
                self._train_epoch(data_loader)

        def _train_epoch(self, data_loader):
            for i, (data, _) in enumerate(data_loader):
                self.steps += 1
                d_loss, grad_penalty = self._discriminator_train_step(data)
                if self.steps % self.n_critic == 0:
                    g_loss = self._generator_train_step(data.size(0))

        def _discriminator_train_step(self, data):
            batch_size = data.size(0)
            generated_data = self._sample(batch_size)
            grad_penalty = self._gradient_penalty(data, generated_data)
            d_loss = self.D(generated_data).mean() - self.D(data).mean() + grad_penalty
            self.D_opt.zero_grad()
            d_loss.backward()
            self.D_opt.step()
            return d_loss.item(), grad_penalty.item()

        def _generator_train_step(self, batch_size):
            self.G_opt.zero_grad()
            generated_data = self._sample(batch_size)
            g_loss = -self.D(generated_data).mean()
            g_loss.backward()
            self.G_opt.step()
            return g_loss.item()

        def _gradient_penalty(self, data, generated_data, gamma=10):
            epsilon = torch.rand(data.size(0), 1, 1, 1).expand_as(data)
            interpolation = epsilon * data.data + (1 - epsilon) * generated_data.data
            interpolation = Variable(interpolation, requires_grad=True)
            logits = self.D(interpolation)
            gradients = torch.autograd.grad(outputs=logits, inputs=interpolation, grad_outputs=torch.ones(logits.size()),
                                            create_graph=True, retain_graph=True)[0]
            gradients_norm = torch.sqrt(torch.sum(gradients.view(data.size(0), -1) ** 2, dim=1) + 1e-12)
            return gamma * ((gradients_norm - 1) ** 2).mean()

        def _sample(self, n_samples):
            z = Variable(torch.randn(n_samples, *self.latent_shape))
            if self.use_cuda:
                z = z.cuda()
            return self.G(z)
"""
MODELS = """\
    import torch.nn as nn


    class Generator(nn.Module):
        def __init__(self, d=8):
            super().__init__()
            self.net = nn.Sequential(nn.Linear(4, d), nn.BatchNorm1d(d), nn.ReLU(True), nn.Linear(d, 8), nn.Tanh())

        def forward(self, z):
            return self.net(z)


    class Critic(nn.Module):
        def __init__(self, d=8):
            super().__init__()
            self.net = nn.Sequential(nn.Linear(8, d), nn.LeakyReLU(0.2, True), nn.Linear(d, 1))

        def forward(self, x):
            return self.net(x)
"""
WGAN_SCRIPT = """\
    import torch
    from models import Critic, Generator
    from wgan import WGANGP

    G, D = Generator(), Critic()
    G_opt = torch.optim.Adam(G.parameters(), lr=1e-4)
    D_opt = torch.optim.Adam(D.parameters(), lr=1e-4)
    WGANGP(G, D, G_opt, D_opt, [4]).train(loader, 200)
"""


@pytest.mark.parametrize("budget", [12, 40, 120, context.FOREIGN_CALL_BUDGET])
def test_an_inert_helper_followed_once_is_followed_again_past_the_budget(tmp_path: Path, budget: int,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(context, "FOREIGN_CALL_BUDGET", budget)
    root = project_tree(tmp_path, {"models.py": MODELS, "wgan.py": WGAN, "train.py": WGAN_SCRIPT})
    assert _found(root / "train.py") == []


# ruocwang/darts-pt (lockbox 28, two certain false GL001): a plain `Architect` class of another file builds the
# architecture optimizer in its `__init__` and steps it in `step()`; the search loop clears it from outside
# (`architect.optimizer.zero_grad()`) before each `architect.step(...)`. A large model's construction spent the
# budget before `Architect(model, args)`: its `__init__` stayed opaque, `architect.optimizer` became an optimizer
# of its own, and the step's (read from the class's stand-in `self`) was never cleared.
ARCHITECT = """\
    import torch


    class Architect(object):
        def __init__(self, model, args):
            self.model = model
            self.optimizer = torch.optim.Adam(self.model.arch_parameters(), lr=args.arch_learning_rate)

        def step(self, input_valid, target_valid):
            loss = self.model.loss(input_valid, target_valid)
            loss.backward()
            self.optimizer.step()
"""
NETWORK = """\
    import torch
    import torch.nn as nn


    class Network(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 1)
            self.alphas = nn.Parameter(torch.zeros(4))

        def arch_parameters(self):
            return [self.alphas]

        def weights(self):
            return self.fc.parameters()

        def forward(self, x):
            return self.fc(x * self.alphas)

        def loss(self, x, y):
            return ((self(x) - y) ** 2).mean()
"""
SEARCH = """\
    import argparse
    import torch
    from architect import Architect
    from network import Network


    def main(queue):
        args = argparse.ArgumentParser().parse_args()
        model = Network()
        optimizer = torch.optim.SGD(model.weights(), lr=0.1)
        architect = Architect(model, args)
        for x, y, x_val, y_val in queue:
            optimizer.zero_grad(); {clear}
            architect.step(x_val, y_val)
            optimizer.zero_grad()
            loss = model.loss(x, y)
            loss.backward()
            optimizer.step()
"""


@pytest.mark.parametrize("budget", [context.FOREIGN_WORK_BUDGET, -1])
def test_a_plain_class_whose_methods_train_is_built_past_the_budget(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, budget: int) -> None:
    monkeypatch.setattr(context, "FOREIGN_WORK_BUDGET", budget)  # -1: spent before the first call
    clear = "architect.optimizer.zero_grad()"
    files = {"architect.py": ARCHITECT, "network.py": NETWORK, "search.py": SEARCH.format(clear=clear)}
    root = project_tree(tmp_path, files)
    assert _found(root / "search.py") == []


# hirofumi0810/neural_sp (the real-bug benchmark): `set_optimizer(model, name, lr)` of another file picks one of many
# optimizer classes by name, too large an inert function to follow past the budget; the optimizer was the result
# of a call not read, and every finding on its steps `possible`. A function that builds an optimizer says which
# parameters it updates: it is read past the budgets.
FACTORY = """\
    import logging
    import torch

    logger = logging.getLogger(__name__)


    def set_optimizer(model, optimizer, lr, weight_decay=0.0):
        parameters = [p for p in model.parameters() if p.requires_grad]
        for n in [n for n, p in model.named_parameters() if not p.requires_grad]:
            logger.info("%s" % n)
        {arms}
        else:
            raise NotImplementedError(optimizer)
        return opt
"""
ARM = """{kw} optimizer == "{name}":
            opt = torch.optim.{cls}(parameters, lr=lr, weight_decay=weight_decay)
            logger.info("optimizer: %s, lr: %f, weight decay: %f" % ("{name}", lr, weight_decay))"""
LOOP = """\
    import torch
    from optim_factory import set_optimizer


    def main(loader, args):
        model = torch.nn.Linear(4, 1)
        optimizer = set_optimizer(model, args.optimizer, args.lr)
        for x, y in loader:
            loss = ((model(x) - y) ** 2).mean()
            loss.backward()
            optimizer.step()
"""


@pytest.mark.parametrize("budget", [context.FOREIGN_WORK_BUDGET, -1])
def test_an_optimizer_factory_is_read_past_the_budget(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, budget: int) -> None:
    monkeypatch.setattr(context, "FOREIGN_WORK_BUDGET", budget)
    names = [("sgd", "SGD"), ("momentum", "SGD"), ("adam", "Adam"), ("adamw", "AdamW"), ("adadelta", "Adadelta"),
             ("adagrad", "Adagrad"), ("rmsprop", "RMSprop"), ("adamax", "Adamax")]
    arms = "\n        ".join(ARM.format(kw="if" if i == 0 else "elif", name=n, cls=c) for i, (n, c) in enumerate(names))
    root = project_tree(tmp_path, {"optim_factory.py": FACTORY.format(arms=arms), "train.py": LOOP})
    assert _found(root / "train.py") == [("GL001", 11, False)]
