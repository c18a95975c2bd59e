"""A flag set under an accumulation gate carries the gate to where it is tested (`analysis/flags.py`): in
the same loop, or in a step method of another file that the loop hands it to (`optimize_parameters(batch,
apply_gradient)`). The step there is the window's step, with the gate's window size."""

from __future__ import annotations

import textwrap
from pathlib import Path

from gradcheck_lint import check_source
from gradcheck_lint.config import Settings
from gradcheck_lint.diagnostics import Diagnostic
from gradcheck_lint.runner import lint_files
from support import project_tree

LOOP = """\
    import torch
    model = torch.nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    accum_iters = 4
    current_accum_iter = 0
    for x in torch.randn(16, 2, 4):
        current_accum_iter += 1
        if current_accum_iter >= accum_iters:
            current_accum_iter = 0
            apply_gradient = True
        else:
            apply_gradient = False
        loss = model(x).pow(2).mean(){divided}
        loss.backward()
        if apply_gradient:
            opt.step()
            opt.zero_grad()
"""


def _found(text: str) -> list[tuple[int, str, str]]:
    return [(d.line, d.code, d.certainty.value) for d in check_source(textwrap.dedent(text), "train.py", settings=Settings.default())]


def test_a_flag_set_under_the_gate_makes_its_step_the_windows() -> None:
    # the step under `if apply_gradient:` ends a window of `accum_iters` micro-batches (before: a GL001, the
    # micro-batches that skip the step read as a path that forgot to clear)
    assert _found(LOOP.format(divided="")) == [(14, "GL003", "certain")]


def test_the_divided_twin_is_silent() -> None:
    assert _found(LOOP.format(divided=" / accum_iters")) == []


MODEL = """\
    import torch
    from torch import nn


    class GanModel:
        def __init__(self, accum_iters):
            self.net_g = nn.Linear(4, 4)
            self.net_d = nn.Linear(4, 1)
            self.optimizer_g = torch.optim.Adam(self.net_g.parameters())
            self.optimizer_d = torch.optim.Adam(self.net_d.parameters())
            self.accum_iters = accum_iters

        def optimize_parameters(self, lq, gt, apply_gradient):
            output = self.net_g(lq)
            l_g = torch.nn.functional.l1_loss(output, gt) / self.accum_iters
            l_g.backward()
            if apply_gradient:
                self.optimizer_g.step()
                self.optimizer_g.zero_grad()
            l_d = self.net_d(output.detach()).mean() - self.net_d(gt).mean(){divided}
            l_d.backward()
            if apply_gradient:
                self.optimizer_d.step()
                self.optimizer_d.zero_grad()
"""
TRAIN = """\
    import torch
    from pkg.model import GanModel


    def main():
        model = GanModel(4)
        accum = 0
        for lq, gt in torch.randn(32, 2, 3, 4):
            accum += 1
            if accum >= model.accum_iters:
                accum = 0
                {flag} = True
            else:
                {flag} = False
            model.optimize_parameters(lq, gt, {flag})


    if __name__ == "__main__":
        main()
"""


def _project(tmp_path: Path, divided: str, flag: str = "apply_gradient") -> list[Diagnostic]:
    root = project_tree(tmp_path, {"pkg/__init__.py": "", "pkg/model.py": MODEL.format(divided=divided),
                                   "train.py": TRAIN.format(flag=flag)})
    return lint_files([str(p) for p in sorted(root.rglob("*.py"))], Settings.default())


def test_a_step_method_of_another_file_steps_on_the_callers_gate(tmp_path: Path) -> None:
    # the caller's loop sets the flag every `model.accum_iters` micro-batches; the method backpropagates on
    # every call: the discriminator's loss is not divided (the generator's is). The caller proves it: one
    # report, where the fix goes
    for flag in ("apply_gradient", "do_step"):  # the argument need not share the parameter's name
        [d] = _project(tmp_path / flag, "", flag)
        assert (Path(d.path).name, d.line, d.code, d.certainty.value) == ("model.py", 21, "GL003", "certain")
        assert "Proven by its caller: `model.optimize_parameters(lq, gt, " in d.message
        assert d.help is not None and "(l_d / self.accum_iters)" in d.help


def test_the_step_method_dividing_every_loss_is_silent(tmp_path: Path) -> None:
    assert _project(tmp_path, " / self.accum_iters") == []


BUILT = """\
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
            model.optimize_parameters(lq, gt, {argument})
"""
REGISTRY = "def build_model(opt):\n    return REGISTRY[opt['type']](opt)\n"


def _built(tmp_path: Path, divided: str, argument: str = "apply_gradient") -> list[Diagnostic]:
    root = project_tree(tmp_path, {"pkg/__init__.py": REGISTRY, "pkg/model.py": MODEL.format(divided=divided),
                                   "train.py": BUILT.format(argument=argument)})
    return lint_files([str(p) for p in sorted(root.rglob("*.py"))], Settings.default())


def test_a_model_from_a_registry_reads_the_window_from_the_loop_that_calls_its_method(tmp_path: Path) -> None:
    # the caller's analysis cannot follow `build_model`'s object; the method's file reads the loop calling
    # `.optimize_parameters(...)`: linked by the method's name only, the finding is possible
    [d] = _built(tmp_path, "")
    assert (Path(d.path).name, d.line, d.code, d.certainty.value) == ("model.py", 21, "GL003", "possible")
    assert "the caller's gate `accum >= model.accum_iters`, handed over at ../train.py:15" in d.message
    assert d.help is not None and "(l_d / self.accum_iters)" in d.help
    assert _built(tmp_path / "fixed", " / self.accum_iters") == []


def test_a_flag_not_set_by_a_gate_says_nothing_of_the_window(tmp_path: Path) -> None:
    # the loop hands a literal: every call steps, there is no window to divide by
    assert _built(tmp_path, "", argument="True") == []


SPLIT_MODEL = """\
    import torch
    from torch import nn


    class Model:
        def __init__(self, accum_iters):
            self.net = nn.Linear(4, 1)
            self.optimizer = torch.optim.SGD(self.net.parameters(), lr=0.1)
            self.accum_iters = accum_iters

        def optimize_parameters(self, lq, gt, apply_gradient):
            loss = torch.nn.functional.mse_loss(self.net(lq), gt) / self.accum_iters
            loss.backward()
            if apply_gradient:
                self.optimizer.step()
            self.log(loss)
            if apply_gradient:
                self.optimizer.zero_grad()

        def log(self, loss):
            print(loss.item())
"""


def test_one_call_reads_its_flag_once(tmp_path: Path) -> None:
    # the step and the clear are under two tests of the same flag: within one call they go the same way,
    # so no path steps and then keeps the window's gradients for the next (a false GL001 before)
    root = project_tree(tmp_path, {"pkg/__init__.py": REGISTRY, "pkg/model.py": SPLIT_MODEL,
                                   "train.py": BUILT.format(argument="apply_gradient")})
    assert lint_files([str(p) for p in sorted(root.rglob("*.py"))], Settings.default()) == []
