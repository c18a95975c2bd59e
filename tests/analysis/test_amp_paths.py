"""GL007's "clip of a partial window" is judged on runs that step: a step under a flag fixed for the
run (`if accelerator.state.deepspeed_plugin is None:`, where DeepSpeed steps inside backward) leaves a
clip's mark before the next backward only on runs where that optimizer never steps here."""

from __future__ import annotations

from gradcheck_lint.engine import analyse_text


def codes(text: str) -> set[tuple[int, str]]:
    return {(d.span.line, d.code) for d in analyse_text(text, "train.py").diagnostics}


ACCELERATE = """\
import torch
from accelerate import Accelerator

accelerator = Accelerator(gradient_accumulation_steps=4)
transformer = torch.nn.Linear(4, 4)
optimizer = torch.optim.AdamW(transformer.parameters())
transformer, optimizer = accelerator.prepare(transformer, optimizer)
for step, batch in enumerate(loader):
    with accelerator.accumulate(transformer):
        accelerator.backward(transformer(batch).mean())
        {clip_gate}
            accelerator.clip_grad_norm_(transformer.parameters(), 1.0)
        if accelerator.state.deepspeed_plugin is None:
            optimizer.step()
            optimizer.zero_grad()
"""


def test_a_clip_on_boundaries_with_the_step_under_a_run_flag_is_silent() -> None:
    # diffusers' CogVideoX LoRA examples
    assert codes(ACCELERATE.format(clip_gate="if accelerator.sync_gradients:")) == set()


def test_a_clip_on_every_micro_batch_with_the_step_under_a_run_flag_still_fires() -> None:
    assert (12, "GL007") in codes(ACCELERATE.format(clip_gate="if True:"))


PLAIN = """\
import torch

model = torch.nn.Linear(4, 4)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
N = 4
for i, x in enumerate(torch.randn(16, 2, 4)):
    (model(x).mean() / N).backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    if (i + 1) % N == 0:
        if {flag}:
            optimizer.step()
            optimizer.zero_grad()
"""


def test_a_clip_on_every_micro_batch_is_reported_whatever_flag_guards_the_step() -> None:
    for flag in ("args.use_step", "not args.deepspeed", "True"):
        assert (8, "GL007") in codes(PLAIN.format(flag=flag)), flag


EPOCH = """\
import torch


def train_one_epoch(model, loader, optimizer, scaler, grad_max_norm):
    for x, y in loader:
        optimizer.zero_grad()
        with torch.autocast("cuda"):
            loss = torch.nn.functional.mse_loss(model(x), y)
        scaler.scale(loss).backward()
{unscale}        torch.nn.utils.clip_grad_norm_(model.parameters(), grad_max_norm)
        scaler.step(optimizer)
        scaler.update()
"""


def test_a_clip_of_scaled_gradients_in_a_function_given_model_optimizer_and_scaler() -> None:
    # NCAR/miles-credit's trainers: everything comes in as parameters; the one optimizer updates the model
    assert (10, "GL007") in codes(EPOCH.format(unscale=""))
    assert codes(EPOCH.format(unscale="        scaler.unscale_(optimizer)\n")) == set()


KOHYA = """\
import torch

accelerator = train_util.prepare_accelerator(args)
optimizer = torch.optim.AdamW(unet.parameters())
unet, optimizer = accelerator.prepare(unet, optimizer)
for step, batch in enumerate(loader):
    with accelerator.accumulate(unet):
        accelerator.backward(unet(batch).mean())
        if {test}:
            accelerator.clip_grad_norm_(unet.parameters(), args.max_grad_norm)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
"""


def test_a_clip_on_the_boundary_and_a_flag_is_on_the_boundary() -> None:
    # kohya-ss/sd-scripts: `if accelerator.sync_gradients and args.max_grad_norm != 0.0:`
    assert codes(KOHYA.format(test="accelerator.sync_gradients and args.max_grad_norm != 0.0")) == set()
    assert (10, "GL007") in codes(KOHYA.format(test="args.max_grad_norm != 0.0"))


