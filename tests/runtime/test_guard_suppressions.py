"""The static side's suppression comments and `[tool.gradlint]` settings apply to the guard's report."""

from __future__ import annotations

import json
import runpy
import textwrap
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from gradcheck_lint.runtime import GradientContractError  # noqa: E402
from gradcheck_lint.runtime.guard import disable, enable  # noqa: E402
from support import invoke  # noqa: E402

# The learning rate, not the loss, is divided by the window: GL003 by the guard's measure (the step
# applies the sum); a user who means it says so on the backward line.
LR_DIVIDED = """\
import torch
from torch import nn

torch.manual_seed(0)
model = nn.Linear(8, 1)
accum = 4
opt = torch.optim.SGD(model.parameters(), lr=0.1 / accum)
data = [(torch.randn(4, 8), torch.randn(4, 1)) for _ in range(8)]
opt.zero_grad()
for i, (x, y) in enumerate(data):
    loss = nn.functional.mse_loss(model(x), y)
    loss.backward(){comment}
    if (i + 1) % accum == 0:
        opt.step()
        opt.zero_grad()
"""

MISSING_CLEAR = """\
import torch
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for x in torch.randn(8, 4).split(2):
    model(x).sum().backward()
    opt.step()
"""


# The running total keeps every step's graph (GL008, found by the monitors, not the ledger of steps).
KEPT_TOTAL = """\
import torch
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
total = 0
for x in torch.randn(40, 4).split(2):
    opt.zero_grad()
    loss = model(x).pow(2).mean()
    loss.backward()
    opt.step()
    total += loss{comment}
"""


def run_guarded(script: Path) -> list[tuple[str, int, str]]:
    """Run `script` under the process-wide guard (record mode); its findings as (file, line, code)."""
    enable(mode="record")
    try:
        runpy.run_path(str(script), run_name="__main__")
    finally:
        report = disable()
    return [(Path(f.path).name, f.line, f.code) for f in report]


def static(script: Path) -> list[tuple[str, int, str]]:
    """What `gradlint` reports on `script`, as (file, line, code)."""
    result = invoke(str(script), "--format", "json")
    return [(Path(d["path"]).name, d["line"], d["code"]) for d in json.loads(result.stdout)]


@pytest.mark.parametrize("comment", ["  # gradlint: ignore[GL003]", "  # noqa: GL003", "  # noqa: E501, GL003"])
def test_a_suppression_comment_silences_the_guard_as_it_silences_the_linter(tmp_path: Path, comment: str) -> None:
    plain, quiet = tmp_path / "plain.py", tmp_path / "quiet.py"
    plain.write_text(LR_DIVIDED.format(comment=""))
    quiet.write_text(LR_DIVIDED.format(comment=comment))
    assert run_guarded(plain) == [("plain.py", 12, "GL003")]  # the bug the comment is about
    assert run_guarded(quiet) == []
    assert static(quiet) == []


def test_a_suppression_comment_silences_a_monitors_finding(tmp_path: Path) -> None:
    # GL006-GL009 reach the report through the monitors' path, not the steps' ledger: the same comment applies
    plain, quiet = tmp_path / "kept.py", tmp_path / "kept_quiet.py"
    plain.write_text(KEPT_TOTAL.format(comment=""))
    quiet.write_text(KEPT_TOTAL.format(comment="  # gradlint: ignore[GL008]"))
    assert run_guarded(plain) == [("kept.py", 10, "GL008")]
    assert run_guarded(quiet) == []
    assert static(quiet) == []


def test_a_comment_naming_another_code_suppresses_nothing(tmp_path: Path) -> None:
    script = tmp_path / "other.py"
    script.write_text(LR_DIVIDED.format(comment="  # gradlint: ignore[GL001]"))
    assert run_guarded(script) == [("other.py", 12, "GL003")]


def test_a_file_wide_directive_applies_to_the_guard(tmp_path: Path) -> None:
    script = tmp_path / "filewide.py"
    script.write_text("# gradlint: file-ignore[GL001]\n" + MISSING_CLEAR)
    assert run_guarded(script) == []


def test_a_suppressed_finding_does_not_raise(tmp_path: Path) -> None:
    body = LR_DIVIDED.replace("opt.zero_grad()\nfor", "with guard(model, opt):\n  opt.zero_grad()\n  for")
    body = "from gradcheck_lint.runtime import guard\n" + textwrap.indent(body, "").replace("\n    ", "\n      ")
    raising = tmp_path / "raising.py"
    raising.write_text(body.format(comment=""))
    with pytest.raises(GradientContractError):
        runpy.run_path(str(raising), run_name="__main__")
    silent = tmp_path / "silent.py"
    silent.write_text(body.format(comment="  # gradlint: ignore[GL003]"))
    runpy.run_path(str(silent), run_name="__main__")  # raise mode: a suppressed finding stops nothing


def test_per_file_ignores_of_the_projects_pyproject_apply(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.gradlint]\nper-file-ignores = { "legacy/*.py" = ["GL001"] }\n')
    (tmp_path / "legacy").mkdir()
    old, new = tmp_path / "legacy" / "old_loop.py", tmp_path / "new_loop.py"
    old.write_text(MISSING_CLEAR)
    new.write_text(MISSING_CLEAR)
    assert run_guarded(old) == []
    assert static(old) == []
    assert run_guarded(new) == [("new_loop.py", 6, "GL001")]


def test_ignore_and_select_of_the_projects_pyproject_apply(tmp_path: Path) -> None:
    script = tmp_path / "loop.py"
    script.write_text(MISSING_CLEAR)
    assert run_guarded(script) == [("loop.py", 6, "GL001")]
    (tmp_path / "pyproject.toml").write_text('[tool.gradlint]\nignore = ["GL001"]\n')
    assert run_guarded(script) == []
    (tmp_path / "pyproject.toml").write_text('[tool.gradlint]\nselect = ["GL003"]\n')
    assert run_guarded(script) == []
    (tmp_path / "pyproject.toml").write_text('[tool.gradlint]\nselect = ["GL00"]\n')
    assert run_guarded(script) == [("loop.py", 6, "GL001")]


def test_a_broken_config_warns_and_the_guard_still_reports(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.gradlint]\nignore = "GL001"\n')  # not a list
    script = tmp_path / "loop.py"
    script.write_text(MISSING_CLEAR)
    with pytest.warns(UserWarning, match="not applied to the guard"):
        found = run_guarded(script)
    assert found == [("loop.py", 6, "GL001")]
