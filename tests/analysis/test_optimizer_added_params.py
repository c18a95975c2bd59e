"""Parameters handed to an optimizer after it was built are its own: `add_param_group({"params": ...})` and
growing a group's list in place (`opt.param_groups[1]["params"].append(p)`, `.extend`, `+=`, also through a
loop over the groups). Its step updates them and its `zero_grad()` clears them; a module's `zero_grad()`
clears them only when they are that module's. A parameter the analysis cannot name adds nothing: what it
knew the optimizer owns stays as it was (KERMT's multi-task loss weights, cleared by `model.zero_grad()`)."""

from __future__ import annotations

import pytest

from gradcheck_lint import check_source
from gradcheck_lint.diagnostics import Certainty

HEAD = """\
import torch
from torch import nn


class WeightedLoss(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.log_sigma = nn.Parameter(torch.zeros(n))

    def forward(self, losses):
        return (torch.exp(-self.log_sigma) * losses + self.log_sigma).sum()


model = nn.Linear(4, 3)
mtl = WeightedLoss(3)
"""

LOOP = """\
for x, y in batches:
    {clear}
    loss = mtl(((model(x) - y) ** 2).mean(0))
    loss.backward()
    optimizer.step()
"""

ADDS = {
    "append": 'optimizer = torch.optim.Adam([{"params": model.parameters()}, {"params": []}])\n'
              'optimizer.param_groups[1]["params"].append(mtl.log_sigma)\n',
    "extend": 'optimizer = torch.optim.Adam(model.parameters())\n'
              'optimizer.param_groups[0]["params"].extend(mtl.parameters())\n',
    "iadd": 'optimizer = torch.optim.Adam(model.parameters())\n'
            'optimizer.param_groups[0]["params"] += [mtl.log_sigma]\n',
    "group_name": 'optimizer = torch.optim.Adam(model.parameters())\n'
                  'groups = optimizer.param_groups\n'
                  'groups[-1]["params"].append(mtl.log_sigma)\n',
    "each_group": 'optimizer = torch.optim.Adam(model.parameters())\n'
                  'for group in optimizer.param_groups:\n'
                  '    group["params"].append(mtl.log_sigma)\n',
    "add_param_group": 'optimizer = torch.optim.Adam(model.parameters())\n'
                       'optimizer.add_param_group({"params": [mtl.log_sigma], "lr": 1e-2})\n',
    "add_param_group_module": 'optimizer = torch.optim.Adam(model.parameters())\n'
                              'optimizer.add_param_group({"params": mtl.parameters()})\n',
    "add_param_group_keyword": 'optimizer = torch.optim.Adam(model.parameters())\n'
                               'optimizer.add_param_group(param_group={"params": mtl.parameters()})\n',
    "constructor_group": 'optimizer = torch.optim.Adam([{"params": model.parameters()}, {"params": [mtl.log_sigma]}])\n',
    # two lists of parameters joined: the module path of the second survives the `+`
    "constructor_concatenated": 'optimizer = torch.optim.Adam(list(model.parameters()) + [mtl.log_sigma])\n',
}


def _lint(add: str, clear: str) -> list[tuple[str, int, Certainty]]:
    text = HEAD + add + LOOP.format(clear=clear)
    return [(d.code, d.span.line, d.certainty) for d in check_source(text, "train.py")]


def _step_line(add: str) -> int:
    return len((HEAD + add).splitlines()) + 5


@pytest.mark.parametrize("shape", sorted(ADDS))
def test_added_parameters_a_model_clear_misses_accumulate(shape: str) -> None:
    add = ADDS[shape]
    assert _lint(add, "model.zero_grad()") == [("GL001", _step_line(add), Certainty.CERTAIN)]


@pytest.mark.parametrize("shape", sorted(ADDS))
@pytest.mark.parametrize("clear", ["optimizer.zero_grad()", "optimizer.zero_grad(set_to_none=True)",
                                   "model.zero_grad()\n    mtl.zero_grad()"])
def test_added_parameters_cleared_are_silent(shape: str, clear: str) -> None:
    assert _lint(ADDS[shape], clear) == []


def test_a_parameter_of_the_cleared_model_added_again_is_silent() -> None:
    add = ('optimizer = torch.optim.Adam([model.weight])\n'
           'optimizer.add_param_group({"params": [model.bias]})\n')
    text = HEAD + add + LOOP.format(clear="model.zero_grad()").replace("mtl(", "sum(")
    assert [d.code for d in check_source(text, "train.py")] == []


@pytest.mark.parametrize("added", ["extra", "extra.parameters()", "[p for p in extra if p.requires_grad]"])
def test_parameters_the_analysis_cannot_name_add_nothing(added: str) -> None:
    # `extra` is handed in: what it holds is not known, and the model's clear covers all that is known
    text = HEAD.replace("mtl = WeightedLoss(3)\n", "") + f"""\


def train(batches, extra):
    optimizer = torch.optim.Adam(model.parameters())
    optimizer.add_param_group({{"params": {added}}})
    for x, y in batches:
        model.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        optimizer.step()
"""
    assert [d.code for d in check_source(text, "train.py")] == []


def test_an_optimizer_built_out_of_sight_keeps_its_unknown_parameters() -> None:
    # Adding the loss weights to an optimizer handed in does not make them all it owns: the model's
    # clear still covers what it was built with, and the weights are cleared by their module
    text = HEAD.replace("model = nn.Linear(4, 3)\nmtl = WeightedLoss(3)\n", "") + """\


def train(model, optimizer, batches):
    mtl = WeightedLoss(3)
    optimizer.add_param_group({"params": mtl.parameters()})
    for x, y in batches:
        model.zero_grad()
        mtl.zero_grad()
        loss = mtl(((model(x) - y) ** 2).mean(0))
        loss.backward()
        optimizer.step()
"""
    assert [d.code for d in check_source(text, "train.py")] == []


def test_growing_another_list_adds_nothing() -> None:
    # a list of parameters of one's own, grown after the optimizer was built from a copy of it
    add = ('params = list(model.parameters())\n'
           'optimizer = torch.optim.Adam(params)\n'
           'logged = [g["lr"] for g in optimizer.param_groups]\n'
           'logged.append(mtl.log_sigma)\n')
    assert _lint(add, "model.zero_grad()") == []


@pytest.mark.parametrize("shape", ["append", "add_param_group", "constructor_group"])
def test_the_message_names_the_clear_that_covers_part_and_what_it_leaves(shape: str) -> None:
    add = ADDS[shape]
    text = HEAD + add + LOOP.format(clear="model.zero_grad()")
    (finding,) = check_source(text, "train.py")
    clear_line = _step_line(add) - 3
    assert f"`model.zero_grad()` at line {clear_line} clears only some of `optimizer`'s parameters" in finding.message
    assert "nothing clears the gradients of `mtl.log_sigma`" in finding.message


def test_a_clear_of_other_parameters_only_keeps_its_message() -> None:
    # the optimizer owns only the loss weights: `model.zero_grad()` clears none of them
    add = 'optimizer = torch.optim.Adam([mtl.log_sigma])\n'
    text = HEAD + add + LOOP.format(clear="model.zero_grad()")
    (finding,) = check_source(text, "train.py")
    assert "clears other parameters, and nothing clears the gradients of `mtl.log_sigma`" in finding.message
