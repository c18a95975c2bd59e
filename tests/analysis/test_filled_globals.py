"""A module global that a setup function fills through `global` and a getter hands out holds what the fills
assign (`analysis/filled_globals.py`). Lockbox 17's justgrpo GL003 was missed so: `dist.get_accelerator()`
returned a global that `init()` of utils/distributed.py sets to a plain `Accelerator()` (no window, it divides
by nothing), taken for an Accelerator out of sight that "may well divide"."""

from __future__ import annotations

from pathlib import Path

import pytest

from gradcheck_lint.engine import analyse_text
from support import project_tree

DISTRIBUTED = """\
    from accelerate import Accelerator

    _ACCELERATOR = None


    def init():
        global _ACCELERATOR
        _ACCELERATOR = Accelerator({window})


    def get_accelerator():
        return _ACCELERATOR
"""

TRAIN = """\
    import torch
    from torch import nn
    import utils.distributed as dist


    def train(loader, grad_accumulation=8):
        {init}
        model = nn.Linear(4, 1)
        optimizer = torch.optim.AdamW(model.parameters())
        accelerator = dist.get_accelerator()
        model, optimizer = accelerator.prepare(model, optimizer)
        for step in range(100):
            optimizer.zero_grad(set_to_none=True)
            for accum_idx in range(grad_accumulation):
                x = next(loader)
                loss = model(x).mean()
                accelerator.backward(loss)
            optimizer.step()
"""


def _codes(root: Path) -> set[str]:
    path = root / "train.py"
    return {d.code for d in analyse_text(path.read_text(), str(path)).diagnostics}


@pytest.mark.parametrize("init", ["dist.init()", "pass"])
def test_accelerator_of_a_getter_filled_elsewhere_divides_by_nothing(tmp_path: Path, init: str) -> None:
    """Filled by `init()` in sight or not: the only object the global can hold divides by no window."""
    root = project_tree(tmp_path, {"utils/__init__.py": "", "utils/distributed.py": DISTRIBUTED.format(window=""),
                                   "train.py": TRAIN.format(init=init)})
    assert "GL003" in _codes(root)


def test_accelerator_filled_with_a_window_divides(tmp_path: Path) -> None:
    root = project_tree(tmp_path, {"utils/__init__.py": "",
                                   "utils/distributed.py": DISTRIBUTED.format(window="gradient_accumulation_steps=8"),
                                   "train.py": TRAIN.format(init="dist.init()")})
    assert "GL003" not in _codes(root)


def test_a_fill_reading_its_functions_locals_leaves_them_unknown(tmp_path: Path) -> None:
    """`_ACCELERATOR = Accelerator(gradient_accumulation_steps=steps)` with `steps` a parameter of `init`: the
    window is not known, and a module-level `steps = 1` of the same name is not what it reads."""
    distributed = DISTRIBUTED.replace("def init():", "steps = 1\n\n\ndef init(steps):").format(
        window="gradient_accumulation_steps=steps")
    root = project_tree(tmp_path, {"utils/__init__.py": "", "utils/distributed.py": distributed,
                                   "train.py": TRAIN.format(init="pass")})
    assert "GL003" not in _codes(root)
