"""Which divisions scale a loss: `loss / N` and `loss * (1 / N)` do; a count rounded to an integer
(`math.ceil(len(loader) / N)` optimizer steps per epoch) does not, nor does anything computed from it,
such as the length of a noise schedule whose values weight the loss (diffusers' consistency-training
example, a GL010 false alarm on unseen code)."""

from __future__ import annotations

import pytest

from gradcheck_lint.engine import analyse_text


def codes(text: str) -> set[str]:
    return {d.code for d in analyse_text(text, "train.py").diagnostics}


LOOP = """\
import math
import torch
from accelerate import Accelerator

accelerator = Accelerator(gradient_accumulation_steps=args.gradient_accumulation_steps)
model = torch.nn.Linear(4, 4)
optimizer = torch.optim.AdamW(model.parameters())
model, optimizer = accelerator.prepare(model, optimizer)
steps = math.ceil(len(loader) / args.gradient_accumulation_steps) * args.epochs
loss_weights = 1.0 / torch.linspace(1, 2, steps)
for step, batch in enumerate(loader):
    with accelerator.accumulate(model):
        loss = {loss}
        accelerator.backward(loss)
        optimizer.step()
        optimizer.zero_grad()
"""


def test_a_weight_from_a_schedule_whose_length_counts_optimizer_steps_is_no_division() -> None:
    assert "GL010" not in codes(LOOP.format(loss="(loss_weights[step] * model(batch)).mean()"))


@pytest.mark.parametrize("loss", ["model(batch).mean() / args.gradient_accumulation_steps",
                                  "model(batch).mean() * (1.0 / args.gradient_accumulation_steps)",
                                  "(loss_weights[step] * model(batch)).mean() / args.gradient_accumulation_steps"])
def test_a_loss_divided_by_the_window_before_accelerate_divides_it_again_is_gl010(loss: str) -> None:
    assert "GL010" in codes(LOOP.format(loss=loss))


UNREADABLE_DIVISION = """\
import torch
from mylib import extract_loss
model = torch.nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
N = 4
for idx, x in enumerate(torch.randn(16, 2, 4)):
    loss = extract_loss(model(x), {arg})
    loss.backward()
    if (idx + 1) % N == 0:
        optimizer.step()
        optimizer.zero_grad()
"""


@pytest.mark.parametrize(("arg", "codes"), [("loss_divisor", []), ("normalizer=N", []), ("x", ["GL003"]), ("N", ["GL003"])])
def test_an_unreadable_function_handed_a_divisor_by_name_divides_the_loss(arg: str, codes: list[str]) -> None:
    """mmf's `loss = extract_loss(report, loss_divisor)` (another file divides): a divisor handed over by name
    is taken as dividing the loss; an argument named otherwise is not (a false GL003 on unseen code)."""
    from gradcheck_lint import check_source

    assert [d.code for d in check_source(UNREADABLE_DIVISION.format(arg=arg))] == codes


def test_a_bad_gradient_test_is_not_taken_for_the_window_size() -> None:
    """minFM's trainer: `has_bad_grad = not isfinite(norm) or (step >= spike_start and norm > threshold)`
    guards the step; the micro-batches come from an inner loop. The GL003 message names no window (it
    named `spike_start`, a warm-up, before): the inner loop says it, `len(batch)`."""
    from gradcheck_lint import check_source

    src = """\
import math
import torch
model = torch.nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
spike_start = 100
for step, batch in enumerate(torch.randn(10, 4, 2, 4)):
    for x in batch:
        model(x).mean().backward()
    grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    has_bad_grad = (not math.isfinite(grad_norm)) or (step >= spike_start and grad_norm > 10.0)
    if not has_bad_grad:
        optimizer.step()
    optimizer.zero_grad()
"""
    found = check_source(src)
    assert [d.code for d in found] == ["GL003"]
    assert "spike_start" not in found[0].message and "`len(batch)`" in found[0].message


