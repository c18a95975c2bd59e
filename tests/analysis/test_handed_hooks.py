"""A function handed to a framework that calls it once per batch (a hook row with `handed`: Ignite's
`Engine(process_function)`), its counter read under an argument (`engine.state.iteration`) from the
value the row gives for the first call; and `N == 1` in the phase domain of windows of N."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from gradcheck_lint import check_source
from gradcheck_lint.analysis.apimodels import ModelError, builtin_files, parse_model_file
from gradcheck_lint.config import load_settings


def codes(source: str, **kw: object) -> list[tuple[str, int, str]]:
    return [(d.code, d.line, d.certainty.value) for d in check_source(textwrap.dedent(source), **kw)]  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "row,message",
    [
        ({"type": "a.E", "method": "m", "handed": "0"}, "exactly one of 'method'"),
        ({"type": "a.E"}, "exactly one of 'method'"),
        ({"type": "a.E", "handed": "0", "counter_path": "state.iteration"}, "counter_path must be"),
        ({"type": "a.E", "handed": "0", "counter": "0", "counter_path": "state.1"}, "counter_path must be"),
        ({"type": "a.E", "handed": "0", "counter": "0", "counter_start": -1}, "counter_start must be"),
        ({"type": "a.E", "handed": "0", "counter": "0", "counter_start": "1"}, "counter_start must be"),
        ({"type": "a.E", "handed": 0}, "handed must be an argument reference"),
    ],
)
def test_invalid_handed_hook_rows_are_refused(row: dict, message: str) -> None:  # type: ignore[type-arg]
    with pytest.raises(ModelError, match=message):
        parse_model_file({"hook": [row]}, "x.toml")


def test_ignite_row_says_the_process_function_counts_from_one() -> None:
    ignite = next(f for f in builtin_files() if f.origin.endswith("ignite.toml"))
    (hook,) = ignite.hooks
    assert hook.method == "" and hook.handed is not None and hook.handed.positions == (0,)
    assert "process_function" in hook.handed.keywords
    assert (hook.counter_path, hook.counter_start) == ("state.iteration", 1)


ENGINE = """
import torch
from ignite.engine import Engine

def main(model, loader, n):
    opt = torch.optim.SGD(model.parameters(), lr=0.1)

    def update(engine, batch):
        loss = model(batch).mean() / n
        loss.backward()
        if {test}:
            opt.step()
            opt.zero_grad()

    Engine({handed}).run(loader)
"""


@pytest.mark.parametrize("handed", ["update", "process_function=update"])
def test_a_nested_process_function_counts_iterations_from_one(handed: str) -> None:
    """`engine.state.iteration` is 1 on the first call: `% N == 0` is the last micro-batch of a window,
    `(iteration + 1) % N == 0` a window one short (GL004), found only when the function is known handed."""
    assert codes(ENGINE.format(test="engine.state.iteration % n == 0", handed=handed)) == []
    found = codes(ENGINE.format(test="(engine.state.iteration + 1) % n == 0", handed=handed))
    assert [c for c, _, _ in found] == ["GL004"]


METHOD = """
import torch
from ignite.engine import Engine

class Trainer:
    def __init__(self, model, n):
        self.model, self.n = model, n
        self.opt = torch.optim.SGD(model.parameters(), lr=0.1)
        self.engine = Engine(self.update)

    def update(self, engine, batch):
        loss = self.model(batch).mean()
        loss.backward()
        if engine.state.iteration % self.n == 0:
            self.opt.step()
            self.opt.zero_grad()
"""


def test_a_bound_method_handed_reads_the_engine_after_self() -> None:
    """`Engine(self.update)`: the engine is the second parameter; an undivided window is GL003."""
    assert [c for c, _, _ in codes(METHOD)] == ["GL003"]
    assert codes(METHOD.replace("loss.backward()", "(loss / self.n).backward()")) == []


SUBCLASS = """
import torch
from ignite.engine import Engine

class NmtEngine(Engine):
    def __init__(self, func, model, opt, n):
        self.model, self.opt, self.n = model, opt, n
        super().__init__(func)

    @staticmethod
    def train(engine, batch):
        if engine.state.iteration % engine.n == 1{either}:
            engine.opt.zero_grad()
        loss = engine.model(batch).mean() / engine.n
        loss.backward()
        if engine.state.iteration % engine.n == 0:
            engine.opt.step()

def fit(engine_class, model, opt, loader, n):
    engine_class(engine_class.train, model, opt, n).run(loader)
"""


def test_a_static_method_a_forwarding_subclass_is_built_with_clears_each_window() -> None:
    """simple-nmt's trainer: the clear on the first micro-batch of each window, or on each when N is 1,
    is correct; without `or N == 1` nothing clears when N is 1 (possible: the method is taken for
    the process function by its name where the class is built)."""
    assert codes(SUBCLASS.format(either=" or engine.n == 1")) == []
    assert codes(SUBCLASS.format(either="")) == [("GL001", 17, "possible")]


PLAIN = """
import torch

def train(model, opt, loader, n):
    for i, x in enumerate(loader, 1):
        if i % n == 1{either}:
            opt.zero_grad()
        (model(x).mean() / n).backward()
        if i % n == 0:
            opt.step()
"""


def test_a_window_of_one_is_no_phase_of_a_longer_window() -> None:
    """`N == 1` is false at every phase of windows of two or more: the clear of `i % N == 1 or N == 1`
    runs on each window's first micro-batch only (the old code read it as a clear that may run mid-window:
    a certain GL002), and the window of one is judged on its own."""
    assert codes(PLAIN.format(either=" or n == 1")) == []
    assert codes(PLAIN.format(either=" or 1 == n")) == []
    assert codes(PLAIN.format(either="")) == [("GL001", 10, "possible")]


LOOP_MODELS = """
[tool.gradlint]
[[tool.gradlint.models.type]]
name = "mylab.Loop"
kind = "tool"

[[tool.gradlint.models.call]]
name = "mylab.Loop"
effect = { effect = "construct", type = "mylab.Loop" }

[[tool.gradlint.models.hook]]
type = "mylab.Loop"
handed = "0|body"
counter = "0"
counter_path = "progress.step"
counter_start = START
"""

LOOP = """
import torch
from mylab import Loop

def main(model, loader, n):
    opt = torch.optim.SGD(model.parameters(), lr=0.1)

    def body(ctx, batch):
        (model(batch).mean() / n).backward()
        if ctx.progress.step % n == 0:
            opt.step()
            opt.zero_grad()

    Loop(body).run(loader)
"""


def test_where_a_handed_counter_starts_is_the_rows_word(tmp_path: Path) -> None:
    """The same body is a short first window (GL004) when the in-house loop counts from 0, correct when
    it counts from 1: the start comes from the row, not from the framework's name."""
    found = {}
    for start in (0, 1):
        (tmp_path / "pyproject.toml").write_text(LOOP_MODELS.replace("START", str(start)), encoding="utf-8")
        found[start] = [c for c, _, _ in codes(LOOP, settings=load_settings([str(tmp_path)]))]
    assert found == {0: ["GL004"], 1: []}
