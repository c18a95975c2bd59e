"""GL006's runtime anchor for an inverted `no_sync()`: the choice of the context manager around the
backward (`runtime/sync_sites.py`), where the static side anchors, never a `with` of another kind."""

from __future__ import annotations

from pathlib import Path

import pytest

from gradcheck_lint.runtime.evidence import Site
from gradcheck_lint.runtime.sync_sites import sync_choice, sync_choice_of

SOURCE = '''\
import contextlib


def train(model, fabric, batches, last_of):
    for i, x in enumerate(batches):
        with (model.no_sync() if last_of(i) else contextlib.nullcontext()):
            model(x).sum().backward()
        with fabric.no_backward_sync(model, enabled=last_of(i)):
            with open("log.txt") as log:
                fabric.backward(model(x).sum())
        with contextlib.nullcontext():
            model(x).sum().backward()


def helper(model, x):
    model(x).sum().backward()


def chosen(model, batches, last_of):
    for i, x in enumerate(batches):
        with (model.no_sync if last_of(i) else contextlib.nullcontext)():
            model(x).sum().backward()
        ctx = contextlib.nullcontext
        ctx = model.no_sync if last_of(i) else contextlib.nullcontext
        loss = model(x).sum()
        with ctx():
            loss.backward()
        with (contextlib.nullcontext() if last_of(i) else model.no_sync()):
            model(x).sum().backward()
        other = model.no_sync if last_of(i) else contextlib.nullcontext
        with contextlib.nullcontext():
            model(x).sum().backward()
'''


@pytest.fixture()
def program(tmp_path: Path) -> str:
    path = tmp_path / "loop.py"
    path.write_text(SOURCE, encoding="utf-8")
    return str(path)


def _site(path: str, line: int, col: int) -> Site:
    return Site(path, line, "backward()", col)


@pytest.mark.parametrize(("line", "col", "anchor"), [
    (7, 13, (6, 15)),  # `model.no_sync()` inside the conditional expression
    (10, 17, (8, 14)),  # Fabric's `no_backward_sync`, through an unrelated `with` in between
    (12, 13, (12, 13)),  # a `with` that switches nothing: the backward stays the anchor
    (16, 5, (16, 5)),  # no `with` in the backward's own function
    (22, 13, (21, 15)),  # the method chosen uncalled, the choice called: `(model.no_sync if c else nullcontext)()`
    (27, 13, (24, 15)),  # chosen into a name before the `with`: its last assignment there
    (29, 13, (28, 15)),  # the sync-off context in the `else` arm: the conditional expression, as statically
    (32, 13, (32, 13)),  # a choice assigned to a name the `with` does not enter: the backward
])
def test_the_anchor_is_the_sync_choice_around_the_backward(program: str, line: int, col: int,
                                                           anchor: tuple[int, int]) -> None:
    site = sync_choice_of(_site(program, line, col))
    assert (site.line, site.col) == anchor
    assert site.text == "backward()"  # the message still speaks of the backward call


def test_an_unreadable_source_keeps_the_backward(tmp_path: Path) -> None:
    site = _site(str(tmp_path / "missing.py"), 3, 5)
    assert sync_choice_of(site) == site


WORDED = '''\
import contextlib


def train(model, batches, accum):
    for i, x in enumerate(batches):
        last = (i + 1) % accum == 0
        with (model.no_sync() if last else contextlib.nullcontext()):
            model(x).sum().backward()
        with (contextlib.nullcontext() if not last else model.no_sync()):
            model(x).sum().backward()
        ctx = model.no_sync if i % accum  ==  0 else contextlib.nullcontext
        with ctx():
            model(x).sum().backward()
        with (model.no_sync() if model.training else contextlib.nullcontext()):
            model(x).sum().backward()
        if last:
            with model.no_sync():
                model(x).sum().backward()
        disabled = False if last else True
        with (model.no_sync() if not disabled else contextlib.ExitStack()):
            model(x).sum().backward()
'''


@pytest.mark.parametrize(("line", "col", "words"), [
    (8, 13, ("model.no_sync()", "(i + 1) % accum == 0", True)),  # the test through the name it was assigned to
    (10, 13, ("model.no_sync()", "(i + 1) % accum == 0", True)),  # `not last` in the `else` arm: twice negated
    (13, 13, ("model.no_sync", "i % accum == 0", True)),  # chosen into a name; the test's spaces as the static side's
    (15, 13, ("model.no_sync()", "model.training", True)),  # a test no name holds: as written
    (18, 17, None),  # no conditional expression: no test to speak of
    (21, 13, ("model.no_sync()", "(i + 1) % accum == 0", True)),  # a flag of two truth values, negated: the arm stays
])
def test_the_choice_is_worded_as_the_static_side_reads_it(tmp_path: Path, line: int, col: int,
                                                          words: tuple[str, str, bool] | None) -> None:
    path = tmp_path / "worded.py"
    path.write_text(WORDED, encoding="utf-8")
    _site_, choice = sync_choice(_site(str(path), line, col))
    assert (None if choice is None else (choice.off_text, choice.test, choice.off_when)) == words