@pytest.mark.parametrize(
    ("backward", "codes"),
    [
        ("y.backward(dy)", []),  # apex's optimizer tests: vector-Jacobian products summed on purpose
        ("torch.autograd.backward([y], [dy])", []),
        ("y.mean().backward()", ["GL003"]),
        ("y.mean().backward(torch.ones_like(y.mean()))", ["GL003"]),  # a gradient of ones leaves the loss as it is
        ("y.mean().backward(torch.tensor(0.25))", []),  # a constant seed of 1/N: divided, not reported
        # a seed computed from the loss itself (simple-hierarchical-transformer) scales each micro-batch by its
        # own value over N, it does not divide the loss: (L/N) * dL is the gradient of L**2 / 2N
        ("loss = y.mean(); loss.backward(loss / 4)", ["GL003"]),
        ("loss = y.mean(); loss.backward(gradient=loss.detach() / 4)", ["GL003"]),
        ("loss = y.sum(); torch.autograd.backward([loss], [loss / 4])", []),  # a list of seeds: not read
    ],
)
def test_a_backward_handed_its_gradient_is_no_loss_to_average(backward: str, codes: list[str]) -> None:
    from gradcheck_lint import check_source

    src = f"""\
import torch
model = torch.nn.Linear(4, 4)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(10):
    optimizer.zero_grad()
    for micro_step in range(4):
        x, dy = torch.randn(2, 4), torch.randn(2, 4)
        y = model(x)
        {backward}
    optimizer.step()
"""
    found = check_source(src)
    assert [d.code for d in found] == codes
    for d in found:
        if "backward(loss" in backward or "backward(gradient=loss" in backward:
            assert "computed from `loss` itself" in d.message and d.fix is None  # no `(loss / 4).backward(loss / 4)`


# LLaMA-Factory's v1 trainer weights each micro-batch's loss by its share of the window's valid tokens:
# a GL003 false alarm on unseen code, where the divisor's name read as a per-sample count.
TOKEN_WINDOW = """\
import torch

def train(model, optimizer, loader, count_tokens, dp_size):
    for micro_batches in loader:
        step_valid_tokens = count_tokens(micro_batches)
        for i, micro_batch in enumerate(micro_batches):
            {before}
            loss = model(micro_batch)
            loss = {loss}
            loss.backward()
        optimizer.step()
        optimizer.zero_grad()
"""


@pytest.mark.parametrize("before, loss", [
    ("mini = count_tokens([micro_batch])", "loss * mini * dp_size / (step_valid_tokens + 1e-6)"),
    ("pass", "loss / step_valid_tokens"),
    ("valid_tokens = (micro_batch != -100).sum()", "loss / valid_tokens / len(micro_batches)"),
])
def test_a_divisor_counted_over_the_window_scales_the_micro_batch_losses(before: str, loss: str) -> None:
    assert "GL003" not in codes(TOKEN_WINDOW.format(before=before, loss=loss))


@pytest.mark.parametrize("before, loss", [
    ("micro_tokens = (micro_batch != -100).sum()", "loss / micro_tokens"),
    ("n_tokens = int((micro_batch != -100).sum())", "loss / n_tokens"),
    ("pass", "loss / micro_batch.numel()"),
])
def test_a_divisor_counted_over_the_micro_batch_alone_leaves_the_window_unscaled(before: str, loss: str) -> None:
    assert "GL003" in codes(TOKEN_WINDOW.format(before=before, loss=loss))


# NVlabs/edm's training loop (unseen code): the per-GPU batch is split into rounds, and each round's summed
# loss is divided by the per-GPU batch of the whole window, from which the number of rounds is derived.
# Reported with a *safe* fix before, which would have divided by the window twice.
EDM = """\
import torch

def training_loop(net, optimizer, dataset_iterator, loss_fn, batch_size, batch_gpu, world_size, loss_scaling=1):
    batch_gpu_total = batch_size // world_size
    num_accumulation_rounds = batch_gpu_total // batch_gpu
    while True:
        optimizer.zero_grad(set_to_none=True)
        for round_idx in range(num_accumulation_rounds):
            images = next(dataset_iterator)
            loss = loss_fn(net=net, images=images)
            loss.sum().mul(loss_scaling / {divisor}).backward()
        optimizer.step()
"""


def test_a_divisor_the_window_is_split_from_counts_the_whole_window() -> None:
    assert "GL003" not in codes(EDM.format(divisor="batch_gpu_total"))


def test_the_micro_batch_size_the_window_is_split_into_does_not() -> None:
    assert "GL003" in codes(EDM.format(divisor="batch_gpu"))


# ReStyle's encoder (unseen code) refines its own output n times on one batch, the first iteration special:
# its backward passes are one objective's terms, summed on purpose. GL003 said "not divided by
# n_iters_per_batch", with a safe fix.
REFINE = """\
import torch

def train_step(net, optimizer, x, y, n_iters_per_batch, calc_loss):
    optimizer.zero_grad()
    y_hat = None
    for it in range(n_iters_per_batch):
        {first}
        if it == 0:
            y_hat = net(x)
        else:
            y_hat = net(torch.cat([x, y_hat.detach()], dim=1))
        loss = calc_loss({target}, y_hat)
        loss.backward()
    optimizer.step()

for x, y in loader:
    train_step(net, optimizer, x, y, 3, calc_loss)
"""


