"""Functions handed to a call that runs them (`analysis/callables.py`), and loops over model parts.

`checkpoint(fn, x)` runs `fn(x)` whatever `fn` is (a `def`, a lambda closing over a layer); a hook given
to `register_post_accumulate_grad_hook` runs inside each backward pass, and steps there; a loop over
task heads runs one loss of one batch per head, not micro-batches (issue 31: the static side missed
the first two and reported the third as an undivided window, where the guard did not).
"""

from __future__ import annotations

import pytest

from gradcheck_lint import check_source


def codes(text: str) -> list[tuple[int, str, str]]:
    return [(d.line, d.code, d.certainty.value) for d in check_source(text)]


CHECKPOINT = """\
import torch
from torch import nn
from torch.utils.checkpoint import checkpoint


def run(t, layer):
    return torch.relu(layer(t))


def train():
    layers = nn.ModuleList([nn.Linear(6, 6) for _ in range(3)])
    opt = torch.optim.Adam(layers.parameters(), lr=1e-3)
    for _ in range(5):
{clear}        h = torch.randn(4, 6, requires_grad=True)
        for layer in layers:
            h = {call}
        h.sum().backward()
        opt.step()


train()
"""

CALLS = {
    "lambda-default": "checkpoint(lambda t, layer=layer: torch.relu(layer(t)), h, use_reentrant=True)",
    "lambda-closure": "checkpoint(lambda t: torch.relu(layer(t)), h, use_reentrant=False)",
    "def": "checkpoint(run, h, layer, use_reentrant=True)",
    "lambda-called": "(lambda t: torch.relu(layer(t)))(h)",
}


@pytest.mark.parametrize("call", CALLS.values(), ids=CALLS.keys())
def test_a_function_run_by_checkpoint_reaches_the_layers_it_calls(call: str) -> None:
    # the input is a trained leaf of its own (`requires_grad=True`): only the function reaches `layers`
    assert codes(CHECKPOINT.format(clear="", call=call)) == [(18, "GL001", "certain")]
    assert codes(CHECKPOINT.format(clear="        opt.zero_grad()\n", call=call)) == []


HOOK = """\
import torch
from torch import nn


def main():
    model = nn.Sequential(nn.Linear(6, 12), nn.ReLU(), nn.Linear(12, 1))
    optimizers = {{p: torch.optim.SGD([p], lr=0.01) for p in model.parameters()}}

    def step_in_backward(p):
        optimizers[p].step()
{clear}
    for p in model.parameters():
        p.register_post_accumulate_grad_hook({hook})
    for _ in range(6):
        x, y = torch.randn(4, 6), torch.randn(4, 1)
        nn.functional.mse_loss(model(x), y).backward()


main()
"""


def test_a_step_in_a_post_accumulate_grad_hook_runs_in_every_backward() -> None:
    found = codes(HOOK.format(clear="", hook="step_in_backward"))
    assert [(line, code) for line, code, _ in found] == [(10, "GL001")]
    assert codes(HOOK.format(clear="        optimizers[p].zero_grad()\n", hook="step_in_backward")) == []


def test_a_lambda_hook_steps_too() -> None:
    found = codes(HOOK.format(clear="", hook="lambda q: optimizers[q].step()"))
    assert [(line, code) for line, code, _ in found] == [(13, "GL001")]


def test_a_hook_on_parameters_no_backward_reaches_never_runs() -> None:
    text = HOOK.format(clear="", hook="step_in_backward").replace(
        "nn.functional.mse_loss(model(x), y).backward()", "other = nn.Linear(6, 1)\n        other(x).sum().backward()")
    assert [code for _, code, _ in codes(text)] == []


HEADS = """\
import torch
from torch import nn

encoder = nn.Sequential(nn.Linear(10, 16), nn.ReLU())
heads = nn.ModuleList([nn.Linear(16, 1) for _ in range(3)])
opt = torch.optim.Adam([*encoder.parameters(), *heads.parameters()], lr=1e-3)
for x in torch.randn(6, 8, 10):
    targets = torch.randn(3, 8, 1)
    opt.zero_grad()
    for {target} in {iterable}:
        loss = nn.functional.mse_loss({forward}, y)
        loss.backward()
    opt.step()
"""


def test_one_loss_per_head_of_one_batch_is_not_a_window() -> None:
    assert codes(HEADS.format(target="head, y", iterable="zip(heads, targets)", forward="head(encoder(x))")) == []


def test_micro_batches_through_one_head_still_are() -> None:
    text = HEADS.format(target="micro, y", iterable="zip(x.chunk(3), targets)", forward="heads[0](encoder(micro))")
    assert [(line, code) for line, code, _ in codes(text)] == [(12, "GL003")]


