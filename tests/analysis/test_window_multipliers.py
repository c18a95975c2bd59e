"""A loss, or one term of a summed loss, multiplied by the window size where it should be divided
(`l_g_total += weighted_loss_val * self.accum_iters` next to terms divided by it): the divisor seen on the
other terms no longer hides it (`Value.multipliers`), and GL003 names the factor. A factor that is not the
window (a loss weight), a multiplication for logging after the backward, or every term divided stays
silent."""

from __future__ import annotations

import textwrap
from pathlib import Path

from gradcheck_lint import check_source
from gradcheck_lint.config import Settings
from gradcheck_lint.runner import lint_files
from support import project_tree

TERMS = """\
    import torch
    from torch import nn

    net = nn.Linear(4, 4)
    opt = torch.optim.Adam(net.parameters())
    accum_iters = 4
    losses = [nn.L1Loss(), nn.MSELoss()]
    for i, (x, y) in enumerate(torch.randn(16, 2, 3, 4)):
        out = net(x)
        total = torch.zeros(())
        for loss in losses:
            value = loss(out, y)
            if isinstance(value, dict):
                for part in value.values():
                    total += part {dict_op} accum_iters
            else:
                total += value / accum_iters
        total.backward()
        if (i + 1) % accum_iters == 0:
            opt.step()
            opt.zero_grad()
"""


def _found(text: str) -> list[tuple[int, str, str]]:
    found = check_source(textwrap.dedent(text), "train.py", settings=Settings.default())
    return [(d.line, d.code, d.message) for d in found]


def test_a_term_multiplied_by_the_window_is_reported_at_the_backward() -> None:
    [(line, code, message)] = _found(TERMS.format(dict_op="*"))
    assert (line, code) == (18, "GL003")
    assert "is multiplied by `accum_iters`" in message


def test_every_term_divided_is_silent() -> None:
    assert _found(TERMS.format(dict_op="/")) == []


def test_a_weight_and_a_logged_product_are_no_window_factor() -> None:
    text = """\
        import torch
        from torch import nn

        net = nn.Linear(4, 4)
        opt = torch.optim.Adam(net.parameters())
        accum_iters, weight, logged = 4, 0.5, 0.0
        for i, (x, y) in enumerate(torch.randn(16, 2, 3, 4)):
            loss = nn.functional.l1_loss(net(x), y) * weight / accum_iters
            loss.backward()
            logged += (loss * accum_iters).item()
            if (i + 1) % accum_iters == 0:
                opt.step()
                opt.zero_grad()
    """
    assert _found(text) == []


MODEL = """\
    import torch
    from torch import nn


    class SRModel:
        def __init__(self, opt):
            self.net_g = nn.Linear(4, 4)
            self.optimizer_g = torch.optim.Adam(self.net_g.parameters())
            self.accum_iters = opt["accum_iter"]
            self.losses = [nn.L1Loss(), nn.MSELoss()]

        def optimize_parameters(self, lq, gt, apply_gradient):
            output = self.net_g(lq)
            l_g_total = torch.zeros(())
            for loss in self.losses:
                l_g_loss = loss(output, gt)
                if isinstance(l_g_loss, dict):
                    for sub in l_g_loss.values():
                        l_g_total += sub {dict_op} self.accum_iters
                else:
                    l_g_total += l_g_loss / self.accum_iters
            l_g_total.backward()
            if apply_gradient:
                self.optimizer_g.step()
                self.optimizer_g.zero_grad()
"""
TRAIN = """\
    import torch
    from pkg import build_model


    def main(opt):
        model = build_model(opt)
        accum = 0
        for lq, gt in torch.randn(32, 2, 3, 4):
            accum += 1
            if accum >= model.accum_iters:
                accum = 0
                apply_gradient = True
            else:
                apply_gradient = False
            model.optimize_parameters(lq, gt, apply_gradient)
"""
REGISTRY = "from .model import SRModel\n\n\ndef build_model(opt):\n    return REGISTRY[opt['type']](opt)\n"


def _project(tmp_path: Path, dict_op: str) -> list[tuple[str, int, str]]:
    files = {"pkg/__init__.py": REGISTRY, "pkg/model.py": MODEL.format(dict_op=dict_op), "train.py": TRAIN}
    root = project_tree(tmp_path, files)
    found = lint_files([str(p) for p in sorted(root.rglob("*.py"))], Settings.default())
    return [(Path(d.path).name, d.line, d.code) for d in found]


def test_a_step_method_multiplying_a_term_by_its_callers_window(tmp_path: Path) -> None:
    assert _project(tmp_path, "*") == [("model.py", 22, "GL003")]


def test_the_step_method_dividing_every_term_is_silent(tmp_path: Path) -> None:
    assert _project(tmp_path, "/") == []
