"""A comprehension over a few literals makes an object per literal (`analysis/constant_comprehensions.py`), and a
dict or list built in sight is not an object of unknown origin, whatever its items are.

CompressAI's `net_aux_optimizer` (lockbox 15, three certain GL001 false alarms, found after its opening) returns
`{key: make_optimizer(key) for key in ["net", "aux"]}`; `train_one_epoch` clears both optimizers at the top of
every iteration. Read as one object, the auxiliary optimizer's step "applied gradients the main one's step had
already applied"."""

from __future__ import annotations

from gradcheck_lint.engine import analyse_text


def found(text: str) -> set[tuple[str, str]]:
    return {(d.code, d.certainty) for d in analyse_text(text, "train.py").diagnostics}


NET_AUX = """\
import torch
from torch import optim

OPTIMIZERS = {{"Adam": optim.Adam, "SGD": optim.SGD}}


def net_aux_optimizer(net, conf):
    params = {{
        "net": [p for n, p in net.named_parameters() if not n.endswith(".quantiles")],
        "aux": [p for n, p in net.named_parameters() if n.endswith(".quantiles")],
    }}

    def make_optimizer(key):
        kwargs = dict(conf[key])
        del kwargs["type"]
        return OPTIMIZERS[conf[key]["type"]](params[key], **kwargs)

    {build}
    return optimizer


def train_one_epoch(model, criterion, loader, optimizer, aux_optimizer):
    for d in loader:
        optimizer.zero_grad()
        {aux_clear}
        out = criterion(model(d), d)
        out["loss"].backward()
        optimizer.step()
        aux_loss = model.aux_loss()
        aux_loss.backward()
        aux_optimizer.step()


def main(loader, criterion):
    net = build_net()
    conf = {{"net": {{"type": "Adam", "lr": 1e-4}}, "aux": {{"type": "Adam", "lr": 1e-3}}}}
    optimizer = net_aux_optimizer(net, conf)
    train_one_epoch(net, criterion, loader, optimizer["net"], optimizer["aux"])
"""
COMPREHENSION = 'optimizer = {key: make_optimizer(key) for key in ["net", "aux"]}'
DISPLAY = 'optimizer = {"net": make_optimizer("net"), "aux": make_optimizer("aux")}'


def test_two_optimizers_made_by_one_comprehension_are_two():
    assert found(NET_AUX.format(build=COMPREHENSION, aux_clear="aux_optimizer.zero_grad()")) == set()


def test_two_optimizers_in_a_dict_display_are_two():
    assert found(NET_AUX.format(build=DISPLAY, aux_clear="aux_optimizer.zero_grad()")) == set()


def test_the_auxiliary_optimizer_never_cleared_is_found():
    assert "GL001" in {c for c, _ in found(NET_AUX.format(build=COMPREHENSION, aux_clear="pass"))}
