"""A loop whose iterations all run on the batch the loop around it drew adds up the terms of one objective
(sub-networks, views, refinements), not micro-batches of a window (`analysis/one_batch.py`).

FedAlign's GradAug trainer (lockbox 13, a certain GL003 false alarm) backpropagates the full-width model's
loss, then one loss per sampled sub-network width, all on the batch of the loader loop, and steps once: the
sum is the method's objective. Read as an accumulation window over `width_mult_list`, it was reported "not
divided by `len(sorted(width_mult_list, reverse=True))`"."""

from __future__ import annotations

import pytest

from gradcheck_lint.engine import analyse_text


def codes(text: str) -> set[str]:
    return {d.code for d in analyse_text(text, "train.py").diagnostics}


SUBNETS = """\
import random
import torch
import torch.nn.functional as F

model = build_model()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
resolutions = [224, 192, 160]

for epoch in range(10):
    for images, labels in loader:
        images, labels = images.cuda(), labels.cuda()
        optimizer.zero_grad()
        out = model(images)
        loss = F.cross_entropy(out, labels)
        loss.backward()
        soft = out.detach()
        for width in sorted(widths, reverse=True):
            {inner}
            model.apply(lambda m: setattr(m, "width_mult", width))
            size = resolutions[random.randint(0, 2)]
            sub = model({model_input})
            loss = F.kl_div(F.log_softmax(sub, dim=1), F.softmax({target}, dim=1), reduction="batchmean")
            loss.backward()
        optimizer.step()
"""


def test_sub_networks_run_on_the_drawn_batch_are_one_objective() -> None:
    assert "GL003" not in codes(SUBNETS.format(inner="pass", model_input="F.interpolate(images, (size, size))",
                                               target="soft"))


@pytest.mark.parametrize("inner, model_input, target", [
    # a new micro-batch fetched in each iteration
    ("images, labels = next(extra)", "images", "soft"),
    # the batch indexed by what the loop walks: one part of it per iteration
    ("pass", "images[width]", "soft[width]"),
])
def test_a_loop_that_takes_new_data_each_iteration_is_still_a_window(inner: str, model_input: str, target: str) -> None:
    assert "GL003" in codes(SUBNETS.format(inner=inner, model_input=model_input, target=target))


CHUNKS = """\
import torch
import torch.nn.functional as F

model = torch.nn.Linear(8, 2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

for x, y in loader:
    optimizer.zero_grad()
    for xb, yb in zip(x.chunk(4), y.chunk(4)):
        loss = F.cross_entropy(model(xb), yb)
        loss.backward()
    optimizer.step()
"""


def test_micro_batches_cut_from_the_drawn_batch_are_a_window() -> None:
    assert "GL003" in codes(CHUNKS)


VIEWS = """\
import torch
import torch.nn.functional as F

model = torch.nn.Linear(8, 2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

for x, y in loader:
    optimizer.zero_grad()
    for k in range({count}):
        {body}
        loss.backward()
    optimizer.step()
"""


@pytest.mark.parametrize("count, body, fires", [
    # augmented views of one batch: their losses add up by the author's choice
    ("n_views", "loss = F.cross_entropy(model(augment(x)), y)", False),
    # the loop only logs the batch: what it backpropagates is fetched anew each time
    ("accum_steps", "print(x.shape); xb, yb = next(stream); loss = F.cross_entropy(model(xb), yb)", True),
])
def test_what_the_loop_computes_from_decides(count: str, body: str, fires: bool) -> None:
    assert ("GL003" in codes(VIEWS.format(count=count, body=body))) is fires


# kcyu2014/eval-nas's FairNAS procedure (lockbox 28, a certain GL003 false alarm): a loop over sampled topologies,
# and in it a loop over the operation paths sampled from each, both on the batch of the loader loop; the paths'
# losses are summed on purpose (FairNAS: each path trained fairly, one step). The topology loop walks no data: its
# body reads what it walks only to make what the inner loop walks.
SAMPLED_PATHS = """\
import torch
import torch.nn as nn


def train(train_queue, model, criterion, optimizer, topology_sampler, op_sampler, args):
    for step, (input, target) in enumerate(train_queue):
        for topo_model in iter(topology_sampler(model, args)):
            input = input.cuda()
            target = target.cuda()
            optimizer.zero_grad()
            for _model in iter(op_sampler(topo_model, args)):
                {body}
                _loss = criterion(_logits, target)
                _loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), args.grad_clip)
            optimizer.step()
"""


@pytest.mark.parametrize("body, fires", [
    ("_logits, _ = _model(input)", False),
    # the inner loop's body reads what the loop around it walks: that loop is the drawing one, and its
    # micro-batches are cut from it (`for chunk in split(part)`), a window
    ("_logits, _ = _model(input, topo_model)", True),
])
def test_paths_sampled_from_sampled_topologies_run_on_the_drawn_batch(body: str, fires: bool) -> None:
    assert ("GL003" in codes(SAMPLED_PATHS.format(body=body))) is fires


# SplitMix's federated trainer (lockbox 29, a certain GL003 false alarm): the outer loop counts steps and fetches its
# batch with `next(data_iterator)` (restarting the iterator when it runs out); the inner loop sums the losses of every
# slimmable width on that batch and the optimizer steps once.
FETCHED = """\
import torch


def train_slimmable(model, data_loader, optimizer, loss_fun, slim_ratios, slim_shifts, max_iter, accum):
    data_iterator = iter(data_loader)
    for step in range(max_iter):
        try:
            data, target = next(data_iterator)
        except StopIteration:
            data_iterator = iter(data_loader)
            data, target = next(data_iterator)
        optimizer.zero_grad()
        data = data.cuda()
        for slim_ratio, shift in sorted(zip(slim_ratios, slim_shifts), key=lambda pair: pair[0]):
            {inner}
            model.switch_slim_mode(slim_ratio, slim_bias_idx=shift)
            loss = loss_fun(model({model_input}), target)
            loss.backward()
        optimizer.step()
"""


@pytest.mark.parametrize(("inner", "model_input", "fires"), [
    ("pass", "data", False),  # every width on the batch the step fetched: one objective
    ("data, target = next(data_iterator)", "data", True),  # a new micro-batch per width: a window
    ("pass", "data[shift]", True),  # a part of the batch per width: a window
])
def test_the_batch_a_counting_loop_fetches_is_drawn_data(inner: str, model_input: str, fires: bool) -> None:
    assert ("GL003" in codes(FETCHED.format(inner=inner, model_input=model_input))) == fires


def test_micro_batches_fetched_inside_the_window_loop_stay_a_window() -> None:
    """nanoGPT's loop: the step loop fetches the first micro-batch, and each micro-step fetches the next one."""
    source = """\
import torch

X, Y = get_batch("train")
for it in range(max_iters):
    for micro_step in range(gradient_accumulation_steps):
        logits, loss = model(X, Y)
        X, Y = get_batch("train")
        loss.backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
"""
    assert "GL003" in codes(source)
