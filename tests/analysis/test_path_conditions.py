"""Path conditions (`analysis/pathcond.py`): branch tests read as literals over normalised atoms, so that
two spellings of one fact are remembered as one, atoms of one subject constrain each other, and a path
never takes one arm of a fact at one test and the other arm at another."""

from __future__ import annotations

import ast

import pytest

from gradcheck_lint import check_source
from gradcheck_lint.analysis import pathcond
from gradcheck_lint.analysis.syntax import read_source


def lit(text: str) -> pathcond.Literal:
    read_source(text)
    return pathcond.literal(ast.parse(text, mode="eval").body)


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        ("x is None", "x is not None", False),
        ("x is not None", "not x is None", True),
        ("self.scaler is None", "self.scaler == None", True),
        ("None is self.scaler", "self.scaler != None", False),
        ("not flag", "flag", False),
        ("not not flag", "flag", True),
        ("mode == 'train'", "mode != 'train'", False),
        ("'train' == mode", "mode == 'train'", True),
        ("hasattr(self, 'optimizer')", "not hasattr(self, 'optimizer')", False),
    ],
)
def test_a_test_and_its_negation_share_one_atom(a: str, b: str, same: bool) -> None:
    la, lb = lit(a), lit(b)
    assert la.atom == lb.atom and la.atom.kind != pathcond.TEXT
    assert (la.positive == lb.positive) is same


def test_ordered_comparisons_and_other_shapes_are_atoms_of_their_own_text() -> None:
    assert lit("i == n").atom.kind == pathcond.TEXT  # ordered values: `relations` relates those
    assert lit("x == 3").atom.kind == pathcond.TEXT
    assert lit("f(x) is None").atom.kind == pathcond.TEXT
    assert lit("a and b").atom == pathcond.Atom(pathcond.TEXT, "a and b")


@pytest.mark.parametrize(
    ("known", "truth", "asked", "expected"),
    [
        ("x is None", True, "x", False),
        ("x is None", False, "x", None),  # not None may still be false (0, "", an empty list)
        ("x", True, "x is None", False),
        ("x", False, "x is None", None),
        ("x == 'a'", True, "x == 'b'", False),
        ("x == 'a'", True, "x", True),
        ("x == ''", True, "x", False),
        ("x == 'a'", False, "x == 'b'", None),
        ("x is None", True, "y", None),  # another subject says nothing
    ],
)
def test_atoms_of_one_subject_imply_each_other(known: str, truth: bool, asked: str, expected: bool | None) -> None:
    assert pathcond.implies(lit(known).atom, truth, lit(asked).atom) is expected


@pytest.mark.parametrize(
    ("init", "expected"),
    [
        ("self.optimizer = make()", True),
        ("if opt is not None:\n    self.optimizer = opt\nelse:\n    self.optimizer = make()", True),
        ("if lr > 0:\n    self.optimizer = make()", False),
        ("for _ in range(1):\n    self.optimizer = make()", False),  # a loop may not run
        ("try:\n    self.optimizer = make()\nexcept ImportError:\n    pass", False),
        ("try:\n    self.optimizer = make()\nexcept ImportError:\n    raise", True),
        ("if ready:\n    return\nself.optimizer = make()", False),
    ],
)
def test_attributes_set_on_every_path_of_a_constructor(init: str, expected: bool) -> None:
    read_source(init)
    assert pathcond.sets_on_every_path(ast.parse(init).body, "self.optimizer") is expected


# -- whole programs: silent where the path cannot happen, reported where the bug is real ---------------

SCALER = """\
import torch
from torch import nn


class Trainer:
    def __init__(self, model, loader, use_amp=False):
        self.model = model
        self.loader = loader
        self.optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
        self.scaler = None
        if use_amp:
            self.scaler = torch.amp.GradScaler("cpu")

    def backward(self, loss):
        if self.scaler is not None:
            self.scaler.scale(loss).backward()
        else:
            loss.backward()

    def step(self):
        if {test}:
            self.optimizer.step()
        else:
            {other_step}
        self.optimizer.zero_grad()

    def train_epoch(self):
        for x, y in self.loader:
            self.backward(nn.functional.mse_loss(self.model(x), y))
            self.step()
"""


