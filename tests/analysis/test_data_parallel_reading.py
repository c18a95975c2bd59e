"""How models wrapped for data parallelism are read (GL006), from the code that met them first:
a parameter list grown with `+=` (NVIDIA's BERT distillation), a list of parts that grows with
`append` before `accelerator.prepare(*parts)` (pytorch-accelerated), and a sync context chosen into a
variable before it is entered (magvit2, FunASR)."""

from __future__ import annotations

from gradcheck_lint.engine import analyse_text


def found(text: str) -> list[tuple[int, str]]:
    return sorted((d.span.line, d.code) for d in analyse_text(text, "train.py").diagnostics)


DISTILL = """\
import torch
from torch.nn.parallel import DistributedDataParallel as DDP

student = DDP(torch.nn.Linear(4, 4))
project = DDP(torch.nn.Linear(4, 4))
params = list(student.named_parameters())
if train_project:
    params {grow} list(project.named_parameters())
optimizer = torch.optim.AdamW([p for n, p in params])
for step, x in enumerate(loader):
    loss = project(student(x)).sum() / 4
    loss.backward()
    if (step + 1) % 4 == 0:
        optimizer.step()
        optimizer.zero_grad()
"""


def test_a_parameter_list_grown_with_plus_equals_is_owned_by_the_optimizer() -> None:
    # both wrappers' parameters are the optimizer's: the backward all-reduces for its window
    assert found(DISTILL.format(grow="+=")) == [(12, "GL006")]


PARTS = """\
import torch
from accelerate import Accelerator

accelerator = Accelerator()
model = torch.nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
parts = [model, optimizer]
if loader is not None:
    parts.append(loader)
prepared = accelerator.prepare(*parts)
model, optimizer = prepared[0], prepared[1]
for step, x in enumerate(loader):
    accelerator.backward(model(x).sum() / 4)
    if (step + 1) % 4 == 0:
        optimizer.step()
        optimizer.zero_grad()
"""


def test_appending_to_a_list_of_modules_is_no_forward_pass_and_keeps_its_parts() -> None:
    assert found(PARTS) == [(13, "GL006")]


CHOSEN = """\
from contextlib import nullcontext
from functools import partial
import torch
from accelerate import Accelerator

accelerator = Accelerator()
model = torch.nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
model, optimizer = accelerator.prepare(model, optimizer)
for batch in loader:
    for k in range(4):
        {choose}
        with context():
            accelerator.backward(model(batch[k]).sum() / 4)
    optimizer.step()
    optimizer.zero_grad()
"""


def test_a_sync_context_chosen_with_partial_is_entered_where_it_is_called() -> None:
    assert found(CHOSEN.format(choose="context = partial(accelerator.no_sync, model) if k < 3 else nullcontext")) == []


def test_a_partial_of_anything_else_switches_nothing() -> None:
    assert found(CHOSEN.format(choose="context = partial(print, model) if k < 3 else nullcontext")) == [(14, "GL006")]


DDP_CHOSEN = """\
from contextlib import nullcontext
import torch
from torch.nn.parallel import DistributedDataParallel as DDP

model = DDP(torch.nn.Linear(4, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for step, x in enumerate(loader):
    context = nullcontext
    if {test}:
        context = model.no_sync
    with context():
        (model(x).sum() / 4).backward()
    if (step + 1) % 4 == 0:
        optimizer.step()
        optimizer.zero_grad()
"""


def test_a_bound_no_sync_chosen_on_some_paths_only_is_off_on_some_micro_batches() -> None:
    assert found(DDP_CHOSEN.format(test="(step + 1) % 4 != 0")) == []


def test_without_the_choice_the_wrapper_syncs_on_every_micro_batch() -> None:
    assert found(DDP_CHOSEN.replace("        context = model.no_sync\n", "        context = nullcontext\n").format(test="(step + 1) % 4 != 0")) == [(12, "GL006")]


HF_CHOSEN = """\
import contextlib
import torch
from accelerate import Accelerator
from transformers import AutoModelForCausalLM

accelerator = Accelerator()
model = AutoModelForCausalLM.from_pretrained("gpt2")
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
model, optimizer = accelerator.prepare(model, optimizer)
for batch_samples in loader:
    for i, batch in enumerate(batch_samples):
        ctx = {choice}
        with ctx():
            outputs = model(**batch)
            accelerator.backward(outputs.loss / len(batch_samples))
    optimizer.step()
    optimizer.zero_grad()
"""


