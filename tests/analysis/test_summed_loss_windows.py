"""A window accumulated as a sum of losses (`loss_sum += loss`, one backward on the sum at the window's end,
`loss_sum = 0.0` after the step) and flushed after the loop when a partial window is left
(`if loss_sum != 0.0:`). Two facts of paths make it correct code: a path that bound a name to a literal
knows its value at a later test of it (`assigned_constants`: the path that stepped at the last micro-batch
does not flush), and a graph rebuilt on the paths that did not step is fresh on them although the paths
that did step raise the joined step count (`flow._aligned_generations`). Without the reset, or without a
clear, the same loop is still reported."""

from __future__ import annotations

from pathlib import Path

from gradcheck_lint.engine import analyse_text
from support import project_tree

HEAD = """\
import torch
from torch import nn

model = nn.Linear(4, 2)
optimizer = torch.optim.Adam(model.parameters())
criterion = nn.CrossEntropyLoss()
loader = [(torch.randn(8, 4), torch.randint(0, 2, (8,))) for _ in range(10)]
"""

SUMMED = HEAD + """
def train(num_epochs, window):
    for epoch in range(num_epochs):
        loss_sum = 0.0
        for i, (x, y) in enumerate(loader):
            optimizer.zero_grad()
            loss = criterion(model(x), y)
            loss_sum += loss
            if (i + 1) % window == 0:
                loss_sum.backward()
                optimizer.step()
                loss_sum = 0.0
        if loss_sum != 0.0:
            loss_sum.backward()
            optimizer.step()
            loss_sum = 0.0


train(3, 4)
"""


def findings(text: str) -> set[tuple[str, int]]:
    return {(d.code, d.span.line) for d in analyse_text(text, "train.py").diagnostics}


def line_of(text: str, needle: str, nth: int = 1) -> int:
    hits = [i for i, line in enumerate(text.splitlines(), 1) if needle in line]
    return hits[nth - 1]


def test_summed_window_with_a_flush_of_the_partial_window_is_correct() -> None:
    assert findings(SUMMED) == set()


def test_the_flush_test_written_other_ways_is_decided_too() -> None:
    for test in ("if loss_sum:", "if loss_sum != 0:", "if not loss_sum == 0.0:"):
        assert findings(SUMMED.replace("if loss_sum != 0.0:", test)) == set(), test


def test_a_sum_never_reset_after_the_step_is_still_a_stale_graph() -> None:
    text = SUMMED.replace("                loss_sum = 0.0\n", "", 1)
    assert ("GL009", line_of(text, "loss_sum.backward()")) in findings(text)


def test_a_missing_clear_is_still_found_past_the_flush() -> None:
    text = SUMMED.replace("            optimizer.zero_grad()\n", "")
    assert "GL001" in {code for code, _ in findings(text)}


def test_a_literal_bound_again_is_forgotten() -> None:
    """`ready = False` then `ready = True` on the same path: the test sees the last one (the step runs)."""
    text = HEAD + """
for x, y in loader:
    ready = False
    loss = criterion(model(x), y)
    loss.backward()
    ready = True
    if ready:
        optimizer.step()
"""
    assert ("GL001", line_of(text, "optimizer.step()")) in findings(text)


def test_a_parameter_is_never_taken_for_the_literal_of_an_earlier_call() -> None:
    """A parameter is bound by each call, which no assignment statement forgets: no fact of it is kept."""
    text = HEAD + """
def update(flush):
    loss = criterion(model(loader[0][0]), loader[0][1])
    loss.backward()
    if flush:
        optimizer.step()
    flush = False


for _ in range(3):
    update(True)
"""
    assert ("GL001", line_of(text, "optimizer.step()")) in findings(text)


def test_a_graph_built_before_a_conditional_step_stays_stale_on_the_path_that_stepped() -> None:
    text = HEAD + """
for i, (x, y) in enumerate(loader):
    optimizer.zero_grad()
    out = model(x)
    criterion(out, y).backward()
    if i % 2 == 0:
        optimizer.step()
    criterion(out, y).backward()
    optimizer.step()
"""
    assert ("GL009", line_of(text, "criterion(out, y).backward()", 2)) in findings(text)


def test_the_same_loop_run_from_another_file_of_the_project_is_correct(tmp_path: Path) -> None:
    """The facts are kept of the names of the file the function is in, when another file runs it."""
    train = SUMMED.replace("\n\ntrain(3, 4)\n", "\n")
    root = project_tree(tmp_path, {"train.py": train, "main.py": "from train import train\n\nfor _ in range(2):\n    train(3, 4)\n"})
    for name in ("main.py", "train.py"):
        path = root / name
        assert not analyse_text(path.read_text(), str(path)).diagnostics, name
