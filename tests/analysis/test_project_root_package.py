"""A project whose top directory is itself a package (`__init__.py` at the root, `from . import pkg`): its files'
imports start above the root, and what lies inside the root is still read (`ProjectIndex.search_dirs`). In
lockbox 18 (after its opening), scarches' trainers lost their base class so: `from .trainer import Trainer`
resolved to a module above the root, dropped, and the inherited loop that calls `loss` once per batch was
never read (two GL008 misses)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from gradcheck_lint.engine import analyse_text
from support import project_tree

TRAINER = """\
    from collections import defaultdict
    import torch


    class Trainer:
        def __init__(self, model, loader):
            self.model = model
            self.loader = loader

        def loss(self, batch):
            raise NotImplementedError

        def train(self, n_epochs=10):
            self.optimizer = torch.optim.Adam(self.model.parameters())
            for self.epoch in range(n_epochs):
                self.iter_logs = defaultdict(list)
                for self.iter, batch in enumerate(self.loader):
                    loss = self.loss(batch)
                    self.optimizer.zero_grad()
                    loss.backward()
                    self.optimizer.step()
"""

SUBCLASS = """\
    from .trainer import Trainer


    class VAETrainer(Trainer):
        def loss(self, batch):
            recon_loss, kl_loss = self.model(batch)
            loss = recon_loss + kl_loss
            self.iter_logs["loss"].append(loss)
            return loss
"""


@pytest.mark.parametrize("top_init", [True, False])
def test_base_class_of_a_package_at_the_root_is_read(tmp_path: Path, top_init: bool) -> None:
    files = {"pkg/__init__.py": "", "pkg/trainer.py": TRAINER, "pkg/unsup.py": SUBCLASS}
    if top_init:
        files["__init__.py"] = "from . import pkg\n"
    root = project_tree(tmp_path / "proj", files)
    path = root / "pkg" / "unsup.py"
    assert "GL008" in {d.code for d in analyse_text(path.read_text(), str(path)).diagnostics}


def test_nothing_above_the_root_is_read(tmp_path: Path) -> None:
    """A module beside the project (in the root's parent) is not the project's, whatever the imports say."""
    (tmp_path / "trainer.py").write_text(textwrap.dedent(TRAINER))
    root = project_tree(tmp_path / "proj", {"__init__.py": "", "unsup.py": SUBCLASS.replace("from .trainer", "from trainer")})
    path = root / "unsup.py"
    assert "GL008" not in {d.code for d in analyse_text(path.read_text(), str(path)).diagnostics}
