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
    monkeypatch.setattr(interpreter, "WORK_BUDGET", 10)


def test_notice_names_the_file_and_what_was_left_out(small_budget: None) -> None:
    notices = [d for d in check_source(TWO, "two.py") if d.code == NOTICE_CODE]
    assert len(notices) == 1
    message = notices[0].message
    assert message.startswith("two.py was analysed only in part") and "10 interpretation steps" in message
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


def _wide(n: int, name: str = "train") -> str:
    """A loop whose `n` independent branches each write another model's gradients: 2**n paths through one
    iteration, more with what earlier iterations left in the models no step or clear reaches."""
    lines = [f"def {name}(flags, loader):"]
    lines += [f"    m{i} = torch.nn.Linear(4, 1)" for i in range(n)]
    lines += ["    opt = torch.optim.SGD(m0.parameters(), lr=0.1)", "    for x in loader:", "        opt.zero_grad()"]
    for i in range(n):
        lines += [f"        if flags[{i}]:", f"            m{i}(x).sum().backward()"]
    lines += ["        opt.step()", ""]
    return "\n".join(lines)


OVER_CAP = "import torch\n\n\n" + _wide(7)  # 128 paths through the loop's body
UNDER_CAP = "import torch\n\n\n" + _wide(4)  # 16, and under the cap with what the loop carries


def test_paths_dropped_at_the_cap_are_said() -> None:
    from gradcheck_lint.analysis.gradstate import STATE_CAP

    [notice] = [d for d in check_source(OVER_CAP, "wide.py") if d.code == NOTICE_CODE]
    message = notice.message
    assert message.startswith("wide.py was analysed only in part") and f"more than {STATE_CAP} path states" in message
    loop = OVER_CAP.splitlines().index("    for x in loader:") + 1
    assert "in `train` (line 4)" in message and f"at the loop at line {loop}" in message
    assert notice.severity is Severity.NOTE and notice.line == 1


def test_paths_under_the_cap_have_no_notice() -> None:
    assert not [d for d in check_source(UNDER_CAP, "wide.py") if d.code == NOTICE_CODE]


def test_cap_notice_names_each_function_once_in_code_order() -> None:
    text = "import torch\n\n\n" + _wide(7, "early") + "\n" + _wide(7, "late")
    [notice] = [d for d in check_source(text, "two.py") if d.code == NOTICE_CODE]
    message = notice.message
    assert message.count("`early`") == 1 and message.count("`late`") == 1
    assert message.index("`early`") < message.index("`late`")
    assert [d.message for d in check_source(text, "two.py") if d.code == NOTICE_CODE] == [message]  # the same each run


def test_cap_notice_in_every_output_format() -> None:
    found = check_source(OVER_CAP, "wide.py")
    text = render_report(found, 1, ReportOptions(format="text"))
    assert "wide.py:1:1: GL099 wide.py was analysed only in part: paths were left out" in text
    data = json.loads(render_report(found, 1, ReportOptions(format="json")))
    assert [(d["code"], d["severity"]) for d in data if d["code"] == "GL099"] == [("GL099", "note")]
    sarif = json.loads(render_report(found, 1, ReportOptions(format="sarif")))
    notes = sarif["runs"][0]["invocations"][0]["toolExecutionNotifications"]
    assert [n["level"] for n in notes] == ["note"] and "paths were left out" in notes[0]["message"]["text"]
    github = render_report(found, 1, ReportOptions(format="github"))
    assert "::notice file=wide.py" in github and "paths were left out" in github


def test_cap_notice_alone_exits_zero(tmp_path: Path) -> None:
    (tmp_path / "wide.py").write_text(OVER_CAP)
    res = CliRunner().invoke(check_command, ["--jobs", "1", "--no-cache", "--isolated", str(tmp_path / "wide.py")])
    assert "GL099" in res.output and "paths were left out" in res.output and "All checks passed" in res.output
    assert res.exit_code == 0
