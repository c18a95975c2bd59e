"""Membership in a module's container that no run fills is false on every run (`empty_containers`): AT-ADD-EXP
(lockbox 41) keeps `_AMP_MODELS = {}` (its keys commented out) and turns AMP on by `args.amp and args.model in
_AMP_MODELS`, so its `if amp_enabled: scaler.unscale_(optimizer)` never runs, nor does the scaler scale; two certain
GL007 ("unscales a second time") were reported there. A container filled anywhere in the module, rebound by a
function, or handed to a call keeps both ways open, and the same code then unscales twice (GL007)."""

from __future__ import annotations

import pytest

from gradcheck_lint.engine import analyse_text
from support import FIXTURES

FIXTURE = FIXTURES / "correct_idioms" / "amp_model_set_never_filled.py"  # AT-ADD-EXP's SAM branch, its registry empty
EMPTY = '_AMP_MODELS = {\n    # "mlp",\n}'


FILLED = ["_AMP_MODELS[\"mlp\"] = True\n\n\n",
          "def register(name):\n    global _AMP_MODELS\n    _AMP_MODELS = {\"name\": True}\n\n\n",
          "_AMP_MODELS.update(mlp=True)\n\n\n",
          "def load_registry():\n    return dict(_AMP_MODELS)\n\n\n"]


def _codes(container: str, more: str = "") -> list[tuple[int, str]]:
    text = FIXTURE.read_text(encoding="utf-8")
    assert EMPTY in text and "def main():" in text
    text = text.replace(EMPTY, f"_AMP_MODELS = {container}").replace("def main():", f"{more}def main():")
    report = analyse_text(text, "train.py")
    return sorted((d.line, d.code) for d in report.diagnostics if d.code != "GL000")


@pytest.mark.parametrize("container", ["{}", "set()", "frozenset()", "[]", "()", "dict()"])
def test_a_membership_in_a_container_no_run_fills_takes_no_arm(container: str) -> None:
    assert _codes(container) == []


@pytest.mark.parametrize(("container", "more"), [
    ('{"mlp": True}', ""),  # filled where it is written
    ("{}", FILLED[0]),  # an item stored
    ("{}", FILLED[1]),  # rebound by a function
    ("{}", FILLED[2]),  # a method of it called
    ("{}", FILLED[3]),  # handed to a call: an alias may be filled
])
def test_a_container_that_may_hold_the_key_keeps_both_arms(container: str, more: str) -> None:
    assert [code for _, code in _codes(container, more)] == ["GL007", "GL007"]
