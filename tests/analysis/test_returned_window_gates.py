"""A window gate asked of a helper (`returned_tests`): `if self._is_update_step(progress):` is read as the
test the helper returns, in the caller's terms; and a counter a method of its owner advances
(`progress.next_step()` doing `self.global_step += 1`) advances the caller's `progress.global_step`."""

from __future__ import annotations

import ast

from gradcheck_lint import check_source
from gradcheck_lint.analysis.returned_tests import returned_test

TRAINER = """\
import torch


class TrainProgress:
    def __init__(self):
        self.global_step = 0

    def next_step(self):
        self.global_step += 1


class Trainer:
    def __init__(self, accum):
        self.model = torch.nn.Linear(4, 1)
        self.accum = accum

    def action_needed(self, interval, progress, start_at_zero=True):
        if start_at_zero:
            return progress.global_step % int(interval) == 0
        return (progress.global_step + 1) % int(interval) == 0

    def _is_update_step(self, progress):
        return self.action_needed(self.accum, progress, start_at_zero=False)

    def train(self, data):
        optimizer = torch.optim.SGD(self.model.parameters(), lr=0.1)
        progress = TrainProgress()
        for batch in data:
            loss = self.model(batch).pow(2).mean() / self.accum
{body}
            {advance}
"""

CLEAR_BEFORE_BACKWARD = """\
            if self._is_update_step(progress):
                optimizer.zero_grad()
            loss.backward()
            if self._is_update_step(progress):
                optimizer.step()"""

CLEAR_AFTER_STEP = """\
            loss.backward()
            if self._is_update_step(progress):
                optimizer.step()
                optimizer.zero_grad()"""

CLEAR_AT_WINDOW_START = """\
            if self.action_needed(self.accum, progress):
                optimizer.zero_grad()
            loss.backward()
            if self._is_update_step(progress):
                optimizer.step()"""


def codes(body: str, advance: str = "progress.next_step()") -> list[tuple[int, str]]:
    return [(d.line, d.code) for d in check_source(TRAINER.format(body=body, advance=advance))]


def test_a_clear_under_a_helper_gate_before_the_backward_discards_the_window() -> None:
    assert codes(CLEAR_BEFORE_BACKWARD) == [(31, "GL002")]


def test_the_same_gate_with_the_counter_advanced_in_line() -> None:
    assert codes(CLEAR_BEFORE_BACKWARD, advance="progress.global_step += 1") == [(31, "GL002")]


def test_a_clear_after_the_step_under_the_helper_gate_is_silent() -> None:
    assert codes(CLEAR_AFTER_STEP) == []


def test_a_clear_at_the_window_start_through_the_other_arm_of_the_helper_is_silent() -> None:
    # `start_at_zero=True`: `global_step % N == 0`, the first micro-batch, one after the step's last
    assert codes(CLEAR_AT_WINDOW_START) == []


def _first_function(src: str) -> ast.FunctionDef:
    return next(n for n in ast.walk(ast.parse(src)) if isinstance(n, ast.FunctionDef))


def _returned(helper: str, call: str) -> str | None:
    fn = _first_function(helper)
    found = returned_test(ast.parse(call, mode="eval").body, lambda c: fn)  # type: ignore[arg-type]
    return None if found is None else ast.unparse(found)


MATCHED = """\
def action_needed(self, interval, unit, progress, start_at_zero=True):
    if unit not in self.seen:
        self.seen.add(unit)
    match unit:
        case TimeUnit.EPOCH:
            return progress.epoch % int(interval) == 0
        case TimeUnit.STEP:
            if start_at_zero:
                return progress.global_step % int(interval) == 0
            else:
                return (progress.global_step + 1) % int(interval) == 0
    return False
"""


def test_the_case_and_the_arm_a_call_names_are_chosen() -> None:
    call = "self.action_needed(self.args.accum, TimeUnit.STEP, p, start_at_zero=False)"
    assert _returned(MATCHED, call) == "(p.global_step + 1) % int(self.args.accum) == 0"


def test_a_case_the_call_does_not_name_by_a_literal_is_not_chosen() -> None:
    assert _returned(MATCHED, "self.action_needed(n, self.unit, p)") is None


def test_a_test_of_something_else_around_a_return_is_not_chosen() -> None:
    helper = "def f(self, p, n):\n    if self.ready:\n        return p.step % n == 0\n    return False\n"
    assert _returned(helper, "self.f(q, 4)") is None


def test_a_return_of_a_local_the_body_computed_is_not_substituted() -> None:
    helper = "def f(p, n):\n    n = n * 2\n    return p.step % n == 0\n"
    assert _returned(helper, "f(q, 4)") is None