TIMM = """\
import torch
from timm.utils import NativeScaler

model = torch.nn.Linear(4, 2)
optimizer = torch.optim.AdamW(model.parameters())
loss_scaler = NativeScaler()
N = 4
for idx, x in enumerate(torch.randn(16, 3, 4)):
    loss = model(x).pow(2).mean() / N
    loss_scaler(loss, optimizer, clip_grad=1.0, parameters=model.parameters(), update_grad=(idx + 1) % N == 0)
    if (idx + 1) % N == 0:
        optimizer.zero_grad()
"""


def test_a_timm_loss_scaler_clips_only_when_it_steps() -> None:
    # InternImage, Swin, DeiT: `loss_scaler(..., clip_grad=..., update_grad=...)` unscales and clips on updates only
    assert not any(code == "GL007" for _line, code in codes(TIMM))


SAVED_SCALER = EPOCH.replace("        scaler.update()\n", "        scaler.update()\n    torch.save([scaler.state_dict(), optimizer.state_dict()], \"ckpt.pt\")\n")


def test_a_scaler_whose_state_is_saved_is_still_a_scaler() -> None:
    # miles-credit saves `scaler.state_dict()` with the checkpoint: a state_dict alone made it a model
    assert (10, "GL007") in codes(SAVED_SCALER.format(unscale=""))
    assert codes(SAVED_SCALER.format(unscale="        scaler.unscale_(optimizer)\n")) == set()


STEP_HELPER = """\
import torch


class Updater:
    def __init__(self, network, config):
        self.network = network
        self.optimizer = None  # built by create_optimizer()
        self._grad_clip = config.get("gradient_clip", 0.0)

    def create_optimizer(self):
        self.optimizer = self._create_optimizer()

    def _create_optimizer(self):
        cls = get_optimizer_class("adam")
        return cls(self.network.parameters(), lr=1e-3)

    def step(self, *, grad_scaler=None):
{unscale}        if self._grad_clip:
            torch.nn.utils.clip_grad_norm_(self.network.parameters(), self._grad_clip)
        if grad_scaler is not None:
            grad_scaler.step(self.optimizer)
            grad_scaler.update()
        else:
            self.optimizer.step()
"""


def test_a_clip_before_the_scaler_step_of_a_helper_whose_backward_is_elsewhere() -> None:
    """returnn's `Updater.step(grad_scaler=...)`: the scaled backward is in another file, so the file has no
    backward at all; the clip still sees the gradients `grad_scaler.step` unscales (GL007 at the clip). The
    optimizer is a `None` placeholder in `__init__`, built by another method."""
    assert codes(STEP_HELPER.format(unscale="")) == {(19, "GL007")}
    fixed = "        if grad_scaler is not None:\n            grad_scaler.unscale_(self.optimizer)\n"
    assert codes(STEP_HELPER.format(unscale=fixed)) == set()


def test_a_clip_before_the_scaler_step_is_not_judged_where_the_function_unscales_on_some_path() -> None:
    """HF Trainer's copies: `if self.do_grad_scaling: self.scaler.unscale_(...)` before the clip, the
    scaler's step under a later test of the same flag. With the backward out of sight it stays silent."""
    src = """\
import torch


class Trainer:
    def train(self, model, loader, args):
        for inputs in loader:
            self.training_step(model, inputs)
            if self.do_grad_scaling:
                self.scaler.unscale_(self.optimizer)
            if hasattr(self.optimizer, "clip_grad_norm"):
                self.optimizer.clip_grad_norm(args.max_grad_norm)
            else:
                torch.nn.utils.clip_grad_norm_(model.parameters(), args.max_grad_norm)
            if self.do_grad_scaling:
                self.scaler.step(self.optimizer)
                self.scaler.update()
            else:
                self.optimizer.step()
            model.zero_grad()
"""
    assert codes(src) == set()


def test_a_plain_backward_in_sight_then_a_clip_and_a_scaler_step_is_not_this_kind() -> None:
    """The gradients' backward is in sight and unscaled: the clip sees what it should (whatever the scaler
    then does to them is another matter), so no clip-before-scaler-step."""
    src = """\
import torch
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
scaler = torch.amp.GradScaler("cpu", enabled=False)
for x in torch.randn(8, 2, 4):
    opt.zero_grad()
    model(x).pow(2).mean().backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    scaler.step(opt)
    scaler.update()
"""
    assert codes(src) == set()
