"""Which optimizer's gradients a clip acts on (`AmpState.owners`), for GL007's clip of a partial window.

Three true GL007 of the sweep (Swin-Transformer's, SimMIM's, InternImage's training loops) were lost once
project reading read their optimizer builders: `amp.master_params(optimizer)` was read as no parameters
at all; a builder's `SGD(groups)` or `AdamW(groups)` on exclusive branches, of groups it could not read,
counted as two optimizers, so `model.parameters()` had no "one optimizer here" to belong to; and a DDP
communication hook (`fp16_compress_hook`) was taken for a hook that may step inside backward.
"""

from __future__ import annotations

from gradcheck_lint import check_source


def findings(text: str) -> list[tuple[int, str]]:
    return [(d.line, d.code) for d in check_source(text)]


MASTER_PARAMS = """\
import torch
from apex import amp


def train(model, data_loader, accum):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    model, optimizer = amp.initialize(model, optimizer, opt_level="O1")
    optimizer.zero_grad()
    for idx, (x, y) in enumerate(data_loader):
        loss = model(x, y) / accum
        with amp.scale_loss(loss, optimizer) as scaled_loss:
            scaled_loss.backward()
{clip_every}        if (idx + 1) % accum == 0:
{clip_at_step}            optimizer.step()
            optimizer.zero_grad()
"""

CLIP = "torch.nn.utils.clip_grad_norm_({params}, 1.0)\n"


def test_apex_master_params_are_the_parameters_the_optimizer_updates() -> None:
    clip = CLIP.format(params="amp.master_params(optimizer)")
    assert findings(MASTER_PARAMS.format(clip_every="        " + clip, clip_at_step="")) == [(13, "GL007")]
    assert findings(MASTER_PARAMS.format(clip_every="", clip_at_step="            " + clip)) == []


BUILDER = """\
import torch


def param_groups(model, lr):
    groups = {{}}
    for name, param in model.named_parameters():
        key = "decay" if param.ndim > 1 else "no_decay"
        if key not in groups:
            groups[key] = {{"params": [], "lr": lr}}
        groups[key]["params"].append(param)
    return list(groups.values())


def build_optimizer(name, model):
    optimizer = None
    if name == "sgd":
        optimizer = torch.optim.SGD(param_groups(model, 0.1), lr=0.1)
    elif name == "adamw":
        optimizer = torch.optim.AdamW(param_groups(model, 0.1), lr=0.1)
    return optimizer


def train(name, model, data_loader, accum):
    optimizer = build_optimizer(name, model)
    optimizer.zero_grad()
    for idx, (x, y) in enumerate(data_loader):
        loss = model(x, y) / accum
        loss.backward()
{clip_every}        if (idx + 1) % accum == 0:
{clip_at_step}            optimizer.step()
            optimizer.zero_grad()
"""


def test_a_builders_alternative_optimizers_are_one_optimizer_at_run_time() -> None:
    clip = CLIP.format(params="model.parameters()")
    assert findings(BUILDER.format(clip_every="        " + clip, clip_at_step="")) == [(29, "GL007")]
    assert findings(BUILDER.format(clip_every="", clip_at_step="            " + clip)) == []


TWO_OPTIMIZERS = """\
import torch


def train(model, opt_a, opt_b, data_loader, accum):
    for idx, (x, y) in enumerate(data_loader):
        loss = model(x, y) / accum
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        if (idx + 1) % accum == 0:
            opt_a.step()
            opt_a.zero_grad()
        opt_b.step()
        opt_b.zero_grad()
"""


def test_two_names_that_may_hold_different_optimizers_are_not_one() -> None:
    # handed in, of unknown parameters: which of the two the clipped model belongs to is not known
    assert [code for _, code in findings(TWO_OPTIMIZERS)].count("GL007") == 0


COMM_HOOK = """\
import torch
from torch.distributed.algorithms.ddp_comm_hooks.default_hooks import fp16_compress_hook


def train(model, data_loader, accum):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    model = torch.nn.parallel.DistributedDataParallel(model)
    model.register_comm_hook(state=None, hook=fp16_compress_hook)
    optimizer.zero_grad()
    for idx, (x, y) in enumerate(data_loader):
        with model.no_sync() if (idx + 1) % accum else contextlib.nullcontext():
            loss = model(x, y) / accum
            loss.backward()
{clip_every}        if (idx + 1) % accum == 0:
{clip_at_step}            optimizer.step()
            optimizer.zero_grad()
"""


def test_a_communication_hook_only_rescales_gradients_it_never_steps() -> None:
    text = "import contextlib\n" + COMM_HOOK
    clip = CLIP.format(params="model.parameters()")
    assert findings(text.format(clip_every="        " + clip, clip_at_step="")) == [(15, "GL007")]
    assert findings(text.format(clip_every="", clip_at_step="            " + clip)) == []


POST_ACCUMULATE = """\
import torch


def train(model, data_loader, accum):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for p in model.parameters():
        p.register_post_accumulate_grad_hook(step_hook)
    for idx, (x, y) in enumerate(data_loader):
        loss = model(x, y) / accum
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        if (idx + 1) % accum == 0:
            optimizer.step()
            optimizer.zero_grad()
"""


def test_a_hook_run_after_accumulation_may_still_step_inside_backward() -> None:
    # `step_hook` is out of sight: it may step each parameter as its gradient is accumulated
    assert [code for _, code in findings(POST_ACCUMULATE)].count("GL007") == 0
