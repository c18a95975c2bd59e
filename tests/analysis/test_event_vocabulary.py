"""The names that make a call a training event whatever its receiver come from the catalogue in force:
a row that backpropagates, steps, clears, freezes, toggles, unscales or clips names one, user rows too."""

from __future__ import annotations

import ast

from gradcheck_lint.analysis.apimodels import catalogue_for, parse_model_file
from gradcheck_lint.analysis.prescan import GRADIENT_CALLS, Prescan, event_attrs
from gradcheck_lint.analysis.siblings import STEP_EFFECTS

USER = parse_model_file(
    {"method": [{"type": "torch.optim.Optimizer", "name": "apply_gradients", "effect": {"effect": "step", "optimizer": "self"}}]},
    "pyproject.toml: [tool.gradlint.models]",
)
SOURCE = """
def train(engine, opt, loss):
    loss.backward()
    opt.apply_gradients()
"""


def test_event_names_are_the_catalogues_rows() -> None:
    names = event_attrs(catalogue_for())
    assert {"backward", "manual_backward", "step", "zero_grad", "requires_grad_", "toggle_optimizer", "unscale_",
            "clip_grad_norm_", "clip_gradients", "update_params", "optimizer_step"} <= names
    assert "train_batch" in names  # DeepSpeed's engine steps inside it (its row says so); a hand-kept list had missed it
    assert GRADIENT_CALLS <= names
    assert not {"__call__", "forward", "item", "detach"} & names  # calling a module, reading a number: no event


def test_a_user_row_adds_its_name_to_the_vocabulary() -> None:
    assert "apply_gradients" not in event_attrs(catalogue_for())
    assert "apply_gradients" in event_attrs(catalogue_for((USER,)))
    module = ast.parse(SOURCE)
    fn = module.body[0]
    assert not Prescan(module, catalogue_for()).calls_events(fn, "backward", "gradients")
    assert Prescan(module, catalogue_for((USER,))).calls_events(fn, "backward", "gradients")


def test_a_method_steps_itself_by_the_catalogues_step_and_backward_rows() -> None:
    steps = catalogue_for().named_by_effect(*STEP_EFFECTS)
    assert {"backward", "manual_backward", "step", "optimizer_step", "update_params"} <= steps
    assert "zero_grad" not in steps and "clip_grad_norm_" not in steps
