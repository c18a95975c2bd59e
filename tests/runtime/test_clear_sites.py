"""GL002's runtime anchor for a clear the guard saw only by its effect (`runtime/clear_sites.py`): the
clearing statement looked up in the source between the two calls the guard saw, around the loop holding
both when the path went through a `continue` (the clear at the top of the next iteration)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gradcheck_lint.runtime.clear_sites import clear_between
from gradcheck_lint.runtime.evidence import Site

SOURCE = '''\
def train(model, optimizer, loader):
    for x, y in loader:
        optimizer.zero_grad()
        loss = model(x).mean()
        bad = not loss.isfinite()
        if not bad:
            loss.backward()
        if not bad:
            continue
        optimizer.step()


def train_between(model, optimizer, loader):
    for x in loader:
        loss = model(x).mean()
        loss.backward()
        model.zero_grad()
        optimizer.step()
'''


@pytest.fixture()
def program(tmp_path: Path) -> str:
    path = tmp_path / "loop.py"
    path.write_text(SOURCE, encoding="utf-8")
    return str(path)


def test_a_clear_at_the_top_of_the_loop_is_found_when_the_path_went_around_it(program: str) -> None:
    # the backward at line 7, `continue`, the next iteration's clear at line 3, then the step at line 10
    found = clear_between(Site(program, 7, "loss.backward()", 13), Site(program, 10, "optimizer.step()", 9))
    assert found is not None and (found.line, found.text) == (3, "optimizer.zero_grad()")


def test_a_clear_written_between_the_two_calls_comes_first(program: str) -> None:
    found = clear_between(Site(program, 16, "loss.backward()", 9), Site(program, 18, "optimizer.step()", 9))
    assert found is not None and (found.line, found.text) == (17, "model.zero_grad()")
