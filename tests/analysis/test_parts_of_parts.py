"""A forward through a part of a model: a part of a part of a class read (`model.encoder.embedding(x)`), a method or
part of a model handed in (`model.encoder(x)`) when the loss can have no other graph, and objects handed through
`typing.cast` or peft's `get_peft_model` (the same module). Lockbox 9's misses (IMS-Toucan's priming loop, felhof's
SAC actor behind `cast`, anyscale's LoRA branch), found after its opening: they do not count on it. A loss reaching a
model only through calls the analysis did not read rests on an assumption: what it finds there is `possible`."""

from __future__ import annotations

from gradcheck_lint.engine import analyse_text


def found(text: str) -> list[tuple[str, int, str]]:
    return sorted((d.code, d.span.line, d.certainty.value) for d in analyse_text(text, "train.py").diagnostics)


CLASSES = """\
import torch
from torch import nn


class Enc(nn.Module):
    def __init__(self):
        super().__init__()
        self.embedding = nn.Embedding(10, 4)
        self.proj = nn.Linear(4, 4)

    def embed(self, ids):
        return self.proj(self.embedding(ids))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = Enc()
        self.head = nn.Linear(4, 1)

"""

REORDERED = """
def train(loader, steps):
    model = Net()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    for ids in loader:
        loss = CALL.sum()
        loss.backward()
        optimizer.zero_grad()
        optimizer.step()
"""

RIGHT = """
def train(loader, steps):
    model = Net()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    for ids in loader:
        optimizer.zero_grad()
        loss = CALL.sum()
        loss.backward()
        optimizer.step()
"""


def _program(loop: str, call: str) -> str:
    return CLASSES + loop.replace("CALL", call)


def test_a_part_of_a_part_of_a_class_read_runs_its_forward() -> None:
    for call in ("model.encoder.embedding(ids)", "model.encoder.embed(ids)", "model.encoder(ids)"):
        assert found(_program(REORDERED, call)) == [("GL002", 28, "certain")], call
        assert found(_program(RIGHT, call)) == [], call


def test_a_part_of_a_part_reaches_only_that_part() -> None:
    """`model.encoder.embedding` is stepped by its own optimizer; a loss through `model.head` alone leaves it
    untouched: clearing it after that backward drops nothing."""
    text = CLASSES + """
def train(loader):
    model = Net()
    emb_opt = torch.optim.Adam(model.encoder.embedding.parameters())
    head_opt = torch.optim.Adam(model.head.parameters())
    for ids in loader:
        head_opt.zero_grad()
        loss = model.head(torch.randn(2, 4)).sum()
        loss.backward()
        emb_opt.zero_grad()
        head_opt.step()
        emb_opt.step()
"""
    assert found(text) == []
    wrote = text.replace("model.head(torch.randn(2, 4))", "model.encoder.embed(ids)")
    assert found(wrote) == [("GL002", 30, "certain")]


HANDED = """\
import torch


def train(model, loader):
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    for ids in loader:
        loss = CALL.sum()
        loss.backward()
        optimizer.zero_grad()
        optimizer.step()
"""


def test_a_part_of_a_model_handed_in_writes_the_model_when_the_loss_has_no_other_graph() -> None:
    """Reported, but `possible`: that the unread method runs on the model's parameters is inferred (the backward
    needs a graph, and the model is its only source), not read, whatever its input."""
    for call in ("model.encoder(torch.randn(2, 4))", "model.encoder.language_embedding(torch.randn(2, 4))",
                 "model.score(torch.randn(2, 4))", "model.encoder(ids)", "model.encoder.language_embedding(ids)"):
        assert found(HANDED.replace("CALL", call)) == [("GL002", 9, "possible")], call
    for call in ("model.encoder(ids)", "model.encoder(torch.randn(2, 4))"):
        right = HANDED.replace("        optimizer.zero_grad()\n", "").replace(
            "    for ids in loader:\n", "    for ids in loader:\n        optimizer.zero_grad()\n")
        assert found(right.replace("CALL", call)) == [], call


