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


TERMS = """\
import torch
from mylib import make_model

def train(loader):
    model = make_model()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    kept = []
    for batch in loader:
        opt.zero_grad()
        terms = model.calculate_loss(batch)
        {made}
        loss.backward()
        opt.step()
        {store}
    return kept
"""


def terms_findings(made: str, store: str) -> list[tuple[str, bool]]:
    text = TERMS.format(made=made, store=store)
    return [(d.code, d.possible) for d in analyse_text(text, "train.py").diagnostics]


@pytest.mark.parametrize("made", ["loss = terms", "loss = sum(terms)",
                                  "loss = sum(terms) if isinstance(terms, tuple) else terms"])
def test_what_a_backpropagated_loss_was_wholly_made_of_holds_its_graph(made: str) -> None:
    """RecBole: `losses = self.model.calculate_loss(...)`, `loss = sum(losses) if isinstance(losses, tuple)
    else losses`, `loss.backward()`, `losses_list.append(losses)`: the call is not read, but the backward of
    what was made of `terms` alone proves `terms` holds the graph."""
    assert terms_findings(made, "kept.append(terms)") == [("GL008", False)]


@pytest.mark.parametrize(("made", "store"), [
    ("loss = terms + extra_penalty(model)", "kept.append(terms)"),  # either side may bring the graph
    ("loss = sum(terms)", "kept.append([t.item() for t in terms])"),
    ("loss = sum(terms); terms = None", "kept.append(terms)"),  # rebound since: another value
])
def test_only_a_whole_making_that_still_holds_is_read(made: str, store: str) -> None:
    assert terms_findings(made, store) == []


def test_no_fix_is_offered_the_terms_may_be_a_tuple() -> None:
    """`.detach()` of a tuple raises, `tuple(t.detach() for t in terms)` of a tensor iterates its rows."""
    text = TERMS.format(made="loss = sum(terms)", store="kept.append(terms)")
    found = analyse_text(text, "train.py").diagnostics
    assert [d.code for d in found] == ["GL008"]
    assert found[0].fix is None
