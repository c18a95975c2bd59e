"""The clear of an optimizer whose parameters are not known, the only one in sight, drops what its steps
applied (`PathState.clear`'s `consumed_by`).

Its step applied the backward passes recorded in the holders their losses reached (`maml` of a model built in
sight) and in its own stand-in holder; its `zero_grad()` cleared only the stand-in, so the next step found the
first pass's gradients still in `maml`: a certain GL001 on mrcl's evaluation loop (lockbox 13), whose
`opt.zero_grad()` runs before every backward."""

from __future__ import annotations

from gradcheck_lint.analysis.gradstate import Contribution, PathState
from gradcheck_lint.analysis.values import Holder

MODEL = Holder(1, ())
STAND_IN = Holder(9, (), pseudo=True)  # the optimizer (uid 9) whose parameters are not known


def _applied_then_written_again() -> PathState:
    applied = Contribution(3, consumers=frozenset({9}))
    return PathState(frozenset({(MODEL, applied), (STAND_IN, applied)}))


def test_its_clear_drops_what_its_steps_applied() -> None:
    state = _applied_then_written_again().clear(5, [STAND_IN], consumed_by=frozenset({9}))
    assert state.grads == frozenset()


def test_without_that_fact_only_the_stand_in_is_cleared() -> None:
    state = _applied_then_written_again().clear(5, [STAND_IN])
    assert [h for h, _c in state.grads] == [MODEL]


def test_what_another_optimizer_applied_stays() -> None:
    other = Contribution(3, consumers=frozenset({8}))
    state = PathState(frozenset({(MODEL, other)})).clear(5, [STAND_IN], consumed_by=frozenset({9}))
    assert [h for h, _c in state.grads] == [MODEL]
