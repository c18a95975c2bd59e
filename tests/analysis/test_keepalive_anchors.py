"""Where a GL008 of a helper in another file is reported (`ProjectView.anchor` with the event's own calls,
`KeepAlive.via`): the run that kept the graph is where it came from, not where the helper was last entered.

mllm_hwsi_ah (lockbox 41): `AverageMeter.update` (`self.sum += val * n`, utils/tools.py) is called by the base
trainer's `train_step` with a live loss (a leak, reported in the base's file) and by `validation_step` under
`torch.no_grad()`. A subclass in another file that overrides only `validation_epoch` had the base's leak reported at
its own call of `validation_step`, inside its `no_grad` block (two false GL008). A base's loop run with the subclass
as `self` whose run meets none of the subclass's code finds what the base's own file finds: reported there."""

from __future__ import annotations

import shutil
from pathlib import Path

from gradcheck_lint.config import Settings
from gradcheck_lint.runner import lint_files
from support import FIXTURES

PROJECT = FIXTURES / "loss_graph_kept_alive" / "shared_meter_project"  # base.py, sub.py, run.py, utils/meters.py
OWN_STEP = """\

    def train_step(self, batch):
        x, y = batch
        self.optimizer.zero_grad()
        loss = self.loss_fn(self.model(x), y)
        loss.backward()
        self.optimizer.step()
        self.loss_avg_tracker.update(loss)
"""


def _line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


def _found(tmp: Path, more: str = "") -> dict[str, list[tuple[int, str, str]]]:
    root = tmp / "p"
    shutil.copytree(PROJECT, root)
    if more:
        with open(root / "sub.py", "a", encoding="utf-8") as f:
            f.write(more)
    found = lint_files([str(root / name) for name in ("base.py", "sub.py")], Settings.default())
    out: dict[str, list[tuple[int, str, str]]] = {"base.py": [], "sub.py": []}
    for d in found:
        if d.code != "GL000":
            out[Path(d.path).name].append((d.line, d.code, d.certainty.value))
    return out


BASE_KEEPS = _line_of((PROJECT / "base.py").read_text(encoding="utf-8"), "self.loss_avg_tracker.update(total_loss)  #")


def test_a_base_trainers_leak_is_reported_in_its_file_not_at_a_subclass_evaluation_call(tmp_path: Path) -> None:
    assert _found(tmp_path) == {"base.py": [(BASE_KEEPS, "GL008", "certain")], "sub.py": []}


def test_a_subclass_whose_own_step_keeps_the_graph_is_reported_at_its_own_call(tmp_path: Path) -> None:
    found = _found(tmp_path, OWN_STEP)
    sub = (tmp_path / "p" / "sub.py").read_text(encoding="utf-8")
    assert found["base.py"] == [(BASE_KEEPS, "GL008", "certain")]
    assert [(line, code) for line, code, _ in found["sub.py"]] == [(_line_of(sub, ".update(loss)"), "GL008")]
