"""Jupyter notebooks: cells analysed as one program, IPython syntax set aside, findings placed in their cell."""

from __future__ import annotations

import json
import pickle
import random
import re
import subprocess
import sys
from pathlib import Path

import pytest

from gradcheck_lint import Diagnostic, check_file
from gradcheck_lint.notebooks import Cell, cell_to_python, check_notebook
from support import FIXTURES, ROOT, load_notebook_fixtures

SETUP = """\
import torch
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
data = torch.randn(8, 4).split(2)
"""
# GL001 on line 4 of the cell: nothing clears the gradients.
BUGGY_LOOP = """\
for x in data:
    loss = model(x).sum()
    loss.backward()
    opt.step()
"""
CLEAN_LOOP = BUGGY_LOOP.replace("    opt.step()\n", "    opt.step()\n    opt.zero_grad()\n")


def notebook(*cells: str | tuple[str, str], language: str = "python") -> str:
    """Return nbformat 4 JSON; a plain string is a code cell, a pair is (cell_type, source)."""
    out = []
    for cell in cells:
        kind, source = cell if isinstance(cell, tuple) else ("code", cell)
        lines = source.splitlines(keepends=True)
        entry = {"cell_type": kind, "metadata": {}, "source": lines}
        if kind == "code":
            entry.update(execution_count=None, outputs=[])
        out.append(entry)
    meta = {"kernelspec": {"name": language, "language": language, "display_name": language}}
    return json.dumps({"cells": out, "metadata": meta, "nbformat": 4, "nbformat_minor": 5})


def found(text: str) -> list[tuple[int | None, int, str]]:
    return [(d.cell, d.line, d.code) for d in check_notebook(text, "nb.ipynb")]


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "gradcheck_lint", *args], capture_output=True, text=True, timeout=120)


def test_model_in_one_cell_loop_in_another() -> None:
    nb = notebook(("markdown", "# Title\n"), SETUP, ("markdown", "text\n"), "print(1)\n", BUGGY_LOOP)
    assert found(nb) == [(5, 4, "GL001")]
    assert found(notebook(SETUP, CLEAN_LOOP)) == []


def test_messages_name_cell_lines_of_the_other_half() -> None:
    helper = "def train_step(x):\n    loss = model(x).sum()\n    loss.backward()\n"
    loop = "for x in data:\n    train_step(x)\n    opt.step()\n"
    [d] = check_notebook(notebook(SETUP, helper, loop), "nb.ipynb")
    assert (d.cell, d.line, d.column, d.code) == (3, 3, 5, "GL001")
    assert "`loss.backward()` at line 3 of cell 2" in d.message, d.message
    assert "at line 7" not in d.message


@pytest.mark.parametrize("magic", [
    "%time x", "%matplotlib inline", "!pip install torch", "files = !ls", "out = %sx ls", "x?", "??x", "?x",
    "x.attr??", "%%time", "!echo 'unbalanced", "/print x",
])
def test_magic_alone_in_a_loop_body_keeps_the_cell_parseable(magic: str) -> None:
    loop = f"for x in data:\n    if x is None:\n        {magic}\n    loss = model(x).sum()\n    loss.backward()\n    opt.step()\n"
    assert found(notebook(SETUP, loop)) == [(2, 6, "GL001")]


def test_magic_lines_become_pass_at_their_indentation() -> None:
    source = "%matplotlib inline\nfor i in range(2):\n    !nvidia-smi\n    files = !ls\n\tx?\n%time a \\\n  b\nprint(files)\n"
    code = cell_to_python(Cell(1, "code", source))
    assert code is not None
    assert code.lines == ("pass", "for i in range(2):", "    pass", "    pass", "\tpass", "pass", "", "print(files)")


@pytest.mark.parametrize("python", [
    "y = (1\n     % 2)\n",                       # `%` continuing an expression is the operator
    "s = '''\n%not a magic\n!nor shell\nx?\n'''\n",  # lines of a string
    "print('=%d' % 3)\nd = {'a': 1}\n",         # `=` inside a string, then a dict
    "a = b != c\nz = x if x else -1\n",
    "t = 1 + \\\n    2\n",
    "s = 'a\\\n%b'\n",                          # a one-quote string continued by an escaped newline
    "f(a=1,\n  b=2)  # what?\n",
])
def test_python_is_left_alone(python: str) -> None:
    code = cell_to_python(Cell(1, "code", python))
    assert code is not None
    assert code.text == python


