"""A class that calls a method only manual optimization allows (`self.manual_backward`) runs manual, wherever the flag
is set: optispeech's `BaseLightningModule.training_step`, whose subclass of another file sets
`automatic_optimization = False` (lockbox 25: its GL002 and GL007 were missed, the hook read as automatic)."""

from __future__ import annotations

from pathlib import Path

from gradcheck_lint.config import Settings
from gradcheck_lint.engine import analyse_text
from support import project_tree as _tree

BASE = """\
    import torch
    import lightning.pytorch as pl


    class BaseModule(pl.LightningModule):
        def training_step(self, batch, batch_idx):
            opt_g = self.optimizers()
            loss = self.generator(batch).pow(2).mean() / 4
            self.manual_backward(loss)
            CLIP
            if (batch_idx + 1) % 4 == 0:
                opt_g.step()
                opt_g.zero_grad()

        def configure_optimizers(self):
            return torch.optim.AdamW(self.generator.parameters(), lr=1e-4)
"""
SUB = """\
    import torch
    from base import BaseModule


    class Speech(BaseModule):
        def __init__(self):
            super().__init__()
            self.automatic_optimization = False
            self.generator = torch.nn.Linear(4, 4)
"""
CLIP = "self.clip_gradients(opt_g, gradient_clip_val=1.0, gradient_clip_algorithm='norm')"


def _found(path: Path) -> list[tuple[str, int]]:
    settings = Settings.default().with_enabled(frozenset({f"GL00{i}" for i in range(1, 10)} | {"GL010"}))
    report = analyse_text(path.read_text(), str(path), settings, project=True)
    return [(d.code, d.line) for d in report.diagnostics if not d.possible]


def test_a_base_class_calling_manual_backward_runs_manual_whatever_file_sets_the_flag(tmp_path: Path) -> None:
    root = _tree(tmp_path, {"base.py": BASE.replace("CLIP", CLIP), "sub.py": SUB})
    # the clip runs on every micro-batch, three of which are followed by more backward passes: GL007 at the clip
    assert _found(root / "base.py") == [("GL007", 10)]


def test_the_clip_under_the_step_gate_is_silent(tmp_path: Path) -> None:
    fixed = BASE.replace("            CLIP\n", "").replace("opt_g.step()", f"{CLIP}\n                opt_g.step()")
    root = _tree(tmp_path, {"base.py": fixed, "sub.py": SUB})
    assert _found(root / "base.py") == []


def test_a_class_that_reads_the_flag_may_run_either_way(tmp_path: Path) -> None:
    # `if not self.automatic_optimization:` decides per run: nothing is taken for manual on the call alone
    both = BASE.replace("CLIP", CLIP).replace(
        "            self.manual_backward(loss)\n",
        "            if self.automatic_optimization:\n                return loss\n"
        "            self.manual_backward(loss)\n")
    sub = SUB.replace("        self.automatic_optimization = False\n", "")
    root = _tree(tmp_path, {"base.py": both, "sub.py": sub})
    assert _found(root / "base.py") == []
