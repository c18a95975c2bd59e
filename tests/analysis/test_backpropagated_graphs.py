"""GL008 on a loss whose origin the analysis cannot read: `.backward()` called on it says it holds a
graph (`Value.graph`), and what is stored of it decides (`analysis/recorder.py`, `keepalive.py`)."""

from __future__ import annotations

import pytest

from gradcheck_lint.engine import analyse_text

LOOP = """\
import torch
from mylib import loss_fn, make_model

def train(loader):
    model = make_model()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    total = 0.0
    losses = []
    for x, y in loader:
        opt.zero_grad()
        loss = loss_fn(model, x, y)
        {backward}
        opt.step()
        {store}
    return total, losses
"""


def codes(backward: str, store: str) -> set[str]:
    text = LOOP.format(backward=backward, store=store)
    return {d.code for d in analyse_text(text, "train.py").diagnostics}


@pytest.mark.parametrize("store", ["total += loss", "total = total + loss", "losses.append(loss)"])
def test_a_backpropagated_loss_kept_across_iterations_is_gl008(store: str) -> None:
    assert codes("loss.backward()", store) == {"GL008"}


@pytest.mark.parametrize("store", ["total += loss.item()", "total += loss.detach()", "total += loss.data",
                                   "losses.append(loss.item())"])
def test_its_value_alone_is_silent(store: str) -> None:
    assert codes("loss.backward()", store) == set()


ENGINE = """\
import deepspeed
from mylib import create_model

def train(data_iterator, ds_config):
    model = create_model()
    model, _, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config=ds_config)
    losses = []
    for step, batch in enumerate(data_iterator):
        loss = model(**batch)
        model.backward(loss)
        model.step()
        losses.append({stored})
    return losses
"""


@pytest.mark.parametrize(("stored", "expected"), [("loss.item()", set()), ("loss", {"GL008"})])
def test_what_is_kept_of_a_loss_an_engine_backpropagated(stored: str, expected: set[str]) -> None:
    # the shape of DeepSpeed's HelloDeepSpeed, which keeps `loss.item()` (the sweep's false alarm of a
    # first version came from that whole file; this smaller loop did not reproduce it)
    assert {d.code for d in analyse_text(ENGINE.format(stored=stored), "train.py").diagnostics} == expected


def test_a_loss_never_backpropagated_stays_unknown() -> None:
    # another tensor is backpropagated; nothing says what `loss_fn` returns (it may be a float)
    assert codes("model(x).sum().backward()", "total += loss") == set()