ENSEMBLE = """\
import torch
from torch import nn

models = nn.ModuleList([nn.Linear(10, 1) for _ in range(3)])
opt = torch.optim.SGD(models.parameters(), lr=1e-2)
for x in torch.randn(6, 8, 10):
    opt.zero_grad()
    for model in models:
        for micro in x.chunk(4):
            model(micro).pow(2).mean().backward()
    opt.step()
"""


def test_micro_batches_inside_a_loop_over_models_still_are() -> None:
    # each model's parameters accumulate its four micro-batches: the loop over models is not the window
    assert [(line, code) for line, code, _ in codes(ENSEMBLE)] == [(10, "GL003")]


# `functools.partial` binds arguments to a callable run later (improved-diffusion's `compute_losses`): the
# result depends on what the callable was made from. Read as a call of nothing, its loss reached no
# parameter, so the backward was taken to write every parameter the sole optimizer holds, the fp16
# master copy too, which the clear of the model's parameters does not cover: a certain false GL001.
PARTIAL = """\
import functools

import torch
from torch import nn


def zero_grad(params):
    for p in params:
        if p.grad is not None:
            p.grad.zero_()


class TrainLoop:
    def __init__(self, model, diffusion, data, use_fp16=False):
        self.model = model
        self.diffusion = diffusion
        self.data = data
        self.model_params = list(model.parameters())
        self.master_params = self.model_params
        if use_fp16:
            self.master_params = [nn.Parameter(torch.cat([p.detach().float().view(-1) for p in self.model_params]))]
        self.opt = torch.optim.AdamW(self.master_params, lr=1e-4)

    def run_loop(self):
        for batch in self.data:
{clear}            compute = functools.partial({callee}, batch)
            loss = compute().mean()
            loss.backward()
            self.opt.step()
"""

CALLEES = {"module": "self.model", "method": "self.diffusion.training_losses, self.model"}


@pytest.mark.parametrize("callee", CALLEES.values(), ids=CALLEES.keys())
def test_a_partial_call_reaches_what_it_was_made_from(callee: str) -> None:
    cleared = PARTIAL.format(clear="            zero_grad(self.model_params)\n", callee=callee)
    assert codes(cleared) == []
    found = codes(PARTIAL.format(clear="", callee=callee))
    assert [(line, code) for line, code, _ in found] == [(29, "GL001")]


def test_a_partial_of_a_module_runs_its_forward() -> None:
    # the bound module runs where the partial is called: its loss reaches the model for certain
    assert codes(PARTIAL.format(clear="", callee="self.model")) == [(29, "GL001", "certain")]


PARTIAL_STEP = """\
import functools

import torch


def train_step(model, opt, batch):
    loss = model(batch).mean()
    loss.backward()
    opt.step()


def main():
    model = torch.nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    step = functools.partial(train_step, model, opt)
    for batch in torch.randn(10, 8, 4):
{clear}        step(batch)


main()
"""


def test_a_partial_of_a_function_of_this_file_runs_it_where_it_is_called() -> None:
    assert [(line, code) for line, code, _ in codes(PARTIAL_STEP.format(clear=""))] == [(9, "GL001")]
    assert codes(PARTIAL_STEP.format(clear="        opt.zero_grad()\n")) == []


# A test handed over as an argument (Swin Transformer's `loss_scaler(..., update_grad=(idx + 1) % N == 0)`):
# the callee's `if update_grad:` is the caller's test, not a flag of its own. Read as independent, a path
# stepped in the callee and skipped the caller's clear under the same test: a certain false GL001.
HANDED = """\
import torch


class ScalerWithNorm:
    def __init__(self):
        self._scaler = torch.cuda.amp.GradScaler()

    def __call__(self, loss, optimizer, update_grad=True):
        self._scaler.scale(loss).backward()
        if update_grad:
            self._scaler.unscale_(optimizer)
            self._scaler.step(optimizer)
            self._scaler.update()


def train(model, loader, accumulation):
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    loss_scaler = ScalerWithNorm()
    for idx, (x, y) in enumerate(loader):
        loss = torch.nn.functional.mse_loss(model(x), y) / accumulation
        loss_scaler(loss, optimizer, {handed})
        if {clear_test}:
            optimizer.zero_grad()
"""


@pytest.mark.parametrize("handed", ["update_grad=(idx + 1) % accumulation == 0", "(idx + 1) % accumulation == 0"],
                         ids=["keyword", "positional"])
def test_a_test_handed_as_an_argument_is_the_callers_test(handed: str) -> None:
    assert codes(HANDED.format(handed=handed, clear_test="(idx + 1) % accumulation == 0")) == []


def test_a_handed_test_with_no_clear_still_reports() -> None:
    # the clear's test is another flag, never set: each window's step applies the windows before it too
    found = codes(HANDED.format(handed="update_grad=(idx + 1) % accumulation == 0", clear_test="reset_every_window"))
    assert (12, "GL001", "certain") in found
