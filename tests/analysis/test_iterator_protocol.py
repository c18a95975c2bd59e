"""A hand-written batch reader of another file (`class DataLoader(object)` whose `__iter__` returns the object and
whose `__next__` reads the next batch, or raises StopIteration and rewinds): a loop over it runs once per batch.

The fact once assumed: iterating an object gives the object (the members of a collection stand for one another, `for
opt in optimizers:`), so the loop over the reader was one pass, the epoch's clear fell in the same loop as the gated
step, and a per-epoch clear with a step counter running across epochs was reported as a clear inside every window
(KernelGAT's pretraining, whose reader holds a tokenizer, a certain GL002 of lockbox 34, kind 2). Now the element of
such an object is what its `__next__` returns (or, for another `__iter__`, a value not known), and the loop is a
loop."""

from __future__ import annotations

from pathlib import Path

from gradcheck_lint.engine import analyse_text
from support import project_tree

READER = """\
import torch


class DataLoader(object):
    def __init__(self, examples, tokenizer, batch_size=64):
        self.examples = examples
        self.tokenizer = tokenizer
        self.batch_size = batch_size
        self.total_step = len(examples) // batch_size
        self.step = 0

    def __iter__(self):
        return self

    def __next__(self):
        return self.next()

    def next(self):
        if self.step < self.total_step:
            rows = self.examples[self.step * self.batch_size:(self.step + 1) * self.batch_size]
            self.step += 1
            return torch.tensor(rows), torch.zeros(len(rows), dtype=torch.long)
        else:
            self.step = 0
            raise StopIteration()
"""

GENERATOR_READER = """\
import torch


class DataLoader(object):
    def __init__(self, examples, tokenizer, batch_size=64):
        self.examples = examples
        self.tokenizer = tokenizer
        self.batch_size = batch_size

    def __iter__(self):
        for i in range(0, len(self.examples), self.batch_size):
            rows = self.examples[i:i + self.batch_size]
            yield torch.tensor(rows), torch.zeros(len(rows), dtype=torch.long)
"""

TRAIN = """\
import torch
import torch.nn as nn
from transformers import BertTokenizer

from data_loader import DataLoader


def train_model(model, args, trainset_reader):
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    crit = nn.CrossEntropyLoss()
    global_step = 0
    for epoch in range(int(args.num_train_epochs)):
        optimizer.zero_grad()
        for inp_tensor, label_tensor in trainset_reader:
            loss = crit(model(inp_tensor), label_tensor)
            LOSS
            global_step += 1
            if global_step % args.gradient_accumulation_steps == 0:
                optimizer.step()
                optimizer.zero_grad()


if __name__ == "__main__":
    import argparse
    parser = argparse.ArgumentParser()
    parser.add_argument("--num_train_epochs", type=int, default=3)
    parser.add_argument("--gradient_accumulation_steps", type=int, default=4)
    args = parser.parse_args()
    tokenizer = BertTokenizer.from_pretrained("bert-base-uncased")
    reader = DataLoader([[0.0, 1.0]] * 100, tokenizer, batch_size=8)
    train_model(nn.Linear(2, 2), args, reader)
"""

DIVIDED = "(loss / args.gradient_accumulation_steps).backward()"


def _found(root: Path, reader: str = READER, loss: str = DIVIDED, train: str = TRAIN) -> list[tuple[str, int, str]]:
    project_tree(root, {"data_loader.py": reader, "train.py": train.replace("LOSS", loss)})
    path = root / "train.py"
    return [(d.code, d.span.line, d.certainty.value) for d in analyse_text(path.read_text(), str(path)).diagnostics]


def test_the_clear_of_each_epoch_around_a_loop_over_a_reader_is_not_inside_the_window(tmp_path: Path) -> None:
    assert _found(tmp_path) == []


def test_a_reader_whose_iter_is_a_generator_is_iterated_too(tmp_path: Path) -> None:
    assert _found(tmp_path, GENERATOR_READER) == []


def test_the_undivided_window_over_the_reader_is_still_reported(tmp_path: Path) -> None:
    assert ("GL003", 16, "certain") in _found(tmp_path, loss="loss.backward()")


def test_a_clear_on_every_batch_of_the_reader_is_still_reported(tmp_path: Path) -> None:
    """The clear moved into the loop over the reader: each batch's clear drops the one before (GL002, at line 14)."""
    inside = TRAIN.replace("        optimizer.zero_grad()\n        for inp_tensor, label_tensor in trainset_reader:\n",
                           "        for inp_tensor, label_tensor in trainset_reader:\n            optimizer.zero_grad()\n")
    assert inside != TRAIN
    assert ("GL002", 14, "certain") in _found(tmp_path, train=inside)
