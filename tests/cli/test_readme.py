"""The README's runnable examples run, and say what the README says."""

from __future__ import annotations

import contextlib
import io
import re

import pytest

from support import ROOT

pytest.importorskip("torch")


def _blocks() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    return [b for b in re.findall(r"```python\n(.*?)```", text, re.S) if "from gradcheck_lint.runtime import" in b]


@pytest.mark.parametrize("block", _blocks(), ids=lambda b: b.splitlines()[2][:40])
def test_readme_runtime_example(block: str) -> None:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(block, "README.md", "exec"), {})  # noqa: S102 - our own documentation
    if "verify_accumulation" in block:
        assert out.getvalue().splitlines()[0] == "unscaled-loss GL003"


def test_readme_has_both_runtime_examples() -> None:
    assert len(_blocks()) == 2
