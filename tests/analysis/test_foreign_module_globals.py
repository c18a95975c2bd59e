"""Code of another file run here reads that file's module globals as that file binds them (`accelerator =
Accelerator()` at its top, then `self.accelerate = accelerator` in a class's constructor), not as objects minted from
their names. LLM_PEFT's trainers (lockbox 25), driven by `for i in trainer(num_epochs=5):` from run scripts, were read
with an accelerator of unknown configuration whose `prepare` may build DeepSpeed engines: `self.model.zero_grad()`
after each step was a certain GL001 ("clears other parameters") in three files."""

from __future__ import annotations

from pathlib import Path

from gradcheck_lint.config import Settings
from gradcheck_lint.engine import analyse_text
from support import project_tree

TRAINER = """\
import torch.optim as optim
from transformers import AutoModel, LlamaForCausalLM
from accelerate import Accelerator
accelerator = Accelerator()


class Trainer:
    def __init__(self, config, path, loader):
        self.config = config
        self.accelerate = accelerator
        self.loader = loader
        if self.config.model_type == "llama":
            self.model = LlamaForCausalLM.from_pretrained(path)
        else:
            self.model = AutoModel.from_pretrained(path)

    def __call__(self, num_epochs=30, lr=1e-4):
        return self.train(num_epochs=num_epochs, lr=lr)

    def train(self, num_epochs=30, lr=1e-4):
        optimizer = optim.Adam(self.model.parameters(), lr=lr)
        self.model, optimizer, loader = self.accelerate.prepare(self.model, optimizer, self.loader)
        for epoch in range(num_epochs):
            for batch in loader:
                loss = self.model(**batch).loss.mean()
                self.accelerate.backward(loss)
                optimizer.step()
                CLEAR
            yield epoch
"""
RUN = """\
from main.trainer import Trainer

trainer = Trainer(config=None, path="x", loader=[])
for i in trainer(num_epochs=5):
    pass
"""


def _found(root: Path, name: str = "run.py") -> list[tuple[str, int, bool]]:
    path = root / name
    settings = Settings.default().with_enabled(frozenset({f"GL00{i}" for i in range(1, 10)}))
    report = analyse_text(path.read_text(), str(path), settings, project=True)
    return [(d.code, d.line, d.possible) for d in report.diagnostics]


def test_the_module_global_a_foreign_constructor_reads_is_that_file_s_accelerator(tmp_path: Path) -> None:
    trainer = TRAINER.replace("CLEAR", "self.model.zero_grad()")
    root = project_tree(tmp_path, {"main/__init__.py": "", "main/trainer.py": trainer, "run.py": RUN})
    assert _found(root) == []


def test_a_step_that_nothing_clears_is_still_reported(tmp_path: Path) -> None:
    # (reported once, in the trainer's file, where the bug is: `project.callers`)
    root = project_tree(tmp_path, {"main/__init__.py": "", "main/trainer.py": TRAINER.replace("CLEAR", "pass"),
                                   "run.py": RUN})
    assert _found(root) == []
    assert _found(root, "main/trainer.py") == [("GL001", 27, False)]
