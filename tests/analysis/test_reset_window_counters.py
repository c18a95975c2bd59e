"""Windows of counters a loop resets or counts down (`analysis/resets.py`): their sizes are run from the
loop's own statements, so a gate tested before its counter moves (windows of N + 1), a count-down started
at 0 (a first window of one micro-batch) or at N (a first window of N + 1) is GL004, in the loop's file or
in a step method of another file that the loop hands its flag to. Each bug has a correct twin that stays
silent."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

from gradcheck_lint import check_source
from gradcheck_lint.analysis.resets import reset_window
from gradcheck_lint.analysis.walk import parents
from gradcheck_lint.config import Settings
from gradcheck_lint.diagnostics import Diagnostic
from gradcheck_lint.runner import lint_files
from support import project_tree


def _found(text: str) -> list[tuple[int, str]]:
    return [(d.line, d.code) for d in check_source(textwrap.dedent(text), "train.py", settings=Settings.default())]


RESET = """\
    import torch
    model = torch.nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    accum_iters = 4
    accum = 0
    for x in torch.randn(16, 2, 4):
        (model(x).pow(2).mean() / accum_iters).backward()
    {before}    if accum >= accum_iters:
            accum = 0
            opt.step()
            opt.zero_grad()
    {orelse}
"""
TESTED_FIRST = RESET.format(before="", orelse="    else:\n            accum += 1")
COUNTED_FIRST = RESET.format(before="    accum += 1\n    ", orelse="")


def test_a_counter_tested_before_its_increment_makes_windows_of_n_plus_one() -> None:
    # from 0, `accum >= accum_iters` holds on micro-batches N, 2N + 1...: every window holds N + 1
    [(line, code)] = _found(TESTED_FIRST)
    assert (line, code) == (8, "GL004")
    [d] = check_source(textwrap.dedent(TESTED_FIRST), "train.py", settings=Settings.default())
    assert "`accum_iters + 1` micro-batches instead of `accum_iters`" in d.message


def test_the_counter_incremented_before_its_test_is_silent() -> None:
    assert _found(COUNTED_FIRST) == []


def test_a_reset_before_the_step_keeps_the_step_under_its_gate() -> None:
    # `accum = 0` before `opt.step()` in the gate's arm: the arm is still where the window ends, so the
    # undivided loss there is GL003 (before: the reset dropped the gate, and the step read as ungated)
    text = COUNTED_FIRST.replace("(model(x).pow(2).mean() / accum_iters)", "model(x).pow(2).mean()")
    assert _found(text) == [(7, "GL003")]


COUNTDOWN = """\
    import torch
    from torch import nn


    class TrainManager:
        def __init__(self, model, batch_multiplier):
            self.model = model
            self.optimizer = torch.optim.Adam(model.parameters())
            self.batch_multiplier = batch_multiplier

        def train(self, batches, epochs):
            for epoch in range(epochs):
                count = {start}
                for x, y in batches:
                    update = count == 0
                    self._train_batch(x, y, update=update)
                    count = self.batch_multiplier if update else count
                    count -= 1

        def _train_batch(self, x, y, update=True):
            loss = nn.functional.cross_entropy(self.model(x), y) / self.batch_multiplier
            loss.backward()
            if update:
                self.optimizer.step()
                self.optimizer.zero_grad()
"""


def test_a_countdown_started_at_zero_steps_on_the_first_micro_batch() -> None:
    # `update = count == 0` holds on the first micro-batch: a window of one, every later one shifted
    [d] = check_source(textwrap.dedent(COUNTDOWN.format(start="0")), "train.py", settings=Settings.default())
    assert (d.line, d.code) == (15, "GL004")
    assert "the first window holds `1` micro-batch instead of `self.batch_multiplier`" in d.message


def test_a_countdown_started_at_n_minus_one_is_silent() -> None:
    assert _found(COUNTDOWN.format(start="self.batch_multiplier - 1")) == []


DOWN = """\
    import torch
    model = torch.nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    n = 4
    left = n
    for x in torch.randn(16, 2, 4):
        (model(x).pow(2).mean() / n).backward()
    {early}    if left == 0:
            opt.step()
            opt.zero_grad()
            left = n
    {late}
"""


def test_a_countdown_from_n_tested_before_it_moves_makes_a_long_first_window() -> None:
    assert _found(DOWN.format(early="", late="    left -= 1")) == [(8, "GL004")]


def test_a_countdown_from_n_tested_after_it_moves_is_silent() -> None:
    assert _found(DOWN.format(early="    left -= 1\n    ", late="")) == []


MODEL = """\
    import torch
    from torch import nn


    class SRModel:
        def __init__(self, opt):
            self.net_g = nn.Linear(4, 4)
            self.optimizer_g = torch.optim.Adam(self.net_g.parameters())
            self.accum_iters = opt["accum_iter"]

        def optimize_parameters(self, lq, gt, apply_gradient):
            loss = nn.functional.l1_loss(self.net_g(lq), gt) / self.accum_iters
            loss.backward()
            if apply_gradient:
                self.optimizer_g.step()
                self.optimizer_g.zero_grad()
"""
TRAIN = """\
    import torch
    from pkg import build_model


    def main(opt):
        model = build_model(opt)
        current_accum_iter = 0
        for lq, gt in torch.randn(32, 2, 3, 4):
            {before}if current_accum_iter >= model.accum_iters:
                current_accum_iter = 0
                apply_gradient = True
            else:
                {orelse}apply_gradient = False
            model.optimize_parameters(lq, gt, apply_gradient)
"""
REGISTRY = "from .model import SRModel\n\n\ndef build_model(opt):\n    return REGISTRY[opt['type']](opt)\n"


def _project(tmp_path: Path, train: str) -> list[Diagnostic]:
    root = project_tree(tmp_path, {"pkg/__init__.py": REGISTRY, "pkg/model.py": MODEL, "train.py": train})
    return lint_files([str(p) for p in sorted(root.rglob("*.py"))], Settings.default())


def test_a_callers_gate_of_windows_of_n_plus_one_is_reported_at_the_callees_step(tmp_path: Path) -> None:
    # the model comes from a registry: the method's file reads its callers' gates (`caller_gates`), whose
    # counter is tested before its increment
    train = TRAIN.format(before="", orelse="current_accum_iter += 1\n            ")
    found = [(Path(d.path).name, d.line, d.code, d.certainty.value) for d in _project(tmp_path, train)]
    assert found == [("model.py", 15, "GL004", "possible")]


def test_a_callers_gate_counting_first_is_silent(tmp_path: Path) -> None:
    train = TRAIN.format(before="current_accum_iter += 1\n            ", orelse="")
    assert _project(tmp_path, train) == []


def _windows(text: str) -> list[object]:
    tree = ast.parse(textwrap.dedent(text))
    up = parents(tree)
    return [reset_window(n.test, lambda x: up.get(id(x))) for n in ast.walk(tree) if isinstance(n, ast.If)]


def test_a_counter_only_ever_incremented_is_left_to_the_counter_arithmetic() -> None:
    # `%` gates and plain increments are judged elsewhere (`counters`): no reset, no run
    assert _windows("for x in xs:\n    i += 1\n    if i % n == 0:\n        step()\n") == [None]


def test_a_test_of_unknown_data_that_moves_the_counter_leaves_the_windows_unknown() -> None:
    text = """\
        c = 0
        for x in xs:
            if x.ok:
                c += 1
            if c >= n:
                c = 0
                step()
    """
    assert _windows(text) == [None, None]
