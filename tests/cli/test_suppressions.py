"""Suppression comments through the real command: each form, statement scope, strings, GL000, GL100, GL101."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gradcheck_lint import check_source
from gradcheck_lint.suppressions import find_directives
from support import BUGGY, ROOT, UNSCALED, gradlint, invoke, write

STEP = "    opt.step()\n"  # line 6 of BUGGY, where GL001 is reported


def with_step(comment: str, text: str = BUGGY) -> str:
    """BUGGY with `comment` after its `opt.step()`."""
    return text.replace(STEP, f"    opt.step()  {comment}\n")


def lint(tmp_path: Path, source: str, *args: str, name: str = "train.py") -> list[tuple[int, str]]:
    """Run `gradlint --isolated --format json` on one file and return its (line, code) pairs."""
    write(tmp_path, {name: source})
    res = invoke("--isolated", "--format", "json", *args, str(tmp_path / name))
    assert res.exit_code in (0, 1), res.stderr
    return [(d["line"], d["code"]) for d in json.loads(res.stdout)]


def messages(tmp_path: Path, source: str, *args: str) -> list[dict[str, object]]:
    write(tmp_path, {"train.py": source})
    data: list[dict[str, object]] = json.loads(invoke("--isolated", "--format", "json", *args, str(tmp_path / "train.py")).stdout)
    return data


def test_unsuppressed_baseline(tmp_path: Path) -> None:
    assert lint(tmp_path, BUGGY) == [(6, "GL001")]


@pytest.mark.parametrize(
    "comment",
    [
        "# gradlint: ignore[GL001]",
        "# gradlint: ignore[GL003, GL001]",
        "# gradlint: ignore[ gl001 ]",
        "#gradlint:ignore[GL001]",
        "# gradlint: ignore[GL001] -- the learning rate accounts for it",
        "# noqa: GL001",
        "# noqa:GL001",
        "# NOQA: E501, GL001",
        "# noqa: E501,W291 GL001",
        "# type: ignore[attr-defined]  # noqa: GL001",
        "# noqa: E501  # gradlint: ignore[GL001]",
        "# noqa",                               # bare noqa: every code on the line, as in flake8 and ruff
        "# NOQA",
        "# noqa -- fine here",
    ],
)
def test_line_suppressions(tmp_path: Path, comment: str) -> None:
    assert lint(tmp_path, with_step(comment)) == []


@pytest.mark.parametrize(
    "comment",
    [
        "# gradlint: ignore[GL003]",            # another code
        "# noqa: E501",                         # other tools' codes only
        "# gradlint: ignored[GL001]",           # not the directive
        "# TODO gradlint: ignore[GL001]",       # the directive must start the comment part
        "# see `noqa: GL001`",                  # not a noqa comment
    ],
)
def test_comments_that_do_not_suppress(tmp_path: Path, comment: str) -> None:
    assert lint(tmp_path, with_step(comment)) == [(6, "GL001")]


def test_file_ignore_anywhere_in_the_file(tmp_path: Path) -> None:
    assert lint(tmp_path, "# gradlint: file-ignore[GL001]\n" + BUGGY) == []
    assert lint(tmp_path, BUGGY + "# gradlint: file-ignore[GL005, GL001]\n") == []
    assert lint(tmp_path, BUGGY + "# gradlint: file-ignore[GL003]\n") == [(6, "GL001")]
    assert lint(tmp_path, UNSCALED) == [(5, "GL003")]
    assert lint(tmp_path, UNSCALED.replace("import torch\n", "import torch  # gradlint: file-ignore[GL003]\n")) == []


def test_multi_line_statement_is_covered_from_its_first_line(tmp_path: Path) -> None:
    source = """\
import torch
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for i, x in enumerate(torch.randn(16, 4).split(2)):
    (model(x).sum() / 4).backward()
    if (  # COMMENT_IF
        i % 4 == 0  # COMMENT_TEST
    ):  # COMMENT_END
        opt.step()
        opt.zero_grad()
