"""The calls a function makes once per call (outside its loops) are collected once per file's analysis,
however many candidate step functions reach it (`EntryPoints._calls_once`)."""

from __future__ import annotations

from collections import Counter

import pytest

from gradcheck_lint.analysis import entrypoints
from gradcheck_lint.api import check_source

CODE = """\
import torch

model = torch.nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)


def helper(loss):
    loss.backward()
    opt.step()


def a(x):
    helper(model(x).sum())


def b(x):
    helper(model(x).sum())


def c(x):
    a(x)
    b(x)
"""


def test_each_function_s_calls_are_collected_once(monkeypatch: pytest.MonkeyPatch) -> None:
    expected = check_source(CODE, "steps.py")
    collected: Counter[str] = Counter()
    real = entrypoints._calls_outside_loops

    def counting(fn, members):  # type: ignore[no-untyped-def]
        collected[fn.name] += 1
        return real(fn, members)

    monkeypatch.setattr(entrypoints, "_calls_outside_loops", counting)
    assert check_source(CODE, "steps.py") == expected
    assert collected["helper"] == 1 and set(collected.values()) == {1}
    assert {"a", "b", "c", "helper"} <= set(collected)
