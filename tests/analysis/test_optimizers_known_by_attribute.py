"""GL001's "clears other parameters" says the cleared object and the stepped optimizer differ. When the stepped one
is known only as an attribute of a helper object whose `__init__` was not read (`self._scaler.step(self.optimizer)`
in a GradScaler wrapper of another file, handed the trainer's own optimizer), that rests on code out of sight: the
finding is possible (lightweight-srgan's two false certain GL001 of lockbox 25). An optimizer built in sight and
handed to the wrapper in the same file is read: a clear of another optimizer there stays certain."""

from __future__ import annotations

from gradcheck_lint.engine import analyse_text

# The helper's `__init__` takes its parts by keyword and stores them out of sight (`self.__dict__.update(parts)`): what
# `self.optimizer` is, is not read (lightweight-srgan's helper was left unread past the reading budget of its project)
OUT_OF_SIGHT = """
import torch


class ScalerWithNorm:
    def __init__(self, model, **parts):
        self.model = model
        self.__dict__.update(parts)
        self._scaler = torch.cuda.amp.GradScaler()

    def __call__(self, loss):
        self._scaler.scale(loss).backward()
        self._scaler.unscale_(self.optimizer)
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
        self._scaler.step(self.optimizer)
        self._scaler.update()


def train(model, loader):
    optimizer = torch.optim.Adam(model.parameters())
    loss_scaler = ScalerWithNorm(model, optimizer=optimizer)
    for x, y in loader:
        loss_scaler((model(x) - y).pow(2).mean())
        optimizer.zero_grad()
"""


def test_an_optimizer_known_only_as_a_helpers_attribute_may_be_the_one_cleared() -> None:
    found = [(d.code, d.certainty.value) for d in analyse_text(OUT_OF_SIGHT, "train.py").diagnostics if d.code == "GL001"]
    assert found == [("GL001", "possible")]


IN_SIGHT = """
import torch


class Scaler:
    def __init__(self, optimizer):
        self.optimizer = optimizer

    def __call__(self, loss):
        loss.backward()
        self.optimizer.step()


def train(model, other, loader):
    optimizer = torch.optim.Adam(model.parameters())
    other_opt = torch.optim.Adam(other.parameters())
    scaler = Scaler(optimizer)
    for x in loader:
        scaler(model(x).mean())
        other_opt.zero_grad()
"""


def test_a_clear_of_another_optimizer_built_in_sight_stays_certain() -> None:
    found = [(d.code, d.certainty.value) for d in analyse_text(IN_SIGHT, "train.py").diagnostics if d.code == "GL001"]
    assert found == [("GL001", "certain")]
