"""GL006 "sync switched off only after the forward pass": DDP decides at forward time whether the next backward
all-reduces, so the forward that decides is the latest one behind the loss. HF Trainer keeps an output of each
forward (`self._past = outputs[past_index]`) and hands it to the next forward as `mems`; a micro-batch run wholly
under `model.no_sync()` then has a loss behind which lies also the previous, synced forward. That older forward's
graph was already backpropagated: it does not decide this backward (AdaLoRA's trainer copies, 7 false reports).
A loss whose only forward ran with sync on, backpropagated under `no_sync()`, is still late."""

from support import lines_of

TRAINER = """
class Trainer:
    def train(self, model, epoch_iterator):
        tr_loss = 0.0
        for step, inputs in enumerate(epoch_iterator):
            if (step + 1) % self.args.gradient_accumulation_steps != 0 and self.args.local_rank != -1:
{off_arm}
            else:
                tr_loss += self.training_step(model, inputs)

    def _prepare_inputs(self, inputs):
        if self.args.past_index >= 0 and self._past is not None:
            inputs["mems"] = self._past
        return inputs

    def training_step(self, model, inputs):
        loss = self.compute_loss(model, self._prepare_inputs(inputs))
        self.scaler.scale(loss).backward()
        return loss.detach()

    def compute_loss(self, model, inputs):
        labels = inputs.pop("labels")
        outputs = model(**inputs)
        if self.args.past_index >= 0:
            self._past = outputs[self.args.past_index]
        return self.label_smoother(outputs, labels)
"""

WHOLE_STEP_UNDER_NO_SYNC = """\
                with model.no_sync():
                    tr_loss += self.training_step(model, inputs)"""

ONLY_BACKWARD_UNDER_NO_SYNC = """\
                loss = self.compute_loss(model, self._prepare_inputs(inputs))
                with model.no_sync():
                    self.scaler.scale(loss).backward()"""


def _gl006(off_arm: str) -> list[int]:
    return lines_of("GL006", TRAINER.format(off_arm=off_arm))


def test_an_output_carried_from_a_synced_forward_does_not_make_a_no_sync_step_late() -> None:
    assert _gl006(WHOLE_STEP_UNDER_NO_SYNC) == []


def test_a_forward_with_sync_on_and_a_backward_under_no_sync_is_still_late() -> None:
    assert _gl006(ONLY_BACKWARD_UNDER_NO_SYNC) == [9]
