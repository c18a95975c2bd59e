"""`worker.start()` of a `threading.Thread` (or `multiprocessing.Process`) subclass runs its `run()` (the
catalogue's `run_own` effect): the training a thread does is read as called from where it is started, with
the model and optimizer the caller handed the thread (A3C of RL-Algorithms in lockbox 20 starts its workers so).
A list grown by appending objects of one class holds objects of that class (`values.appended_to`): `threads[0]`
is one. A list a loop fills is not followed that far: at the loop's head the empty list and the grown one
join to a list of unknown members, and A3C's `threads[i].start()` in a loop stays unread."""

import textwrap

from gradcheck_lint import check_source
from gradcheck_lint.config import Settings

A3C = """
import multiprocessing
import threading
import torch
from torch import nn, optim


def rollout(model, n):
    values = []
    for _ in range(n):
        values.append(model(torch.randn(1, 4)))
    return values


def train_net(model, optimizer, values):
{train}


class Worker({base}):
    def __init__(self, model, optimizer):
        super().__init__()
        self.model = model
        self.optimizer = optimizer

    def run(self):
        values = rollout(self.model, 10)
        train_net(self.model, self.optimizer, values)


if __name__ == "__main__":
    model = nn.Linear(4, 1)
    optimizer = optim.Adam(model.parameters())
    for epoch in range(100):
{start}
"""

PER_VALUE = """
    for v in values:
        loss = (v ** 2).mean()
        optimizer.zero_grad()
        loss.backward(retain_graph=True)
        optimizer.step()
"""

SUMMED = """
    loss = sum((v ** 2).mean() for v in values)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
"""

IN_A_LIST = """
threads = []
threads.append(Worker(model, optimizer))
threads.append(Worker(model, optimizer))
threads[0].start()
threads[1].start()
"""

ONE = """
worker = Worker(model, optimizer)
worker.start()
worker.join()
"""


def _gl009(train: str, start: str, base: str = "threading.Thread") -> list[tuple[int, str]]:
    source = (textwrap.dedent(A3C).replace("{base}", base)
              .replace("{train}", textwrap.indent(textwrap.dedent(train).strip("\n"), "    "))
              .replace("{start}", textwrap.indent(textwrap.dedent(start).strip("\n"), "        ")))
    found = check_source(source, "a3c.py", settings=Settings.default())
    return [(d.span.line, d.certainty.name) for d in found if d.code == "GL009"]


def test_steps_over_a_rollout_in_a_started_thread_are_found() -> None:
    assert _gl009(PER_VALUE, ONE) == [(19, "CERTAIN")]
    assert _gl009(PER_VALUE, IN_A_LIST) == [(19, "CERTAIN")]


def test_a_process_subclass_runs_alike() -> None:
    assert _gl009(PER_VALUE, ONE, base="multiprocessing.Process") == [(19, "CERTAIN")]


def test_one_step_on_the_summed_rollout_is_no_finding() -> None:
    assert _gl009(SUMMED, ONE) == []
    assert _gl009(SUMMED, IN_A_LIST) == []


def test_a_thread_never_started_is_read_alone() -> None:
    # its `run()` is read on its own, with a model and optimizer handed in out of sight: possible at most
    assert _gl009(PER_VALUE, "worker = Worker(model, optimizer)") == [(19, "POSSIBLE")]
