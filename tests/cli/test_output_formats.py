"""Output formats of the real `gradlint` command: SARIF, GitHub annotations, statistics, source, colour, files."""

from __future__ import annotations

import json
import os
import pty
import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import jsonschema
import pytest
from click.testing import CliRunner, Result
from hypothesis import example, given
from hypothesis import strategies as st

from gradcheck_lint import check_paths
from gradcheck_lint.cli import check
from gradcheck_lint.diagnostics import Diagnostic, Severity, Span
from gradcheck_lint.output import write_atomic
from gradcheck_lint.registry import all_rules, catalogue
from gradcheck_lint.render import ReportOptions, render_report
from gradcheck_lint.render.github import escape_data, escape_property, render_github
from gradcheck_lint.rule_docs import read_doc
from support import BUGGY, ROOT, TESTS

SCHEMA = json.loads((TESTS / "data" / "sarif-schema-2.1.0.json").read_text(encoding="utf-8"))
# FormatChecker() knows "uri" and "uri-reference" (through rfc3986-validator), which Draft 4's own does not.
VALIDATOR = jsonschema.Draft4Validator(SCHEMA, format_checker=jsonschema.FormatChecker())
ANSI = "\x1b["

CLEAN = BUGGY.replace("    opt.step()\n", "    opt.step()\n    opt.zero_grad()\n")


def gradlint(*args: str, env: dict[str, str] | None = None) -> Result:
    """Run the `gradlint` command in-process, from the current directory."""
    return CliRunner().invoke(check, list(args), env=env, catch_exceptions=False)


def gradlint_executable() -> str:
    """The installed console script of the environment running the tests."""
    beside = Path(sys.executable).with_name("gradlint")
    found = str(beside) if beside.exists() else shutil.which("gradlint")
    assert found, "the gradlint console script is not installed"
    return found


def sarif_errors(log: Any) -> list[str]:
    return [f"{list(e.absolute_path)}: {e.message}" for e in VALIDATOR.iter_errors(log)]


