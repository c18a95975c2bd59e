"""A script whose code before `accelerator.prepare` raises unless the Accelerator has a DeepSpeed plugin runs only
under a DeepSpeed launch: `prepare` builds DeepSpeed engines, which reduce gradients at the window's boundary
themselves, no DDP wrapper to put in `no_sync` (gpt4all's and HuatuoGPT-II's training scripts)."""

from __future__ import annotations

import textwrap

import pytest

from gradcheck_lint.api import check_source

SCRIPT = """
import torch
from accelerate import Accelerator


def train(accelerator, model, loader, window):
{before}
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    for step, batch in enumerate(loader):
        loss = model(**batch).loss / window
        accelerator.backward(loss)
        if (step + 1) % window == 0:
            optimizer.step()
            optimizer.zero_grad()


train(Accelerator(), build_model(), build_loader(), 8)
"""


def codes(before: str) -> list[str]:
    body = textwrap.indent(textwrap.dedent(before).strip() or "pass", "    ")
    return [d.code for d in check_source(textwrap.dedent(SCRIPT).replace("{before}", body))]


@pytest.mark.parametrize("before", [
    # an item of the plugin's configuration written: AttributeError on None
    "accelerator.state.deepspeed_plugin.deepspeed_config['train_micro_batch_size_per_gpu'] = 4",
    # read into a name
    "stage = accelerator.state.deepspeed_plugin.zero_stage",
    # a local bound only when the plugin is present, read on every path
    """
    if accelerator.state.deepspeed_plugin is not None:
        window = accelerator.state.deepspeed_plugin.deepspeed_config["gradient_accumulation_steps"]
    total = 1000 / window
    """.replace("window", "gas"),
    """
    if accelerator.state.deepspeed_plugin is None:
        print("no deepspeed")
    else:
        gas = 4
    print(gas)
    """,
])
def test_code_that_raises_without_a_deepspeed_plugin_means_no_ddp(before: str) -> None:
    assert "GL006" not in codes(before)


@pytest.mark.parametrize("before", [
    "",
    # only tested: either launch runs
    "if accelerator.state.deepspeed_plugin is not None:\n    print(accelerator.state.deepspeed_plugin.zero_stage)",
    # evaluated only when the plugin is present
    "zero = accelerator.state.deepspeed_plugin is not None and accelerator.state.deepspeed_plugin.zero_stage",
    # bound on the other path too
    """
    gas = 1
    if accelerator.state.deepspeed_plugin is not None:
        gas = accelerator.state.deepspeed_plugin.deepspeed_config["gradient_accumulation_steps"]
    print(gas)
    """,
    # read only on some paths
    """
    if accelerator.state.deepspeed_plugin is not None:
        gas = 4
    if verbose:
        print(gas)
    """,
    # inside a try: the error may be caught
    """
    try:
        accelerator.state.deepspeed_plugin.deepspeed_config['train_batch_size'] = 4
    except AttributeError:
        pass
    """,
])
def test_code_that_runs_either_way_leaves_ddp_possible(before: str) -> None:
    assert "GL006" in codes(before)
