"""How many path states the analysis keeps, and which: facts no rule reads do not split paths, and the
cap keeps the paths where gradients pile up as well as the simplest ones."""

from __future__ import annotations

import textwrap

from gradcheck_lint.analysis import gradstate
from gradcheck_lint.analysis.gradstate import Contribution, PathState, merge_states
from gradcheck_lint.analysis.values import Holder
from gradcheck_lint.api import check_source
from gradcheck_lint.diagnostics import NOTICE_CODE, Certainty, Diagnostic, Span
from gradcheck_lint.engine import _one_per_place

# A window of chunks of micro-batches (NeMo-RL's streaming pump, reduced): ten lines that made 72 path
# states at the innermost loop, because an applied pass kept whether it had run more than once.
CHUNKED = textwrap.dedent("""
    import torch

    def train_pump(model, optimizer, steps):
        for chunks in steps:
            for chunk in chunks:
                optimizer.zero_grad()
                for mb in chunk:
                    loss = model(mb).mean()
                    loss.backward()
            optimizer.step()
""")


def test_a_nested_micro_batch_loop_is_analysed_whole() -> None:
    codes = [d.code for d in check_source(CHUNKED, "pump.py")]
    assert NOTICE_CODE not in codes


def test_an_applied_pass_forgets_its_window() -> None:
    holder = Holder(1, ())
    once = PathState(frozenset({(holder, Contribution(7))}))
    twice = once.backward(7, {holder: True})
    assert any(c.repeated for _h, c in twice.grads)
    stepped_once, stepped_twice = once.step(3, [holder]), twice.step(3, [holder])
    assert stepped_once == stepped_twice  # what the step consumed no longer tells the two paths apart
    (_h, c), = stepped_twice.grads
    assert c.consumers == frozenset({3}) and not c.repeated and not c.rescaled


def test_the_cap_keeps_the_paths_where_gradients_pile_up() -> None:
    holders = [Holder(i, ()) for i in range(1, 100)]
    states = [PathState(frozenset((h, Contribution(1)) for h in holders[:n])) for n in range(len(holders))]
    hits = gradstate.CAP.hits
    kept = merge_states(states, limit=16)
    assert gradstate.CAP.hits == hits + 1 and len(kept) == 16
    sizes = sorted(len(s.grads) for s in kept)
    assert sizes[0] == 0  # the simplest are kept ...
    assert sizes[-1] == len(holders) - 1  # ... and so is the one with the most gradients held
    assert merge_states(reversed(states), limit=16) == kept  # whatever the order they came in


def _diagnostic(message: str, certainty: Certainty) -> Diagnostic:
    return Diagnostic("t.py", Span(6, 5, 6, 15), "GL001", "missing-zero-grad", message, "help", certainty=certainty)


def test_one_line_per_code_and_place_the_most_certain_wording_kept() -> None:
    possible = _diagnostic("`model.step()` at line 1005 clears other parameters", Certainty.POSSIBLE)
    certain = _diagnostic("nothing clears the gradients of `optimizer`", Certainty.CERTAIN)
    for order in ([possible, certain], [certain, possible]):
        assert _one_per_place(order) == [certain]
    other_code = Diagnostic("t.py", possible.span, "GL003", "x", "m", "h")
    assert len(_one_per_place([certain, other_code])) == 2
