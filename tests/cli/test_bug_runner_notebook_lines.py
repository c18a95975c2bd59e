"""The real-bug benchmark labels a notebook's bug by a line of its JSON text; the linter reports cell and
line. The runner reads the notebook as cells (not its raw JSON as Python) and puts each finding back on
the JSON line of its cell's line: lockbox 4's one notebook bug was scored missed for want of this."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

from gradcheck_lint.config import Settings

ROOT = Path(__file__).resolve().parents[2]


def _runner():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("realbugs_run", ROOT / "benchmarks" / "realbugs" / "run.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["realbugs_run"] = module
    spec.loader.exec_module(module)
    return module


CELLS = [
    "import torch\nmodel = torch.nn.Linear(4, 1)\n",
    "optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n",
    "for epoch in range(3):\n    optimizer.zero_grad()\n    for x in loader:\n        loss = model(x).mean()\n        loss.backward()\n        optimizer.step()\n",
]


def _notebook() -> str:
    cells = [{"cell_type": "markdown", "metadata": {}, "source": ["# title\n", "text"]}]
    for c in CELLS:
        lines = c.splitlines(keepends=True)
        cells.append({"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": lines})
    return json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}, indent=1) + "\n"


def test_a_notebook_finding_lands_on_the_json_line_of_its_cell_line(tmp_path: Path) -> None:
    runner = _runner()
    text = _notebook()
    step_json_line = next(i for i, line in enumerate(text.splitlines(), 1) if "optimizer.step()" in line)
    found = runner._lint(text, tmp_path, "0" * 40, "nb/train.ipynb", Settings.default(), False)
    assert [(d.code, d.span.line) for d in found] == [("GL001", step_json_line)]


def test_cell_lines_map_to_json_lines_in_order() -> None:
    runner = _runner()
    text = _notebook()
    places = runner.notebook_json_lines(text)
    lines = text.splitlines()
    for (cell, k), n in places.items():
        if cell >= 2:  # the code cells: cell 2 is CELLS[0]
            assert json.loads(lines[n - 1].rstrip(",")) == CELLS[cell - 2].splitlines(keepends=True)[k - 1]
    assert len([p for p in places if p[0] >= 2]) == sum(len(c.splitlines()) for c in CELLS)


def test_a_manifest_with_no_bug_is_an_empty_table(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    """A miner who verified no bug writes only a header comment: the runner prints an empty table, not a KeyError."""
    manifest = tmp_path / "bugs.toml"
    manifest.write_text("# mined, none verified\n")
    assert _runner().main(["bugs", "--manifest", str(manifest)]) == 0
    assert "all        0" in capsys.readouterr().out
