"""A loop that feeds its model only constant data in a function that reads a clock or the memory in use
measures a layer rather than trains it: findings in it rest on the loop being training (`possible`).
Random data, data from a loader, or no probe at all: training, as before."""

from __future__ import annotations

import textwrap

import pytest

from gradcheck_lint import check_source
from gradcheck_lint.config import Settings
from support import FIXTURES

BENCHMARK = """
import time
import torch
from torch import nn


def bench(layer_cls, length):
    layer = layer_cls(length)
    optimizer = torch.optim.Adam(layer.parameters(), 1e-4)
    hidden = {data}
    target = torch.zeros(4, length, 16)
    start = time.time()
    for i in range(1000):
        result = layer(hidden)
        loss = ((target - result) ** 2).mean()
        loss.backward()
        optimizer.step()
    {probe}
"""

PROBE = "print('average time', (time.time() - start) / 1000)"


def _found(source: str) -> list[tuple[str, int, str]]:
    found = check_source(textwrap.dedent(source), "bench.py", settings=Settings.default())
    return [(d.code, d.span.line, d.certainty.name) for d in found]


def test_a_timed_loop_on_constant_data_is_a_benchmark() -> None:
    source = BENCHMARK.format(data="torch.ones(4, length, 16).to('cpu')", probe=PROBE)
    assert _found(source) == [("GL001", 17, "POSSIBLE")]


def test_a_memory_probe_with_constant_data_made_in_the_loop_is_a_benchmark() -> None:
    source = BENCHMARK.replace("result = layer(hidden)", "result = layer(torch.zeros([4, length]).long())").replace(
        "start = time.time()", "").format(data="None", probe="print(torch.cuda.max_memory_allocated())")
    assert _found(source) == [("GL001", 17, "POSSIBLE")]


def test_random_or_loaded_data_is_training_even_when_timed() -> None:
    assert _found(BENCHMARK.format(data="torch.randn(4, length, 16)", probe=PROBE)) == [("GL001", 17, "CERTAIN")]
    loaded = BENCHMARK.replace("for i in range(1000):", "for hidden in loader:").format(data="None", probe=PROBE)
    assert _found(loaded) == [("GL001", 17, "CERTAIN")]


def test_constant_data_without_a_clock_or_memory_probe_is_training() -> None:
    source = BENCHMARK.replace("start = time.time()", "").format(data="torch.ones(4, length, 16)", probe="")
    assert _found(source) == [("GL001", 17, "CERTAIN")]


SMOKE_TEST = """
import unittest
import torch
from torch import nn
from mylab.utils import DUMMY_INPUTS, DUMMY_TARGETS


class TestModel(unittest.TestCase):
    def {name}(self):
        model = nn.Linear(16, 4)
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-4)
        for i in range(10):
            loss = nn.functional.cross_entropy(model({inputs}), DUMMY_TARGETS)
            loss.backward()
            optimizer.step()
            {check}
"""


def test_an_asserting_test_on_dummy_inputs_is_a_smoke_test() -> None:
    # openspeech's model tests (lockbox 4): ten steps on DUMMY_INPUTS, then `assert type(loss.item()) == float`
    source = SMOKE_TEST.format(name="test_forward", inputs="DUMMY_INPUTS", check="assert type(loss.item()) == float")
    assert _found(source) == [("GL001", 15, "POSSIBLE")]
    unittest_style = SMOKE_TEST.format(name="test_forward", inputs="DUMMY_INPUTS", check="self.assertTrue(loss.item() > 0)")
    assert _found(unittest_style) == [("GL001", 15, "POSSIBLE")]


def test_a_test_on_varying_data_or_a_function_that_is_no_test_still_trains() -> None:
    varying = SMOKE_TEST.format(name="test_forward", inputs="torch.randn(8, 16)", check="assert loss.item() > 0")
    assert _found(varying) == [("GL001", 15, "CERTAIN")]
    not_a_test = SMOKE_TEST.format(name="fit", inputs="DUMMY_INPUTS", check="assert loss.item() > 0")
    assert _found(not_a_test) == [("GL001", 15, "CERTAIN")]
    silent = SMOKE_TEST.format(name="test_forward", inputs="DUMMY_INPUTS", check="print(loss.item())")
    assert _found(silent) == [("GL001", 15, "CERTAIN")]


