"""A module set on a model built elsewhere is a part of it: `student.layer2 = approx_mod` and `setattr(student, name,
approx_mod)` (a computed name) make `student(x)` run it and `student.parameters()` hold its parameters, also after
the whole student was frozen (the inserted module is new and trainable). Lockbox 10's two subdistill misses (layerwise
and grafting distillation: no clear anywhere), read after its opening: they do not count on it."""

from __future__ import annotations

from gradcheck_lint.engine import analyse_text


def found(text: str) -> list[tuple[str, int, str]]:
    return sorted((d.code, d.span.line, d.certainty.value) for d in analyse_text(text, "train.py").diagnostics)


INSERTED = """\
import torch
import torch.nn.functional as F
from torch import nn


def train(student, loader, lr, name):
    approx_mod = nn.Linear(4, 4)
    INSERT
    optimizer = torch.optim.SGD(OWNED, lr=lr)
    for x, y in loader:
        CLEAR
        loss = F.mse_loss(student(x), y)
        loss.backward()
        optimizer.step()
"""


def _program(insert: str, owned: str, clear: str) -> str:
    return INSERTED.replace("INSERT", insert).replace("OWNED", owned).replace("CLEAR", clear)


def test_a_module_set_on_a_model_trains_through_its_forward() -> None:
    for insert in ("student.layer2 = approx_mod", "setattr(student, name, approx_mod)"):
        for owned in ("approx_mod.parameters()", "student.parameters()"):
            assert found(_program(insert, owned, "pass")) == [("GL001", 14, "certain")], (insert, owned)
            assert found(_program(insert, owned, "optimizer.zero_grad()")) == [], (insert, owned)


def test_a_module_inserted_after_the_whole_model_was_frozen_is_trainable() -> None:
    text = _program("for p in student.parameters():\n        p.requires_grad = False\n    student.layer2 = approx_mod",
                    "approx_mod.parameters()", "pass")
    assert found(text) == [("GL001", 16, "certain")]


def test_a_module_kept_on_a_plain_object_is_no_part_of_a_model() -> None:
    """`cfg.head = approx_mod` on a settings object: `student(x)` does not run it, its optimizer gets nothing."""
    text = _program("cfg = object()\n    cfg.head = approx_mod", "approx_mod.parameters()", "pass")
    assert found(text) == []


SETTING = """\
import torch
from torch import nn
from transformers import AutoConfig, AutoModel, AutoTokenizer


class DocModel(nn.Module):
    def __init__(self, config, model):
        super().__init__()
        self.config = config
        self.model = model
        self.head = nn.Linear(config.hidden_size, 4)

    def forward(self, **batch):
        return (self.head(self.model(**batch)[0]).mean(),)


def train(args, model, loader, optimizer):
    for epoch in range(args.epochs):
        model.zero_grad()
        for step, batch in enumerate(loader):
            loss = model(**batch)[0] / args.accum
            loss.backward()
            if step % args.accum == 0:
                optimizer.step()
                model.zero_grad()


def main(args):
    config = AutoConfig.from_pretrained(args.name)
    tokenizer = AutoTokenizer.from_pretrained(args.name)
    model = AutoModel.from_pretrained(args.name, config=config)
    config.cls_token_id = tokenizer.cls_token_id
    model = DocModel(config, model)
    optimizer = torch.optim.AdamW(model.parameters())
    train(args, model, make_loader(tokenizer), optimizer)
"""


def test_an_attribute_read_off_an_object_is_no_module_set_on_a_model() -> None:
    """ATLOP: `config.cls_token_id = tokenizer.cls_token_id` sets a number, not a module: its GL004 stays certain."""
    assert found(SETTING) == [("GL004", 23, "certain")]
