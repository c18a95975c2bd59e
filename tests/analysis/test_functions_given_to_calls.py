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