def test_an_unread_method_of_a_module_with_two_optimizers_of_its_parts_stays_a_guess() -> None:
    """`self.discriminator_loss(z, real)` of a GAN module whose class is out of sight may write G, D or both:
    nothing is sure of either part's optimizer."""
    text = """\
import torch
from torch import nn
from losses import LossMixin


class GAN(nn.Module, LossMixin):
    def __init__(self):
        super().__init__()
        self.G = nn.Linear(4, 8)
        self.D = nn.Linear(8, 1)
        self.opt_g = torch.optim.Adam(self.G.parameters())
        self.opt_d = torch.optim.Adam(self.D.parameters())

    def train_step(self, z, real):
        self.opt_d.zero_grad()
        self.opt_g.zero_grad()
        d_loss = self.discriminator_loss(z, real)
        d_loss.backward()
        self.opt_d.step()
        g_loss = self.generator_loss(z)
        g_loss.backward()
        self.opt_g.step()
"""
    assert [f for f in found(text) if f[2] == "certain"] == []


def test_a_loss_from_two_models_keeps_the_unread_part_a_guess() -> None:
    """The graph may come from `other`'s forward alone: `model.encoder(x)` is not known to write the model."""
    text = HANDED.replace("def train(model, loader):", "def train(model, other, loader):").replace(
        "CALL.sum()", "(model.encoder(ids) + other(ids)).sum()")
    assert [f for f in found(text) if f[0] == "GL002" and f[2] == "certain"] == []


SAC = """\
import typing

import torch
from torch import nn


class Policy(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Linear(4, 2)
        self.optimizer = torch.optim.Adam(self.net.parameters())

    def forward(self, s):
        return self.net(s)

    def update(self):
        self.optimizer.step()


def make_policy():
    return Policy()


class Agent:
    def __init__(self):
        self.actor = WRAP
        self.log_alpha = torch.zeros(1, requires_grad=True)
        self.alpha_optimizer = torch.optim.Adam([self.log_alpha])

    def learn(self, states):
        self.actor.optimizer.zero_grad()
        self.alpha_optimizer.zero_grad()
        alpha = self.log_alpha.exp()
        actor_loss = (alpha * self.actor(states)).mean()
        actor_loss.backward()
        self.actor.update()
        temperature_loss = -(self.log_alpha * 0.5).mean()
        temperature_loss.backward()
        self.alpha_optimizer.step()
"""


def test_typing_cast_is_the_object_it_is_given() -> None:
    plain = found(SAC.replace("WRAP", "make_policy()"))
    assert any(code == "GL005" and line == 39 for code, line, _ in plain)
    assert found(SAC.replace("WRAP", "typing.cast(Policy, make_policy())")) == plain
    detached = SAC.replace("WRAP", "typing.cast(Policy, make_policy())").replace(
        "alpha = self.log_alpha.exp()", "alpha = self.log_alpha.exp().detach()")
    assert [f for f in found(detached) if f[0] == "GL005"] == []


PEFT = """\
import torch
from peft import get_peft_model
from transformers import AutoModelForCausalLM


def train(loader, lora_config, epochs):
    model = AutoModelForCausalLM.from_pretrained("x")
    if lora_config:
        model = get_peft_model(model, lora_config)
    optimizer = torch.optim.AdamW(model.parameters())
    for epoch in range(epochs):
        loss_sum = torch.tensor(0.0)
        for batch in loader:
            loss = model(**batch).loss
            loss_sum += LOSS
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
"""


def test_get_peft_model_returns_the_model_it_wraps() -> None:
    assert found(PEFT.replace("LOSS", "loss")) == [("GL008", 15, "certain")]
    assert found(PEFT.replace("LOSS", "loss.detach()")) == []
