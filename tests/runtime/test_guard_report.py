"""The guard's report: clears named where they are called, call expressions quoted (never the line),
one line per code and place with its step count, LBFGS closures, and findings merged from others."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402

from gradcheck_lint.runtime import guard  # noqa: E402
from gradcheck_lint.runtime.guard import disable, enable  # noqa: E402
from gradcheck_lint.runtime.report import Finding, Report  # noqa: E402

HERE = str(Path(__file__).resolve())
STEPS = 4


def _line_of(marker: str) -> int:
    """The line of this file holding `marker` in a comment (the clears below are marked)."""
    lines = Path(HERE).read_text().splitlines()
    return next(i + 1 for i, text in enumerate(lines) if text.rstrip().endswith(f"# {marker}"))


def train_set_to_none(model: nn.Module, opt: torch.optim.Optimizer) -> None:
    for x in torch.randn(STEPS, 3, 4):
        model(x).pow(2).mean().backward()
        opt.zero_grad(set_to_none=True)  # clear:set_to_none
        opt.step()


def train_model_zero_grad(model: nn.Module, opt: torch.optim.Optimizer) -> None:
    for x in torch.randn(STEPS, 3, 4):
        model(x).pow(2).mean().backward()
        model.zero_grad()  # clear:model
        opt.step()


def train_grad_none(model: nn.Module, opt: torch.optim.Optimizer) -> None:
    for x in torch.randn(STEPS, 3, 4):
        model(x).pow(2).mean().backward()
        for p in model.parameters():
            p.grad = None  # clear:none
        opt.step()


def train_grad_zero_(model: nn.Module, opt: torch.optim.Optimizer) -> None:
    for x in torch.randn(STEPS, 3, 4):
        model(x).pow(2).mean().backward()
        for p in model.parameters():
            p.grad.zero_()  # clear:zero_
        opt.step()


CLEARS = [(train_set_to_none, "clear:set_to_none", "opt.zero_grad(set_to_none=True)"),
          (train_model_zero_grad, "clear:model", "model.zero_grad()"),
          (train_grad_none, "clear:none", "p.grad = None"),
          (train_grad_zero_, "clear:zero_", "p.grad.zero_()")]


@pytest.mark.parametrize("process_wide", [False, True], ids=["guard", "process-wide"])
@pytest.mark.parametrize("train,marker,text", CLEARS, ids=[c[1] for c in CLEARS])
def test_clear_named_at_its_call_on_every_step(train, marker: str, text: str, process_wide: bool) -> None:  # type: ignore[no-untyped-def]
    torch.manual_seed(0)
    model = nn.Linear(4, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    if process_wide:  # the optimizer is met at its first step, after the first clear
        enable(mode="record")
        try:
            train(model, opt)
        finally:
            report = disable()
    else:
        with guard(model, opt, mode="record") as g:
            train(model, opt)
        report = g.report()
    assert len(report) == 1, str(report)
    (finding,) = report  # one line, however many steps: the first one included
    assert (finding.code, finding.path, finding.line) == ("GL002", HERE, _line_of(marker))
    assert finding.steps == STEPS and finding.first_step == 1 and finding.optimizer == "opt"
    assert finding.message.startswith(f"`{text}` clears the gradients that `model(x).pow(2).mean().backward()` at line ")
    assert "`opt.step()`" in finding.message


def test_quotes_call_expressions_not_lines_or_comments() -> None:
    torch.manual_seed(0)
    model = nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with guard(model, opt, mode="record") as g:
        for x in torch.randn(5, 2, 4):
            model(x).sum().backward(); opt.step()  # noqa: E702  a comment that must not be quoted
    (finding,) = g.report()
    assert finding.code == "GL001" and finding.steps == 4 and finding.first_step == 2
    assert finding.message.startswith("`opt.step()` applies gradients that `model(x).sum().backward()` at line")
    assert "nothing clears `opt`'s gradients" in finding.message and "comment" not in finding.message
    line = _line_of("noqa: E702  a comment that must not be quoted")
    assert finding.line == line
    col = Path(HERE).read_text().splitlines()[line - 1].index("opt.step()") + 1
    assert finding.col == col


def test_report_text_and_summary() -> None:
    torch.manual_seed(0)
    model = nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with guard(model, opt, mode="record") as g:
        for x in torch.randn(3, 2, 4):
            model(x).sum().backward()
            opt.step()
    report = g.report()
    assert isinstance(report, Report) and report.codes == {"GL001"}
    lines = str(report).splitlines()
    assert len(lines) == 2
    assert lines[0].startswith(f"{os.path.relpath(HERE)}:") and lines[0].endswith("[2 steps, first at step 2 of `opt`]")
    assert lines[1] == "gradlint guard: 1 problem found (GL001)."
    assert str(Report()) == "gradlint guard: the gradient contract held on every step."


def test_findings_of_other_monitors_merge_into_the_report() -> None:
    g = guard(mode="record")
    other = Finding("GL008", "loss-graph-kept-alive", "train.py", 7, 5, "message", "help")
    g.add_finding(other, step=("opt", 1))
    g.add_finding(other, step=("opt", 1))  # the same step again: counted once
    merged = g.add_finding(other, step=("opt", 2))
    assert merged.steps == 2 and merged.first_step == 1
    assert list(g.report()) == [merged]


def _lbfgs(clears: bool) -> Report:
    torch.manual_seed(0)
    model = nn.Linear(3, 1)
    x, y = torch.randn(16, 3), torch.randn(16, 1)
    opt = torch.optim.LBFGS(model.parameters(), lr=0.5, max_iter=4)

    def closure() -> torch.Tensor:
        if clears:
            opt.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        return loss

    with guard(model, opt, mode="record") as g:
        for _ in range(3):
            opt.step(closure)
    return g.report()


def test_lbfgs_closure_checked_on_each_evaluation() -> None:
    assert len(_lbfgs(clears=True)) == 0
    (finding,) = _lbfgs(clears=False)
    # a second evaluation of one L-BFGS step found the first one's gradients: worded for the closure
    assert finding.code == "GL001" and finding.message.startswith("`opt.step(closure)` evaluates its closure again")
    assert "inside the closure, before `loss.backward()`" in finding.help
    assert finding.steps > 1


def test_record_mode_prints_the_report_at_exit(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(
        """
        import torch
        model = torch.nn.Linear(3, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for _ in range(5):
            model(torch.randn(2, 3)).sum().backward()
            opt.step()
        """
    ))
    env = {**os.environ, "GRADLINT_GUARD": "record"}
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    lines = [line for line in out.stderr.splitlines() if line.startswith(str(script))]
    assert len(lines) == 1 and " GL001 " in lines[0] and lines[0].endswith("[4 steps, first at step 2 of `opt`]"), out.stderr
    assert "gradlint guard: 1 problem found (GL001)." in out.stderr


def test_a_clear_not_found_in_the_source_is_not_given_a_wrong_name() -> None:
    """A clear through a function the source lookup cannot resolve: anchored at the step, said plainly."""
    torch.manual_seed(0)
    model = nn.Linear(4, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    hidden = {"clear": lambda: setattr(model.weight, "grad", None) or setattr(model.bias, "grad", None)}
    enable(mode="record")
    try:
        for x in torch.randn(3, 3, 4):
            model(x).pow(2).mean().backward()
            hidden["clear"]()
            opt.step()
    finally:
        report = disable()
    (finding,) = report
    assert finding.code == "GL002" and finding.steps == 3
    assert finding.message.startswith("The gradients that `model(x).pow(2).mean().backward()` at line ")
    assert "could not find in the source" in finding.message and "`opt.step()` clears" not in finding.message
