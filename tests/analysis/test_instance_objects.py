"""Which objects belong to one instance of a class: what its `__init__` builds (a helper's result
included) is its own, one per construction; what it is handed is the caller's, shared
(`Objects.entity_for_unknown_ref`, `expressions._made_by_call`)."""

from __future__ import annotations

from gradcheck_lint.engine import analyse_text


def gl009(text: str) -> list[tuple[int, str]]:
    return sorted((d.span.line, d.message) for d in analyse_text(text, "learner.py").diagnostics if d.code == "GL009")


BRAINS = """\
import torch
from torch import nn
from registry import build_backbone


class Brain(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.backbone = {backbone}
        self.head = nn.Linear(8, 1)

    def forward(self, x):
        return self.head(self.backbone(x))


class Learner:
    def __init__(self, cfg):
        self.qf_1 = Brain(cfg)
        self.qf_2 = Brain(cfg)
        self.qf_1_optim = torch.optim.Adam(self.qf_1.parameters())
        self.qf_2_optim = torch.optim.Adam(self.qf_2.parameters())

    def update_model(self, x, y):
        pred = self.qf_1(x)
        qf_1_loss = (pred - y).pow(2).mean()
        qf_2_loss = (self.qf_2(x) - y).pow(2).mean()
        self.qf_1_optim.zero_grad()
        qf_1_loss.backward(retain_graph=True)
        self.qf_1_optim.step()
        self.qf_2_optim.zero_grad()
        qf_2_loss.backward()
        self.qf_2_optim.step()
{again}"""

STALE_OWN = """\
        self.qf_1_optim.zero_grad()
        pred.abs().mean().backward()
        self.qf_1_optim.step()
"""


def test_two_instances_each_hold_the_backbone_their_init_built() -> None:
    """medipixel's SAC (fixed): five `Brain`s, each `self.backbone = build_backbone(cfg)`, each its own
    optimizer. Stepping `qf_1`'s changes nothing `qf_2_loss`'s graph saved."""
    assert gl009(BRAINS.format(backbone="build_backbone(cfg)", again="")) == []
    assert gl009(BRAINS.format(backbone="build_backbone(cfg).to('cuda')", again="")) == []


def test_one_instance_stepped_before_its_own_stale_graph_is_still_found() -> None:
    found = gl009(BRAINS.format(backbone="build_backbone(cfg)", again=STALE_OWN))
    assert [line for line, _ in found] == [34]
    # the step that changed it is its own optimizer's, not the other instance's
    assert "`self.qf_1_optim.step()` at line 29 changed `self.qf_1`'s parameters" in found[0][1]


def test_a_helper_imported_inside_init_makes_a_new_object_too() -> None:
    text = BRAINS.format(backbone="build(cfg)", again="").replace(
        "        super().__init__()\n", "        super().__init__()\n        from registry import build_backbone as build\n")
    assert gl009(text) == []


GIVEN = """\
import torch
from torch import nn
from registry import build_backbone


class Brain(nn.Module):
    def __init__(self, backbone):
        super().__init__()
        self.backbone = {stored}
        self.head = nn.Linear(8, 1)

    def forward(self, x):
        return self.head(self.backbone(x))


class Learner:
    def __init__(self, cfg):
        backbone = build_backbone(cfg)
        self.qf_1 = Brain(backbone)
        self.qf_2 = Brain(backbone)
        self.qf_1_optim = torch.optim.Adam(self.qf_1.parameters())
        self.qf_2_optim = torch.optim.Adam(self.qf_2.parameters())

    def update_model(self, x, y):
        qf_1_loss = (self.qf_1(x) - y).pow(2).mean()
        qf_2_loss = (self.qf_2(x) - y).pow(2).mean()
        self.qf_1_optim.zero_grad()
        qf_1_loss.backward()
        self.qf_1_optim.step()
        self.qf_2_optim.zero_grad()
        qf_2_loss.backward()
        self.qf_2_optim.step()
"""


def test_a_backbone_handed_to_both_instances_is_shared() -> None:
    """Both `Brain`s hold the one backbone they were given (also through `.to(device)`): stepping
    `qf_1`'s optimizer changes the backbone `qf_2_loss`'s graph saved."""
    for stored in ("backbone", "backbone.to('cuda')"):
        assert [line for line, _ in gl009(GIVEN.format(stored=stored))] == [31], stored


AGENTS = """\
import torch
from registry import build_net


class Agent:
    def __init__(self, cfg):
        self.net = build_net(cfg)
        self.opt = torch.optim.Adam(self.net.parameters())


class Learner:
    def __init__(self, cfg):
        self.a = Agent(cfg)
        self.b = Agent(cfg)

    def update_model(self, x, y):
        out = self.{second}.net(x)
        loss_a = (self.a.net(x) - y).pow(2).mean()
        loss_b = (out - y).pow(2).mean()
        self.a.opt.zero_grad()
        loss_a.backward(retain_graph=True)
        self.a.opt.step()
        self.b.opt.zero_grad()
        loss_b.backward()
        self.b.opt.step()
"""


def test_instances_of_a_plain_class_hold_their_own_networks() -> None:
    assert gl009(AGENTS.format(second="b")) == []
    assert [line for line, _ in gl009(AGENTS.format(second="a"))] == [24]
