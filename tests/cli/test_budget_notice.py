"""When the analysis of a file stops at its work budget, where it stops is counted work, never time, and
the user is told which file and what was left out, in every output format."""

from __future__ import annotations

import json
import textwrap
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

import gradcheck_lint.analysis.interpreter as interpreter
from gradcheck_lint.api import check_source
from gradcheck_lint.cli import check as check_command
from gradcheck_lint.diagnostics import NOTICE_CODE, Severity
from gradcheck_lint.render import ReportOptions, render_report

TWO = textwrap.dedent("""
    import torch

    def first(model, opt, loader):
        for x in loader:
            opt.zero_grad()
            model(x).sum().backward()
            opt.step()

    def second(model, opt, loader):
        for x in loader:
            opt.zero_grad()
            model(x).sum().backward()
            opt.step()
""")


@pytest.fixture()
def small_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(interpreter, "WORK_BUDGET", 12)


def test_notice_names_the_file_and_what_was_left_out(small_budget: None) -> None:
    notices = [d for d in check_source(TWO, "two.py") if d.code == NOTICE_CODE]
    assert len(notices) == 1
    message = notices[0].message
    assert message.startswith("two.py was analysed only in part") and "12 interpretation steps" in message
    assert "in `first` (line 4)" in message and "not analysed: `second` (line 10)" in message
    assert notices[0].severity is Severity.NOTE


def test_a_full_analysis_has_no_notice() -> None:
    assert not [d for d in check_source(TWO, "two.py") if d.code == NOTICE_CODE]


def test_result_does_not_depend_on_the_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """A machine so loaded that every clock reading is a minute later than the last gives the same result."""
    many = "import torch\nmodel = torch.nn.Linear(4, 1)\n" + "".join(
        f"opt{i} = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        f"for x in torch.randn(8, 2, 4):\n    model(x).sum().backward()\n    opt{i}.step()\n" for i in range(80))
    normal = check_source(many, "many.py")
    assert len(normal) >= 80  # a missing clear per loop: findings to lose
    now = [0.0]

    def slow() -> float:
        now[0] += 60.0
        return now[0]

    monkeypatch.setattr(time, "perf_counter", slow)
    assert check_source(many, "many.py") == normal


def test_every_output_format_says_it(small_budget: None) -> None:
    found = check_source(TWO, "two.py")
    text = render_report(found, 1, ReportOptions(format="text"))
    assert "two.py:1:1: GL099 two.py was analysed only in part" in text and "All checks passed" in text
    data = json.loads(render_report(found, 1, ReportOptions(format="json")))
    assert [(d["code"], d["severity"]) for d in data] == [("GL099", "note")]
    sarif = json.loads(render_report(found, 1, ReportOptions(format="sarif")))
    run = sarif["runs"][0]
    assert run["results"] == [] and run["invocations"][0]["executionSuccessful"] is True
    [note] = run["invocations"][0]["toolExecutionNotifications"]
    assert note["level"] == "note" and "not analysed: `second`" in note["message"]["text"]
    github = render_report(found, 1, ReportOptions(format="github"))
    assert github.startswith("::notice file=two.py") and "analysed only in part" in github


def test_notice_alone_exits_zero_and_cannot_be_ignored(small_budget: None, tmp_path: Path) -> None:
    (tmp_path / "two.py").write_text(TWO)
    runner = CliRunner()
    res = runner.invoke(check_command, ["--jobs", "1", "--no-cache", "--isolated", str(tmp_path / "two.py")])
    assert res.exit_code == 0 and "GL099" in res.output
    res = runner.invoke(check_command, ["--ignore", "GL099", str(tmp_path / "two.py")])
    assert res.exit_code == 2 and "cannot be selected or ignored" in res.output
