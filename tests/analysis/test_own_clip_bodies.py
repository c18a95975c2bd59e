"""A project's own copy of `clip_grad_norm_` (the norm of the gradients, then each multiplied by a factor made from
it) is a clip wherever it is defined: called on gradients a GradScaler still scales, it clips them scaled (GL007;
DL-Art-School's `utils.util.clip_grad_norm`, lockbox 7). A helper that rescales weights by their own norm, or
gradients by a factor that is not their norm, is no clip."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from gradcheck_lint import check_source
from gradcheck_lint.config import Settings
from gradcheck_lint.engine import analyse_text
from support import project_tree

CLIP = """\
def clip_grads(parameters, max_norm, norm_type=2.0):
    parameters = [p for p in parameters if p.grad is not None]
    total_norm = torch.norm(torch.stack([torch.norm(p.grad.detach(), norm_type) for p in parameters]), norm_type)
    clip_coef = max_norm / (total_norm + 1e-6)
    if clip_coef < 1:
        for p in parameters:
            p.grad.detach().mul_(clip_coef)
    return total_norm
"""

FOREACH_CLIP = """\
def clip_grads(params, max_norm):
    grads = [p.grad for p in params if p.grad is not None]
    norms = torch._foreach_norm(grads)
    coef = (max_norm / (torch.stack(norms).norm() + 1e-6)).clamp(max=1.0)
    torch._foreach_mul_(grads, coef)
"""

# the weights rescaled by their own norm (a max-norm constraint): not the gradients' clip
RENORM = """\
def clip_grads(parameters, max_norm):
    for p in parameters:
        if p.grad is not None:
            norm = p.data.norm()
            p.data.mul_(max_norm / (norm + 1e-6))
"""

# the gradients multiplied by a fixed factor: a rescale, not a clip
SCALE = """\
def clip_grads(parameters, factor):
    for p in parameters:
        if p.grad is not None:
            p.grad.data.mul_(factor)
"""

LOOP = """\
model = nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
scaler = torch.cuda.amp.GradScaler()
for x in torch.randn(10, 8, 4):
    optimizer.zero_grad()
    scaler.scale(model(x).mean()).backward()
    {unscale}clip_grads(model.parameters(), 1.0)
    scaler.step(optimizer)
    scaler.update()
"""

CLASS = """\
class Trainer:
    def __init__(self):
        self.model = nn.Linear(4, 1)
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.1)
        self.scaler = torch.cuda.amp.GradScaler()

    def clip(self, params, max_norm):
        grads = [p.grad for p in params]
        total = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g) for g in grads]))
        for g in grads:
            g *= max_norm / (total + 1e-6)

    def train(self, loader):
        for x in loader:
            self.optimizer.zero_grad()
            self.scaler.scale(self.model(x).mean()).backward()
            {unscale}self.clip(self.model.parameters(), 1.0)
            self.scaler.step(self.optimizer)
            self.scaler.update()
"""

HEAD = "import torch\nfrom torch import nn\n\n"


def _gl007(text: str) -> list[int]:
    return [d.span.line for d in check_source(text, "train.py") if d.code == "GL007"]


@pytest.mark.parametrize("helper", [CLIP, FOREACH_CLIP], ids=["norm-and-mul", "foreach"])
def test_an_own_clip_of_scaled_gradients_in_the_same_file_is_found(helper: str) -> None:
    text = HEAD + helper + "\n\n" + LOOP.format(unscale="")
    line = text.splitlines().index("    clip_grads(model.parameters(), 1.0)") + 1
    assert _gl007(text) == [line]


@pytest.mark.parametrize("helper", [CLIP, FOREACH_CLIP], ids=["norm-and-mul", "foreach"])
def test_an_own_clip_after_unscale_is_silent(helper: str) -> None:
    assert _gl007(HEAD + helper + "\n\n" + LOOP.format(unscale="scaler.unscale_(optimizer)\n    ")) == []


@pytest.mark.parametrize("helper", [RENORM, SCALE], ids=["weights-renormed", "fixed-factor"])
def test_a_helper_that_does_not_clip_gradients_by_their_norm_is_no_clip(helper: str) -> None:
    assert _gl007(HEAD + helper + "\n\n" + LOOP.format(unscale="")) == []


def test_a_method_that_clips_an_argument_is_a_clip() -> None:
    text = HEAD + CLASS.format(unscale="")
    line = text.splitlines().index("            self.clip(self.model.parameters(), 1.0)") + 1
    assert _gl007(text) == [line]
    assert _gl007(HEAD + CLASS.format(unscale="self.scaler.unscale_(self.optimizer)\n            ")) == []


@pytest.mark.parametrize(("unscale", "expected"), [("", True), ("scaler.unscale_(optimizer)\n    ", False)])
def test_an_own_clip_of_another_file_is_a_clip(tmp_path: Path, unscale: str, expected: bool) -> None:
    root = project_tree(tmp_path / "proj", {
        "utils/__init__.py": "",
        "utils/util.py": "import torch\n\n\n" + CLIP,
        "train.py": "import torch\nfrom torch import nn\nfrom utils.util import clip_grads\n\n" + LOOP.format(unscale=unscale),
    })
    path = root / "train.py"
    report = analyse_text(path.read_text(), str(path), Settings.default())
    found = [(d.code, d.line) for d in report.diagnostics if d.code == "GL007"]
    line = textwrap.dedent(path.read_text()).splitlines().index("    clip_grads(model.parameters(), 1.0)") + 1
    assert found == ([("GL007", line)] if expected else [])