@pytest.fixture(scope="module")
def fixtures_json() -> list[dict[str, Any]]:
    """The `--format json` report of `fixtures/`, run once from the repository root (it is slow)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(ROOT)
        return json_report("fixtures")


def json_report(*paths: str) -> list[dict[str, Any]]:
    res = gradlint("--format", "json", *paths)
    data: list[dict[str, Any]] = json.loads(res.stdout)
    return data


# --- SARIF ----------------------------------------------------------------------------------------

def test_schema_validation_checks_uris_and_structure() -> None:
    """Negative control: the validator used below really rejects bad logs, URIs included."""
    assert {"uri", "uri-reference"} <= set(VALIDATOR.format_checker.checkers)
    def log(uri: str) -> dict[str, Any]:
        return {"version": "2.1.0", "runs": [{"tool": {"driver": {"name": "x"}}, "results": [{
            "message": {"text": "m"},
            "locations": [{"physicalLocation": {"artifactLocation": {"uri": uri}}}],
        }]}]}

    assert sarif_errors(log("a%20b.py")) == []
    assert sarif_errors(log("a b.py"))
    assert sarif_errors(log("tr\u00e4ning.py"))
    assert sarif_errors({"runs": []})  # no version


def test_sarif_on_fixtures_validates_and_matches_json(
    monkeypatch: pytest.MonkeyPatch, fixtures_json: list[dict[str, Any]]
) -> None:
    monkeypatch.chdir(ROOT)
    res = gradlint("--format", "sarif", "fixtures")
    assert res.exit_code == 1, res.output
    log = json.loads(res.stdout)
    assert sarif_errors(log) == []
    assert log["$schema"] == SCHEMA["id"] and log["version"] == "2.1.0"
    (run,) = log["runs"]
    driver = run["tool"]["driver"]
    assert driver["name"] == "gradlint"
    rules = driver["rules"]
    assert [r["id"] for r in rules] == ["GL000", *catalogue()]
    for rule in rules[1:]:
        cls = catalogue()[rule["id"]]
        assert rule["name"] == cls.name and rule["shortDescription"]["text"] == cls.summary
        assert rule["help"]["markdown"] == read_doc(rule["id"]).strip()  # type: ignore[union-attr]
        assert rule["fullDescription"]["text"].startswith("Reports ")
        assert rule["defaultConfiguration"]["level"] == cls.severity.value
    assert rules[0]["name"] == "unanalysable-file" and rules[0]["help"]["text"]
    assert run["originalUriBaseIds"]["%SRCROOT%"]["uri"] == ROOT.as_uri() + "/"
    # a GL099 notice (an analysis cut at the path cap) is a notification of the run, not a result
    notices = [d for d in fixtures_json if d["code"] == "GL099"]
    assert run["invocations"][0]["executionSuccessful"] is True
    assert len(run["invocations"][0].get("toolExecutionNotifications", [])) == len(notices)
    want = sorted((d["path"], d["line"], d["column"], d["end_line"], d["end_column"], d["code"]) for d in fixtures_json
                  if d["code"] != "GL099")
    got = []
    for result in run["results"]:
        assert rules[result["ruleIndex"]]["id"] == result["ruleId"]
        (loc,) = result["locations"]
        artifact, region = loc["physicalLocation"]["artifactLocation"], loc["physicalLocation"]["region"]
        assert artifact["uriBaseId"] == "%SRCROOT%" and not artifact["uri"].startswith(("/", "file:"))
        got.append((unquote(artifact["uri"]), region["startLine"], region["startColumn"], region["endLine"],
                    region["endColumn"], result["ruleId"]))
        assert "\nhelp: " in result["message"]["text"]
    assert sorted(got) == want
    fingerprints = [r["partialFingerprints"]["gradlint/v1"] for r in run["results"]]
    assert len(set(fingerprints)) == len(fingerprints)


def test_sarif_with_gl000_and_awkward_paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "my scripts").mkdir()
    (tmp_path / "my scripts" / "tränïng 1.py").write_text(BUGGY, encoding="utf-8")
    (tmp_path / "50%,a:b#c?.py").write_text(BUGGY, encoding="utf-8")
    (tmp_path / "broken.py").write_text("for x in y\n    loss.backward()\n    opt.step()\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    res = gradlint("--format", "sarif", ".")
    assert res.exit_code == 2, res.output
    log = json.loads(res.stdout)
    assert sarif_errors(log) == []
    (run,) = log["runs"]
    (invocation,) = run["invocations"]
    assert invocation["executionSuccessful"] is False
    (note,) = invocation["toolExecutionNotifications"]
    assert note["associatedRule"] == {"id": "GL000", "index": 0} and "syntax error" in note["message"]["text"]
    uris = {r["ruleId"] + " " + r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in run["results"]}
    assert uris == {"GL000 broken.py", "GL001 my%20scripts/tr%C3%A4n%C3%AFng%201.py", "GL001 50%25%2Ca%3Ab%23c%3F.py"}
    base = run["originalUriBaseIds"]["%SRCROOT%"]["uri"]
    for result in run["results"]:
        uri = result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
        assert (Path(unquote(base.removeprefix("file://"))) / unquote(uri)).is_file()


def test_sarif_with_no_findings_is_a_valid_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "train.py").write_text(CLEAN)
    monkeypatch.chdir(tmp_path)
    res = gradlint("--format", "sarif", "train.py")
    assert res.exit_code == 0, res.output
    log = json.loads(res.stdout)
    assert sarif_errors(log) == []
    assert log["runs"][0]["results"] == []
    assert log["runs"][0]["invocations"] == [{"executionSuccessful": True}]


def test_sarif_path_outside_the_root_is_an_absolute_file_uri(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "a b.py").write_text(BUGGY)
    (tmp_path / "cwd").mkdir()
    monkeypatch.chdir(tmp_path / "cwd")
    log = json.loads(gradlint("--format", "sarif", str(tmp_path / "elsewhere")).stdout)
    assert sarif_errors(log) == []
    artifact = log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]
    assert artifact == {"uri": (tmp_path / "elsewhere" / "a b.py").as_uri()}
    assert "%20" in artifact["uri"]


def _fingerprints(path: str) -> list[tuple[str, int, str]]:
    log = json.loads(gradlint("--format", "sarif", path).stdout)
    return [
        (r["ruleId"], r["locations"][0]["physicalLocation"]["region"]["startLine"], r["partialFingerprints"]["gradlint/v1"])
        for r in log["runs"][0]["results"]
    ]


def test_fingerprints_survive_lines_inserted_above(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Two loops with the same bug on identical lines: the fingerprints still differ.
    source = BUGGY + BUGGY.split("\n", 3)[3]
    monkeypatch.chdir(tmp_path)
    Path("train.py").write_text(source)
    before = _fingerprints("train.py")
    assert [(code, line) for code, line, _ in before] == [("GL001", 6), ("GL001", 9)]
    assert len({fp for *_, fp in before}) == 2
    Path("train.py").write_text('"""Training."""\n\n# the model\n' + source)
    after = _fingerprints("train.py")
    assert [line for _, line, _ in after] == [9, 12]
    assert [fp for *_, fp in after] == [fp for *_, fp in before]
    # Changing the reported line does change its fingerprint.
    Path("train.py").write_text(source.replace("    opt.step()\n", "    opt.step()  # update\n", 1))
    changed = _fingerprints("train.py")
    assert changed[0][2] != before[0][2]


# --- GitHub workflow commands ---------------------------------------------------------------------

def _unescape(text: str, prop: bool) -> str:
    """Undo escaping the way the Actions runner does (ActionCommand.Unescape*)."""
    text = text.replace("%0D", "\r").replace("%0A", "\n")
    if prop:
        text = text.replace("%3A", ":").replace("%2C", ",")
    return text.replace("%25", "%")


_COMMAND = re.compile(r"^::(?P<command>\w+) (?P<props>[^:]*)::(?P<data>.*)$")


def _parse_command(line: str) -> tuple[str, dict[str, str], str]:
    m = _COMMAND.match(line)
    assert m, line
    props = dict(item.split("=", 1) for item in m["props"].split(","))
    return m["command"], {k: _unescape(v, True) for k, v in props.items()}, _unescape(m["data"], False)


@given(st.text())
@example("100%25, a:b %0A\r\n%%3A")
def test_github_escaping_round_trips(text: str) -> None:
    prop, data = escape_property(text), escape_data(text)
    assert not set(prop) & set(",:\r\n") and not set(data) & set("\r\n")
    assert _unescape(prop, True) == text and _unescape(data, False) == text


def test_github_commands_parse_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Paths with `%`, `,`, `:` and a newline reach both the `file` property and (GL000) the message.
    (tmp_path / "50%,a:b.py").write_text(BUGGY)
    (tmp_path / "odd\nname,x:y%3A.py").mkdir()  # a directory named like a file: GL000
    monkeypatch.chdir(tmp_path)
    res = gradlint("--format", "github", ".")
    assert res.exit_code == 2, res.output
    expected = json_report(".")
    lines = res.stdout.splitlines()
    assert len(lines) == len(expected) == 2
    for line, d in zip(lines, expected):
        command, props, message = _parse_command(line)
        assert command == "error"
        assert props == {
            "file": os.path.relpath(d["path"]).replace(os.sep, "/"), "line": str(d["line"]), "col": str(d["column"]),
            "endLine": str(d["end_line"]), "endColumn": str(d["end_column"]), "title": f"{d['code']} ({d['name']})",
        }
        assert message == f"{d['message']}\nhelp: {d['help']}"
    assert {_parse_command(line)[1]["file"] for line in lines} == {"50%,a:b.py", "odd\nname,x:y%3A.py"}


def test_github_warning_severity_and_no_findings(tmp_path: Path) -> None:
    d = Diagnostic(str(tmp_path / "t.py"), Span(3, 1, 3, 5), "GL001", "missing-zero-grad", "m: 1, 2", "h",
                   severity=Severity.WARNING)
    (line,) = render_github([d], str(tmp_path)).splitlines()
    assert line == "::warning file=t.py,line=3,col=1,endLine=3,endColumn=5,title=GL001 (missing-zero-grad)::m: 1, 2%0Ahelp: h"
    assert render_github([], str(tmp_path)) == ""


# --- statistics -----------------------------------------------------------------------------------

def test_statistics_equal_json_counts_on_fixtures(
    monkeypatch: pytest.MonkeyPatch, fixtures_json: list[dict[str, Any]]
) -> None:
    monkeypatch.chdir(ROOT)
    res = gradlint("--statistics", "fixtures")
    assert res.exit_code == 1
    rows = [line.split("\t") for line in res.stdout.splitlines()]
    counts = Counter(d["code"] for d in fixtures_json)
    assert set(counts) - {"GL099"} == set(all_rules())  # the fixtures exercise every rule (and one path-cap notice)
    assert {code.strip(): int(n) for n, code, _ in rows} == counts
    assert [int(n) for n, _, _ in rows] == sorted(counts.values(), reverse=True)
    assert all(name == all_rules()[code.strip()].name for _, code, name in rows if code.strip() != "GL099")


def test_statistics_with_gl000_and_with_nothing(tmp_path: Path) -> None:
    (tmp_path / "bad.py").write_text("for x in y\n    loss.backward()\n    opt.step()\n")
    (tmp_path / "a.py").write_text(BUGGY)
    (tmp_path / "b.py").write_text(BUGGY)
    res = gradlint("--statistics", str(tmp_path))
    assert res.exit_code == 2
    assert res.stdout.splitlines() == ["2\tGL001\tmissing-zero-grad", "1\tGL000\tunanalysable-file"]
    stats = json.loads(gradlint("--statistics", "--format", "json", str(tmp_path)).stdout)
    assert stats == [{"code": "GL001", "name": "missing-zero-grad", "count": 2},
                     {"code": "GL000", "name": "unanalysable-file", "count": 1}]
    (tmp_path / "bad.py").unlink()
    (tmp_path / "a.py").write_text(CLEAN)
    (tmp_path / "b.py").write_text(CLEAN)
    res = gradlint("--statistics", str(tmp_path))
    assert res.exit_code == 0 and res.stdout == "All checks passed (2 files checked).\n"


@pytest.mark.parametrize("args", [["--statistics", "--format", "sarif"], ["--statistics", "--format", "github"],
                                  ["--show-source", "--format", "json"], ["--show-source", "--statistics"]])
def test_options_that_do_not_combine_are_usage_errors(args: list[str], tmp_path: Path) -> None:
    (tmp_path / "t.py").write_text(BUGGY)
    res = CliRunner().invoke(check, [*args, str(tmp_path / "t.py")])
    assert res.exit_code == 2 and "works" in res.output


# --- show-source ----------------------------------------------------------------------------------

TABS_AND_CJK = """\
import torch
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for x in torch.randn(8, 4).split(2):
\tmodel(x).sum().backward()
\tprint("训练"); opt.step()
"""


def _snippets(output: str) -> list[list[str]]:
    """The gutter lines that follow each diagnostic line."""
    blocks: list[list[str]] = []
    for line in output.splitlines():
        if re.match(r"^\S+:\d+:\d+: GL\d{3} ", line):
            blocks.append([])
        elif blocks and re.match(r"^ *\d* \|", line):
            blocks[-1].append(line)
    return blocks


def test_show_source_carets_under_tabs_and_wide_characters(tmp_path: Path) -> None:
    (tmp_path / "cjk.py").write_text(TABS_AND_CJK, encoding="utf-8")
    (tmp_path / "tabs.py").write_text(BUGGY.replace("    ", "\t"))
    res = gradlint("--show-source", str(tmp_path / "cjk.py"), str(tmp_path / "tabs.py"))
    assert res.exit_code == 1
    cjk, tabs = _snippets(res.stdout)
    # `\t` is 4 cells and each of 训练 is 2, so `opt.step()` starts at cell 4 + 7 + 4 + 4 = 19.
    assert cjk == ["  |", '6 |     print("训练"); opt.step()', "  | " + " " * 19 + "^" * 10]
    assert tabs == ["  |", "6 |     opt.step()", "  |     ^^^^^^^^^^"]
    lines = res.stdout.splitlines()
    assert lines[0].startswith(f"{tmp_path / 'cjk.py'}:6:15: GL001 ")
    assert lines[4].startswith("    help: ")


def test_show_source_never_echoes_control_characters(tmp_path: Path) -> None:
    # An escape sequence and a right-to-left override inside a string literal of the reported line.
    (tmp_path / "t.py").write_text(TABS_AND_CJK.replace("训练", "\x1b[2J\u202e"), encoding="utf-8")
    res = gradlint("--show-source", "--color", "never", str(tmp_path / "t.py"))
    assert "\x1b" not in res.stdout and "\u202e" not in res.stdout
    assert _snippets(res.stdout) == [["  |", '6 |     print("\ufffd[2J\ufffd"); opt.step()', "  | " + " " * 20 + "^" * 10]]


def test_show_source_multiline_span_underlines_the_first_line(tmp_path: Path) -> None:
    (tmp_path / "t.py").write_text(BUGGY.replace("    opt.step()\n", "    opt.step(\n    )\n"))
    assert json_report(str(tmp_path / "t.py"))[0]["end_line"] == 7
    res = gradlint("--show-source", str(tmp_path / "t.py"))
    assert _snippets(res.stdout) == [["  |", "6 |     opt.step(", "  |     ^^^^^^^^^"]]


def test_show_source_survives_a_file_that_changed_or_vanished(tmp_path: Path) -> None:
    files = {name: tmp_path / f"{name}.py" for name in ("gone", "short", "narrow", "binary", "same")}
    for f in files.values():
        f.write_text(BUGGY)
    diagnostics, n = check_paths([str(f) for f in files.values()])
    assert len(diagnostics) == 5
    files["gone"].unlink()
    files["short"].write_text("import torch\n")
    files["narrow"].write_text(BUGGY.replace("    opt.step()", "x"))
    files["binary"].write_bytes(b"\xff\xfe\x00garbage")
    out = render_report(diagnostics, n, ReportOptions(show_source=True))
    assert out.count(": GL001 ") == 5 and out.count("    help: ") == 5
    # Sorted by path: binary, gone, narrow, same, short; only the unchanged file still has its line.
    assert [len(s) for s in _snippets(out)] == [0, 0, 0, 3, 0]


# --- colour ---------------------------------------------------------------------------------------

def _plain_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    env["TERM"] = "xterm-256color"
    env.update(extra)
    return env


def _run_in_pty(args: list[str], env: dict[str, str]) -> tuple[int, str]:
    """Run the real `gradlint` with a pseudo-terminal as stdout and stderr; return status and output."""
    master, slave = pty.openpty()
    try:
        proc = subprocess.Popen([gradlint_executable(), *args], stdin=subprocess.DEVNULL, stdout=slave,
                                stderr=slave, env=env, close_fds=True)
    finally:
        os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: the child closed its side
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    return proc.wait(timeout=120), b"".join(chunks).decode("utf-8")


@pytest.mark.skipif(sys.platform == "win32", reason="pseudo-terminals are POSIX")
def test_auto_colour_on_a_terminal_and_not_into_a_pipe(tmp_path: Path) -> None:
    f = tmp_path / "train.py"
    f.write_text(BUGGY)
    status, tty_out = _run_in_pty([str(f), "--show-source"], _plain_env())
    assert status == 1
    assert f"{ANSI}31;1mGL001{ANSI}0m" in tty_out
    piped = subprocess.run([gradlint_executable(), str(f), "--show-source"], capture_output=True, text=True,
                           env=_plain_env(), timeout=120)
    assert piped.returncode == 1 and "GL001" in piped.stdout
    assert ANSI not in piped.stdout and ANSI not in piped.stderr
    # The colours are the only difference (the terminal turns "\n" into "\r\n").
    assert re.sub(r"\x1b\[[0-9;]*m", "", tty_out).replace("\r\n", "\n") == piped.stdout


@pytest.mark.skipif(sys.platform == "win32", reason="pseudo-terminals are POSIX")
def test_no_color_and_never_win_on_a_terminal(tmp_path: Path) -> None:
    f = tmp_path / "train.py"
    f.write_text(BUGGY)
    for args, env in (([str(f)], _plain_env(NO_COLOR="1")), ([str(f), "--color", "never"], _plain_env()),
                      ([str(f)], _plain_env(TERM="dumb"))):
        status, out = _run_in_pty(args, env)
        assert status == 1 and "GL001" in out and ANSI not in out, (args, env.get("NO_COLOR"))


def test_force_color_and_always_colour_a_pipe_but_never_machine_formats(tmp_path: Path) -> None:
    f = tmp_path / "train.py"
    f.write_text(BUGGY)
    env = {"NO_COLOR": "", "FORCE_COLOR": ""}
    assert ANSI not in gradlint(str(f), env=env).stdout
    assert ANSI in gradlint(str(f), env={**env, "FORCE_COLOR": "1"}).stdout
    assert ANSI in gradlint("--color", "always", str(f), env={**env, "NO_COLOR": "1"}).stdout
    assert ANSI not in gradlint(str(f), env={"NO_COLOR": "1", "FORCE_COLOR": "1"}).stdout
    assert ANSI in gradlint("--statistics", str(f), env={**env, "FORCE_COLOR": "1"}).stdout
    for fmt in ("json", "sarif", "github"):
        assert ANSI not in gradlint("--format", fmt, "--color", "always", str(f)).stdout


# --- output file ----------------------------------------------------------------------------------

def test_output_file_gets_the_report_and_stdout_stays_empty(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "train.py").write_text(BUGGY)
    monkeypatch.chdir(tmp_path)
    Path("gradlint.sarif").write_text("old report")
    res = gradlint("--format", "sarif", "-o", "gradlint.sarif", "train.py")
    assert res.exit_code == 1 and res.stdout == ""
    assert Path("gradlint.sarif").read_text(encoding="utf-8") == gradlint("--format", "sarif", "train.py").stdout
    assert sorted(os.listdir()) == ["gradlint.sarif", "train.py"]  # no temporary file left behind
    res = gradlint("--output-file", "report.txt", "--color", "auto", "train.py", env={"FORCE_COLOR": ""})
    assert res.exit_code == 1 and Path("report.txt").read_text().startswith("train.py:6:5: GL001 ")
    Path("train.py").write_text(CLEAN)
    res = gradlint("--format", "github", "-o", "annotations.txt", "train.py")
    assert res.exit_code == 0 and Path("annotations.txt").read_text() == ""  # no findings, no commands


def test_output_file_that_cannot_be_written_exits_two(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(BUGGY)
    res = CliRunner().invoke(check, ["-o", str(tmp_path / "missing" / "out.sarif"), str(tmp_path / "train.py")])
    assert res.exit_code == 2
    assert "cannot write the report" in res.output and "Traceback" not in res.output


def test_write_atomic_keeps_the_old_file_when_the_write_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "report.sarif"
    target.write_text("old")

    def refuse(src: str, dst: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(OSError):
        write_atomic(str(target), "new")
    assert target.read_text() == "old"
    assert os.listdir(tmp_path) == ["report.sarif"]
    monkeypatch.undo()
    write_atomic(str(target), "new")
    assert target.read_text() == "new" and os.listdir(tmp_path) == ["report.sarif"]


# --- the README says what the command does -------------------------------------------------------

README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_readme_show_source_example_is_real_output(monkeypatch: pytest.MonkeyPatch) -> None:
    (block,) = re.findall(r"```console\n\$ gradlint (.*?)\n(.*?)```", README, re.S)
    args, shown = block
    monkeypatch.chdir(ROOT)
    assert gradlint(*args.split()).stdout == shown


def test_readme_workflow_commands_behave_as_described(tmp_path: Path) -> None:
    """The `run: gradlint ...` steps of the workflows: SARIF step passes on findings, github step fails."""
    steps = re.findall(r"^\s*- run: (gradlint .*)$", "\n".join(re.findall(r"```yaml\n(.*?)```", README, re.S)), re.M)
    sarif_step, github_step = steps
    assert "--format sarif -o gradlint.sarif ." in sarif_step and "--format github ." in github_step
    (tmp_path / "train.py").write_text(BUGGY)
    env = {**os.environ, "PATH": f"{Path(gradlint_executable()).parent}{os.pathsep}{os.environ.get('PATH', '')}"}

    def step(command: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["bash", "-e", "-c", command], cwd=tmp_path, env=env, capture_output=True, text=True,
                              timeout=120)

    res = step(sarif_step)
    assert res.returncode == 0, res.stderr
    assert sarif_errors(json.loads((tmp_path / "gradlint.sarif").read_text(encoding="utf-8"))) == []
    res = step(github_step)
    assert res.returncode == 1 and res.stdout.startswith("::error file=train.py,line=6,col=5,")
    # the checkout of gradcheck_lint the workflow installs from (its fixtures hold bugs) is left out
    (tmp_path / ".gradcheck_lint" / "fixtures").mkdir(parents=True)
    (tmp_path / ".gradcheck_lint" / "fixtures" / "bug.py").write_text(BUGGY)
    assert ".gradcheck_lint" not in step(github_step).stdout
    (tmp_path / "broken.py").write_text("for x in y\n    loss.backward()\n    opt.step()\n")
    assert step(sarif_step).returncode != 0  # a file that could not be analysed fails the step...
    log = json.loads((tmp_path / "gradlint.sarif").read_text(encoding="utf-8"))
    assert log["runs"][0]["invocations"][0]["executionSuccessful"] is False  # ...and the log is still there to upload
