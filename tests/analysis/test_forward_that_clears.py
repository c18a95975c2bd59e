"""A module's `forward` that clears (or steps, or backpropagates) runs on the caller's paths; and a star import
brings the star module's classes, functions and import aliases (`from utils import *` of a `utils.py` doing
`import torch.nn as nn`).

lstm-crf-pytorch (lockbox 11, after its opening: it does not count there) clears in its model's `forward`
(`self.zero_grad()` before computing the loss) and steps after `loss.backward()` with no other clear; its model file
gets `nn` from `from utils import *`, and its training script gets the model class from `from rnn_crf import *`.
Read as a forward without effects, of a class not known to be a module, it was a certain GL001."""

from __future__ import annotations

from pathlib import Path

from test_project_reading import _codes

from gradcheck_lint.engine import analyse_text
from support import project_tree

MODEL = """\
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(2, 1)

    def forward(self, x, y):
        CLEAR
        return ((self.fc(x) - y) ** 2).mean()
"""

TRAIN = """\
model = Net()
optim = torch.optim.Adam(model.parameters())
for x, y in batch:
    loss = model(x, y)
    loss.backward()
    optim.step()
"""


def found(text: str) -> list[tuple[str, int]]:
    return sorted((d.code, d.span.line) for d in analyse_text(text, "train.py").diagnostics)


def test_a_clear_inside_forward_clears_before_the_backward() -> None:
    one = "import torch\nimport torch.nn as nn\n\n\n" + MODEL + "\n\n" + TRAIN
    assert found(one.replace("CLEAR", "self.zero_grad()")) == []
    assert found(one.replace("        CLEAR\n", "")) == [("GL001", 19)]


def test_star_imports_bring_classes_and_import_aliases(tmp_path: Path) -> None:
    files = {
        "pyproject.toml": "",
        "utils.py": "import torch\nimport torch.nn as nn\n",
        "net.py": "from utils import *\n\n\n" + MODEL,
        "train.py": "from utils import *\nfrom net import *\n\n" + TRAIN,
    }
    root = project_tree(tmp_path, {k: v.replace("CLEAR", "self.zero_grad()") for k, v in files.items()})
    assert _codes(root / "train.py") == []
    root = project_tree(tmp_path / "bug", {k: v.replace("        CLEAR\n", "") for k, v in files.items()})
    assert _codes(root / "train.py") == [("GL001", 9)]
