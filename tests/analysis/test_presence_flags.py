"""A name that holds an optimizer on some paths and None on others is followed per path
(`flags.presence_flags`), and a path remembers the tests the object was built under when another test reads
them as parts (`BoolParts.shared`). Lockbox 17's hypercl replay trainer builds `d_emb_optimizer` only
`if d_hnet is not None` and `not config.dont_train_rp_embeddings` (None otherwise), clears it under
`if d_emb_optimizer is not None:` and steps it under the construction's two tests joined by `and`: the path
that built it and skipped its clear cannot happen, yet was read as stepping stale gradients (GL001). A method
called on the name where it holds None raises AttributeError: that path goes no further (`raises_on_none`)."""

from __future__ import annotations

import pytest

from gradcheck_lint.engine import analyse_text

TEXT = """\
from torch import optim


def train(config, enc, d_hnet, dec, loader):
    eoptimizer = optim.Adam(enc.parameters())
    if d_hnet is not None:
        if not config.dont_train_rp_embeddings:
            d_emb_optimizer = optim.Adam([d_hnet.emb])
        else:
            d_emb_optimizer = None
    else:
        d_emb_optimizer = None
    for i, x in enumerate(loader):
        eoptimizer.zero_grad()
        if {clear_test}:
            d_emb_optimizer.zero_grad()
        loss = dec(enc(x), d_hnet).mean()
        loss.backward()
        eoptimizer.step()
        if {step_test}:
            d_emb_optimizer.step()
"""

BUILT = "d_hnet is not None and not config.dont_train_rp_embeddings"


@pytest.mark.parametrize(("clear_test", "step_test", "gl001"), [
    ("d_emb_optimizer is not None", BUILT, False),  # tied by construction
    ("d_emb_optimizer is not None", "d_emb_optimizer is not None", False),
    ("d_emb_optimizer is not None and i % 2 == 0", "d_emb_optimizer is not None", True),  # cleared every other step
    ("d_emb_optimizer is None", BUILT, True),  # cleared only where there is nothing to clear
    # stepped under one of the two tests: where it was not built, `None.step()` raises; where it was, it was cleared
    ("d_emb_optimizer is not None", "d_hnet is not None", False),
])
def test_optimizer_built_under_a_test(clear_test: str, step_test: str, gl001: bool) -> None:
    text = TEXT.format(clear_test=clear_test, step_test=step_test)
    found = {d.code for d in analyse_text(text, "train.py").diagnostics}
    assert ("GL001" in found) is gl001
