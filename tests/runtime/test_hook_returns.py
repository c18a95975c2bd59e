"""GL003/GL010's runtime anchor when a framework's loop ran the backward (`runtime/hook_returns.py`): the
`return` of the user's overridden automatic hook (Lightning's `training_step`), found from an object on the
stack, where the static side anchors it."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch")
if importlib.util.find_spec("lightning") is None:
    pytest.skip("lightning is not installed", allow_module_level=True)

from gradcheck_lint.runtime.hook_returns import hook_return

SOURCE = '''\
import lightning.pytorch as pl


class Lit(pl.LightningModule):
    def training_step(self, batch, batch_idx):
        loss = batch.sum()
        if batch_idx < 0:
            return None
        return loss / 4

    def loop(self, probe):
        return probe()


class Manual(Lit):
    def __init__(self):
        super().__init__()
        self.automatic_optimization = False


class Plain:
    def training_step(self, batch, batch_idx):
        return batch

    def loop(self, probe):
        return probe()
'''


@pytest.fixture()
def program(tmp_path: Path) -> dict[str, Any]:
    path = tmp_path / "lit_program.py"
    path.write_text(SOURCE, encoding="utf-8")
    namespace: dict[str, Any] = {"__name__": "lit_program"}
    exec(compile(SOURCE, str(path), "exec"), namespace)
    namespace["__file__"] = str(path)
    return namespace


def test_the_hook_of_a_module_on_the_stack_anchors_at_its_last_return(program: dict[str, Any]) -> None:
    site = program["Lit"]().loop(lambda: hook_return(sys._getframe(1)))
    assert site is not None and (site.path, site.line, site.col, site.text) == (program["__file__"], 9, 9, "return loss / 4")


@pytest.mark.parametrize("cls", ["Manual", "Plain"])
def test_no_anchor_under_manual_optimization_nor_for_a_class_of_no_framework(program: dict[str, Any], cls: str) -> None:
    assert program[cls]().loop(lambda: hook_return(sys._getframe(1))) is None
