"""A loop that runs one accumulation window of a framework whose step is gated on its windows (`for _ in
range(engine.gradient_accumulation_steps()): ... engine.step()`) steps after its last iteration only, as a step after
the loop would: a list made afresh before it holds one window's graphs (CZtheHusky's rt_torch, lockbox 40: a certain
false GL008). A DeepSpeed engine built from the launcher's `args` (`deepspeed.initialize(args, model, ...)`) is
configured by them (`args.deepspeed_config`): its step is gated on the configured window, not every micro-batch's."""

from __future__ import annotations

import textwrap

import pytest

from gradcheck_lint import check_source
from gradcheck_lint.analysis.apimodels.schema import ArgRef
from gradcheck_lint.config import Settings

STEP = """
import deepspeed
import torch
from torch import nn


def window(engine, batches):
    losses = []
    {bound}
    for _ in range({count}):
        x, y = next(batches)
        loss = nn.functional.mse_loss(engine(x), y)
        engine.backward(loss)
        engine.step()
        losses.append(loss)
    return losses


def main(args):
    model = nn.Linear(4, 1)
    engine, _, _, _ = deepspeed.initialize({init})
    batches = iter([(torch.randn(2, 4), torch.randn(2, 1))] * 400)
    for it in range(50):
        print(sum(x.item() for x in window(engine, batches)))
"""

ARGS = "args, model, model_parameters=model.parameters()"


def _found(bound: str = "pass", count: str = "engine.gradient_accumulation_steps()", init: str = ARGS) -> list[tuple[str, int]]:
    source = textwrap.dedent(STEP.format(bound=bound, count=count, init=init))
    return [(d.code, d.line) for d in check_source(source, "t.py", settings=Settings.default())]


@pytest.mark.parametrize("init", [ARGS, "args=args, model=model, model_parameters=model.parameters()",
                                  "model=model, model_parameters=model.parameters(), config='ds.json'"])
def test_a_list_of_one_engine_window_made_afresh_holds_one_window(init: str) -> None:
    assert _found(init=init) == []
    assert _found(bound="ga_steps = engine.gradient_accumulation_steps()", count="ga_steps", init=init) == []


def test_a_loop_of_another_count_steps_in_it() -> None:
    assert _found(count="8") == [("GL008", 15)]
    assert _found(bound="ga_steps = engine.gradient_accumulation_steps()\n    ga_steps += 1", count="ga_steps") \
        == [("GL008", 16)]


def test_the_keyword_args_is_spelled_apart_from_every_positional_argument() -> None:
    assert ArgRef.parse("0|=args", "t") == ArgRef(positions=(0,), keywords=("args",))
    assert ArgRef.parse("args", "t") == ArgRef(all_positional=True)
