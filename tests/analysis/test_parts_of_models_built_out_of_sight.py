"""A part of a model built out of sight is a module when an optimizer holds its parameters (`calls._optimized_part`).

`model.head(x)` of `model = build_model()` (a class nothing here reads) was taken for a method of `model`, which
might run any part of it: the loss then reached every part only vaguely, and a missing clear of the head's own
optimizer was `possible`. A method has no parameters; `torch.optim.Adam(model.head.parameters())` says
`model.head` is a module, so calling it runs that part's forward and the head's own loss surely reaches it.
"""

from __future__ import annotations

from gradcheck_lint.engine import analyse_text


def found(text: str) -> set[tuple[str, str]]:
    return {(d.code, d.certainty) for d in analyse_text(text, "train.py").diagnostics}


PARTS = """\
import torch
import torch.nn.functional as F
from zoo import build_model

model = build_model()
enc_opt = torch.optim.Adam(model.encoder.parameters())
head_opt = torch.optim.Adam(model.head.parameters())
for x, y in loader:
    loss = F.cross_entropy({logits}, y)
    enc_opt.zero_grad()
{clear}    loss.backward()
    enc_opt.step()
    head_opt.step()
"""


def test_a_missing_clear_of_an_optimized_part_is_certain():
    assert ("GL001", "certain") in found(PARTS.format(logits="model.head(model.encoder(x))", clear=""))


def test_the_clear_in_place_is_silent():
    assert found(PARTS.format(logits="model.head(model.encoder(x))", clear="    head_opt.zero_grad()\n")) == set()


def test_a_call_no_optimizer_names_stays_a_method_of_the_whole_model():
    # `model.predict(x)`: nothing says it is a module; which parts it runs is not known, so the missing clear
    # of the head rests on that reading: possible, as before
    got = found(PARTS.format(logits="model.predict(x)", clear=""))
    assert ("GL001", "possible") in got and ("GL001", "certain") not in got
