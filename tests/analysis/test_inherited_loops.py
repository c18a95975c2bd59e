"""A base class's training loop run with a subclass as `self` (`analysis/inherited_loops.py`): the hooks the loop
calls are the subclass's overrides, in this file or across files, also when the subclass has the base's name
(`class Trainer(basic.Trainer)`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gradcheck_lint.config import Settings
from gradcheck_lint.engine import analyse_text
from support import project_tree


def _found(path: Path) -> set[tuple[int, str, str]]:
    report = analyse_text(path.read_text(), str(path), Settings.default())
    return {(d.line, d.code, d.certainty.value) for d in report.diagnostics}


BASE = """\
import torch


class Trainer:
    def __init__(self, model):
        self.model = model
        self.optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

    def train_step_end(self, batch, loss):
        pass

    def train_model(self, loader, epochs):
        for epoch in range(epochs):
            for batch, (x, y) in enumerate(loader):
                self.optimizer.zero_grad()
                loss = torch.nn.functional.mse_loss(self.model(x), y)
                loss.backward()
                self.optimizer.step()
                self.train_step_end(batch, loss)
"""

SUBCLASS = """\
import torch
from trainers import basic


class Trainer(basic.Trainer):
    def __init__(self, model):
        super().__init__(model)
        self.loss_dict = {{}}

    def train_step_end(self, batch, loss):
        self.loss_dict[batch] = {stored}
"""


@pytest.mark.parametrize(("stored", "expected"), [
    ("torch.square(loss)", {(11, "GL008", "certain")}),  # every batch's graph, kept for the whole run
    ("torch.square(loss).item()", set()),
])
def test_a_hook_overridden_in_another_file_runs_inside_the_base_loop(tmp_path: Path, stored: str,
                                                                     expected: set[tuple[int, str, str]]) -> None:
    root = project_tree(tmp_path / "p", {"trainers/__init__.py": "", "trainers/basic.py": BASE,
                                         "oort.py": SUBCLASS.format(stored=stored)})
    assert _found(root / "oort.py") == expected
    assert _found(root / "trainers" / "basic.py") == set()  # the base's own hook keeps nothing


ONE_FILE = """\
import torch


class BaseTrainer:
    def __init__(self, model):
        self.model = model
        self.optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        self.history = []

    def record(self, loss):
        self.history.append(loss.item())

    def fit(self, loader):
        for x, y in loader:
            self.optimizer.zero_grad()
            loss = torch.nn.functional.mse_loss(self.model(x), y)
            loss.backward()
            self.optimizer.step()
            self.record(loss)


class VerboseTrainer(BaseTrainer):
    def record(self, loss):
        self.history.append(loss)
"""


def test_a_hook_overridden_in_the_same_file_runs_inside_the_base_loop(tmp_path: Path) -> None:
    root = project_tree(tmp_path / "p", {"t.py": ONE_FILE})
    assert _found(root / "t.py") == {(24, "GL008", "certain")}


# pygod's `DeepDetector.fit` (base.py) takes `(loss_g, loss_d)` from a subclass's `forward_model` when built
# with `gan=True`, and on that branch backpropagates the generator loss twice, the generator's step between:
# the second backward runs through the generator forward made before the step (GL009, a lockbox-13 bug that was
# missed). The finding is in the base's code, but only a GAN subclass reaches it: reported at the subclass's
# class statement, naming the base's line. A subclass built with `gan=False` never takes that branch: the
# setting `__init__` stored (`self.gan = gan`, assigned nowhere else) decides `if self.gan:` for the run.
DETECTOR = """\
import torch


class Detector:
    def __init__(self, gan=False):
        self.gan = gan

    def forward_model(self, x):
        raise NotImplementedError

    def fit(self, loader, epochs):
        if self.gan:
            opt_g = torch.optim.Adam(self.model.generator.parameters())
            opt_d = torch.optim.Adam(self.model.discriminator.parameters())
        else:
            optimizer = torch.optim.Adam(self.model.parameters())
        for epoch in range(epochs):
            for x in loader:
                loss = self.forward_model(x)
                if self.gan:
                    opt_g.zero_grad()
                    loss[0].backward()
                    opt_g.step()
                    opt_d.zero_grad()
                    loss[0].backward()
                    opt_d.step()
                else:
                    optimizer.zero_grad()
                    loss.backward()
                    optimizer.step()
"""
GAN_DETECTOR = """\
import torch
from detector import Detector


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.generator = torch.nn.Linear(4, 4)
        self.discriminator = torch.nn.Linear(4, 1)


class GanDetector(Detector):
    def __init__(self):
        super().__init__(gan={gan})
        self.model = Net()

    def forward_model(self, x):
        fake = self.model.generator(torch.randn_like(x))
        loss_g = -self.model.discriminator(fake).mean()
        loss_d = self.model.discriminator(x).mean() - self.model.discriminator(fake.detach()).mean()
        return loss_g, loss_d
"""


@pytest.mark.parametrize("gan, expected", [("True", {(12, "GL009", "certain")}), ("False", set())])
def test_a_base_loop_finding_only_a_subclass_reaches_is_reported_at_the_subclass(tmp_path: Path, gan: str,
                                                                                  expected: set[tuple[int, str, str]]) -> None:
    root = project_tree(tmp_path, {"detector.py": DETECTOR, "gan_detector.py": GAN_DETECTOR.format(gan=gan)})
    assert _found(root / "gan_detector.py") == expected


# The same base two levels up: `GanDetector(ImageDetector)`, and `ImageDetector(Detector)` in another file. The
# middle class names its base in its own file; it was looked up in the checked file, which never names `Detector`,
# so the base's loop was never run (lockbox 15's nunif GL010 miss, development material now).
MIDDLE_BESIDE_BASE = DETECTOR + """

class ImageDetector(Detector):
    def preprocess(self, x):
        return x
"""
MIDDLE_OWN_FILE = """\
from detector import Detector


class ImageDetector(Detector):
    def preprocess(self, x):
        return x
"""


@pytest.mark.parametrize("layout", ["middle_beside_base", "middle_in_own_file"])
def test_a_base_loop_two_levels_up_in_other_files_runs_for_the_subclass(tmp_path: Path, layout: str) -> None:
    subclass = GAN_DETECTOR.format(gan="True").replace("class GanDetector(Detector)", "class GanDetector(ImageDetector)")
    if layout == "middle_beside_base":
        files = {"detector.py": MIDDLE_BESIDE_BASE,
                 "gan_detector.py": subclass.replace("from detector import Detector", "from detector import ImageDetector")}
    else:
        files = {"detector.py": DETECTOR, "image.py": MIDDLE_OWN_FILE,
                 "gan_detector.py": subclass.replace("from detector import Detector", "from image import ImageDetector")}
    root = project_tree(tmp_path, files)
    assert _found(root / "gan_detector.py") == {(12, "GL009", "certain")}
