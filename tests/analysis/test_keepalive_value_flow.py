"""GL008 where the value flow was lost (lockbox 2, issue 29): a loop that trains through a method of an object
(`trainer.train_step(x, y)`: the loop's text names no backward; `KeepAlives.note` asks whether a backward was met
in it, `Interpreter.loop_backpropagates`), and an element of a model's output (`for score in disc(fake):`, a
multi-scale discriminator: the element keeps the forward passes that built it, `Counters.element_of`)."""

from __future__ import annotations

import pytest

from gradcheck_lint.engine import analyse_text


def gl008(text: str) -> list[int]:
    return [d.span.line for d in analyse_text(text, "train.py").diagnostics if d.code == "GL008"]


def line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


# -- a loop whose backward is reached through a call its text does not name as training --------------

TRAINER_CLASS = """\
import torch


class Trainer:
    def __init__(self, net, optimizer):
        self.net = net
        self.optimizer = optimizer

    def train_step(self, x, y):
        self.optimizer.zero_grad()
        loss = ((self.net(x) - y) ** 2).mean()
        {backward}
        self.optimizer.step()
        return loss


def fit(trainer, data):
    total_loss = 0
    for x, y in data:
        total = trainer.train_step(x, y)
        total_loss += total
    return total_loss


model = torch.nn.Linear(4, 1)
fit(Trainer(model, torch.optim.SGD(model.parameters(), lr=0.1)), [(torch.randn(2, 4), torch.randn(2, 1))] * 3)
"""


def test_a_loop_that_trains_through_a_method_of_an_object_keeps_its_graphs() -> None:
    """bubbliiiing/faster-rcnn's `fit_one_epoch`: `train_util.train_step(...)` backpropagates, though the
    loop's text names no backward, no function of the file and no `self.` method."""
    text = TRAINER_CLASS.format(backward="loss.backward()")
    assert gl008(text) == [line_of(text, "total_loss += total")]


def test_the_same_loop_over_a_method_that_does_not_backpropagate_is_silent() -> None:
    text = TRAINER_CLASS.format(backward="pass")
    assert gl008(text) == []


# -- an element of a model's output --------------------------------------------------------------------

MULTI_SCALE = """\
import torch


class MultiScale(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.discs = torch.nn.ModuleList([torch.nn.Linear(4, 1) for _ in range(3)])

    def forward(self, x):
        return [disc(x) for disc in self.discs]


generator = torch.nn.Linear(4, 4)
discriminator = MultiScale()
optimizer = torch.optim.Adam(generator.parameters())
kept = []
for x in loader:
    optimizer.zero_grad()
    fake = generator(x)
    adv = 0.0
    for {target} in {iterated}:
        adv += (score - 1.0).pow(2).mean()
    (adv + fake.abs().mean()).backward()
    optimizer.step()
    kept.append({stored})
"""


@pytest.mark.parametrize("target, iterated", [
    ("score", "discriminator(fake)"),
    ("score", "reversed(discriminator(fake))"),
    ("(k, score)", "enumerate(discriminator(fake))"),
])
def test_an_element_of_a_model_output_keeps_the_forward_pass_that_built_it(target: str, iterated: str) -> None:
    """VocGAN's `for feats_fake, score_fake in disc_fake: adv_loss += criterion(score_fake, ...)`, then
    `avg_adv_loss.append(adv_loss)`: the sum is built by the discriminator's forward passes."""
    text = MULTI_SCALE.format(target=target, iterated=iterated, stored="adv")
    assert gl008(text) == [line_of(text, "kept.append(adv)")]


@pytest.mark.parametrize("stored", ["adv.item()", "adv.detach()"])
def test_the_same_sum_kept_as_a_number_is_silent(stored: str) -> None:
    assert gl008(MULTI_SCALE.format(target="score", iterated="discriminator(fake)", stored=stored)) == []


def test_an_element_of_a_data_loader_is_no_graph() -> None:
    text = MULTI_SCALE.format(target="score", iterated="loader", stored="adv")
    assert gl008(text) == []


