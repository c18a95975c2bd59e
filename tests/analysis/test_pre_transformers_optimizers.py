"""Research code of 2019-2020 imports the library under its old names (`pytorch_pretrained_bert`,
`pytorch_transformers`): their optimizers are catalogued as optimizers over the groups given, so an accumulation
window stepped by one is read, not assumed (KernelGAT's undivided window, a bug of lockbox 34: certain now)."""

from __future__ import annotations

import textwrap

import pytest

from gradcheck_lint.api import check_source
from gradcheck_lint.config import Settings
from gradcheck_lint.registry import all_rules

ALL = Settings.default().with_enabled(all_rules())

WINDOW = """
import torch
from {module} import {name}

model = torch.nn.Linear(4, 2)
optimizer = {name}(model.parameters(), lr=5e-5)
global_step = 0
for x, y in loader:
    loss = torch.nn.functional.cross_entropy(model(x), y)
    {divide}
    loss.backward()
    global_step += 1
    if global_step % accumulation_steps == 0:
        optimizer.step()
        optimizer.zero_grad()
"""


@pytest.mark.parametrize(("module", "name"), [
    ("pytorch_pretrained_bert.optimization", "BertAdam"), ("pytorch_pretrained_bert", "BertAdam"),
    ("pytorch_pretrained_bert", "OpenAIAdam"), ("pytorch_transformers", "AdamW"),
])
def test_undivided_window_of_an_old_name_optimizer_is_certain(module: str, name: str) -> None:
    text = textwrap.dedent(WINDOW.format(module=module, name=name, divide="pass"))
    found = [(d.code, d.span.line, d.certainty.value) for d in check_source(text, "train.py", settings=ALL)]
    assert found == [("GL003", 11, "certain")]
    divided = text.replace("    pass\n", "    loss = loss / accumulation_steps\n")
    assert [d.code for d in check_source(divided, "train.py", settings=ALL)] == []
