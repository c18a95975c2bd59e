"""An optimizer made by a builder whose result is unpacked (`optimizer, msg = build_optimizer(...)`, the
builder imported from elsewhere) is the element named like an optimizer (bytetriper/RAE's GL002)."""

from __future__ import annotations

import textwrap

from gradcheck_lint.engine import analyse_text

LOOP = """
from utils import build_optimizer, load_data

model = torch.nn.Linear(4, 1)
{unpack} = build_optimizer([p for p in model.parameters() if p.requires_grad], cfg)
for step, (x, y) in enumerate(load_data()):
    {clear_before}
    (model(x).mean() / accum).backward()
    if (step + 1) % accum == 0:
        optimizer.step()
        {clear_after}
"""


def findings(unpack: str, clear_before: str = "pass", clear_after: str = "pass") -> list[tuple[int, str]]:
    text = "import torch\n" + textwrap.dedent(LOOP).format(unpack=unpack, clear_before=clear_before, clear_after=clear_after)
    return [(d.span.line, d.code) for d in analyse_text(text, "train.py").diagnostics]


def test_the_element_named_like_an_optimizer_is_the_optimizer() -> None:
    assert findings("optimizer, optim_msg", clear_before="optimizer.zero_grad(set_to_none=True)") == [(8, "GL002")]
    assert findings("optimizer, optim_msg") == [(11, "GL001")]


def test_a_correct_window_stays_silent() -> None:
    assert findings("optimizer, optim_msg", clear_after="optimizer.zero_grad()") == []
    assert findings("optimizer, lr_scheduler", clear_after="optimizer.zero_grad()") == []


def test_no_element_named_like_one_keeps_the_result_opaque() -> None:
    assert findings("first, second", clear_before="optimizer.zero_grad()") == []
