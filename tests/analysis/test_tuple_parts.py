"""Elements of a tuple the analysis cannot split: each carries the forward pass that built the tuple
(GL009 sees a graph reused after a step), but only a loss-named element is taken for a graph kept
alive (GL008): `loss, hits = model(x)` and `obs, reward, done, info = env.step(action)` hold counts
and numbers too. And a loop over one accumulation window keeps at most one window's losses."""

from __future__ import annotations

import pytest

from gradcheck_lint import check_source

VAE = """\
import torch
from torch import nn
vae = nn.Linear(4, 4)
disc = nn.Linear(2, 2)
opt_vae = torch.optim.Adam(vae.parameters())
opt_d = torch.optim.Adam(disc.parameters())
for x in [torch.randn(3, 4) for _ in range(4)]:
    recon, z = vae(x).split(2, dim=1), None
    x_recon, mu, logvar, z = vae(x).unbind(0)
    d_z = disc(z)
    vae_loss = x_recon.mean() + d_z.mean()
    opt_vae.zero_grad()
    vae_loss.backward(retain_graph=True)
    opt_vae.step()
    d_loss = {d_loss}
    opt_d.zero_grad()
    d_loss.backward()
    opt_d.step()
"""


@pytest.mark.parametrize(("d_loss", "codes"), [("d_z.mean()", ["GL009"]), ("disc(z.detach()).mean()", [])])
def test_an_unpacked_element_carries_its_forward(d_loss: str, codes: list[str]) -> None:
    assert [d.code for d in check_source(VAE.format(d_loss=d_loss))] == codes


METRIC = """\
import torch
from torch import nn
model = nn.Linear(4, 3)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
def step(x, y):
    logits = model(x)
    return nn.functional.cross_entropy(logits, y), (logits.argmax(1) == y).sum()
total = 0
for x, y in [(torch.randn(2, 4), torch.tensor([0, 1])) for _ in range(3)]:
    {unpack}
    total += {kept}
    opt.zero_grad()
    loss.backward()
    opt.step()
"""


@pytest.mark.parametrize(
    ("unpack", "kept", "codes"),
    [
        ("loss, hits = step(x, y)", "hits", []),  # a count
        ("loss, hits = step(x, y)", "loss", ["GL008"]),  # the loss itself, kept over the epoch
        ("loss, hits = step(x, y); _, idx = model(x).max(1)", "(idx == y).sum()", []),  # indices
    ],
)
def test_only_a_loss_named_element_is_a_graph_kept_alive(unpack: str, kept: str, codes: list[str]) -> None:
    assert [d.code for d in check_source(METRIC.format(unpack=unpack, kept=kept))] == codes


WINDOW = """\
import torch
import deepspeed
from torch import nn
def forward_step(model, batch):
    x, y = batch
    out = model(x)
    return nn.functional.mse_loss(out, y), {{"mean": out.mean().item()}}
def train_step(args, data, model, losses):
{reset}    for _ in range(args.gradient_accumulation_steps):
        loss, metric_dict = forward_step(model, next(data))
        losses.append(loss)
        model.backward(loss)
        model.step()
    return losses
def train(args, net, data):
    model, optimizer, _, _ = deepspeed.initialize(model=net, model_parameters=net.parameters(), config=args.ds)
    losses = []
    for iteration in range(args.train_iters):
        losses = train_step(args, data, model, losses)
"""


@pytest.mark.parametrize(("reset", "codes"), [("    losses = []\n", []), ("", ["GL008"])])
def test_a_window_loop_keeps_one_windows_losses(reset: str, codes: list[str]) -> None:
    """gpt-neox's train_step: a list made afresh for each step holds one window's losses; a list the
    caller passes in and gets back grows over the whole run."""
    assert [d.code for d in check_source(WINDOW.format(reset=reset))] == codes


NO_SYNC_AROUND_BACKWARD = """\
import torch
from torch.nn.parallel import DistributedDataParallel as DDP
model = DDP(torch.nn.Linear(4, 4))
optimizer = torch.optim.AdamW(model.parameters())
N = 4
for i in range(100):
{outer}    if (i + 1) % N != 0:
        with model.no_sync():
{inner}            (loss / N).backward()
    else:
{inner_else}        (loss / N).backward()
        optimizer.step()
        optimizer.zero_grad()
"""
FORWARD = "_, loss = model(torch.randn(2, 4)).sum(0).unbind(0)\n"


@pytest.mark.parametrize(
    ("outer", "inner", "inner_else", "codes"),
    [
        # modded-nanogpt: the tuple's parts carry the forward's sync state; no_sync() around the backward only
        ("    " + FORWARD, "", "", [("GL006", 10)]),
        ("", "            " + FORWARD, "        " + FORWARD, []),
    ],
)
def test_the_parts_of_a_tuple_keep_the_forward_s_sync_state(outer: str, inner: str, inner_else: str, codes: list[tuple[str, int]]) -> None:
    src = NO_SYNC_AROUND_BACKWARD.format(outer=outer, inner=inner, inner_else=inner_else)
    assert [(d.code, d.span.line) for d in check_source(src)] == codes


TRAINER_WITHOUT_STEP = """\
import torch


class FinetuneTrainer(BaseTrainer):
    def _train_forward(self, batch):
        loss, log = self.model(batch)
        return loss, log

    def _forward_backward(self):
        for micro in range(self.grad_accum):
            batch = next(self.loader)
{body}

    def _backward_loss(self, loss, sync_grads):
        loss = loss / self.grad_accum
        if not sync_grads:
            with self.model.no_sync():
                loss.backward()
        else:
            loss.backward()
"""


def test_no_sync_around_the_backward_only_in_a_trainer_whose_step_is_elsewhere() -> None:
    """LoongForge's fine-tune trainer: the optimizer steps in the base class (another file), `self.model` is
    wrapped out of sight, the forward runs in one method and `no_sync()` wraps only the backward in another:
    GL006 (too late), found in a file with a backward and a sync switch but no step."""
    late = TRAINER_WITHOUT_STEP.format(body="            loss, log = self._train_forward(batch)\n"
                                            "            self._backward_loss(loss, micro == self.grad_accum - 1)")
    assert [(d.code, d.span.line) for d in check_source(late)] == [("GL006", 19)]
    assert "`self.model`" in check_source(late)[0].message
    early = TRAINER_WITHOUT_STEP.format(body="            if micro < self.grad_accum - 1:\n"
                                             "                with self.model.no_sync():\n"
                                             "                    loss, log = self._train_forward(batch)\n"
                                             "                    (loss / self.grad_accum).backward()\n"
                                             "            else:\n"
                                             "                loss, log = self._train_forward(batch)\n"
                                             "                (loss / self.grad_accum).backward()")
    assert [d.code for d in check_source(early)] == []


def test_a_model_built_in_init_whose_sync_the_code_switches_is_a_wrapper() -> None:
    """`self.model = build_model(cfg)` in `__init__` (wrapped for data parallelism by code out of sight), then
    `with self.model.no_sync(): loss.backward()` after a forward outside it: GL006 (too late)."""
    src = """\
import torch


class Trainer(BaseTrainer):
    def __init__(self, cfg):
        self.model = build_model(cfg)

    def _forward_backward(self):
        for micro in range(self.grad_accum):
            loss = self.model(next(self.loader)) / self.grad_accum
            if micro < self.grad_accum - 1:
                with self.model.no_sync():
                    loss.backward()
            else:
                loss.backward()
"""
    assert [(d.code, d.span.line) for d in check_source(src)] == [("GL006", 13)]
