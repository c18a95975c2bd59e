"""The cyclic garbage collector around the analysis of a file: it is paused while CPython's parser builds a tree
(a syntax tree holds no reference cycles: a collection every 700 new nodes only scanned them in vain, and aged
them into the generations a full collection scans), and the file's semantic model and per-file memos are dropped
before the collector's usual thresholds come back (a collection then due scanned them all, still alive)."""

from __future__ import annotations

import gc
import weakref
from typing import Any

import pytest

from gradcheck_lint import engine, sources
from gradcheck_lint.analysis import walk
from gradcheck_lint.engine import analyse_text

SCRIPT = """\
import torch

model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for x, y in loader:
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    opt.step()
"""


def _collections(during: Any) -> list[int]:
    seen: list[int] = []

    def note(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            seen.append(info["generation"])

    gc.callbacks.append(note)
    try:
        during()
    finally:
        gc.callbacks.remove(note)
    return seen


def test_no_collection_runs_while_a_tree_is_parsed() -> None:
    big = "\n".join(f"def f{i}(a, b):\n    return [a + b * k for k in range({i})]\n" for i in range(3000))
    assert gc.isenabled()
    assert _collections(lambda: sources.parse_python(big)) == []  # before: one every 700 nodes
    assert gc.isenabled()


def test_the_collector_is_left_as_it_was() -> None:
    gc.disable()
    try:
        sources.parse_python("x = 1\n")
        assert not gc.isenabled()  # not switched on by the parser
    finally:
        gc.enable()
    with pytest.raises(SyntaxError):
        sources.parse_python("def (:\n")
    assert gc.isenabled()  # back on after a syntax error too


def test_the_model_is_freed_before_the_thresholds_come_back(monkeypatch: pytest.MonkeyPatch) -> None:
    models: list[weakref.ref[Any]] = []
    real_model, real_threshold = engine.TrainingModel, gc.set_threshold

    def tracked(*args: Any, **kwargs: Any) -> Any:
        made = real_model(*args, **kwargs)
        models.append(weakref.ref(made))
        return made

    restored: list[tuple[bool, int]] = []

    def set_threshold(*thresholds: int) -> None:
        if models and thresholds[0] < 50_000:  # the usual thresholds, back after the analysis
            restored.append((models[-1]() is None, len(walk._WALKED) + len(walk._PRE_ORDER)))
        real_threshold(*thresholds)

    monkeypatch.setattr(engine, "TrainingModel", tracked)
    monkeypatch.setattr(gc, "set_threshold", set_threshold)
    assert {d.code for d in analyse_text(SCRIPT, "train.py").diagnostics} == {"GL001"}
    assert restored == [(True, 0)]  # the model gone, the kept walks dropped
