"""An index of `range(0, n, s)` tested modulo `s` (`strided_indices`): each pass of the loop is a window of its own.

rl-agentflow-qwen's GRPO trainer (lockbox 29, a certain GL003 and a certain GL004, both false): `for i in range(0,
len(workflows), G)` sums a chunk of up to G samples, divides by the chunk's size, runs one backward and steps under
`if (i + G) % G == 0:`, which holds on every pass."""

from __future__ import annotations

import pytest

from gradcheck_lint.analysis.strided_indices import strided_truth
from gradcheck_lint.engine import analyse_text

CHUNKS = """\
import torch


def update(model, optimizer, workflows, config):
    G = config.get("gradient_accumulation_steps", 1)
    for i in {loop}:
        batch_loss = 0.0
        for j in range(i, min(i + G, len(workflows))):
            batch_loss += model(workflows[j]).sum()
        batch_loss = batch_loss / min(G, len(workflows) - i)
        batch_loss.backward()
        if {gate}:
            optimizer.step()
            optimizer.zero_grad()
"""


def codes(loop: str, gate: str) -> list[str]:
    return [d.code for d in analyse_text(CHUNKS.format(loop=loop, gate=gate), "grpo.py").diagnostics]


@pytest.mark.parametrize("gate", ["(i + G) % G == 0", "i % G == 0", "(G + i) % G == 0", "not (i % G != 0)"])
def test_a_gate_every_pass_opens_is_no_window(gate: str) -> None:
    assert codes("range(0, len(workflows), G)", gate) == []


@pytest.mark.parametrize(("loop", "gate"), [
    ("range(len(workflows))", "(i + G) % G == 0"),  # steps of one: a window of G passes, the first one short
    ("range(0, len(workflows), G)", "(i + 1) % G == 0"),  # never holds for G > 1: no window the loop closes
    ("range(0, len(workflows), 2)", "(i + G) % G == 0"),  # another stride than the gate's modulus
])
def test_any_other_index_or_gate_is_read_as_before(loop: str, gate: str) -> None:
    assert codes(loop, gate) != []


def test_the_index_assigned_in_the_loop_is_not_strided() -> None:
    import ast
    source = "for i in range(0, n, s):\n    i = i + 1\n    if i % s == 0:\n        pass\n"
    tree = ast.parse(source)
    parents = {id(c): p for p in ast.walk(tree) for c in ast.iter_child_nodes(p)}
    test = tree.body[0].body[1].test  # type: ignore[attr-defined]
    assert strided_truth(test, lambda n: parents.get(id(n))) is None
    tree = ast.parse(source.replace("    i = i + 1\n", ""))
    parents = {id(c): p for p in ast.walk(tree) for c in ast.iter_child_nodes(p)}
    assert strided_truth(tree.body[0].body[0].test, lambda n: parents.get(id(n))) is True  # type: ignore[attr-defined]


def test_a_window_of_one_written_with_its_size() -> None:
    """graspnet-baseline's `if (batch_idx+1) % 1 == 0:` (lockbox 30, after its opening): every micro-batch steps, the
    loss needs no division by 1 (GL003 offered `(loss / 1).backward()` as a safe fix) and no first micro-batch is
    short (GL004)."""
    source = """\
import torch


def train(model, loader, optimizer):
    for batch_idx, (x, y) in enumerate(loader):
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        if (batch_idx + 1) % {n} == 0:
            optimizer.step()
            optimizer.zero_grad()
"""
    assert [d.code for d in analyse_text(source.format(n=1), "train.py").diagnostics] == []
    assert [d.code for d in analyse_text(source.format(n=4), "train.py").diagnostics] == ["GL003"]


STRIDED_LAST = """\
import torch


def main(model, optimizer, train_loader, accumulate_steps, micro):
    for it, batch in enumerate(train_loader):
        model.zero_grad()
        input_ids = batch["input_ids"]
        for ex_idx in range(0, input_ids.size(0), micro):
            if {test}:
                loss = model(input_ids[ex_idx: ex_idx + micro]).mean()
                (loss / accumulate_steps).backward()
            else:
                loss = model(input_ids[ex_idx:]).mean()
                (loss / accumulate_steps).backward()
                optimizer.step()
"""


@pytest.mark.parametrize(("test", "fires"), [
    ("ex_idx + micro < input_ids.size(0)", False),  # every chunk but the last: the step runs once, after the last
    ("micro + ex_idx < input_ids.size(0)", False),
    ("ex_idx < input_ids.size(0) - micro", False),
    ("ex_idx + 1 < input_ids.size(0)", True),  # an index step is not a stride: which chunk this is, is not known
])
def test_the_last_chunk_of_a_strided_loop(test: str, fires: bool) -> None:
    """easy-to-hard's trainers (lockbox 30, after its opening; four certain GL001): `for ex_idx in range(0, n, micro)`
    steps in the `else` of `if ex_idx + micro < n:`, on the last chunk only; read as a test that may fail on any
    chunk, the step ran twice in one batch with no clear between."""
    found = [d.code for d in analyse_text(STRIDED_LAST.format(test=test), "train.py").diagnostics]
    assert ("GL001" in found) == fires
