"""Which names are followed per path as literal flags (`analysis/flags.py`): only those that gate something
able to touch gradients; a flag gating other work (an RNG reload) would only multiply the paths."""

from __future__ import annotations

import ast

from gradcheck_lint.analysis.flags import literal_flags

SRC = """\
def train(loader, optimizer, model):
    should_start_update = True
    rng_to_sync = True
    count = 0
    for x in loader:
        if should_start_update:
            optimizer.zero_grad()
            should_start_update = False
        if rng_to_sync:
            load_rng_state()
            rng_to_sync = False
        if count:
            optimizer.step()
        count = 1
        model(x).sum().backward()
        optimizer.step()
        should_start_update = True
"""


def test_only_flags_gating_a_training_event_are_followed() -> None:
    fn = ast.parse(SRC).body[0]
    touches = {"zero_grad", "step", "backward"}.__contains__
    # `count` is assigned a non-boolean; `rng_to_sync` gates nothing that touches gradients
    assert literal_flags(fn, touches) == frozenset({"should_start_update"})
    assert literal_flags(ast.parse(SRC).body[0], lambda name: True) == frozenset({"should_start_update", "rng_to_sync"})
