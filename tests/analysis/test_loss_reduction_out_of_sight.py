"""GL003 rests on a fact: the loss is a mean over its samples (a sum is not to be divided). The fact is read
where the loss is computed in sight (`F.cross_entropy(model(x), y)`, a loss object of the catalogue, the
`forward` of the model's class in this file or in the project), and assumed where a model built out of
sight returns the loss itself (`loss = model(x, y)` of `model = build_model()`): then the finding is
`possible`, never `certain` (VALL-E and GPT-SoVITS trainers, unseen code, whose models sum their losses).
A `forward` that sums through a parameter defaulting to `"sum"` (`forward(..., reduction="sum")` into
`F.cross_entropy(..., reduction=reduction)`) sums: read through the project index, the finding goes."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from gradcheck_lint import check_source
from gradcheck_lint.config import Settings
from gradcheck_lint.diagnostics import Certainty
from gradcheck_lint.runner import lint_files
from support import project_tree

MODELS = """\
    import torch.nn.functional as F
    from torch import nn


    class Decoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = nn.Linear(4, 3)

        def forward(self, x, y, reduction={default!r}):
            logits = self.proj(x)
            loss = F.cross_entropy(logits, y, reduction=reduction)
            return logits, loss
"""

TRAIN = """\
    import torch

    from models import Decoder

    model = Decoder()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    accum = 4
    for i, (x, y) in enumerate(zip(torch.randn(16, 2, 4), torch.randint(0, 3, (16, 2)))):
        _, loss = model(x, y)
        loss.backward()
        if (i + 1) % accum == 0:
            opt.step()
            opt.zero_grad()
"""


def _project(tmp_path: Path, default: str) -> list[tuple[str, int, str, Certainty]]:
    root = project_tree(tmp_path, {"models.py": MODELS.format(default=default), "train.py": TRAIN})
    found = lint_files([str(root / "train.py")], Settings.default())
    return [(Path(d.path).name, d.line, d.code, d.certainty) for d in found if d.code == "GL003"]


def test_a_forward_of_another_file_summing_through_its_reduction_parameter_is_silent(tmp_path: Path) -> None:
    assert _project(tmp_path, "sum") == []


def test_the_same_forward_averaging_is_reported_certain(tmp_path: Path) -> None:
    assert _project(tmp_path, "mean") == [("train.py", 10, "GL003", Certainty.CERTAIN)]


BUILT = """\
import torch
import torch.nn.functional as F
from tts_models import build_model

model = build_model()
criterion = torch.nn.CrossEntropyLoss()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
accum = 4
for i, (x, y) in enumerate(zip(torch.randn(16, 2, 4), torch.randint(0, 3, (16, 2)))):
    loss = {loss}
    loss.backward()
    if (i + 1) % accum == 0:
        opt.step()
        opt.zero_grad()
"""


def _gl003(text: str) -> list[tuple[int, Certainty]]:
    found = check_source(textwrap.dedent(text), "train.py", settings=Settings.default())
    return [(d.line, d.certainty) for d in found if d.code == "GL003"]


def test_a_loss_a_model_built_out_of_sight_returns_is_possible() -> None:
    assert _gl003(BUILT.format(loss="model(x, y)")) == [(11, Certainty.POSSIBLE)]


@pytest.mark.parametrize("loss", [
    "F.cross_entropy(model(x), y)",
    "criterion(model(x), y)",
    "model(x).pow(2).mean()",
])
def test_a_loss_reduced_in_sight_of_that_model_s_output_is_certain(loss: str) -> None:
    assert _gl003(BUILT.format(loss=loss)) == [(11, Certainty.CERTAIN)]


def test_a_modelled_library_model_s_mean_loss_is_certain() -> None:
    text = BUILT.replace("from tts_models import build_model", "from transformer_lens import HookedTransformer")
    text = text.replace("build_model()", "HookedTransformer(cfg)")
    assert _gl003(text.format(loss='model(x, return_type="loss")')) == [(11, Certainty.CERTAIN)]
