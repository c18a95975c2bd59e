"""Classes across the files of a project: attributes a base class fills in, properties, delegate objects."""

from __future__ import annotations

import textwrap
from pathlib import Path

from gradcheck_lint.config import Settings
from gradcheck_lint.engine import analyse_text


def _tree(root: Path, files: dict[str, str]) -> Path:
    (root / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return root


def _found(path: Path, project: bool = True, show_possible: bool = False) -> list[tuple[str, int]]:
    report = analyse_text(path.read_text(), str(path), Settings.default().with_enabled(frozenset({f"GL00{i}" for i in range(1, 10)} | {"GL010"})),
                          project=project)
    return [(d.code, d.line) for d in report.diagnostics if show_possible or not d.possible]


PLACEHOLDER_BASE = """\
    import torch


    class BaseTrainer:
        def __init__(self, args):
            self.args = args
            self.model = None  # built by setup()
            self.optimizer = None

        def setup(self):
            self.model = build_model(self.args)
            self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.1)
"""
NO_SYNC_LATE = """\
    from base import BaseTrainer


    class Trainer(BaseTrainer):
        def forward_backward(self, batch, last):
            FORWARD
            if last:
                loss.backward()
            else:
                with self.model.no_sync():
                    LATE_FORWARD
                    loss.backward()

        def forward_backward_all(self, batches, accum):
            for micro in range(accum):
                self.forward_backward(batches[micro], micro == accum - 1)
"""


def test_an_attribute_a_base_class_of_another_file_fills_in_is_no_none(tmp_path: Path) -> None:
    # `self.model = None` in the base's `__init__`, built by its `setup()`: in the subclass's methods it is the
    # model, not None (LoongForge's finetune trainer lost its GL006 to this when its base class was read)
    forward = "loss = self.model(batch).mean()"
    buggy = NO_SYNC_LATE.replace("LATE_FORWARD\n", "").replace("FORWARD", forward)
    fixed = NO_SYNC_LATE.replace("            FORWARD\n", "").replace("LATE_FORWARD", forward).replace(
        "            if last:\n", f"            if last:\n                {forward}\n")
    root = _tree(tmp_path, {"base.py": PLACEHOLDER_BASE, "train.py": buggy, "train_ok.py": fixed})
    assert _found(root / "train.py") == [("GL006", 11)] == _found(root / "train.py", project=False)
    assert _found(root / "train_ok.py", show_possible=True) == []
