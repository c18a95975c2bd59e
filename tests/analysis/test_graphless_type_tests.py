"""A value tested to be of a type that holds no autograd graph (a NumPy array, a Python number or string) holds
none on the arm where the test holds: imaml's `to_numpy(x)` returns `x` itself when `type(x) == np.ndarray`, else
`x.data.numpy()`; what it returns for a loss is no graph (a certain GL008 before)."""

from __future__ import annotations

import pytest

from gradcheck_lint.config import Settings
from gradcheck_lint.engine import analyse_text

HELPER = """\
import numbers

import numpy as np
import torch


def to_numpy(x):
    if {test}:
        return x
    else:
        try:
            return x.data.numpy()
        except Exception:
            return x.cpu().data.numpy()


def as_number(x):
    return x if {test} else x.item()


def fit(model, opt, x, y, n):
    losses = []
    for i in range(n):
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        losses.append({store}(loss))
    return losses
"""


def _found(text: str) -> set[tuple[int, str]]:
    report = analyse_text(text, "t.py", Settings.default().with_enabled(frozenset({"GL008"})))
    return {(d.line, d.code) for d in report.diagnostics}


@pytest.mark.parametrize("test", ["type(x) == np.ndarray", "type(x) is np.ndarray", "isinstance(x, np.ndarray)",
                                  "isinstance(x, (int, float))", "isinstance(x, numbers.Number)"])
@pytest.mark.parametrize("store", ["to_numpy", "as_number"])
def test_a_value_found_to_be_of_a_graphless_type_holds_no_graph(test: str, store: str) -> None:
    assert _found(HELPER.format(test=test, store=store)) == set()


@pytest.mark.parametrize("store", ["to_numpy", "as_number"])
def test_a_value_found_to_be_a_tensor_keeps_its_graph(store: str) -> None:
    assert _found(HELPER.format(test="isinstance(x, torch.Tensor)", store=store)) == {(28, "GL008")}


# PIDAO's PINN solver (lockbox 23, a certain GL008): a logging helper takes the equation loss from a pair of losses
# as it is when `isinstance(losses[0], int)` (a term switched off) and as `.item()` otherwise, then appends it.
ITEM = """\
import torch


def log(loss, losses, logger):
    if isinstance(losses[0], {kind}):
        eq_loss = losses[0]
    else:
        eq_loss = losses[0].detach().cpu().item()
    logger.append([loss.item(), eq_loss, losses[1].item()])


def fit(model, opt, x, y, n, logger):
    for i in range(n):
        pred = model(x)
        losses = (((pred - y) ** 2).mean(), pred.abs().mean())
        loss = losses[0] + losses[1]
        loss.backward()
        opt.step()
        opt.zero_grad()
        log(loss, losses, logger)
"""


def test_an_item_found_to_be_a_number_holds_no_graph() -> None:
    assert _found(ITEM.format(kind="int")) == set()
    assert _found(ITEM.format(kind="(int, float)")) == set()


def test_an_item_found_to_be_a_tensor_keeps_its_graph() -> None:
    assert _found(ITEM.format(kind="torch.Tensor")) == {(9, "GL008")}


LOGGING = """\
import torch


def losses_of(model, x, y):
    out = model(x)
    main = torch.nn.functional.mse_loss(out, y)
    return [main, main * 0.5, 0]


def train(model, opt, loader, n_terms):
    totals = [0] * n_terms
    for x, y in loader:
        opt.zero_grad()
        terms = losses_of(model, x, y)
        terms[0].backward()
        opt.step()
        for idx in range(n_terms):
            if {test}:
                totals[idx] += terms[idx].item()
            else:
                totals[idx] += terms[idx]
    return totals
"""


@pytest.mark.parametrize("test", ["isinstance(terms[idx], torch.Tensor)", "not isinstance(terms[idx], int)",
                                  "not isinstance(terms[idx], (int, float))"])
def test_an_item_found_to_be_a_number_on_the_else_arm_holds_no_graph(test: str) -> None:
    # HGN's loss logging (lockbox 36): tensors go through `.item()`, the `else` arm adds the ints as they are
    assert _found(LOGGING.format(test=test)) == set()


@pytest.mark.parametrize("test", ["isinstance(terms[idx], int)", "not isinstance(terms[idx], torch.Tensor)",
                                  "idx > 0"])
def test_the_arm_where_the_item_may_be_a_tensor_keeps_its_graph(test: str) -> None:
    assert _found(LOGGING.format(test=test)) == {(21, "GL008")}


def test_the_fact_lapses_when_the_index_changes() -> None:
    text = LOGGING.format(test="not isinstance(terms[idx], int)").replace(
        "                totals[idx] += terms[idx]\n", "                idx = 0\n                totals[idx] += terms[idx]\n")
    assert _found(text) == {(22, "GL008")}