"""
    plain = source.replace("  # COMMENT_IF", "").replace("  # COMMENT_TEST", "").replace("  # COMMENT_END", "")
    assert lint(tmp_path, plain) == [(7, "GL004")]
    directive = "# gradlint: ignore[GL004]"
    on_first = plain.replace("    if (\n", f"    if (  {directive}\n")
    on_diagnostic = plain.replace("        i % 4 == 0\n", f"        i % 4 == 0  {directive}\n")
    on_last = plain.replace("    ):\n", f"    ):  {directive}\n")
    assert lint(tmp_path, on_first) == []
    assert lint(tmp_path, on_diagnostic) == []
    assert lint(tmp_path, on_last) == [(7, "GL004")]


def test_multi_line_call_and_no_leak_from_enclosing_statements(tmp_path: Path) -> None:
    source = """\
import torch
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for x in torch.randn(8, 4).split(2):
    model(x).sum().backward()
    results = [
        opt.step(),
    ]
"""
    assert lint(tmp_path, source) == [(7, "GL001")]
    assert lint(tmp_path, source.replace("results = [\n", "results = [  # noqa: GL001\n")) == []
    # a comment on the `for` line does not reach into the loop's body
    loop_comment = BUGGY.replace(".split(2):\n", ".split(2):  # gradlint: ignore[GL001]\n")
    assert lint(tmp_path, loop_comment) == [(6, "GL001")]


def test_text_in_string_literals_is_not_a_directive(tmp_path: Path) -> None:
    same_line = BUGGY.replace(STEP, '    opt.step(); note = "# gradlint: ignore[GL001]"\n')
    assert lint(tmp_path, same_line) == [(6, "GL001")]
    noqa_string = BUGGY.replace(STEP, "    opt.step(); note = '# noqa: GL001'\n")
    assert lint(tmp_path, noqa_string) == [(6, "GL001")]
    docstring = '"""Training.\n\n# gradlint: file-ignore[GL001]\n"""\n' + BUGGY
    assert lint(tmp_path, docstring) == [(10, "GL001")]
    f_string = BUGGY.replace(STEP, '    opt.step(); note = f"{1}  # gradlint: ignore[GL001]"\n')
    assert lint(tmp_path, f_string) == [(6, "GL001")]
    [only] = find_directives('x = """\n# gradlint: file-ignore[GL001]\n"""  # noqa: GL002\n')
    assert (only.kind, only.line, only.codes) == ("noqa", 3, ("GL002",))


def test_gl000_is_never_suppressed(tmp_path: Path) -> None:
    broken = "# gradlint: file-ignore[GL000]\nfor x in y  # gradlint: ignore[GL000]\n    loss.backward()\n    opt.step()\n"
    write(tmp_path, {"broken.py": broken})
    res = gradlint("--isolated", "--select", "ALL", "--format", "json", str(tmp_path / "broken.py"))
    assert res.returncode == 2
    assert [d["code"] for d in json.loads(res.stdout)] == ["GL000"]
    # in a file that parses, a GL000 suppression suppresses nothing, and GL100 says why
    found = messages(tmp_path, with_step("# gradlint: ignore[GL000, GL001]"), "--extend-select", "GL100")
    assert [(d["line"], d["code"]) for d in found] == [(6, "GL100")]
    assert "GL000 cannot be suppressed" in str(found[0]["message"])


# --- GL101 -----------------------------------------------------------------------------------------


def test_blanket_suppression_suppresses_nothing_and_is_reported(tmp_path: Path) -> None:
    found = messages(tmp_path, with_step("# gradlint: ignore"))
    assert [(d["line"], d["column"], d["code"]) for d in found] == [(6, 5, "GL001"), (6, 17, "GL101")]
    blanket = found[1]
    assert blanket["name"] == "blanket-suppression" and blanket["severity"] == "warning"
    assert "`# gradlint: ignore` names no code, so it suppresses nothing" in str(blanket["message"])
    assert "`# gradlint: ignore[GL001]`" in str(blanket["help"]) and "GL001 reported here" in str(blanket["help"])


def test_blanket_file_ignore_and_empty_lists(tmp_path: Path) -> None:
    found = messages(tmp_path, "# gradlint: file-ignore\n" + UNSCALED)
    assert [(d["line"], d["code"]) for d in found] == [(1, "GL101"), (6, "GL003")]
    assert "`# gradlint: file-ignore[GL003]`" in str(found[0]["help"])
    for comment in ("# gradlint: ignore[]", "# gradlint: ignore[GL001", "# gradlint: ignore because it is fine"):
        assert lint(tmp_path, with_step(comment)) == [(6, "GL001"), (6, "GL101")], comment


