"""Pathological input never crashes the analyzer: it answers with diagnostics or one GL000."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys

import pytest

from gradcheck_lint import check_file, check_paths, check_source
from gradcheck_lint.analysis import interpreter
from support import hang_guard

TRAIN = "import torch\nmodel = torch.nn.Linear(2, 1)\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n"


def codes(diags) -> list[str]:  # type: ignore[no-untyped-def]
    return [d.code for d in diags]


def test_ten_megabyte_files(tmp_path) -> None:  # type: ignore[no-untyped-def]
    plain = tmp_path / "data.py"
    plain.write_text("VALUES = [\n" + "    1.0,\n" * 1_250_000 + "]\n")
    assert plain.stat().st_size > 10_000_000
    assert check_file(str(plain)) == []
    training = tmp_path / "generated_train.py"
    training.write_text(TRAIN + "loss.backward()\nopt.step()\n" + "x = 1\n" * 600_000)
    diags = check_file(str(training))
    assert codes(diags) == ["GL000"] and "too large" in diags[0].message


# 5,000 levels of every kind of nesting Python's grammar allows without indentation.
DEEP = {
    "parentheses": "(" * 5000 + "x" + ")" * 5000,
    "brackets": "[" * 5000 + "]" * 5000,
    "binary operators": " + ".join(["x"] * 5000),
    "power": " ** ".join(["x"] * 5000),
    "unary minus": "-" * 5000 + "x",
    "not": "not " * 5000 + "x",
    "boolean operators": " and ".join(["x"] * 5000),
    "comparisons": " < ".join(["x"] * 5000),
    "attributes": "x" + ".a" * 5000,
    "method calls": "model(x)" + ".sum()" * 5000,
    "subscripts": "x" + "[0]" * 5000,
    "lambdas": "lambda: " * 5000 + "x",
    "conditional expressions": "x if c else " * 5000 + "x",
    "adjacent strings": " ".join(['"a"'] * 5000),
}
# What a GL000 for them may say: Python's own limits or the recursion limit.
DEPTH_LIMITS = ("nested too deeply", "too many nested parentheses")


@pytest.mark.parametrize("form", DEEP)
def test_five_thousand_deep_expressions(form: str) -> None:
    """Deep nesting inside a buggy loop: one GL000 naming a depth limit, or the loop's bug when it is flat enough."""
    src = TRAIN + f"for x in range(3):\n    y = {DEEP[form]}\n    model(x).sum().backward()\n    opt.step()\n"
    with hang_guard():
        diags = check_source(src)
    assert len(diags) == 1, diags
    if diags[0].code == "GL000":
        assert any(words in diags[0].message for words in DEPTH_LIMITS), diags[0].message
    else:
        assert (diags[0].code, diags[0].line) == ("GL001", 7)


def test_twenty_thousand_loops_in_one_file() -> None:
    """A bug in the first of 20,000 loops is still reported: the work budget stops the analysis, findings so
    far stand, and a notice says the file was analysed in part."""
    src = TRAIN + "for x in range(3):\n    model(x).sum().backward()\n    opt.step()\n"
    src += "".join(f"for x{i} in range(2):\n    model(x{i}).sum().backward()\n" for i in range(19_999))
    with hang_guard(600):  # the work budget plus parsing 40,000 lines on a loaded machine
        diags = check_source(src)
    assert [(d.code, d.line) for d in diags] == [("GL099", 1), ("GL001", 6)]
    assert "analysed only in part" in diags[0].message


