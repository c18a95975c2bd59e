"""GL003 on a transformers `compute_loss` override whose loss the Trainer no longer divides
(`analysis/losshooks.py`, the `normaliser` of the hook row in `apimodels/transformers.toml`)."""

from __future__ import annotations

import textwrap

import pytest

from gradcheck_lint.engine import analyse_text

HEADER = "from transformers import Trainer\n\n\nclass Distiller(Trainer):\n"


def codes(body: str, header: str = HEADER) -> list[tuple[int, str]]:
    text = header + textwrap.indent(textwrap.dedent(body), "    ")
    return [(d.span.line, d.code) for d in analyse_text(text, "trainer.py").diagnostics]


def test_ignored_num_items_in_batch_is_reported_at_the_return() -> None:
    assert codes("""
        def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
            outputs = model(**inputs)
            loss = kl_divergence(outputs.logits, inputs["teacher_logits"])
            return (loss, outputs) if return_outputs else loss
    """) == [(9, "GL003")]


def test_labels_read_by_name_are_reported() -> None:
    assert codes("""
        def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
            labels = inputs.pop("labels")
            logits = model(input_ids=inputs["input_ids"]).logits
            return cross_entropy(logits.flatten(0, 1), labels.flatten())
    """) == [(9, "GL003")]


def test_kwargs_that_swallow_it_are_reported() -> None:
    assert codes("""
        def compute_loss(self, model, inputs, return_outputs=False, **kwargs):
            return model(**inputs).loss.mean()
    """) == [(7, "GL003")]


@pytest.mark.parametrize("body", [
    # normalised by the window's item count
    """
    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        loss = token_losses(model(**inputs), inputs["labels"]).sum() / num_items_in_batch
        return loss
    """,
    # divided by the accumulation steps, as distillKitPlus's fix does
    """
    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        loss = distill(model(**inputs))
        if model.training:
            loss = loss / self.args.gradient_accumulation_steps
        return loss
    """,
    # the framework's own normalisation
    """
    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        return super().compute_loss(model, inputs, return_outputs, num_items_in_batch)
    """,
    # passed on to a helper
    """
    def compute_loss(self, model, inputs, return_outputs=False, **kwargs):
        return self.loss_fn(model, inputs, **kwargs)
    """,
    # a signature from before the Trainer passed the argument: the Trainer divides
    """
    def compute_loss(self, model, inputs, return_outputs=False):
        return model(**inputs).loss
    """,
    # a batch without `labels` (a distillation collator's own keys): the Trainer passes None and divides
    """
    def compute_loss(self, model, inputs, return_outputs=False, **kwargs):
        student = model(input_ids=inputs["student_input_ids"], attention_mask=inputs["student_attention_mask"])
        loss = kl_divergence(student.logits, inputs["teacher_logits"])
        return (loss, student) if return_outputs else loss
    """,
    # sentence-transformers: the batch goes to its own helper and holds a "label" column, not "labels"
    """
    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        features, labels = self.collect_features(inputs)
        loss = self.loss(features, labels)
        return (loss, {}) if return_outputs else loss
    """,
    # the class tells the Trainer to divide
    """
    model_accepts_loss_kwargs = False

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        return model(**inputs).loss
    """,
])
def test_normalised_or_divided_losses_are_silent(body: str) -> None:
    assert codes(body) == []


def test_a_class_that_is_no_trainer_is_silent() -> None:
    assert codes("""
        def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
            return model(**inputs).loss
    """, header="class Distiller:\n") == []


def test_a_file_that_only_defines_the_hook_is_read_without_running_the_interpreter() -> None:
    """The prefilter's hook trigger analyses only the class definitions: same finding as a full analysis."""
    from gradcheck_lint.prefilter import might_train, trains_itself
    from support import FIXTURES

    text = (FIXTURES / "unscaled_accumulated_loss" / "hf_compute_loss_ignores_num_items.py").read_text(encoding="utf-8")
    assert might_train(text) and not trains_itself(text)
    light = [(d.span.line, d.code) for d in analyse_text(text, "t.py").diagnostics]
    full = [(d.span.line, d.code) for d in analyse_text(text, "t.py", prefilter=False).diagnostics]
    assert light == full and [code for _line, code in light] == ["GL003"]


def test_the_finding_is_at_the_last_return_not_an_early_one() -> None:
    """axolotl's strided EBFT trainer (unseen code) returns a zero dummy loss early for short sequences;
    the finding named that `return` instead of the one that returns the training loss."""
    assert codes("""
        def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
            if inputs["input_ids"].shape[1] < 8:
                dummy_loss = inputs["input_ids"].float().mean() * 0.0
                return (dummy_loss, None) if return_outputs else dummy_loss
            outputs = model(**inputs)
            loss = outputs.loss * 0.5 + extra(inputs["labels"])
            return (loss, outputs) if return_outputs else loss
    """) == [(12, "GL003")]