@pytest.mark.parametrize("test", ["self.scaler is None", "not self.scaler", "self.scaler == None", "not (self.scaler is not None)"])
def test_an_optional_scaler_tested_in_two_spellings_is_one_fact(test: str) -> None:
    correct = SCALER.format(test=test, other_step="self.scaler.step(self.optimizer)")
    assert [d.code for d in check_source(correct)] == []
    buggy = SCALER.format(test=test, other_step="self.optimizer.step()")  # the scaled arm bypasses the scaler
    assert [d.code for d in check_source(buggy)] == ["GL007"]


FLAG = """\
import torch
from torch import nn


def train(model, loader, mode):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler("cpu")
    for x, y in loader:
        loss = nn.functional.mse_loss(model(x), y)
        if mode == "amp":
            scaler.scale(loss).backward()
        else:
            loss.backward()
        if {test}:
            optimizer.step()
        else:
            scaler.step(optimizer)
            scaler.update()
        optimizer.zero_grad()
"""


def test_equality_with_a_string_and_its_negation_are_one_fact() -> None:
    assert [d.code for d in check_source(FLAG.format(test='mode != "amp"'))] == []
    assert [d.code for d in check_source(FLAG.format(test='mode == "amp"'))] == ["GL007"]


def test_distinct_strings_exclude_each_other() -> None:
    # the path that scaled (`mode == "amp"`) knows `mode == "fp32"` is false: it steps through the scaler
    assert [d.code for d in check_source(FLAG.format(test='mode == "fp32"'))] == []


TERNARY = """\
import torch
from torch import nn


def train(model, loader, use_amp):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler("cpu")
    for x, y in loader:
        loss = nn.functional.mse_loss(model(x), y)
        scaler.scale(loss).backward() if use_amp else loss.backward()
        scaler.step(optimizer) if use_amp else optimizer.step()
{clear}
"""


def test_a_conditional_expression_runs_one_arm() -> None:
    assert [d.code for d in check_source(TERNARY.format(clear="        optimizer.zero_grad()"))] == []
    # never cleared: both arms' steps apply stale gradients (and only one runs per iteration)
    assert sorted(d.code for d in check_source(TERNARY.format(clear=""))) == ["GL001", "GL001"]


HASATTR = """\
import torch
from torch import nn


class Trainer:
    def __init__(self, model, loader, opt=None):
        self.model = model
        self.loader = loader
{init}

    def train_epoch(self):
        for x, y in self.loader:
            nn.functional.mse_loss(self.model(x), y).backward()
            self.optimizer.step()
            if hasattr(self, "{name}"):
                self.optimizer.zero_grad()
"""
ALWAYS = """\
        if opt is not None:
            self.optimizer = opt
        else:
            self.optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        if opt is None:
            self.scheduler = torch.optim.lr_scheduler.StepLR(self.optimizer, 1)"""


def test_hasattr_of_an_attribute_the_constructor_always_sets_is_true() -> None:
    assert [d.code for d in check_source(HASATTR.format(init=ALWAYS, name="optimizer"))] == []
    # the scheduler exists only when no optimizer was handed in: otherwise nothing clears
    assert [d.code for d in check_source(HASATTR.format(init=ALWAYS, name="scheduler"))] == ["GL001"]


def test_hasattr_of_an_attribute_deleted_somewhere_is_not_known() -> None:
    src = HASATTR.format(init=ALWAYS, name="optimizer") + "\n    def close(self):\n        del self.optimizer\n"
    assert [d.code for d in check_source(src)] == ["GL001"]


SKIP = """\
import torch
from torch import nn


def train(model, loader):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for x, y in loader:
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        bad = not torch.isfinite(loss)
        if not bad:
            loss.backward()
        if {skip}:
            continue
        optimizer.step()
"""


def test_a_continue_tested_on_the_flag_that_skipped_the_backward_follows_none() -> None:
    # `bad` names a test (`not isfinite(loss)`): both `if`s read it, so only a path without a backward continues
    assert [d.code for d in check_source(SKIP.format(skip="bad"))] == []
    assert [d.code for d in check_source(SKIP.format(skip="not bad"))] == ["GL002"]


