"""GL008 in a hook a framework calls once per batch (`analysis/entrypoints.py`, `Loop.framework`).

Under automatic optimization Lightning calls `training_step` once per batch and backpropagates, steps
and clears after each call, out of sight (pytorch-forecasting's `BaseModel.training_step`, lockbox 2):
what the hook adds to an attribute of its object (`self.training_step_outputs.append(log)`) outlives
the calls, as an accumulator outlives a loop's iterations. The loss it returns Lightning drops; a list
reset in the hook, or in one of the hooks the catalogue says run around it each batch (`each_batch`:
`on_train_batch_end`), holds one batch at most. A container holding the loss (`{"loss": loss}`) keeps
its graph like the loss itself."""

from __future__ import annotations

import pytest

from gradcheck_lint.analysis.apimodels import catalogue_for
from gradcheck_lint.engine import analyse_text
from gradcheck_lint.prefilter import might_train

LIGHTNING = """\
import torch
import torch.nn.functional as F
import lightning.pytorch as pl


class Model(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Linear(4, 1)
        self.outputs = []
        self.total = 0.0
{init}
    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = F.mse_loss(self.net(x), y)
{body}
        return loss
{more}
    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)
"""


def gl008(text: str, prefilter: bool = True) -> list[tuple[int, str]]:
    report = analyse_text(text, "model.py", prefilter=prefilter)
    return [(d.span.line, d.message) for d in report.diagnostics if d.code == "GL008"]


def lightning(body: str, init: str = "", more: str = "") -> str:
    return LIGHTNING.format(body=body, init=init, more=more)


def line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


@pytest.mark.parametrize("store", [
    "self.outputs.append(loss)",
    "self.outputs.extend([loss])",
    "self.total += loss",
    "self.outputs.append({'loss': loss, 'batch': batch_idx})",
    "self.outputs.append((loss.item(), self.net(x)))",
])
def test_a_graph_stored_on_the_module_in_an_automatic_training_step_is_gl008(store: str) -> None:
    text = lightning(f"        {store}")
    found = gl008(text)
    assert [line for line, _ in found] == [line_of(text, store)]
    assert "the framework's calls of `training_step`, one per batch" in found[0][1]


def test_the_file_passes_the_prefilter_though_it_calls_no_backward_and_no_step() -> None:
    text = lightning("        self.outputs.append(loss)")
    assert "backward" not in text and ".step(" not in text
    assert might_train(text)
    assert gl008(text) == gl008(text, prefilter=False) != []


@pytest.mark.parametrize("store", [
    "self.log('train_loss', loss)",
    "self.outputs.append(loss.detach())",
    "self.outputs.append(loss.item())",
    "self.total += loss.item()",
    "self.total += float(loss)",
    "self.last_loss = loss",
    "terms = []\n        terms.append(loss)",
    "self.outputs = []\n        self.outputs.append(loss)",
])
def test_values_lightning_drops_or_the_hook_detaches_are_silent(store: str) -> None:
    assert gl008(lightning(f"        {store}")) == []


EACH_BATCH = """
    def {hook}(self, *args):
        self.log("mean", torch.stack(self.outputs).mean().item())
        self.outputs.clear()
"""


@pytest.mark.parametrize("hook", ["on_train_batch_end", "on_train_batch_start", "on_after_backward", "optimizer_zero_grad"])
def test_a_list_cleared_by_a_hook_the_framework_calls_each_batch_holds_one_batch(hook: str) -> None:
    assert catalogue_for().hook("lightning.pytorch.LightningModule", "training_step").each_batch
    assert gl008(lightning("        self.outputs.append(loss)", more=EACH_BATCH.format(hook=hook))) == []


@pytest.mark.parametrize("hook", ["on_train_epoch_end", "on_validation_epoch_end", "helper"])
def test_a_list_cleared_once_an_epoch_or_by_a_method_the_framework_does_not_call_each_batch_holds_them_all(hook: str) -> None:
    text = lightning("        self.outputs.append(loss)", more=EACH_BATCH.format(hook=hook))
    assert [line for line, _ in gl008(text)] == [line_of(text, "self.outputs.append(loss)")]


def test_a_loss_kept_in_a_dict_is_named_by_its_item_and_not_fixed_by_detaching_the_dict() -> None:
    text = lightning("        log = {'loss': loss, 'size': len(x)}\n        self.outputs.append(log)")
    report = analyse_text(text, "model.py")
    (finding,) = [d for d in report.diagnostics if d.code == "GL008"]
    assert '`log["loss"]` in `log`' in finding.message
    assert '`log["loss"].detach()`' in finding.help
    assert finding.fix is None


def test_a_manual_training_step_is_still_checked_as_its_own_loop() -> None:
    body = ("        opt = self.optimizers()\n        opt.zero_grad()\n        self.manual_backward(loss)\n"
            "        opt.step()\n        self.outputs.append(loss)")
    text = lightning(body, init="        self.automatic_optimization = False\n")
    found = gl008(text)
    assert [line for line, _ in found] == [line_of(text, "self.outputs.append(loss)")]
    assert "the framework's" not in found[0][1]


def test_a_hugging_face_compute_loss_override_keeps_what_it_stores() -> None:
    text = """\
from transformers import Trainer


class MyTrainer(Trainer):
    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        outputs = model(**inputs)
        loss = outputs.loss
        self.seen.append(outputs)
        return loss
"""
    assert [line for line, _ in gl008(text)] == [8]


def test_a_plain_module_method_named_training_step_is_no_framework_hook() -> None:
    text = lightning("        self.outputs.append(loss)").replace("pl.LightningModule", "torch.nn.Module")
    assert gl008(text) == []
