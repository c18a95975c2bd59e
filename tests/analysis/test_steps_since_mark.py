"""The micro-batches since the last step are a window counter: `if ni - last_opt_step >= accumulate:` with
`last_opt_step = ni` under it (ultralytics' trainers and their many copies). Unread, the step's test was no
accumulation gate, and a clear before every micro-batch's backward went unseen (lockbox 11's yolov10 GL002,
after its opening: it does not count there)."""

from __future__ import annotations

from gradcheck_lint.engine import analyse_text


def found(text: str) -> list[tuple[str, int]]:
    return sorted((d.code, d.span.line) for d in analyse_text(text, "train.py").diagnostics)


TRAINER = """\
import torch

model = torch.nn.Linear(2, 2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)


def train(loader, epochs, nb, accumulate):
    last_opt_step = -1
    for epoch in range(epochs):
        for i, batch in enumerate(loader):
            ni = i + nb * epoch
            loss = model(batch).sum() / accumulate
            EARLY
            loss.backward()
            if ni - last_opt_step >= accumulate:
                optimizer.step()
                LATE
                MARK
"""


def test_a_clear_before_every_backward_drops_the_window() -> None:
    text = TRAINER.replace("EARLY", "model.zero_grad(set_to_none=True)").replace("                LATE\n", "")
    assert found(text.replace("MARK", "last_opt_step = ni")) == [("GL002", 13)]


def test_the_clear_after_the_step_is_right() -> None:
    text = TRAINER.replace("            EARLY\n", "").replace("LATE", "optimizer.zero_grad()")
    assert found(text.replace("MARK", "last_opt_step = ni")) == []


def test_without_the_mark_under_the_step_the_difference_is_no_window() -> None:
    text = TRAINER.replace("EARLY", "model.zero_grad(set_to_none=True)").replace("                LATE\n", "")
    assert found(text.replace("MARK", "pass")) == []