def test_only_tests_that_guard_training_or_leave_early_make_a_subject_remembered() -> None:
    from gradcheck_lint.analysis.interpreter import Interpreter

    src = """\
import torch

def main(args, model, opt, loader):
    if args.report_to == "wandb":
        raise ImportError("install wandb")
    if args.report_to != "wandb":
        print("no tracker")
    for x in loader:
        model(x).sum().backward()
        if args.clip is not None:
            torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip)
        if args.clip is None:
            opt.step()
        if args.skip is not None:
            continue
"""
    counts = Interpreter(ast.parse(src), src).subjects_tested
    # set-up checks that raise or log would only multiply the paths; the clip/step tests and the `continue` count
    assert counts["args.report_to"] == 0
    assert counts["args.clip"] == 2
    assert counts["args.skip"] == 1


PARTS = """\
import torch
from torch import nn


def train(model, loader, accum, use_reg, reg):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    step = 0
    for x, y in loader:
        (nn.functional.mse_loss(model(x), y) / accum).backward()
        step += 1
        if {reg_test}:
            (reg * sum((p ** 2).sum() for p in model.parameters())).backward()
        if {step_test}:
            optimizer.step()
            optimizer.zero_grad()
"""


@pytest.mark.parametrize(
    ("reg_test", "step_test", "expected"),
    [
        # the penalty's test holds only where the step's does: one penalty per update, nothing to divide
        ("use_reg and step > 0 and step % accum == 0", "step > 0 and step % accum == 0", []),
        ("step % accum == 0 and use_reg", "step % accum == 0", []),
        # `or` that failed: every part failed; the step's `not (a or b)` is the same fact
        ("use_reg and not (step % accum != 0 or step == 0)", "not (step % accum != 0 or step == 0)", []),
        # a part the step's gate does not have: the penalty runs on micro-batches that do not step
        ("use_reg and step > 1", "step > 0 and step % accum == 0", ["GL003"]),
        ("use_reg", "step > 0 and step % accum == 0", ["GL003"]),
    ],
)
def test_parts_of_an_and_test_are_what_a_later_test_reads(reg_test: str, step_test: str, expected: list[str]) -> None:
    """A path on which `a and b and c` held knows `b` and `c` held: a later `if b and c:` goes the same way
    (`analysis/boolparts.py`)."""
    source = PARTS.format(reg_test=reg_test, step_test=step_test)
    found = [d.code for d in check_source(source) if d.code == "GL003"]
    assert found == expected


LITERAL_GUARD = """\
import torch
from utils.optimizer import get_optimizer


class Learner:
    def __init__(self, params, accelerator):
        self.accelerator = accelerator
        self.optimizer = get_optimizer(params)

    def observe_batch(self, task_id, total_loss):
        self.optimizer.zero_grad()
        if task_id > 0:
            pass
        else:
            self.accelerator.backward(total_loss)
        if {test}:
            self.optimizer.step()
"""


@pytest.mark.parametrize("test", ["True", "1", "'on'"])
def test_a_literal_test_that_holds_takes_its_body_on_every_path(test: str) -> None:
    """`if True:` around a step (code switched on by hand) never skips it: no micro-batch is left for the
    clear to discard."""
    assert [d.code for d in check_source(LITERAL_GUARD.format(test=test))] == []


@pytest.mark.parametrize("test", ["False", "0", "None"])
def test_a_literal_test_that_fails_takes_its_else_on_every_path(test: str) -> None:
    """`if False: ... else: step()` (code switched off by hand) always steps."""
    source = LITERAL_GUARD.format(test=test).replace(
        "            self.optimizer.step()", "            pass\n        else:\n            self.optimizer.step()")
    assert [d.code for d in check_source(source)] == []


PARAMETER_TEST = """\
import torch

model = torch.nn.Linear(4, 2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
loader = [torch.randn(3, 4)] * 4


def observe(task_id, batch):
    optimizer.zero_grad()
    total_loss = model(batch).sum()
    if task_id > 0:
        pass
    else:
        total_loss.backward()
    if total_loss.item() > 0:
        optimizer.step()


def train(task_id):
    for batch in loader:
        observe(ARGUMENT, batch)


for t in range(3):
    train(t)
"""


def test_a_test_of_a_parameter_goes_one_way_on_calls_handed_the_same_value() -> None:
    """`task_id > 0` in `observe`, called with `train`'s unchanged `task_id` on every batch: a call that
    backpropagates and a later one that does not are of two `train` calls, whose first `observe` clears
    first. No path has the clear drop a skipped step's gradients with no backward after it."""
    assert [d.code for d in check_source(PARAMETER_TEST.replace("ARGUMENT", "task_id"))] == []


