"""A library class named but not called is a factory: calling whatever holds it builds one (`class_refs`).
fastai's `Learner(..., opt_func=optim.SGD)` builds `self.opt = self.opt_func(self.parameters(), self.lr)`;
until this, the optimizer was known only by its attribute's name and lockbox 10's miniai GL001 was `possible`
(found after lockbox 10's opening: it does not count there)."""

from __future__ import annotations

from gradcheck_lint.engine import analyse_text


def found(text: str) -> list[tuple[str, int, str]]:
    return sorted((d.code, d.span.line, d.certainty.value) for d in analyse_text(text, "train.py").diagnostics)


FUNCTION = """\
import torch
from torch import optim


def fit(model, loader, lr=0.1, opt_func=optim.SGD):
    opt = opt_func(model.parameters(), lr)
    for x, y in loader:
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        CLEAR
"""

LEARNER = """\
import torch
from torch.optim import AdamW


class Learner:
    def __init__(self, model, loader, lr=0.1, opt_func=AdamW):
        self.model, self.loader, self.lr, self.opt_func = model, loader, lr, opt_func

    def fit(self):
        self.opt = self.opt_func(self.model.parameters(), self.lr)
        for x, y in self.loader:
            loss = torch.nn.functional.mse_loss(self.model(x), y)
            loss.backward()
            self.opt.step()
            CLEAR
"""


def test_a_default_optimizer_class_is_what_calling_the_parameter_builds() -> None:
    assert found(FUNCTION.replace("        CLEAR\n", "")) == [("GL001", 10, "certain")]
    assert found(FUNCTION.replace("CLEAR", "opt.zero_grad()")) == []


def test_a_class_stored_on_the_object_builds_it_in_another_method() -> None:
    assert found(LEARNER.replace("            CLEAR\n", "")) == [("GL001", 14, "certain")]
    assert found(LEARNER.replace("CLEAR", "self.opt.zero_grad()")) == []


def test_a_class_bound_to_a_name_at_module_level_builds_it() -> None:
    text = """\
import torch

optimizer_class = torch.optim.AdamW
model = torch.nn.Linear(4, 1)
opt = optimizer_class(model.parameters(), lr=1e-3)
for x in torch.randn(8, 2, 4):
    model(x).sum().backward()
    opt.step()
"""
    assert found(text) == [("GL001", 8, "certain")]


def test_a_caller_in_sight_that_hands_in_another_factory_replaces_the_default() -> None:
    """`fit(model, loader, opt_func=make)` of a function of this file that builds nothing the analysis knows:
    the default is not what runs (the finding rests on the caller's factory, read as before)."""
    text = FUNCTION.replace("        CLEAR\n", "") + """

def make(params, lr):
    return Wrapped(params, lr)


fit(torch.nn.Linear(4, 1), [], opt_func=make)
"""
    assert ("GL001", 10, "certain") not in found(text)


def test_a_class_of_no_factory_kind_is_not_read_as_one() -> None:
    """A model class handed around (`net_cls=nn.Linear`) stays what it was: nothing is built from it here."""
    text = """\
import torch
from torch import nn


def fit(loader, net_cls=nn.Linear, opt=None):
    model = net_cls(4, 1)
    for x, y in loader:
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
"""
    old = found(text)
    assert all(code != "GL001" or certainty == "possible" for code, _line, certainty in old)


FACTORY_METHOD = """\
import torch
import torch.nn as nn


class MLP(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.fc = nn.Linear(d, 1)

    def forward(self, x):
        return self.fc(x)

    DECORATOR
    def get_model(FIRST, d):
        return BUILT(d)


for stage in range(3):
    m = MLP.get_model(4)
    opt = torch.optim.Adam(m.parameters(), 1e-3)
    for x in torch.randn(5, 8, 4):
        loss = m(x).sum()
        CLEAR
        loss.backward()
        opt.step()
"""

KINDS = [("@classmethod", "cls", "cls"), ("@classmethod", "cls", "MLP"), ("@staticmethod", "d0", "MLP")]


def _factory(decorator: str, first: str, built: str, clear: bool) -> str:
    text = FACTORY_METHOD.replace("DECORATOR", decorator).replace("BUILT", built)
    text = text.replace("FIRST, d", "d") if decorator == "@staticmethod" else text.replace("FIRST", first)
    return text.replace("CLEAR", "m.zero_grad()") if clear else text.replace("        CLEAR\n", "")


def test_a_static_or_class_method_called_through_the_class_runs_and_builds_its_model() -> None:
    """t2g-former's `MLP_2HL.get_model(stage, opt)` (lockbox 9's certain GL001, false): the model was nothing,
    so `m.zero_grad()` cleared nothing the optimizer held. Run, the model is the class's: the clear clears it,
    and a loop without one is reported."""
    for decorator, first, built in KINDS:
        assert found(_factory(decorator, first, built, clear=True)) == [], (decorator, built)
        assert found(_factory(decorator, first, built, clear=False)) == [("GL001", 24, "certain")], (decorator, built)


def test_a_method_of_a_class_not_read_returns_something_unknown_not_nothing() -> None:
    """`MLP.build(4)` of a class whose base is out of sight: what it returns is unknown. Read as nothing, the
    model's own `m.zero_grad()` cleared nothing and a certain GL001 (with a safe fix) was reported."""
    text = """\
import torch
import torch.nn as nn
from somewhere import Base


class MLP(Base):
    def __init__(self, d):
        super().__init__()
        self.fc = nn.Linear(d, 1)


m = MLP.build(4)
opt = torch.optim.Adam(m.parameters(), 1e-3)
for x in torch.randn(5, 8, 4):
    loss = m(x).sum()
    m.zero_grad()
    loss.backward()
    opt.step()
"""
    assert found(text) == []


def test_an_optimizer_class_picked_by_name_from_torch_optim_is_an_optimizer() -> None:
    """`getattr(torch.optim, optimizer)(params, lr=lr)` (deepqmc's fit, lockbox 11's GL003 found only as possible,
    read after its opening): whichever class the name picks, `torch.optim.*` builds an optimizer of those parameters."""
    text = """\
import torch


def fit(model, loader, optimizer="AdamW", lr=1e-3):
    opt = getattr(torch.optim, optimizer)(model.parameters(), lr=lr)
    for x, y in loader:
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        CLEAR
"""
    assert found(text.replace("        CLEAR\n", "")) == [("GL001", 9, "certain")]
    assert found(text.replace("CLEAR", "opt.zero_grad()")) == []
