"""`outputs["loss"] /= accumulation_steps` on a model's output (a Hugging Face `ModelOutput`, a dict the model returns)
divides the loss a later `fabric.backward(outputs["loss"])` backpropagates. The division of an item was kept only for
a container whose items the analysis had read (a dict display), so a model's output lost it and GL003 said "not
divided" (lockbox 16's pytorch-memory-optim bonus scripts, found after its opening: they do not count there)."""

from __future__ import annotations

import pytest

from gradcheck_lint.engine import analyse_text
from support import parse_expected_findings

_LOOP = """\
import torch


def train(model, optimizer, loader, accumulation_steps):
    for batch_idx, batch in enumerate(loader):
        outputs = model(batch["input_ids"], labels=batch["label"])
{divide}        outputs["loss"].backward(){mark}
        if (batch_idx + 1) % accumulation_steps == 0:
            optimizer.step()
            optimizer.zero_grad()
"""

CASES = {
    "item_divided_in_place": ('        outputs["loss"] /= accumulation_steps\n', False),
    "item_multiplied_by_reciprocal": ('        outputs["loss"] *= 1.0 / accumulation_steps\n', False),
    "item_not_divided": ("", True),
    "another_item_divided": ('        outputs["logits"] /= accumulation_steps\n', True),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_an_item_of_a_model_output_divided_in_place(name: str) -> None:
    divide, reported = CASES[name]
    text = _LOOP.replace("{divide}", divide).replace("{mark}", "  # expect: GL003" if reported else "")
    expected = {(line, code) for line, code, _c in parse_expected_findings(text) if code == "GL003"}
    found = {(d.span.line, d.code) for d in analyse_text(text, "train.py").diagnostics if d.code == "GL003"}
    assert bool(expected) == reported
    assert found == expected


# `loss * (1.0 / n)`: the factor `1.0 / n`, read on its own, carries the division by `n` already, and the product
# counted it again: "divided by `n` twice" (GL003, possible) on a loss divided once. A loss divided by `n` and then
# multiplied by `1.0 / n` is divided twice.
_SCALED = """\
import torch


def train(model, optimizer, loader, accumulation_steps):
    for batch_idx, batch in enumerate(loader):
        loss = model(batch).mean(){first}
{scale}        loss.backward(){mark}
        if (batch_idx + 1) % accumulation_steps == 0:
            optimizer.step()
            optimizer.zero_grad()
"""

SCALES = {
    "times_reciprocal": ("", "        loss = loss * (1.0 / accumulation_steps)\n", False),
    "reciprocal_times": ("", "        loss = (1 / accumulation_steps) * loss\n", False),
    "in_place_times_reciprocal": ("", "        loss *= 1.0 / accumulation_steps\n", False),
    "divided_then_times_reciprocal": (" / accumulation_steps", "        loss = loss * (1.0 / accumulation_steps)\n", True),
    "divided_then_in_place_times_reciprocal": (" / accumulation_steps", "        loss *= 1.0 / accumulation_steps\n", True),
}


@pytest.mark.parametrize("name", sorted(SCALES))
def test_a_loss_times_the_reciprocal_of_the_window_is_divided_once(name: str) -> None:
    first, scale, twice = SCALES[name]
    text = _SCALED.replace("{first}", first).replace("{scale}", scale).replace("{mark}", "  # expect: GL003" if twice else "")
    found = [(d.span.line, d.code, d.message) for d in analyse_text(text, "train.py").diagnostics if d.code == "GL003"]
    if twice:
        assert [(line, code) for line, code, _m in found] == [(8, "GL003")] and "twice" in found[0][2]
    else:
        assert found == []