def test_blanket_in_a_file_without_training_code_shows_an_example_code(tmp_path: Path) -> None:
    found = messages(tmp_path, "import os  # gradlint: ignore\n")
    assert [(d["line"], d["code"]) for d in found] == [(1, "GL101")]
    assert "for example `# gradlint: ignore[GL001]`" in str(found[0]["help"])


def test_gl101_can_be_deselected(tmp_path: Path) -> None:
    assert lint(tmp_path, with_step("# gradlint: ignore"), "--ignore", "GL101") == [(6, "GL001")]
    assert lint(tmp_path, with_step("# gradlint: ignore"), "--ignore", "blanket-suppression") == [(6, "GL001")]


# --- GL100 -----------------------------------------------------------------------------------------

STALE = with_step("# gradlint: ignore[GL001]", BUGGY.replace(STEP, STEP + "    opt.zero_grad()\n"))


def test_unused_suppression_is_off_by_default(tmp_path: Path) -> None:
    assert lint(tmp_path, STALE) == []


@pytest.mark.parametrize("args", [("--select", "GL100"), ("--extend-select", "GL100"), ("--select", "ALL"),
                                  ("--select", "GL1"), ("--extend-select", "unused-suppression")])
def test_unused_suppression_when_selected(tmp_path: Path, args: tuple[str, ...]) -> None:
    assert lint(tmp_path, STALE, *args) == [(6, "GL100")]


def test_unused_suppression_from_the_config_file(tmp_path: Path) -> None:
    write(tmp_path, {"pyproject.toml": '[tool.gradlint]\nextend-select = ["GL100"]\n', "train.py": STALE})
    res = gradlint("--format", "json", "train.py", cwd=tmp_path)
    assert res.returncode == 1
    [d] = json.loads(res.stdout)
    assert (d["line"], d["column"], d["code"], d["name"]) == (6, 17, "GL100", "unused-suppression")
    assert d["message"] == ("`# gradlint: ignore[GL001]` suppresses nothing: no GL001 diagnostic is reported on this line "
                            "or on the statement it starts.")
    assert d["help"] == "remove the comment."


def test_unused_codes_inside_a_used_suppression(tmp_path: Path) -> None:
    found = messages(tmp_path, with_step("# gradlint: ignore[GL001, GL003, GL999]"), "--extend-select", "GL100")
    assert [(d["line"], d["code"]) for d in found] == [(6, "GL100")]
    assert found[0]["message"] == ("`GL003`, `GL999` in `# gradlint: ignore[GL001, GL003, GL999]` suppresses nothing: "
                                   "no GL003 diagnostic is reported on this line or on the statement it starts; "
                                   "`GL999` is not a gradlint code.")
    assert found[0]["help"] == "remove `GL003`, `GL999` from the comment."


def test_unused_noqa_code_keeps_other_tools_codes(tmp_path: Path) -> None:
    found = messages(tmp_path, with_step("# noqa: E501, GL003", STALE.replace("  # gradlint: ignore[GL001]", "")), "--select", "GL100")
    assert [(d["line"], d["code"]) for d in found] == [(6, "GL100")]
    assert str(found[0]["message"]).startswith("`GL003` in `# noqa: E501, GL003` suppresses nothing")
    assert found[0]["help"] == "remove `GL003` from the comment; keep the other tools' codes."
    # other tools' codes are never reported
    assert lint(tmp_path, STALE.replace("# gradlint: ignore[GL001]", "# noqa: E501"), "--select", "ALL") == []


def test_bare_noqa_is_reported_when_it_suppresses_nothing(tmp_path: Path) -> None:
    """A bare `# noqa` suppresses every code on its line (flake8, ruff); GL100 reports it where nothing is suppressed."""
    stale = STALE.replace("# gradlint: ignore[GL001]", "# noqa")
    found = messages(tmp_path, stale, "--select", "ALL")
    assert [(d["line"], d["code"]) for d in found] == [(6, "GL100")]
    assert str(found[0]["message"]).startswith("`# noqa` suppresses nothing")
    # where it suppresses a finding it is used, and the finding is gone
    assert lint(tmp_path, with_step("# noqa"), "--select", "ALL") == []


