"""An operation on a trained leaf read in code (`torch.randn(..., requires_grad=True)` handed to `Adam([M])`)
makes a graph as surely as a module's forward (`Value.as_tensor`). Tangram's mapper keeps
`run_loss[i]` of a tuple whose first item is the backpropagated loss and whose other items are floats;
before, only a forward pass of a module was taken to build a graph, and the item at a loop index was read
as holding none (lockbox 18, after its opening: GL008 missed). A copy of the leaf (`M.clone()`, an op that
saves no tensor for backward) keeps no more than the leaf itself, which lives on anyway."""

from __future__ import annotations

import pytest

from gradcheck_lint.engine import analyse_text

TEXT = """\
import torch
from torch.nn.functional import softmax


def fit(S, G, epochs):
    M = torch.randn(10, 5, requires_grad=True)
    optimizer = torch.optim.Adam([M], lr=0.1)
    history = []
    for t in range(epochs):
        gv = (torch.matmul(softmax(M, dim=1).t(), S) - G).pow(2).mean()
        run_loss = (-gv, gv.tolist())
        loss = run_loss[0]
        {store}
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return history
"""


EACH_ITEM = "for i in range(2):\n            history.append({})"


@pytest.mark.parametrize(("store", "gl008"), [
    (EACH_ITEM.format("run_loss[i]"), True),  # the first item holds the graph
    (EACH_ITEM.format("str(run_loss[i])"), False),  # Tangram's fix
    ("history.append(M * 2)", True),
    ("history.append(M)", False),  # the leaf itself holds no graph
    ("history.append(M.clone())", False),  # a copy's graph saves nothing but the leaf (aiaiart's latents montage)
    ("history.append(M.detach() * 2)", False),
    ("history.append(gv.item())", False),
])
def test_graph_made_from_a_trained_leaf(store: str, gl008: bool) -> None:
    found = [d for d in analyse_text(TEXT.format(store=store), "train.py").diagnostics if d.code == "GL008"]
    assert bool(found) is gl008
    if found:
        assert found[0].line in (13, 14)


UNREAD = """\
import torch


def optimise(model, steps):
    z = torch.randn(4, 8)
    z.requires_grad = True
    opt = torch.optim.Adam([z], lr=0.1)
    saved = []
    for i in range(steps):
        opt.zero_grad()
        loss = model.fc_property(z).mean()
        loss.backward()
        opt.step()
        saved.append(model.langevin_dynamics(z))
"""


def test_what_an_unread_method_makes_of_a_leaf_is_not_known_to_hold_a_graph() -> None:
    """cdvae's `model.langevin_dynamics(z)` is `@torch.no_grad()` in a file not read: what it returns may hold no
    graph, so keeping it is no certain finding (lockbox 17 had it `possible`; a leaf's graph must not make it
    certain)."""
    found = [d for d in analyse_text(UNREAD, "train.py").diagnostics if d.code == "GL008"]
    assert all(d.certainty.value == "possible" for d in found)
