"""Where a GL008 of a helper in another file is reported (`ProjectView.anchor` with the event's own calls,
`KeepAlive.via`): the run that kept the graph is where it came from, not where the helper was last entered.

mllm_hwsi_ah (lockbox 41): `AverageMeter.update` (`self.sum += val * n`, utils/tools.py) is called by the base
trainer's `train_step` with a live loss (a leak, reported in the base's file) and by `validation_step` under
`torch.no_grad()`. A subclass in another file that overrides only `validation_epoch` had the base's leak reported at
its own call of `validation_step`, inside its `no_grad` block (two false GL008). A base's loop run with the subclass
as `self` whose run meets none of the subclass's code finds what the base's own file finds: reported there."""

from __future__ import annotations

from pathlib import Path

from gradcheck_lint.config import Settings
from gradcheck_lint.runner import lint_files
from support import project_tree

METERS = """\
class AverageMeter:
    def __init__(self):
        self.reset()

    def reset(self):
        self.sum = 0
        self.count = 0

    def update(self, val, n=1):
        self.sum += val * n
        self.count += n
"""
BASE = """\
import torch

from utils.meters import AverageMeter


class BaseTrainer:
    def __init__(self, model, optimizer, loss_fn):
        self.model = model
        self.optimizer = optimizer
        self.loss_fn = loss_fn
        self.loss_avg_tracker = AverageMeter()

    def fit(self, train_loader, val_loader, epochs):
        for _epoch in range(epochs):
            self.train_epoch(train_loader)
            self.validation_epoch(val_loader)

    def train_epoch(self, loader):
        self.model.train()
        self.loss_avg_tracker.reset()
        for batch in loader:
            self.train_step(batch)

    def train_step(self, batch):
        x, y = batch
        self.optimizer.zero_grad()
        total_loss = self.loss_fn(self.model(x), y)
        total_loss.backward()
        self.optimizer.step()
        self.loss_avg_tracker.update(total_loss)

    def validation_step(self, batch):
        x, y = batch
        total_loss = self.loss_fn(self.model(x), y)
        self.loss_avg_tracker.update(total_loss)
        return {"loss": total_loss}

    def validation_epoch(self, loader):
        with torch.no_grad():
            self.model.eval()
            self.loss_avg_tracker.reset()
            for batch in loader:
                self.validation_step(batch)
        return self.loss_avg_tracker.sum
"""
SUB = """\
import torch

from base import BaseTrainer


class SubTrainer(BaseTrainer):
    def validation_epoch(self, loader):
        with torch.no_grad():
            self.model.eval()
            self.loss_avg_tracker.reset()
            for batch in loader:
                metrics = self.validation_step(batch)
                print(metrics["loss"])
        return self.loss_avg_tracker.sum
"""
RUN = """\
import torch

from sub import SubTrainer

if __name__ == "__main__":
    model = torch.nn.Linear(4, 2)
    trainer = SubTrainer(model, torch.optim.SGD(model.parameters(), lr=0.1), torch.nn.functional.cross_entropy)
    data = [(torch.randn(3, 4), torch.tensor([0, 1, 0]))] * 4
    trainer.fit(data, data, 2)
"""
OWN_STEP = """\

    def train_step(self, batch):
        x, y = batch
        self.optimizer.zero_grad()
        loss = self.loss_fn(self.model(x), y)
        loss.backward()
        self.optimizer.step()
        self.loss_avg_tracker.update(loss)
"""


def _found(tmp: Path, sub: str) -> dict[str, list[tuple[int, str, str]]]:
    root = project_tree(tmp / "p", {"setup.py": "", "utils/__init__.py": "", "utils/meters.py": METERS,
                                    "base.py": BASE, "sub.py": sub, "run.py": RUN})
    found = lint_files([str(root / name) for name in ("base.py", "sub.py")], Settings.default())
    out: dict[str, list[tuple[int, str, str]]] = {"base.py": [], "sub.py": []}
    for d in found:
        if d.code != "GL000":
            out[Path(d.path).name].append((d.line, d.code, d.certainty.value))
    return out


def test_a_base_trainers_leak_is_reported_in_its_file_not_at_a_subclass_evaluation_call(tmp_path: Path) -> None:
    assert _found(tmp_path, SUB) == {"base.py": [(30, "GL008", "certain")], "sub.py": []}


def test_a_subclass_whose_own_step_keeps_the_graph_is_reported_at_its_own_call(tmp_path: Path) -> None:
    found = _found(tmp_path, SUB + OWN_STEP)
    assert found["base.py"] == [(30, "GL008", "certain")]
    assert [(line, code) for line, code, _ in found["sub.py"]] == [(22, "GL008")]  # its own `....update(loss)`