def test_unused_file_ignore(tmp_path: Path) -> None:
    found = messages(tmp_path, "# gradlint: file-ignore[GL005]\n" + BUGGY, "--extend-select", "GL100")
    assert [(d["line"], d["code"]) for d in found] == [(1, "GL100"), (7, "GL001")]
    assert "no GL005 diagnostic is reported in this file" in str(found[0]["message"])


def test_unused_is_judged_against_every_analysis_rule(tmp_path: Path) -> None:
    """A suppression of a deselected rule that still fires is needed, not noise; a stale one is reported."""
    needed = with_step("# gradlint: ignore[GL001]")
    assert lint(tmp_path, needed, "--select", "GL100") == []
    assert lint(tmp_path, needed, "--select", "GL003,GL100") == []
    assert lint(tmp_path, STALE, "--select", "GL003,GL100") == [(6, "GL100")]
    # the same through per-file-ignores: GL001 is left out for this file, and the suppression is still used
    write(tmp_path, {"pyproject.toml": '[tool.gradlint]\nextend-select = ["GL100"]\n[tool.gradlint.per-file-ignores]\n"train.py" = ["GL001"]\n',
                     "train.py": needed})
    assert invoke(str(tmp_path / "train.py")).exit_code == 0


def test_gl100_can_be_suppressed_and_is_never_itself_unused(tmp_path: Path) -> None:
    assert lint(tmp_path, "# gradlint: file-ignore[GL100]\n" + STALE, "--extend-select", "GL100") == []
    assert lint(tmp_path, "# gradlint: file-ignore[GL100]\n" + BUGGY, "--extend-select", "GL100") == [(7, "GL001")]


def test_suppressions_in_a_file_without_training_code(tmp_path: Path) -> None:
    assert lint(tmp_path, "import os  # noqa: GL001\n") == []
    assert lint(tmp_path, "import os  # noqa: GL001\n", "--extend-select", "GL100") == [(1, "GL100")]


def test_suppressions_in_crlf_and_bom_files(tmp_path: Path) -> None:
    source = with_step("# gradlint: ignore[GL001]")
    (tmp_path / "crlf.py").write_bytes(source.replace("\n", "\r\n").encode())
    (tmp_path / "bom.py").write_bytes(b"\xef\xbb\xbf" + source.encode())
    res = gradlint("--isolated", str(tmp_path))
    assert res.returncode == 0, res.stdout
    assert "All checks passed (2 files checked)" in res.stdout


def test_api_applies_suppressions() -> None:
    assert check_source(with_step("# gradlint: ignore[GL001]")) == []
    assert [d.code for d in check_source(with_step("# gradlint: ignore[GL001]"), codes=["GL001"])] == []
    assert [d.code for d in check_source(STALE, codes=["GL100"])] == ["GL100"]


def test_readme_suppression_snippet(tmp_path: Path) -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = re.search(r"^## Suppressing a diagnostic\s*$(.*?)(?=^## )", text, re.M | re.S)
    assert section
    [block] = re.findall(r"```python\n(.*?)```", section.group(1), re.S)
    assert lint(tmp_path, block, "--extend-select", "GL100") == []
    line = block[: block.index("# gradlint: ignore[GL003]")].count("\n") + 1
    assert lint(tmp_path, block.replace("  # gradlint: ignore[GL003]", "")) == [(line, "GL003")]


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(st.sampled_from([
    "# gradlint: ignore[GL001]", "# gradlint: ignore", "# gradlint: file-ignore[GL001, GL999]", "# noqa: GL001",
    "# noqa", "# noqa: E501, gl003", "# gradlint: ignore[", "# gradlint: ignore[]", "'# noqa: GL001'", "\"\"\"", "\\",
    "(", "# gradlint:file-ignore", "é", "\t",
]), max_size=4), st.integers(min_value=0, max_value=8))
def test_any_comment_soup_gives_diagnostics_never_an_exception(parts: list[str], line: int) -> None:
    lines = BUGGY.splitlines()
    lines[line % len(lines)] += "  " + " ".join(parts)
    text = "\n".join(lines) + "\n"
    find_directives(text)
    for d in check_source(text, codes=["GL001", "GL100", "GL101"]):
        assert d.code in ("GL000", "GL001", "GL100", "GL101"), d
