"""A loss module that writes into the prediction it is handed (`predictions[..., 1:3] = self.sigmoid(...)`) changes that
tensor, made afresh by the model's forward in each `training_step`: nothing it holds outlives the call.

ERA-v1's YOLOv3 (lockbox 30, after its opening; two certain GL008): `self.yololoss()(out[0], y0, ...)` calls the loss
module of another file, which runs its `forward` on the handed `out[0]`. Whether the argument was made afresh was asked
only of calls named like the function they run (`compute_loss(outputs, labels)`), never of a module called for its
`forward`."""

from __future__ import annotations

from pathlib import Path

from gradcheck_lint.engine import analyse_text
from support import project_tree

LOSS = """\
import pytorch_lightning as pl
import torch.nn as nn


class YoloLoss(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.sigmoid = nn.Sigmoid()

    def forward(self, predictions, target, anchors):
        ious = intersection_over_union(predictions[..., 1:5], target[..., 1:5]).detach()
        predictions[..., 1:3] = self.sigmoid(predictions[..., 1:3])
        return ((predictions[..., 1:5] - target[..., 1:5]) ** 2).mean() + ious.mean()
"""

MODEL = """\
import pytorch_lightning as pl
import torch
import torch.nn as nn

from .loss import YoloLoss


class ResidualBlock(pl.LightningModule):
    def __init__(self, channels, num_repeats=1):
        super().__init__()
        self.layers = nn.ModuleList()
        for repeat in range(num_repeats):
            self.layers += [nn.Sequential(nn.Conv2d(channels, channels // 2, 1), nn.Conv2d(channels // 2, channels, 3))]


class YOLOv3(pl.LightningModule):
    def yololoss(self):
        return YoloLoss()

    def training_step(self, batch, batch_idx):
        x, y = batch
        out = {out}
        loss = (self.yololoss()(out[0], y[0], self.scaled_anchors[0])
                + self.yololoss()(out[1], y[1], self.scaled_anchors[1]))
        return loss
"""


def test_the_input_a_loss_module_writes_into(tmp_path: Path) -> None:
    root = project_tree(tmp_path, {"Utilities/__init__.py": "", "Utilities/loss.py": LOSS,
                                   "Utilities/model.py": MODEL.format(out="self(x)")})
    path = root / "Utilities" / "model.py"
    report = analyse_text(path.read_text(), str(path))
    assert [d.line for d in report.diagnostics if d.code == "GL008"] == []
