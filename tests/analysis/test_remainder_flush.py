"""A flush after the loop of what the window gate left (`if num_batches % N != 0: optimizer.step()`) holds exactly
where the gate's last test failed, when both count the loop's iterations alike (`remainder_flush`). Read as two
independent tests, a path left the loop with a partial window, skipped the flush, and the next epoch's clear
was said to drop it: a certain GL002 on Contact_GNN's trainer (lockbox 36), and on this common idiom."""

from __future__ import annotations

from pathlib import Path

import pytest

from gradcheck_lint.config import Settings
from gradcheck_lint.engine import analyse_text
from gradcheck_lint.runner import lint_files
from support import project_tree

TRAIN = """\
import torch


def train(model, optimizer, loader, epochs, accumulation_steps, budget):
    for epoch in range(epochs):
        {reset}
        optimizer.zero_grad(set_to_none=True)
        for {target} in {iterable}:
            {skip}
            loss = torch.nn.functional.mse_loss(model(x), y)
            (loss / accumulation_steps).backward()
            if {gate} % accumulation_steps == 0:
                optimizer.step()
                optimizer.zero_grad(set_to_none=True)
            num_batches += 1
            {stop}
        if {flush}:
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
"""

DEFAULTS = {"reset": "num_batches = 0", "target": "bi, (x, y)", "iterable": "enumerate(loader)", "skip": "pass",
            "gate": "(bi + 1)", "stop": "pass"}


def _found(**parts: str) -> set[tuple[int, str]]:
    text = TRAIN.format(**{**DEFAULTS, **parts})
    report = analyse_text(text, "t.py", Settings.default().with_enabled(frozenset({"GL001", "GL002", "GL003"})))
    return {(d.line, d.code) for d in report.diagnostics}


@pytest.mark.parametrize("flush", [
    "num_batches % accumulation_steps != 0",  # Contact_GNN's
    "num_batches % accumulation_steps",
    "not num_batches % accumulation_steps == 0",
    "(bi + 1) % accumulation_steps != 0",  # the index keeps its last value
    "len(loader) % accumulation_steps != 0",
])
def test_a_flush_that_counts_as_the_gate_steps_every_remainder(flush: str) -> None:
    assert _found(flush=flush) == set()


def test_a_gate_counting_from_one_and_its_flush() -> None:
    assert _found(iterable="enumerate(loader, 1)", gate="bi", flush="bi % accumulation_steps != 0") == set()


def test_a_gate_by_the_counter_itself() -> None:
    text = TRAIN.format(**{**DEFAULTS, "gate": "num_batches", "flush": "num_batches % accumulation_steps != 0"})
    text = text.replace("            num_batches += 1\n", "").replace(
        "            (loss / accumulation_steps).backward()\n",
        "            (loss / accumulation_steps).backward()\n            num_batches += 1\n")
    report = analyse_text(text, "t.py", Settings.default().with_enabled(frozenset({"GL002"})))
    assert [(d.line, d.code) for d in report.diagnostics] == []


@pytest.mark.parametrize("parts", [
    # a micro-batch skipped before it is counted: the count falls behind the index
    {"skip": "if x is None: continue", "flush": "num_batches % accumulation_steps != 0"},
    # counted over every epoch, not reset before the loop: no longer the loop's count
    {"reset": "pass", "flush": "num_batches % accumulation_steps != 0"},
    # a loop that may stop early has run fewer than `len(loader)` iterations
    {"stop": "if num_batches >= budget: break", "flush": "len(loader) % accumulation_steps != 0"},
])
def test_a_flush_whose_count_may_differ_from_the_gates_is_not_read_as_its_complement(parts: dict[str, str]) -> None:
    assert _found(**parts) == {(7, "GL002")}
    # the difference is read (a count the loop skips or never resets, a walk it may leave): as certain as before
    assert _certainty(**parts) == {(7, "GL002", "certain")}


def _certainty(**parts: str) -> set[tuple[int, str, str]]:
    text = TRAIN.format(**{**DEFAULTS, **parts})
    report = analyse_text(text, "t.py", Settings.default().with_enabled(frozenset({"GL001", "GL002", "GL003"})))
    return {(d.line, d.code, d.certainty.value) for d in report.diagnostics}