def test_a_loss_module_on_the_outputs_of_constant_inputs_is_still_constant_data() -> None:
    # openspeech's LSTM tests: `criterion(outputs["logits"], DUMMY_TARGETS[:, 1:])` after `outputs = model(DUMMY_INPUTS)`
    source = SMOKE_TEST.replace(
        "loss = nn.functional.cross_entropy(model({inputs}), DUMMY_TARGETS)",
        "outputs = {{'logits': model({inputs})}}\n            loss = criterion(outputs['logits'], DUMMY_TARGETS[:, 1:])").replace(
        "optimizer = torch.optim.Adam", "criterion = nn.CrossEntropyLoss()\n        optimizer = torch.optim.Adam")
    assert _found(source.format(name="test_forward", inputs="DUMMY_INPUTS", check="assert loss.item() > 0")) == [("GL001", 17, "POSSIBLE")]
    # an item of the constant chosen by the loop's counter is data that changes: training
    indexed = source.format(name="test_forward", inputs="DUMMY_INPUTS[i]", check="assert loss.item() > 0")
    assert _found(indexed) == [("GL001", 17, "CERTAIN")]


DRIVING_TEST = """
import unittest
import torch
from torch import nn
from mylab.wrappers import CountingWrapper


class TestWrapper(unittest.TestCase):
    def {name}(self):
        model = nn.Linear(3, 4)
        optimizer = torch.optim.AdamW(model.parameters())
        wrapper = CountingWrapper(model, optimizer)
        inp = torch.rand(2, 3)
        model(inp).sum().backward()
        optimizer.step()
        {check}
        model(inp).sum().backward()
        optimizer.step()
        {check}
"""


def test_steps_written_one_after_another_in_an_asserting_test_drive_it() -> None:
    # torchft's tests (lockbox 40): two steps in sequence to count a wrapper's calls, then assertEqual
    source = DRIVING_TEST.format(name="test_counts", check="self.assertEqual(wrapper.steps, 1)")
    assert _found(source) == [("GL001", 18, "POSSIBLE")]
    assert _found(DRIVING_TEST.format(name="test_counts", check="assert wrapper.steps > 0")) == [("GL001", 18, "POSSIBLE")]


def test_the_same_calls_outside_an_asserting_test_are_training() -> None:
    assert _found(DRIVING_TEST.format(name="test_counts", check="print(wrapper.steps)")) == [("GL001", 18, "CERTAIN")]
    # a script's top level, asserting as it goes: no test function
    script = textwrap.dedent(DRIVING_TEST.format(name="test_counts", check="assert wrapper.steps > 0")).replace(
        "class TestWrapper(unittest.TestCase):\n    def test_counts(self):\n", "")
    script = "\n".join(line[8:] if line.startswith("        ") else line for line in script.splitlines())
    assert _found(script) == [("GL001", 16, "CERTAIN")]


# CoreAudioML's system test (lockbox 41): three short epochs of truncated backpropagation through time, a step per
# chunk and one clear per batch, in `test/test_system.py`'s `test_system()`, asserting nothing: it checks that
# training runs, and keeps no model. Two certain GL001 were reported there. The fixture holds such a test.
SYSTEM_TEST = (FIXTURES / "missing_zero_grad" / "test_system_smoke.py").read_text(encoding="utf-8")
STEP = next(i for i, line in enumerate(SYSTEM_TEST.splitlines(), 1) if "optimiser.step()" in line)


@pytest.mark.parametrize("path", ["test_system.py", "test/test_system.py", "system_test.py"])
def test_a_test_of_a_test_module_trains_nothing_anyone_keeps(path: str) -> None:
    found = check_source(SYSTEM_TEST, path, settings=Settings.default())
    assert [(d.code, d.span.line, d.certainty.name) for d in found] == [("GL001", STEP, "POSSIBLE")]
    assert found[0].assumptions == ("what the code's author meant",)


@pytest.mark.parametrize("path", ["train.py", "testing_utils.py", "tests/helpers.py"])
def test_the_same_loop_outside_a_test_module_or_a_test_is_training(path: str) -> None:
    found = check_source(SYSTEM_TEST, path, settings=Settings.default())
    assert [(d.code, d.span.line, d.certainty.name) for d in found] == [("GL001", STEP, "CERTAIN")]
    renamed = check_source(SYSTEM_TEST.replace("test_system", "run_system"), "test_system.py",
                           settings=Settings.default())
    assert [(d.code, d.certainty.name) for d in renamed] == [("GL001", "CERTAIN")]
