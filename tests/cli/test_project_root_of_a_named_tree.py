"""The project root of a tree without a marker, named on the command line from outside it.

A tree with no `pyproject.toml`, `setup.py`, `setup.cfg` or `.git` (an unpacked archive) has no root of its
own. Run from inside, the directory gradlint runs from is the root. Run from elsewhere on the tree
(`gradlint /data/unpacked`), the directory named is the tree the user means: before, each file's own folder
was its project, so `bin/train.py` did not find `src/optim.py` beside it, and the result depended on the
directory gradlint was run from.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from gradcheck_lint.cache import file_key
from gradcheck_lint.cli import check
from gradcheck_lint.config import Settings
from gradcheck_lint.project.index import find_root
from support import unmarked_tree


def _codes(args: list[str]) -> list[str]:
    res = CliRunner().invoke(check, ["--no-cache", "--format", "json", *args], catch_exceptions=False)
    return sorted(d["code"] for d in json.loads(res.output))


@pytest.mark.parametrize(("clears", "expected"), [("self.opt.zero_grad()", []), ("pass", ["GL001"])])
def test_a_tree_named_from_outside_reads_as_when_run_inside(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                            clears: str, expected: list[str]) -> None:
    top = tmp_path / "unpacked"
    unmarked_tree(top, clears)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert _codes([str(top)]) == expected
    monkeypatch.chdir(top)
    assert _codes(["."]) == expected


def test_the_top_most_named_directory_or_working_directory_holding_the_file_is_the_root(tmp_path: Path) -> None:
    script = unmarked_tree(tmp_path / "t", "pass")
    top, bin_dir = str(tmp_path / "t"), str(tmp_path / "t" / "bin")
    elsewhere = str(tmp_path / "elsewhere")
    assert find_root(str(script), elsewhere) == bin_dir  # nothing named holds it: its own folder
    assert find_root(str(script), elsewhere, (bin_dir,)) == bin_dir
    assert find_root(str(script), elsewhere, (bin_dir, top)) == top
    assert find_root(str(script), top, (bin_dir,)) == top  # run from the top, naming `bin/`
    assert find_root(str(script), elsewhere, (elsewhere,)) == bin_dir  # a named directory not holding it
    marked = tmp_path / "m" / "bin"  # (folders not asked before: the markers found are kept per folder)
    marked.mkdir(parents=True)
    (marked / "pyproject.toml").write_text("")
    assert find_root(str(marked / "x.py"), elsewhere, (str(tmp_path / "m"),)) == str(marked)  # a marker comes first


def test_a_files_cache_key_holds_its_project_root(tmp_path: Path) -> None:
    script = unmarked_tree(tmp_path / "k", "pass")
    data = script.read_bytes()
    alone = Settings.default(root=str(tmp_path / "elsewhere"))
    named = dataclasses.replace(alone, trees=(str(tmp_path / "k"),))
    assert file_key(data, str(script), alone) != file_key(data, str(script), named)
    assert file_key(data, str(script), alone) == file_key(data, str(script), Settings.default(root=str(tmp_path / "x")))