def test_python_cell_magics_keep_their_body() -> None:
    for magic in ("%%time", "%%timeit -n 1", "%%capture out"):
        assert found(notebook(SETUP, f"{magic}\n{BUGGY_LOOP}")) == [(2, 5, "GL001")], magic


def test_other_cell_magics_skip_the_cell() -> None:
    bash = "%%bash\necho 'loss.backward() is not Python here' && ls\n"
    writefile = f"%%writefile other_script.py\n{SETUP}{BUGGY_LOOP}"
    assert found(notebook(SETUP, bash, writefile, CLEAN_LOOP)) == []
    # leading blank lines do not hide a cell magic
    assert found(notebook(SETUP, f"\n\n%%writefile x.py\n{BUGGY_LOOP}")) == []


def test_indented_cell_is_dedented_and_columns_point_into_the_cell() -> None:
    cell = "".join("  " + line for line in BUGGY_LOOP.splitlines(keepends=True))
    [d] = check_notebook(notebook(SETUP, cell), "nb.ipynb")
    assert (d.cell, d.line, d.column) == (2, 4, 7)
    assert cell.splitlines()[d.line - 1][d.column - 1:].startswith("opt.step()")


def test_top_level_await_is_accepted() -> None:
    assert found(notebook(SETUP, "import asyncio\nawait asyncio.sleep(0)\n", BUGGY_LOOP)) == [(3, 4, "GL001")]


def test_syntax_error_is_placed_in_its_cell() -> None:
    [d] = check_notebook(notebook(SETUP, "x = 1\nfor x in y\n    pass\n", BUGGY_LOOP), "nb.ipynb")
    assert (d.code, d.cell, d.line) == ("GL000", 2, 2)
    assert "syntax error" in d.message and "cell" in d.help


def test_notebooks_without_backward_are_never_parsed() -> None:
    broken = "def (:\n"  # not Python: parsing it would report GL000
    assert found(notebook(SETUP, broken)) == []
    assert found(notebook(SETUP, broken, ("markdown", "call `loss.backward()`\n"))) == []
    assert found(notebook(SETUP, broken, "%time loss.backward()\n")) == []
    assert [code for _c, _l, code in found(notebook(SETUP, broken, BUGGY_LOOP))] == ["GL000"]


def test_other_languages_are_not_checked() -> None:
    assert found(notebook("library(torch)\nloss$backward()\n", language="R")) == []


@pytest.mark.parametrize(("content", "reason"), [
    (b'{"cells": [', "is not valid JSON"),
    (b"", "is not valid JSON"),
    (b"[1, 2]", "its JSON is not an object"),
    (b'{"cells": []}', "no `nbformat`"),
    (b'{"nbformat": 3, "worksheets": []}', "format 3"),
    (b'{"nbformat": true, "cells": []}', "format True"),
    (b'{"nbformat": 4, "cells": {}}', "`cells` is not a list"),
    (b'{"nbformat": 4, "cells": [1]}', "cell 1 is not an object"),
    (b'{"nbformat": 4, "cells": [{"source": "x"}]}', "cell 1 has no `cell_type`"),
    (b'{"nbformat": 4, "cells": [{"cell_type": "code", "source": 7}]}', "source of cell 1 is not text"),
    (b'{"nbformat": 4, "cells": [{"cell_type": "code", "source": ["a", null]}]}', "source of cell 1 is not text"),
    (b"[" * 100_000 + b"]" * 100_000, "is not valid notebook JSON"),
    (b'{"nbformat": 4, "cells": [], "x": "\xff"}', "cannot be decoded as UTF-8"),
])
def test_invalid_notebook_gives_one_gl000(tmp_path: Path, content: bytes, reason: str) -> None:
    path = tmp_path / "bad.ipynb"
    path.write_bytes(content)
    [d] = check_file(str(path))
    assert d.code == "GL000" and reason in d.message, d.message
    assert d.cell is None


