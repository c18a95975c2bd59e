"""Every effect the catalogue's schema accepts has one transition in the interpreter, and no transition
is for an effect the schema does not know (a row could never reach it)."""

from __future__ import annotations

from gradcheck_lint.analysis.apimodels import EFFECTS
from gradcheck_lint.analysis.effects import TRANSITIONS


def test_every_schema_effect_has_a_transition() -> None:
    missing = sorted(set(EFFECTS) - set(TRANSITIONS))
    assert not missing, f"effects of the schema with no transition in effects.TRANSITIONS: {missing}"


def test_every_transition_is_a_schema_effect() -> None:
    unknown = sorted(set(TRANSITIONS) - set(EFFECTS))
    assert not unknown, f"transitions for effects the schema (apimodels.EFFECTS) does not accept: {unknown}"


def test_transitions_are_callable() -> None:
    assert all(callable(t) for t in TRANSITIONS.values())