# -- the item last appended, and a backward that proves what was stored ---------------------------------

HISTORY = """\
import torch

model = torch.nn.Linear(4, 1)


def optimize(tensors, loss_function, x, max_iter=100):
    optimizer = torch.optim.Adam(model.parameters())
    losses = []
    for _ in range(max_iter):
        optimizer.zero_grad()
        {body}
        optimizer.step()
    return [float(l) for l in losses]
"""


@pytest.mark.parametrize("body", [
    "losses.append(loss_function(*tensors))\n        losses[-1].backward(retain_graph=True)",
    "loss = loss_function(*tensors)\n        losses.append(loss)\n        loss.backward()",
    "losses.append(model(x).pow(2).mean())\n        losses[-1].backward(retain_graph=True)",
])
def test_a_stored_value_backpropagated_afterwards_holds_its_graph(body: str) -> None:
    """tntorch's `losses.append(reduce(add, loss_function(*tensors)))`, `losses[-1].backward(...)`: the loss
    comes from a callable handed in (no forward pass in sight); the backward of the very value stored proves
    its graph. Backpropagating the newest item is no training on the accumulated graphs."""
    text = HISTORY.format(body=body)
    report = analyse_text(text, "train.py")
    found = [(d.span.line, d.code) for d in report.diagnostics]
    assert found == [(line_of(text, "losses.append("), "GL008")]
    assert report.diagnostics[0].fix is None  # detached at the append, the later backward would have no graph
    assert "before storing it" in report.diagnostics[0].help


def test_the_last_item_is_the_value_appended_in_this_iteration_not_an_older_one() -> None:
    """Before, `losses[-1]` read as any item of the list: the forward of an earlier iteration, built before the
    step, made a GL009 of `losses[-1].backward()`."""
    text = HISTORY.format(body="losses.append(model(x).pow(2).mean())\n        losses[-1].backward(retain_graph=True)")
    assert "GL009" not in {d.code for d in analyse_text(text, "train.py").diagnostics}


@pytest.mark.parametrize("body", [
    "loss = loss_function(*tensors)\n        loss.backward()\n        losses.append(loss.detach())",
    "loss = loss_function(*tensors)\n        losses.append(loss.item())\n        loss.backward()",
    "losses.append(loss_function(*tensors))\n        losses.pop().backward()",
    "losses.append(loss_function(*tensors))\n        losses.sort()\n        losses[-1].backward()",
    "losses = [loss_function(*tensors)]\n        losses[-1].backward()",
])
def test_values_stored_without_a_graph_or_not_the_one_backpropagated_are_silent(body: str) -> None:
    assert gl008(HISTORY.format(body=body)) == []


@pytest.mark.parametrize("loss", ["torch.zeros(())", "torch.tensor(1.0)", "sum([])"])
def test_a_number_stored_is_not_proven_a_graph_by_a_later_backward_of_another_number(loss: str) -> None:
    """MTGNN's `metrics = engine.train(x, y)`, `train_loss.append(metrics[0])` where `train()` returns
    `loss.item(), mape`: on the loop's second pass its loss read as holding nothing known. The analysis has one
    constant for every such value, `.item()`'s numbers included, so the backward of that loss "proved" the
    stored number a graph (held-out sweep: a certain GL008). Any loss read so (here, built from numbers) did."""
    text = f"""\
import torch

model = torch.nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
history = []
for x in loader:
    optimizer.zero_grad()
    loss = {loss}
    loss.backward()
    optimizer.step()
    history.append(loss.item())
"""
    assert gl008(text) == []


def test_the_entries_of_a_mapping_read_out_of_sight_are_not_taken_for_its_graphs() -> None:
    """jukebox's `for key, val in _metrics.items(): _metrics[key] = val.item()`, then each `val` handed to a
    running mean: the entries are rewritten by key in place, which is not followed, so the elements of
    `.items()` / `.values()` of a model's output do not carry its forward passes (lockbox-2 sweep: a false
    GL008 in jukebox's `Metrics.update`, four in icefall's `MetricsTracker` sums)."""
    text = """\
import torch

model = torch.nn.Linear(4, 2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
running = {}
for x in loader:
    optimizer.zero_grad()
    stats = model(x)
    stats.sum().backward()
    optimizer.step()
    for key, val in stats.items():
        stats[key] = val.item()
    for key, val in stats.items():
        running[key] = running.get(key, 0.0) + val
"""
    assert gl008(text) == []