def test_work_budget_also_stops_inside_one_statement(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """`f(` + 5,000 × `loss.backward(), ` + `)` ran for minutes: the budget was only checked between
    statements. Each backward pass is counted work too, so one statement cannot run past it."""
    monkeypatch.setattr(interpreter, "WORK_BUDGET", 100)
    src = TRAIN + "f(" + ", ".join(["model(x).sum().backward()"] * 300) + ")\n"
    interp = interpreter.Interpreter(ast.parse(src), src)
    interp.run()
    assert interp.exhausted and interp.work == 101 and len(interp.recorder.backwards) < 100
    assert interp.cut_short is not None and "in the module's top-level code" in interp.cut_short


def test_what_python_accepts_is_analysed() -> None:
    """3,500 adjacent string literals: Python accepts them (libcst's parser, which gradlint once used, did not)."""
    loop = "for x in range(3):\n    model(x).sum().backward()\n    opt.step()\n"
    strings = "x = (" + " ".join(['"a"'] * 3500) + ")\n"
    with hang_guard():
        assert [(d.code, d.line) for d in check_source(TRAIN + strings + loop)] == [("GL001", 7)]


@pytest.mark.parametrize(
    "data,reason",
    [
        (b"x = '\xff\xfe'  # backward\n", "cannot be decoded as utf-8 at byte 5"),  # not UTF-8, no cookie
        (b"\xff\xfel\x00o\x00s\x00s\x00.\x00b\x00a\x00c\x00k\x00w\x00a\x00r\x00d\x00", "cannot be decoded as utf-8"),  # UTF-16
        (b"# -*- coding: ascii -*-\nx = '\xe9'  # backward\n", "cannot be decoded as ascii at byte 29"),  # cookie that does not fit
        (b"# -*- coding: no-such-codec -*-\nloss.backward()\n", "declares an unusable encoding"),
        (b"\xef\xbb\xbf# -*- coding: latin-1 -*-\nloss.backward()\n", "declares an unusable encoding"),  # BOM says UTF-8
        (b"loss.backward()\x00\n", "contains NUL bytes"),
        (b"\x00" * 64, "contains NUL bytes"),
    ],
)
def test_undecodable_bytes(tmp_path, data: bytes, reason: str) -> None:  # type: ignore[no-untyped-def]
    f = tmp_path / "odd.py"
    f.write_bytes(data)
    diags = check_file(str(f))
    assert codes(diags) == ["GL000"] and reason in diags[0].message, diags


@pytest.mark.parametrize("data", [b"", b"\n\n# just a comment about backward\n", b"\xef\xbb\xbf", b"   \n\t\n\x0c\n", b"\r\n\r"])
def test_empty_and_blank_files_are_clean(tmp_path, data: bytes) -> None:  # type: ignore[no-untyped-def]
    f = tmp_path / "empty.py"
    f.write_bytes(data)
    assert check_file(str(f)) == []


@pytest.mark.parametrize(
    "statement",
    [
        "print 'hello'",
        "exec 'x = 1'",
        "x = `y`",
        "if x <> y:\n    pass",
        "x = 0777",
        "x = 10L",
        "x = ur'abc'",
        "raise ValueError, 'bad'",
        "try:\n    pass\nexcept Exception, e:\n    pass",
        "def f((a, b)):\n    pass",
        "for x in range(3):\n\tif x:\n        loss.backward()\n\topt.step()",  # tabs and spaces mixed, as Python 2 allowed
    ],
)
def test_python2_syntax(statement: str) -> None:
    """A Python 2 script: one GL000 at its Python 2 line, not a crash and not an analysis."""
    src = TRAIN + statement + "\nloss.backward()\nopt.step()\n"
    diags = check_source(src)
    assert codes(diags) == ["GL000"], diags
    assert "syntax error" in diags[0].message or "inconsistent use of tabs" in diags[0].message
    assert diags[0].line >= 4


def test_nul_in_text_given_to_check_source() -> None:
    diags = check_source(TRAIN + "loss.backward()\x00\nopt.step()\n")
    assert codes(diags) == ["GL000"]


def test_latin1_with_cookie_is_analysed(tmp_path) -> None:  # type: ignore[no-untyped-def]
    f = tmp_path / "latin.py"
    f.write_bytes(b"# -*- coding: latin-1 -*-\n" + TRAIN.encode() + b"s = '\xe9'\nfor x in range(3):\n    model(x).sum().backward()\n    opt.step()\n")
    assert codes(check_file(str(f))) == ["GL001"]


AS_ROOT = os.geteuid() == 0 if hasattr(os, "geteuid") else True


@pytest.mark.skipif(AS_ROOT, reason="root reads any file")
def test_unreadable_file(tmp_path) -> None:  # type: ignore[no-untyped-def]
    f = tmp_path / "secret.py"
    f.write_text("loss.backward()\n")
    f.chmod(0)
    diags = check_file(str(f))
    assert codes(diags) == ["GL000"] and "permission denied" in diags[0].message


@pytest.mark.skipif(AS_ROOT, reason="root lists any directory")
def test_unreadable_directory_is_reported_not_skipped(tmp_path) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "ok.py").write_text(TRAIN)
    locked = tmp_path / "locked"
    locked.mkdir()
    (locked / "train.py").write_text(TRAIN)
    locked.chmod(0)
    try:
        diags, files = check_paths([str(tmp_path)])
    finally:
        locked.chmod(0o755)
    assert files == 2 and [(os.path.basename(d.path), d.code) for d in diags] == [("locked", "GL000")]


