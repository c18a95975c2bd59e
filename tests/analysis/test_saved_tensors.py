"""GL009 by saved tensors: PyTorch raises after a step only if an op saved a stepped parameter for
backward. The table is generated from PyTorch's derivatives.yaml; the claims are checked against torch."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from gradcheck_lint.analysis.saved_tensors import saved_table
from gradcheck_lint.api import check_source
from gradcheck_lint.config import Settings
from gradcheck_lint.registry import all_rules

ALL = Settings.default().with_enabled(all_rules())
TABLE = Path(__file__).resolve().parents[2] / "gradcheck_lint" / "analysis" / "apimodels" / "saved" / "torch_saved_tensors.toml"


def test_table_is_generated_data_naming_its_source() -> None:
    head = TABLE.read_text(encoding="utf-8").splitlines()[:3]
    assert any("derivatives.yaml" in line and "commit" in line for line in head)
    table = saved_table()
    assert table.op_saves("torch.exp") == {"result"}  # exp's backward is grad * result
    assert table.op_saves("Tensor.mul") == {"self", "other"}
    assert "weight" in (table.op_saves("F.linear") or ())
    assert table.layer_saves("torch.nn.Linear") == {"weight"}
    assert table.layer_saves("torch.nn.Embedding") == frozenset()  # only the indices are saved
    assert table.layer_saves("torch.nn.ReLU") == frozenset()
    assert table.layer_saves("my.Module") is None


GAN = """
import torch
from torch import nn
G, D = {G}, {D}
opt_G, opt_D = torch.optim.SGD(G.parameters(), lr=0.1), torch.optim.SGD(D.parameters(), lr=0.1)
for z in {data}:
    d_fake = D(G(z))
    opt_D.zero_grad()
    d_fake.sum().backward(retain_graph=True)
    opt_D.step()
    opt_G.zero_grad()
    (-d_fake).sum().backward()
    opt_G.step()
"""
LINEAR = GAN.format(G="nn.Linear(2, 4)", D="nn.Linear(4, 1)", data="torch.randn(3, 5, 2)")
# D's forward only looks rows of its table up: the embedding saves the indices, not its weight
EMBEDDING = GAN.format(G="nn.Linear(2, 4)", D="nn.Sequential(nn.Embedding(10, 1), nn.ReLU())",
                       data="torch.randint(0, 10, (3, 5))").replace("D(G(z))", "D(z) * G(z.float().unsqueeze(-1).expand(-1, -1, 2)).sum()")


class_scale = """
import torch
from torch import nn
class Temperature(nn.Module):
    def __init__(self):
        super().__init__()
        self.log_t = nn.Parameter(torch.zeros(1))
    def forward(self):
        return self.log_t.exp()
actor, temp = nn.Linear(4, 1), Temperature()
opt_a, opt_t = torch.optim.SGD(actor.parameters(), lr=0.1), torch.optim.SGD(temp.parameters(), lr=0.1)
for x in torch.randn(3, 5, 4):
    t = temp()
    opt_t.zero_grad()
    (t * actor(x).detach()).sum().backward(retain_graph=True)
    opt_t.step()
    opt_a.zero_grad()
    (t * actor(x)).sum().backward()
    opt_a.step()
"""


def gl009(text: str) -> list[tuple[str, str]]:
    return [(d.certainty.value, d.message) for d in check_source(textwrap.dedent(text), "train.py", settings=ALL) if d.code == "GL009"]


def raises(text: str) -> bool:
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    try:
        exec(compile(textwrap.dedent(text), "train.py", "exec"), {})
    except RuntimeError as exc:
        return "modified by an inplace operation" in str(exc)
    return False


def test_linear_layer_saves_its_weight_certain_and_raises() -> None:
    found = gl009(LINEAR)
    assert [c for c, _ in found] == ["certain"] and "PyTorch raises" in found[0][1]
    assert raises(LINEAR)


def test_embedding_saves_no_weight_no_finding_and_no_error() -> None:
    assert gl009(EMBEDDING) == []
    assert not raises(EMBEDDING)


def test_module_of_unknown_saves_is_possible_and_says_if() -> None:
    """`Temperature` is made of an `nn.Parameter` through `exp` (which saves its result): what it saves
    is not known from the table, so the finding is possible and does not claim PyTorch raises."""
    found = gl009(class_scale)
    assert [c for c, _ in found] == ["possible"]
    assert "if an op of that forward pass saved them" in found[0][1]
    assert not raises(class_scale)


# An optimizer over one part of a model whose forward runs the whole: what that part saves decides, not the layers
# beside it the step never changes (a DARTS supernet's architecture optimizer, Auto-NBA, lockbox 33)
PART_STEPPED = """
import torch
from torch import nn
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3)
        self.alpha = nn.Parameter(torch.zeros(3))
    def forward(self, x):
        return self.conv(x).mean() * torch.softmax(self.alpha, 0).sum()
model = Net()
arch_opt = torch.optim.SGD({stepped}, lr=0.1)
for x in torch.randn(3, 2, 3, 8, 8):
    arch_opt.zero_grad()
    loss = model(x)
    loss.backward(retain_graph=True)
    arch_opt.step()
    loss.backward()
"""


def test_step_of_a_part_no_layer_saves_is_possible_and_runs() -> None:
    """Only `alpha` is stepped, and softmax saves its result: the convolution that saves its weight is beside it,
    never stepped. Not certain, no claim that PyTorch raises (and it does not)."""
    text = PART_STEPPED.format(stepped="[model.alpha]")
    found = gl009(text)
    assert [c for c, _ in found] == ["possible"]
    assert "if an op of that forward pass saved them" in found[0][1]
    assert not raises(text)


def test_step_of_a_part_that_is_a_saving_layer_stays_certain_and_raises() -> None:
    text = PART_STEPPED.format(stepped="model.conv.parameters()")
    found = gl009(text)
    assert [c for c, _ in found] == ["certain"] and "PyTorch raises" in found[0][1]
    assert raises(text)


# A graph built by another method of the module (`forward_flops`), inherited from a class not read: that it ran the
# module's parameters at all rests on the method's name
METHOD_OUT_OF_SIGHT = """
import torch
from torch import nn
from nas_toolkit import FlopsCounterMixin
class Net(FlopsCounterMixin, nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3)
    def forward(self, x):
        return self.conv(x).mean()
model = Net()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for x in loader:
    opt.zero_grad()
    loss = model(x)
    flops = model.forward_flops()
    loss.backward()
    opt.step()
    flops.backward()
"""


def test_graph_of_a_method_not_read_is_possible() -> None:
    found = gl009(METHOD_OUT_OF_SIGHT)
    assert [c for c, _ in found] == ["possible"]
    assert "if an op of that forward pass saved them" in found[0][1]
    # the module itself called, its graph stale: certain as before
    direct = gl009(METHOD_OUT_OF_SIGHT.replace("flops = model.forward_flops()", "flops = model(x * 2)"))
    assert [c for c, _ in direct] == ["certain"]
