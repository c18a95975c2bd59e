"""A loop that feeds its model only constant data in a function that reads a clock or the memory in use
measures a layer rather than trains it: findings in it rest on the loop being training (`possible`).
Random data, data from a loader, or no probe at all: training, as before."""

from __future__ import annotations

import textwrap

from gradcheck_lint import check_source
from gradcheck_lint.config import Settings

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