def test_a_prepared_library_model_has_the_wrappers_no_sync_and_its_outputs_keep_the_sync_state() -> None:
    # accelerate's gradient_accumulation_for_autoregressive_models.py: `model.no_sync` of a prepared
    # transformers model, chosen for all micro-batches but the last; `outputs.loss` keeps the forward's sync
    chosen = "model.no_sync if i < len(batch_samples) - 1 else contextlib.nullcontext"
    assert found(HF_CHOSEN.format(choice=chosen)) == []
    assert found(HF_CHOSEN.format(choice="contextlib.nullcontext")) == [(15, "GL006")]


DREAMBOOTH = """\
import torch
from accelerate import Accelerator

accelerator = Accelerator(gradient_accumulation_steps=args.gradient_accumulation_steps)
{guard}
unet, text_encoder = torch.nn.Linear(4, 4), torch.nn.Linear(4, 4)
params = list(unet.parameters()) + list(text_encoder.parameters())
optimizer = torch.optim.AdamW(params)
unet, text_encoder, optimizer = accelerator.prepare(unet, text_encoder, optimizer)
for batch in loader:
    with accelerator.accumulate(unet):
        loss = unet(text_encoder(batch)).pow(2).mean()
        accelerator.backward(loss)
        optimizer.step()
        optimizer.zero_grad()
"""

GUARD = """\
if args.train_text_encoder and args.gradient_accumulation_steps > 1 and accelerator.num_processes > 1:
    raise ValueError("Gradient accumulation is not supported when training the text encoder in distributed training.")
"""


def test_a_script_that_refuses_the_configuration_is_not_told_about_it() -> None:
    # diffusers' and peft's DreamBooth scripts: only `unet` goes to `accumulate`, and the script raises
    # before training the text encoder with accumulation on several processes
    assert found(DREAMBOOTH.format(guard=GUARD)) == []
    assert found(DREAMBOOTH.format(guard="")) == [(13, "GL006")]


HANDED_IN = """\
import torch
from accelerate import Accelerator

accelerator = Accelerator(gradient_accumulation_steps=4)
unet = torch.nn.Linear(4, 1)
optimizer = torch.optim.AdamW(unet.parameters())
unet, optimizer = accelerator.prepare(unet, optimizer)


def train_func(model):
    for batch in loader:
        with accelerator.accumulate(model):
            loss = {forward}(batch).pow(2).mean()
            accelerator.backward(loss)
            optimizer.step()
            optimizer.zero_grad()


train_func(unet)
"""


def test_an_accumulation_context_of_a_model_handed_in_may_cover_any_prepared_model() -> None:
    # diffusers' textual_inversion_dfq: `train_func(model)` accumulates `model`, which is `unet` when
    # called, and runs `unet_ = model` (here: `unet` itself). Nothing says which model it was given.
    assert found(HANDED_IN.format(forward="unet")) == []


UNWRAPPED = """\
import torch
from accelerate import Accelerator

accelerator = Accelerator(gradient_accumulation_steps=4)
vae = torch.nn.Linear(4, 4)
optimizer = torch.optim.AdamW(vae.parameters())
vae, optimizer = accelerator.prepare(vae, optimizer)
for batch in loader:
    out = {forward}(batch)
    with accelerator.accumulate(vae):
        accelerator.backward(out.pow(2).mean())
        optimizer.step()
        optimizer.zero_grad()
"""


def test_a_forward_of_the_unwrapped_module_runs_no_ddp_forward() -> None:
    # diffusers' AutoencoderKL script: `accelerator.unwrap_model(vae).encode(...)` before the context. The
    # bare module's forward never syncs (no GL006 claim of late communication; its gradients are then not
    # averaged across processes at all, which is another problem than GL006's)
    assert found(UNWRAPPED.format(forward="accelerator.unwrap_model(vae)")) == []
    assert found(UNWRAPPED.format(forward="vae")) == [(11, "GL006")]
