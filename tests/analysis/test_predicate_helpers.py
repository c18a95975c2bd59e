"""A test asked of a predicate helper (`def exists(v): return v is not None`, lucidrains' idiom) is the test
it returns, in the caller's terms (`Interpreter._returned`): `if not exists(self.opt):` is `self.opt is None`,
the same fact as every other test of it, and a setting of the run when only `__init__` assigns it.

Lockbox 38's FlowMo vector_quantize.py: a codebook optimizer made in `__init__` (or None) stepped by a
method that returns early `if not exists(self.opt)`, called after each backward. Read as an opaque call,
the test went one way on one call and the other way on the next: a path that skipped the step, then
stepped on the next call, made a certain GL003 (two backward passes into one step) that no run has."""

from __future__ import annotations

from gradcheck_lint import check_source
from gradcheck_lint.config import Settings
from gradcheck_lint.engine import analyse_text
from support import project_tree

CODEBOOK = """\
import torch
from torch import nn


def exists(val):
    return val is not None


class VQ(nn.Module):
    def __init__(self, dim, codebook_optimizer=None, manual_update=False):
        super().__init__()
        self.net = nn.Linear(dim, dim)
        self.opt = codebook_optimizer(self.net.parameters()) if exists(codebook_optimizer) else None
        self.manual_update = manual_update
        self.calls = 0

    def update_in_place_optimizer(self):
        if not {test}:
            return
        self.opt.step()
        self.opt.zero_grad()

    def forward(self, x):
        loss = self.net(x).mean()
        loss.backward()
{gate}
        return x
"""

EVERY_CALL = """\
        if not self.manual_update:
            self.update_in_place_optimizer()"""

# a real window: two backward passes, one step, nothing divided
EVERY_SECOND_CALL = """\
        self.calls += 1
        if self.calls % 2 == 0:
            self.update_in_place_optimizer()"""


def codes(test: str, gate: str) -> list[str]:
    return [d.code for d in check_source(CODEBOOK.format(test=test, gate=gate), "vq.py")]


def test_a_predicate_helper_is_the_test_it_returns():
    assert codes("exists(self.opt)", EVERY_CALL) == []


def test_the_written_out_test_agrees():
    assert codes("self.opt is not None", EVERY_CALL) == []


def test_a_window_behind_the_helper_is_still_found():
    assert "GL003" in codes("exists(self.opt)", EVERY_SECOND_CALL)


def test_a_predicate_of_something_that_changes_is_not_a_setting():
    # `self.pending` is assigned on each call: its test is decided afresh each time (every second call steps)
    gate = EVERY_SECOND_CALL.replace("        if self.calls % 2 == 0:",
                                     "        self.pending = x if self.calls % 2 == 0 else None\n"
                                     "        if exists(self.pending):")
    assert "GL003" in codes("exists(self.opt)", gate)


def test_a_predicate_helper_of_another_project_file(tmp_path):
    own = CODEBOOK.format(test="exists(self.opt)", gate=EVERY_CALL)
    own = own.replace("def exists(val):\n    return val is not None\n", "").replace(
        "from torch import nn\n", "from torch import nn\n\nfrom .helpers import exists\n")
    root = project_tree(tmp_path, {"pkg/__init__.py": "", "pkg/helpers.py": "def exists(val):\n    return val is not None\n",
                                   "pkg/vq.py": own})
    report = analyse_text(own, str(root / "pkg" / "vq.py"), Settings.default())
    assert [d.code for d in report.diagnostics] == []
