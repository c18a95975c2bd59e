"""What `self.x` attributes a class's methods other than `__init__` assign is read once per method and file
(`Objects._self_stores`): every setting test of `__init__`, every world of the class and every fixed test asks
again (accelerate's `Accelerator`: a million assignment-target reads, a fifth of that file's analysis). The answer
is the same set as before: a setting another method changes is still not decided (`test_settings_set_once`)."""

from __future__ import annotations

import ast

import pytest

from gradcheck_lint.analysis import objects
from gradcheck_lint.engine import analyse_text

SETTINGS = "\n".join(f"        if self.flag{i}:\n            self.extra{i} = torch.nn.Linear(4, 4)" for i in range(6))
TRAINER = f"""\
import torch


class Trainer:
    def __init__(self, model, flag0=True, flag1=True, flag2=True, flag3=True, flag4=True, flag5=True):
        self.flag0, self.flag1, self.flag2 = flag0, flag1, flag2
        self.flag3, self.flag4, self.flag5 = flag3, flag4, flag5
        self.model = model
        self.opt = torch.optim.SGD(model.parameters(), lr=0.1)
{SETTINGS}

    def pause(self):
        self.flag0 = False

    def resume(self):
        self.flag0 = True

    def train(self, loader):
        for x, y in loader:
            if self.flag1:
                self.opt.zero_grad()
            loss = torch.nn.functional.mse_loss(self.model(x), y)
            loss.backward()
            self.opt.step()

    def evaluate(self, loader):
        for x, y in loader:
            if self.flag2 and self.flag3:
                print(self.model(x))


trainer = Trainer(torch.nn.Linear(4, 1), flag1=False)
trainer.train(loader)
"""


def test_each_method_is_read_once_per_file(monkeypatch: pytest.MonkeyPatch) -> None:
    read: list[ast.AST] = []
    real = objects.assignment_targets

    def counting(node: ast.AST) -> list[ast.expr]:
        read.append(node)
        return real(node)

    monkeypatch.setattr(objects, "assignment_targets", counting)
    found = analyse_text(TRAINER, "train.py").diagnostics
    assert {d.code for d in found} == {"GL001"}  # `flag1=False`: the clear is skipped
    methods = [n for n in ast.parse(TRAINER).body if isinstance(n, ast.ClassDef)][0].body
    others = [fn for fn in methods if isinstance(fn, ast.FunctionDef) and fn.name != "__init__"]
    # each node of each method other than `__init__` read at most once (before: once per question, 10x that here)
    assert 0 < len(read) <= sum(len(list(ast.walk(fn))) for fn in others)