@pytest.mark.parametrize("argument", ["task_id - 1 if task_id else 0", "int(batch.sum() > 0)"])
def test_a_test_of_a_parameter_is_decided_again_when_the_call_hands_a_computed_value(argument: str) -> None:
    """A computed argument may differ from one call to the next: a call that backpropagates, skips its step,
    and a next call that does not backpropagate leave the clear dropping what the step never applied."""
    found = [(d.code, d.line) for d in check_source(PARAMETER_TEST.replace("ARGUMENT", argument))]
    assert found == [("GL002", 9)]


def test_a_test_of_a_parameter_handed_a_changing_flag_still_finds_the_alternation() -> None:
    """`observe(i % 4 == 3, batch)`: the step fires on one call in four, and the clear after it on every call
    drops the three calls' gradients in between."""
    source = """\
import torch

model = torch.nn.Linear(4, 2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
batch = torch.randn(3, 4)


def observe(update, batch):
    loss = model(batch).sum() / 4
    loss.backward()
    if update:
        optimizer.step()
    optimizer.zero_grad()


for i in range(12):
    observe(i % 4 == 3, batch)
"""
    assert [(d.code, d.line) for d in check_source(source)] == [("GL002", 13)]


def test_what_a_call_hands_each_parameter_is_read_only_when_the_arguments_line_up() -> None:
    from gradcheck_lint.analysis.parameter_tests import argument_texts

    fn = ast.parse("def observe(self, task_id, batch, mode='train', *, flag=True): pass").body[0]
    call = ast.parse("learner.observe(task_id, batches[i], flag=cfg.flag)", mode="eval").body
    assert isinstance(fn, ast.FunctionDef) and isinstance(call, ast.Call)
    assert argument_texts(fn, call, True, 2) == {"task_id": "task_id", "batch": None, "mode": "='train'",
                                                 "flag": "cfg.flag"}
    # `Learner.observe(self, task_id, batch)` binds two of its three positional arguments: nothing is read
    explicit = ast.parse("Learner.observe(self, task_id, batch)", mode="eval").body
    assert isinstance(explicit, ast.Call)
    assert set(argument_texts(fn, explicit, True, 2).values()) == {None}


WINDOW_OF_ONE = """\
import torch

model = torch.nn.Linear(4, 2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
loader = [torch.randn(3, 4)] * 8
for epoch in range(3):
    num_iter = 0
    for i, x in enumerate(loader):
        num_iter += 1
        loss = model(x).sum()
        loss.backward()
        optimizer.step()
        if num_iter == BOUND:
            num_iter = 0
            optimizer.step()
            model.zero_grad()
"""


def test_a_restarted_counter_tested_against_one_holds_on_every_micro_batch() -> None:
    """Point-M2AE's segmentation loop: `num_iter += 1` then `if num_iter == 1: ...; num_iter = 0` clears after every
    batch; only the second step on the same gradients is a bug (lockbox 20, after its opening)."""
    found = [(d.code, d.line) for d in check_source(WINDOW_OF_ONE.replace("BOUND", "1"))]
    assert found == [("GL001", 15)]


def test_a_restarted_counter_tested_against_a_larger_literal_is_a_window() -> None:
    found = {(d.code, d.line) for d in check_source(WINDOW_OF_ONE.replace("BOUND", "4"))}
    assert ("GL001", 12) in found


def test_a_counter_compared_with_a_window_elsewhere_is_not_a_window_of_one() -> None:
    """yanmtt's fixed loop: `if n == 0: zero_grad()` at the top, `n += 1; if n < args.steps: continue` before the step,
    `n = 0` after it: `n == 0` holds once per window of `args.steps`, not on every micro-batch."""
    source = """\
import torch

model = torch.nn.Linear(4, 2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)


def train(args, loader):
    n = 0
    for x in loader:
        if n == 0:
            optimizer.zero_grad()
        loss = model(x).sum() / args.steps
        loss.backward()
        n += 1
        if n < args.steps:
            continue
        optimizer.step()
        n = 0
"""
    assert [d.code for d in check_source(source)] == []