def test_refining_one_batch_with_a_special_first_iteration_is_not_accumulation() -> None:
    assert "GL003" not in codes(REFINE.format(first="pass", target="y"))


@pytest.mark.parametrize("first, target", [("x, y = next(batches)", "y"), ("pass", "y[it]")])
def test_a_loop_that_takes_a_new_micro_batch_each_iteration_is_accumulation(first: str, target: str) -> None:
    assert "GL003" in codes(REFINE.format(first=first, target=target))


# windinet's fixed trainer: Accelerate divides by its window, and the loss is multiplied by
# `grad_acc / group_size` only to correct a short last group. The denominator `group_size` is made from
# `(i // grad_acc) * grad_acc`; its own division by `grad_acc` was carried into the loss, a GL010 false alarm
# ("already divided by `grad_acc`") on a fixed version of a lockbox-4 bug.
SHORT_GROUP = """\
import torch
from accelerate import Accelerator

accelerator = Accelerator(gradient_accumulation_steps=cfg.grad_acc)
model = torch.nn.Linear(4, 1)
optimizer = torch.optim.AdamW(model.parameters())
model, optimizer = accelerator.prepare(model, optimizer)
for i, (x, y) in enumerate(loader):
    with accelerator.accumulate(model):
        total_loss = (model(x) - y).pow(2).mean()
        grad_acc = cfg.grad_acc
        {scaling}
        accelerator.backward(backward_loss)
        optimizer.step()
        optimizer.zero_grad()
"""


@pytest.mark.parametrize(("scaling", "expected"), [
    ("group_start = (i // grad_acc) * grad_acc\n        group_size = min(grad_acc, len(loader) - group_start)\n"
     "        backward_loss = total_loss * (grad_acc / group_size)", set()),
    ("backward_loss = total_loss / grad_acc", {"GL010"}),  # divided by hand and by the framework
])
def test_a_denominators_own_divisions_do_not_divide_the_loss(scaling: str, expected: set[str]) -> None:
    assert codes(SHORT_GROUP.format(scaling=scaling)) & {"GL010", "GL003"} == expected


# A Modulated-SFNO trainer (lockbox 29, a missed GL003): the target is normalised by a statistic, `(data - means) /
# stds`, before the criterion; that division of the target was taken for a division of the loss (by an unknown
# divisor, perhaps the window), and the undivided window went unreported.
NORMALISED_TARGET = """\
import torch


class Trainer:
    def normalise(self, data):
        return (data - self.means) / self.stds

    def train(self, model, loader):
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
        loss_fn = torch.nn.MSELoss()
        for i, (x, y) in enumerate(loader):
            loss = loss_fn(model(x), {target})
            loss.backward()
            if (i + 1) % 4 == 0:
                optimizer.step()
                optimizer.zero_grad()
"""


@pytest.mark.parametrize("target, reported", [
    ("self.normalise(y)", True),
    ("y / self.stds", True),
    ("torch.nn.functional.normalize(y)", True),
    # the criterion's result itself divided by the window (`loss_fn(...) / 4`): silent
    ("y) / 4 + 0 * (y", False),
])
def test_a_normalised_target_is_no_division_of_the_loss(target: str, reported: bool) -> None:
    found = analyse_text(NORMALISED_TARGET.format(target=target), "train.py").diagnostics
    assert ("GL003" in {d.code for d in found}) is reported


MINIBATCH_SHARES = """\
import torch


def learn(policy, optimizer, batches, batch_size, mini_batch_size):
    for obs, acts in batches:
        optimizer.zero_grad()
        for start in range(0, batch_size, mini_batch_size):
            o, a = obs[start:start + mini_batch_size], acts[start:start + mini_batch_size]
            {ratio}
            loss = -policy(o, a).mean() * {factor}
            loss.backward()
        optimizer.step()
"""


@pytest.mark.parametrize(("ratio", "factor", "fires"), [
    ("pass", "(mini_batch_size / batch_size)", False),  # each mini-batch's share of the batch
    ("minibatch_ratio = mini_batch_size / batch_size", "minibatch_ratio", False),  # the same share, under a name
    ("scale = mini_batch_size * 2", "scale", True),  # a factor that divides nothing
])
def test_a_share_of_the_batch_under_a_name(ratio: str, factor: str, fires: bool) -> None:
    """rlgym-ppo's PPO learner (lockbox 30, after its opening; two certain GL003 and its fixed version NOT CLEAN):
    `minibatch_ratio = mini_batch_size / batch_size`, then `loss * minibatch_ratio` on each mini-batch of the window."""
    assert ("GL003" in codes(MINIBATCH_SHARES.format(ratio=ratio, factor=factor))) == fires