@pytest.mark.parametrize("parts", [
    # ml-alpha (lockbox 42): a count set before the loop from something else than what the loop walks
    {"reset": "num_months = len(data)", "iterable": "enumerate(loader)", "flush": "num_months % accumulation_steps != 0"},
    {"flush": "len(dataset) % accumulation_steps != 0"},
    # ORBIT-8 (lockbox 41): the loop's own count, tested together with something else
    {"flush": "budget and num_batches % accumulation_steps"},
    # ORBIT-8: the loop's own count, with a `break` before anything of its iteration is counted or tested (the path
    # leaving by it is not followed knowing the gate's last test)
    {"skip": "if bi >= budget: break", "flush": "num_batches % accumulation_steps != 0"},
])
def test_a_flush_whose_count_is_not_read_as_the_gates_makes_the_dropped_remainder_an_assumption(
        parts: dict[str, str]) -> None:
    found = _certainty(**parts)
    assert found == {(7, "GL002", "possible")}


@pytest.mark.parametrize("parts", [
    # EviatarO (lockbox 42): the count set to 0 in a tuple of sums
    {"reset": "total_loss, num_batches = 0.0, 0", "flush": "num_batches % accumulation_steps != 0"},
    # CodeEdge (lockbox 42): the loop walks a progress bar of the loader, the flush counts the loader
    {"reset": "pbar = tqdm.tqdm(loader, desc='train')", "iterable": "enumerate(pbar)",
     "flush": "len(loader) % accumulation_steps != 0"},
    {"iterable": "enumerate(tqdm.tqdm(loader))", "flush": "len(loader) % accumulation_steps != 0"},
])
def test_more_counts_read_as_the_gates(parts: dict[str, str]) -> None:
    text = TRAIN.format(**{**DEFAULTS, **parts})
    if "tqdm" in text:
        text = text.replace("import torch\n", "import torch\nimport tqdm\n")
        assert _certainty_of(text) == set()
    else:
        assert _certainty(**parts) == set()


def _certainty_of(text: str) -> set[tuple[int, str, str]]:
    report = analyse_text(text, "t.py", Settings.default().with_enabled(frozenset({"GL001", "GL002", "GL003"})))
    return {(d.line, d.code, d.certainty.value) for d in report.diagnostics}


# A flush in a method of its own, called after the loop, of a count the trainer keeps in state (Alicedyd's
# `finalize_epoch`, lockbox 40: read as a gate of every micro-batch, a certain false GL004).
TRAINER = """\
import torch
from torch import nn


class Trainer:
    def __init__(self, accumulation_steps=4):
        self.model = nn.Linear(4, 1)
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.1)
        self.accumulation_steps = accumulation_steps
        self.current_step = 0

    def optimize_parameters(self, x, y):
        self.current_step += 1
        loss = nn.functional.mse_loss(self.model(x), y) / self.accumulation_steps
        loss.backward()
        if self.current_step % self.accumulation_steps == 0:
            self.optimizer.step()
            self.optimizer.zero_grad()

    def finalize_epoch(self):
        if self.current_step % self.accumulation_steps != 0:
            self.optimizer.step()
            self.optimizer.zero_grad()
"""

DRIVER = """\
for epoch in range(3):
    for x, y in loader:
        trainer.optimize_parameters(x, y)
{flush}
"""


def _flush_findings(flush: str) -> set[tuple[int, str]]:
    text = TRAINER + "\n\ntrainer = Trainer()\nloader = [(torch.randn(2, 4), torch.randn(2, 1))] * 10\n" + DRIVER.format(flush=flush)
    report = analyse_text(text, "t.py", Settings.default())
    return {(d.line, d.code) for d in report.diagnostics}


def test_a_flush_method_called_after_the_loop_steps_the_remainder_once() -> None:
    assert _flush_findings("    trainer.finalize_epoch()") == set()


def test_the_same_method_called_on_every_micro_batch_steps_on_most_of_them() -> None:
    assert _flush_findings("        trainer.finalize_epoch()") == {(21, "GL004")}


def test_a_flush_method_of_another_file_of_the_project(tmp_path: Path) -> None:
    driver = ("import torch\nfrom trainers.base import Trainer\n\ntrainer = Trainer()\n"
              "loader = [(torch.randn(2, 4), torch.randn(2, 1))] * 10\n")
    files = {"trainers/__init__.py": "", "trainers/base.py": TRAINER}
    after = project_tree(tmp_path / "after", {**files, "train.py": driver + DRIVER.format(flush="    trainer.finalize_epoch()")})
    assert [(d.line, d.code) for d in lint_files([str(after / "train.py")], Settings.default())] == []
    every = project_tree(tmp_path / "every", {**files, "train.py": driver + DRIVER.format(flush="        trainer.finalize_epoch()")})
    assert [(d.code, d.line) for d in lint_files([str(every / "train.py")], Settings.default())] == [("GL004", 9)]