def test_unlistable_directory_is_reported_not_skipped(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The same as root: a directory whose listing fails (simulated) gets a GL000, the rest is checked."""
    (tmp_path / "ok.py").write_text(TRAIN)
    locked = tmp_path / "locked"
    locked.mkdir()
    (locked / "train.py").write_text(TRAIN)
    real_scandir = os.scandir

    def scandir(path="."):  # type: ignore[no-untyped-def]
        if os.fspath(path) == str(locked):
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    diags, files = check_paths([str(tmp_path)])
    assert files == 2
    assert [(d.path, d.code) for d in diags] == [(str(locked), "GL000")]
    assert "cannot be listed: Permission denied" in diags[0].message


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes on this platform")
def test_named_pipe_is_not_read(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Opening a FIFO that nobody writes to blocks forever; it gets a GL000 at once instead."""
    fifo = tmp_path / "pipe.py"
    os.mkfifo(fifo)
    with hang_guard(60):
        diags = check_file(str(fifo))
    assert codes(diags) == ["GL000"] and "named pipe" in diags[0].message


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes on this platform")
def test_named_pipe_in_the_project_is_not_read_as_a_caller(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A finding settled with the files that call its file reads the project's `.py` files for their import lines:
    a FIFO among them (a test's leftover called `x.py`) blocked that read, and the run, for good."""
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    (tmp_path / "learner.py").write_text(
        "class Learner:\n"
        "    def __init__(self, model, optimizer):\n"
        "        self.model = model\n"
        "        self.optimizer = optimizer\n\n"
        "    def fit(self, batches):\n"
        "        for x, y in batches:\n"
        "            self.optimizer.zero_grad()\n"
        "            loss = (self.model(x) - y).pow(2).mean()\n"
        "            loss.backward()\n"
        "            self.model.head.zero_grad()\n"
        "            self.optimizer.step()\n")
    os.mkfifo(tmp_path / "pipe.py")
    with hang_guard(60):
        diags = check_file(str(tmp_path / "learner.py"))
    assert codes(diags) == ["GL002"] and diags[0].possible  # (a possible finding is settled with its callers)


def test_devices_directories_and_broken_links_as_files(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Unreadable paths that even root cannot read as Python source."""
    (tmp_path / "pkg.py").mkdir()
    os.symlink(tmp_path / "missing.py", tmp_path / "broken.py")
    os.symlink(tmp_path / "self.py", tmp_path / "self.py")
    expected = {"pkg.py": "is a directory", "broken.py": "broken symbolic link", "self.py": "cannot be read"}
    if os.path.exists("/dev/null"):
        os.symlink("/dev/null", tmp_path / "null.py")  # a device: /dev/zero in its place would be read forever
        expected["null.py"] = "character device"
    for name, words in expected.items():
        with hang_guard(60):
            diags = check_file(str(tmp_path / name))
        assert codes(diags) == ["GL000"] and words in diags[0].message, (name, diags)


def test_symlink_loops_in_directories(tmp_path) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "train.py").write_text(TRAIN)
    os.symlink(tmp_path, tmp_path / "a" / "loop")  # a directory loop: not followed
    os.symlink(tmp_path / "a" / "loop.py", tmp_path / "a" / "loop.py")  # a file that points at itself
    os.symlink(tmp_path / "a" / "pong.py", tmp_path / "a" / "ping.py")  # two files pointing at each other
    os.symlink(tmp_path / "a" / "ping.py", tmp_path / "a" / "pong.py")
    diags, files = check_paths([str(tmp_path)])
    assert files == 4
    assert [(os.path.basename(d.path), d.code) for d in diags] == [("loop.py", "GL000"), ("ping.py", "GL000"), ("pong.py", "GL000")]
    assert all("Too many levels of symbolic links" in d.message for d in diags)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes on this platform")
def test_cli_one_bad_file_among_good_ones(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A FIFO and a syntax error next to a buggy and a clean script: both scripts checked, exit 2."""
    buggy = TRAIN + "for x in range(3):\n    model(x).sum().backward()\n    opt.step()\n"
    (tmp_path / "buggy.py").write_text(buggy)
    (tmp_path / "clean.py").write_text(buggy + "    opt.zero_grad()\n")
    (tmp_path / "broken.py").write_text("for x in y\n    loss.backward()\n    opt.step()\n")
    os.mkfifo(tmp_path / "pipe.py")
    res = subprocess.run([sys.executable, "-m", "gradcheck_lint", str(tmp_path)], capture_output=True, text=True, timeout=300)
    found = sorted((os.path.basename(m.group(1)), m.group(2)) for m in re.finditer(r"^(.+?):\d+:\d+: (GL\d{3}) ", res.stdout, re.M))
    assert found == [("broken.py", "GL000"), ("buggy.py", "GL001"), ("pipe.py", "GL000")], res.stdout
    assert "Found 3 problems in 4 files checked." in res.stdout.splitlines()
    assert res.returncode == 2 and "Traceback" not in res.stderr


@pytest.mark.parametrize("newline", ["\r", "\r\n"])
def test_carriage_returns_count_as_python_counts_them(newline: str) -> None:
    """A bare `\\r` is a line break to CPython, even inside a string literal (found by fuzzing: an
    IndexError when the text was split on `\\n` alone)."""
    body = '"""a\rb"""\nfor x in range(3):\n    model(x).sum().backward()\n    opt.step()\n'
    expected = [(d.code, d.line, d.column) for d in check_source(TRAIN + body.replace("\r", "\n"))]
    assert expected == [("GL001", 8, 5)]
    assert [(d.code, d.line, d.column) for d in check_source((TRAIN + body).replace("\n", newline))] == expected
    reproducer = '""" \r\r"""\nfor epoch in():\n        ().backward()\n        if()%accum_steps==0:step()'
    assert "GL000" not in {d.code for d in check_source(reproducer)}