def test_cli_checks_notebooks_in_directories_and_survives_bad_ones(tmp_path: Path) -> None:
    (tmp_path / "good.ipynb").write_text(notebook(SETUP, BUGGY_LOOP))
    (tmp_path / "clean.ipynb").write_text(notebook(SETUP, CLEAN_LOOP))
    (tmp_path / "broken.ipynb").write_text('{"nbformat": 4, "cells": [')
    (tmp_path / "script.py").write_text(SETUP + BUGGY_LOOP)
    (tmp_path / "dir.ipynb").mkdir()
    (tmp_path / ".ipynb_checkpoints").mkdir()
    (tmp_path / ".ipynb_checkpoints" / "good-checkpoint.ipynb").write_text(notebook(SETUP, BUGGY_LOOP))
    res = run("--format", "json", str(tmp_path))
    assert res.returncode == 2, res.stderr
    got = sorted((Path(i["path"]).name, i["cell"], i["line"], i["code"]) for i in json.loads(res.stdout))
    assert got == [("broken.ipynb", None, 1, "GL000"), ("dir.ipynb", None, 1, "GL000"),
                   ("good.ipynb", 2, 4, "GL001"), ("script.py", None, 8, "GL001")]
    text = run(str(tmp_path / "good.ipynb"))
    assert text.returncode == 1
    assert text.stdout.startswith(f"{tmp_path / 'good.ipynb'}:cell 2:4:5: GL001 `opt.step()`"), text.stdout
    assert "Found 1 problem in 1 file checked." in text.stdout


def test_diagnostic_with_a_cell_is_a_plain_value() -> None:
    [d] = check_notebook(notebook(SETUP, BUGGY_LOOP), "nb.ipynb")
    assert pickle.loads(pickle.dumps(d)) == d
    assert d.to_json()["cell"] == 2
    assert json.loads(json.dumps(d.to_json()))["cell"] == 2
    assert isinstance(d, Diagnostic) and not hasattr(d, "__dict__")


def test_mutated_notebooks_never_crash() -> None:
    """Truncated JSON, deleted and swapped lines in cells, random bytes: diagnostics or GL000, never an exception."""
    rng = random.Random(5)
    fixtures = load_notebook_fixtures()
    assert fixtures
    for fixture in fixtures:
        text = fixture.path.read_text(encoding="utf-8")
        data = json.loads(text)
        variants = [text[: rng.randrange(len(text))] for _ in range(10)]
        for _ in range(30):
            mutated = json.loads(text)
            for cell in mutated["cells"]:
                lines = "".join(cell["source"]).split("\n")
                op = rng.choice(["delete", "swap", "insert", "indent"])
                i = rng.randrange(len(lines))
                if op == "delete":
                    del lines[i]
                elif op == "swap":
                    j = rng.randrange(len(lines))
                    lines[i], lines[j] = lines[j], lines[i]
                elif op == "insert":
                    lines.insert(i, rng.choice(["%%time", "!ls", "    %pwd", "x?", "'''", "(", "\\", "%%bash"]))
                else:
                    lines[i] = "   " + lines[i]
                cell["source"] = "\n".join(lines)
            variants.append(json.dumps(mutated))
        assert data["cells"]
        for variant in variants:
            for d in check_notebook(variant, fixture.id):
                assert d.cell is None or 1 <= d.cell <= len(data["cells"])
                assert d.line >= 1 and d.column >= 1


def test_fixture_notebooks_are_found_by_the_directory_walk() -> None:
    res = run("--format", "json", str(FIXTURES / "notebooks"))
    cells = {(Path(i["path"]).name, i["cell"]) for i in json.loads(res.stdout)}
    assert {name for name, _ in cells} == {f.path.name for f in load_notebook_fixtures() if f.expected}


def test_readme_notebook_example_is_real_output() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("### Jupyter notebooks", 1)[1]
    example = re.search(r"```\n(.*?)```", section, re.S)
    assert example is not None
    [line] = example.group(1).splitlines()
    assert line.endswith(": ...")
    path = line.split(":cell ")[0]
    res = subprocess.run([sys.executable, "-m", "gradcheck_lint", path], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert res.stdout.splitlines()[0].startswith(line[: -len("...")]), res.stdout