# -- a list display handed to the function that walks it --------------------------------------------------

METER = """\
import torch


class AverageMeter:
    def __init__(self, n_items):
        self.n_items = n_items
        self.reset()

    def reset(self):
        self._val = [0] * self.n_items
        self._sum = [0] * self.n_items

    def update(self, values):
{walk}


class Runner:
    def __init__(self, model, loader):
        self.model = model
        self.loader = loader
        self.optimizer = torch.optim.Adam(model.parameters())
        self.losses = AverageMeter(2)

    def train_step(self, data):
        loss, coarse = self.model(data)
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
{record}

    def train(self):
        for data in self.loader:
            self.train_step(data)
"""

WALKS = {
    "for": "        for v in values:\n            self._sum[0] += v",
    "enumerate": "        for idx, v in enumerate(values):\n            self._val[idx] = v\n            self._sum[idx] += v",
    "zip": "        for idx, v in zip(range(2), values):\n            self._sum[idx] += v",
    "index": "        for idx in range(2):\n            self._sum[idx] += values[idx]",
    "reversed": "        for v in reversed(values):\n            self._sum[1] += v",
}


@pytest.mark.parametrize("walk", WALKS.values(), ids=WALKS.keys())
@pytest.mark.parametrize("display", ["[loss * 1000, loss * 1000]", "(loss, loss * 2)"])
def test_the_items_of_a_display_handed_to_a_meter_keep_their_graphs(walk: str, display: str) -> None:
    """SPGNet-style `self.losses.update([coarse * 1000, loss * 1000])` into a meter built once: `update`
    walks the list it was handed, and its loop is part of one iteration of the training loop (`Loop.over_items`,
    as `for v in [a, b]:` written there is); the sum keeps every iteration's graphs. (`values[idx] = v`
    rewrites the same slots: not a finding.)"""
    text = METER.format(walk=walk, record=f"        self.losses.update({display})")
    assert gl008(text) == [line_of(text, "+=")]


@pytest.mark.parametrize("walk", WALKS.values(), ids=WALKS.keys())
@pytest.mark.parametrize("record", [
    "        self.losses.update([loss.item() * 1000, loss.item() * 1000])",
    "        self.losses.update([(loss * 1000).detach(), loss.detach()])",
    "        self.losses.reset()\n        self.losses.update([loss * 1000, loss * 1000])",
], ids=["items", "detached", "reset-per-batch"])
def test_a_meter_fed_numbers_or_reset_each_batch_is_silent(walk: str, record: str) -> None:
    assert gl008(METER.format(walk=walk, record=record)) == []


def test_a_meter_reset_each_epoch_still_keeps_the_epochs_graphs() -> None:
    # as `total = 0` before the loader loop and `total += loss` in it: one epoch's graphs pile up
    text = METER.format(walk=WALKS["for"], record="        self.losses.update([loss * 1000, loss * 1000])").replace(
        "        for data in self.loader:\n            self.train_step(data)",
        "        for epoch in range(3):\n            self.losses.reset()\n            for data in self.loader:\n"
        "                self.train_step(data)")
    assert gl008(text) == [line_of(text, "+=")]


@pytest.mark.parametrize("walk", ["for v in values:\n        total += v",
                                  "for k in range(len(values)):\n        total += values[k]"])
def test_a_display_bound_to_a_name_in_the_loop_is_walked_as_written_there(walk: str) -> None:
    text = f"""\
import torch

model = torch.nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
total = 0
for x in loader:
    optimizer.zero_grad()
    loss = model(x).mean()
    loss.backward()
    optimizer.step()
    values = [loss * 1000, loss]
    {walk}
"""
    assert gl008(text) == [line_of(text, "total +=")]
