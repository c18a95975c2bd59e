"""The last iteration of a loop over `range(0, n, b)` tested by its index (T5 experiments' trainer:
`is_last_batch = (j == (batch_size // b - 1) * b)`, then `if is_last_batch: scaler.unscale_(optimizer)`): one
unscale per step, on the last micro-batch, and the loop left only after it. Read as a test that may go either
way on every iteration, one path unscaled twice and another clipped scaled gradients (two certain GL007).
A module imported by name (`self.amp = importlib.import_module("apex.amp")`) is that module."""

import ast
import textwrap

from gradcheck_lint import check_source
from gradcheck_lint.analysis.names import ImportMap
from gradcheck_lint.config import Settings

LOOP = """
import torch

model = torch.nn.Linear(4, 1)
optimizer = torch.optim.AdamW(model.parameters())
scaler = torch.cuda.amp.GradScaler()
micro = 2
for batch in [torch.randn(8, 4)] * 4:
    batch_size = batch.shape[0]
    for j in range(0, batch_size, micro):
        loss = model(batch[j:j + micro]).pow(2).mean() / (batch_size // micro)
        scaler.scale(loss).backward()
        is_last_batch = (j == {last})
        if is_last_batch:
            scaler.unscale_(optimizer)
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    scaler.step(optimizer)
    scaler.update()
    optimizer.zero_grad()
"""


def _gl007(last: str) -> list[int]:
    text = textwrap.dedent(LOOP.format(last=last))
    return sorted(d.span.line for d in check_source(text, "t5.py", settings=Settings.default()) if d.code == "GL007")


def test_the_last_index_of_a_strided_range() -> None:
    assert _gl007("(batch_size // micro - 1) * micro") == []


def test_the_last_index_written_as_the_bound_minus_the_stride() -> None:
    assert _gl007("batch_size - micro") == []


def test_unscaling_on_the_first_micro_batch_is_still_reported() -> None:
    assert _gl007("0") == [15, 16]


def test_a_module_imported_by_name_qualifies_its_attributes() -> None:
    tree = ast.parse('import importlib\nclass T:\n    def __init__(self):\n        self.amp = importlib.import_module("apex.amp")\n')
    call = ast.parse("self.amp.scale_loss(loss, opt)", mode="eval").body
    assert ImportMap.of(tree).qualify(call.func) == "apex.amp.scale_loss"  # type: ignore[attr-defined]
