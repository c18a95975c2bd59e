"""GL010 when a framework divides by its window and nothing accumulates (`effects._window_read_here`,
`checks/gl010`), with two fixes found on the way: a step under `if True:` is not gated (GL010 reads it; the
interpreter still takes both arms), and `hasattr(self, "x")` for a name nothing defines is decided the
same way whichever method runs first."""

from __future__ import annotations

from gradcheck_lint.engine import analyse_text


def found(text: str) -> list[tuple[int, str]]:
    return sorted((d.span.line, d.code) for d in analyse_text(text, "train.py").diagnostics)


OUT_OF_SIGHT = """\
import torch
from library import train_util


def train(args, model, loader):
    accelerator = train_util.prepare_accelerator(args)
    optimizer = torch.optim.AdamW(model.parameters())
    model, optimizer = accelerator.prepare(model, optimizer)
    {reads}
    for x, y in loader:
{body}
"""

EVERY_BATCH = """\
        loss = torch.nn.functional.mse_loss(model(x), y)
        accelerator.backward(loss)
        optimizer.step()
        optimizer.zero_grad()"""


def test_an_accelerator_out_of_sight_whose_window_the_file_reads_divides() -> None:
    text = OUT_OF_SIGHT.format(reads="print(args.gradient_accumulation_steps)", body=EVERY_BATCH)
    assert found(text) == [(12, "GL010")]
    message = next(d.message for d in analyse_text(text, "train.py").diagnostics)
    assert "most likely divides the loss by `args.gradient_accumulation_steps`" in message


def test_without_a_window_read_an_accelerator_out_of_sight_divides_nothing() -> None:
    assert found(OUT_OF_SIGHT.format(reads="print(args.learning_rate)", body=EVERY_BATCH)) == []


def test_a_plugin_setting_is_not_a_window() -> None:
    assert found(OUT_OF_SIGHT.format(reads="print(args.gradient_accumulation_plugin)", body=EVERY_BATCH)) == []


def test_inside_accumulate_the_step_waits_for_the_window() -> None:
    body = "        with accelerator.accumulate(model):\n" + "\n".join("    " + line for line in EVERY_BATCH.splitlines())
    assert found(OUT_OF_SIGHT.format(reads="print(args.gradient_accumulation_steps)", body=body)) == []


def test_a_step_gated_by_hand_accumulates() -> None:
    body = """\
        loss = torch.nn.functional.mse_loss(model(x), y)
        accelerator.backward(loss)
        if accelerator.sync_gradients:
            optimizer.step()
            optimizer.zero_grad()"""
    # no GL010: the step waits for the window; GL006: the prepared model's sync is never switched off
    assert found(OUT_OF_SIGHT.format(reads="n = args.gradient_accumulation_steps", body=body)) == [(12, "GL006")]


IN_SIGHT = """\
import torch
from accelerate import Accelerator

accelerator = Accelerator(gradient_accumulation_steps=4)
model = torch.nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
model, optimizer = accelerator.prepare(model, optimizer)
for x in torch.randn(8, 2, 4):
    if {test}:
        loss = model(x).pow(2).mean()
        accelerator.backward(loss)
        optimizer.step()
        optimizer.zero_grad()
"""


def test_a_step_under_if_true_runs_every_micro_batch() -> None:
    assert found(IN_SIGHT.format(test="True")) == [(11, "GL010")]


def test_a_real_condition_may_gate_the_step() -> None:
    assert found(IN_SIGHT.format(test="x.sum() > 0")) == []


HASATTR = """\
class Trainer:
    def step_a(self, x):
        if hasattr(self, "_legacy_step"):
            return self._legacy_step(x)
        return x

    def step_b(self, x):
        if hasattr(self, "_legacy_step"):
            return self._legacy_step(x)
        return x
"""


def test_a_hasattr_test_repeated_in_two_methods_is_decided_alike_in_both() -> None:
    """Nothing defines `_legacy_step`: both tests are false whichever is asked first (the name in the
    other test was taken for a definition, and which method ran first depended on hash order:
    PrefixTuning's trainer got a GL008 under some seeds only)."""
    import ast

    from gradcheck_lint.analysis.interpreter import Interpreter

    for order in (0, 1), (1, 0):
        module = ast.parse(HASATTR)
        tests = [n.test for n in ast.walk(module) if isinstance(n, ast.If)]
        interp = Interpreter(module, HASATTR)
        assert [interp.fixed_tests.missing_attribute(tests[i]) for i in order] == [True, True]


ITEM = """\
import torch


def train(model, loader, accum):
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step, (x, y) in enumerate(loader):
        out = {{"loss": torch.nn.functional.mse_loss(model(x), y), "n": 1}}
        out[{key}] {op}= {by}
        out["loss"].backward()
        if (step + 1) % accum == 0:
            opt.step()
            opt.zero_grad()
"""


def test_a_dict_item_divided_in_place_is_the_loss_divided() -> None:
    """pytorch-accelerated: `batch_output["loss"] /= gradient_accumulation_steps` (GL003 was reported)."""
    assert found(ITEM.format(key='"loss"', op="/", by="accum")) == []


def test_another_item_divided_leaves_the_loss_undivided() -> None:
    assert found(ITEM.format(key='"n"', op="/", by="accum")) == [(9, "GL003")]


def test_findings_of_a_root_the_work_budget_cut_short_are_dropped(monkeypatch) -> None:
    """PrefixTuning's 3,600-line Trainer: the budget ran out in `train()` part-way through its loop, and
    GL001/GL006 were reported on events that loop's completed passes would not condemn. Simulated here:
    the second root is cut after it ran; the first root's finding stands, the second's goes."""
    from gradcheck_lint.analysis import entrypoints
    from gradcheck_lint.analysis.flow import BudgetExhausted

    text = """\
import torch


def first(model, loader):
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for x in loader:
        model(x).sum().backward()
        opt.step()


def second(model, loader):
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for x in loader:
        model(x).sum().backward()
        opt.step()
"""
    assert found(text) == [(8, "GL001"), (15, "GL001")]
    run_root = entrypoints.EntryPoints._run_root

    def cut(self, fn, cls, *args, **kwargs):
        run_root(self, fn, cls, *args, **kwargs)
        if fn.name == "second":
            raise BudgetExhausted

    monkeypatch.setattr(entrypoints.EntryPoints, "_run_root", cut)
    assert found(text) == [(1, "GL099"), (8, "GL001")]  # and a notice says `second`'s findings are left out
