"""`scaler.unscale_(opt)` outside the accumulation gate its step sits under runs on the micro-batches that do not
step, and again on the next: PyTorch raises. That is a finding about the window (`messages.about_a_window`), as the
clip beside it is; where every run of the project has windows of one micro-batch, both rest on the assumption that
the window is larger (MachineDetector, lockbox 44: a clip and `unscale_` on every micro-batch,
`--gradient_accumulation_steps` of default 1 that nothing sets; the clip was settled, the `unscale_` stayed certain).
An `unscale_` repeated because the step is skipped by another test is not about the window and keeps its wording."""

from __future__ import annotations

from pathlib import Path

from gradcheck_lint import check_source
from gradcheck_lint.config import Settings
from gradcheck_lint.messages import EVERY_MICRO_BATCH, UNSCALED_TWICE, about_a_window
from gradcheck_lint.runner import lint_files
from support import project_tree

WINDOW = """\
import torch

model = torch.nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
scaler = torch.amp.GradScaler("cpu")
for step, x in enumerate(torch.randn(8, 2, 4)):
    loss = model(x).pow(2).mean() / ACCUM
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    if (step + 1) % ACCUM == 0:
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad()
"""
SKIPPED_UPDATE = """\
import torch

model = torch.nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
scaler = torch.amp.GradScaler("cpu")
for x in torch.randn(8, 2, 4):
    scaler.scale(model(x).pow(2).mean()).backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    scaler.unscale_(optimizer)
    if x.sum() > 0:  # a test of the batch, not a window's count
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad()
"""


def _unscale(source: str) -> list[str]:
    return [d.message for d in check_source(source) if d.code == "GL007" and d.line == 9]


def test_an_unscale_outside_the_window_gate_is_a_window_finding() -> None:
    [message] = _unscale(WINDOW.replace("ACCUM", "4"))
    assert UNSCALED_TWICE in message and EVERY_MICRO_BATCH in message
    assert "`(step + 1) % 4 == 0`" in message and about_a_window("GL007", message)


def test_an_unscale_repeated_after_a_step_another_test_skipped_is_not() -> None:
    [message] = _unscale(SKIPPED_UPDATE)
    assert UNSCALED_TWICE in message and not about_a_window("GL007", message)


def test_an_unscale_under_the_gate_is_no_finding() -> None:
    fixed = WINDOW.replace("ACCUM", "4").replace(
        "    scaler.unscale_(optimizer)\n    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n", "").replace(
        "        scaler.step(optimizer)\n",
        "        scaler.unscale_(optimizer)\n        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n"
        "        scaler.step(optimizer)\n")
    assert [d for d in check_source(fixed) if d.code == "GL007"] == []


def test_with_windows_of_one_on_every_run_both_are_possible(tmp_path: Path) -> None:
    script = WINDOW.replace("ACCUM", "args.accum").replace(
        "import torch\n", "import argparse\n\nimport torch\n\nparser = argparse.ArgumentParser()\n"
        "parser.add_argument('--accum', type=int, default=1)\nargs = parser.parse_args()\n", 1)
    root = project_tree(tmp_path / "p", {"train.py": script, "run.sh": "python train.py\n"})
    found = [(d.line, d.certainty.value) for d in lint_files([str(root / "train.py")], Settings.default())
             if d.code == "GL007"]
    assert found == [(15, "possible"), (16, "possible")]
    root = project_tree(tmp_path / "q", {"train.py": script, "run.sh": "python train.py --accum 4\n"})
    found = [(d.line, d.certainty.value) for d in lint_files([str(root / "train.py")], Settings.default())
             if d.code == "GL007"]
    assert found == [(15, "certain"), (16, "certain")]
