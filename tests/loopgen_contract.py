"""Generated programs for GL006-GL010, each with a bug-free twin, for differential testing.

The same idea as `loopgen` (a frozen spec rendered to a small float64 training program, a verdict
derived from the spec, a reference written with `torch.autograd.grad`), for the rules beyond the
accumulation contract:

- `AmpClip` (GL007): fp32 or a CPU `GradScaler`, a clip (`clip_grad_norm_` / `clip_grad_value_`) at
  the step or on every micro-batch, `scaler.unscale_(opt)` right before the clip or in the step's block,
  `scaler.step(opt)` or a plain `opt.step()` that bypasses the scaler; the clip spelled through
  `torch.nn.utils` or imported by name. The reference clips the window's mean gradient and steps on
  it. Unscaling on every micro-batch raises at the second `unscale_`. A norm clip at the step of scaled
  gradients then applied by a bypassing `opt.step()` cuts them to the reference's norm: its numbers are
  not compared.
- `KeptLoss` (GL008): the loss kept across iterations in a running total (`+=` or `= ... +`), a list or
  a dict of lists, as the tensor (or `loss * x.size(0)`), `.item()` or `.detach()`, over the run or
  made afresh in each epoch; the last loss only; micro-batch losses summed on purpose for one backward. GL008 is about memory: the numbers are the reference's in every
  program, and the rule's verdict comes from the static analyzer and the guard alone.
- `StaleGan` (GL009): a GAN whose second backward goes through a forward pass made before the first
  model's step (D's output on the fakes reused after `opt_D.step()` with `retain_graph=True`, or the
  un-detached fakes reused after `opt_G.step()`), against recomputing or detaching. PyTorch raises its
  in-place error on the bug, so the numeric verdict of a buggy program is that error; the guard's is
  the GL009 it adds.
- `DoubleScaling` (GL010): a loss divided by an accumulation count (named `accumulation_steps`,
  `grad_accum`, `update_freq`, `gradient_accumulation_steps`) when the optimizer steps after every
  backward (static only: the guard cannot tell such a division from a loss weight, as the rule's
  fixtures say), or when Accelerate's `accelerator.backward` divides by its window too (1/N², seen by
  both), against the undivided twins; and the loops that accumulate by hand (plain, or through an
  Accelerator built without a window, whose backward divides nothing), where the division is required
  (GL003 without it).

- `DdpAccum` (GL006): one model wrapped in DDP on a one-process gloo group that the program makes and
  destroys itself (a file rendezvous, as `tests/test_runtime_monitors.py` does), accumulating with no
  sync control, under `no_sync()` around forward and backward (correct) or around the backward only
  (too late: DDP decides at forward time), or through `require_backward_grad_sync` set before the
  forward (correct) or after it (too late). One rank: the numbers are the reference's in every program.
  The two-rank check against the all-reduces DDP really makes is `tests/ddp_worker.py`. The grammar's
  other GL006 is static only: the hand-accumulated loop through a model Accelerate prepared (DDP when
  launched on several processes; a plain module on the one process the runtime side runs here).
"""

from __future__ import annotations

import itertools
import textwrap
from dataclasses import dataclass
from typing import Any, Literal

from hypothesis import strategies as st

from loopgen import GAN_SETUP, LR, SINGLE_SETUP, Verdict

Style = Literal["script", "function", "trainer"]

# the single-model programs' set-up, with the window's name and size free (`accum_iter = 3`)
SETUP = SINGLE_SETUP.replace("accum = {accum}", "{n_name} = {n}")
MAX_NORM, CLIP_VALUE = 0.05, 0.02  # small enough to bind on these gradients, so a misplaced clip shows


def _mean_gradient_steps(ns: dict[str, Any], window: int, clip: str = "none") -> None:
    """Train `ns['model']` as intended: one SGD step per window on the (clipped) mean of its gradients."""
    import torch

    model, criterion, batches = ns["model"], ns["criterion"], ns["batches"]
    params = list(model.parameters())
    for k in range(0, len(batches), window):
        total = [torch.zeros_like(p) for p in params]
        for x, y in batches[k:k + window]:
            grads = torch.autograd.grad(criterion(model(x), y), params)
            total = [t + g / window for t, g in zip(total, grads)]
        if clip == "norm":
            norm = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g) for g in total]))
            coef = torch.clamp(MAX_NORM / (norm + 1e-6), max=1.0)
            total = [g * coef for g in total]
        elif clip == "value":
            total = [g.clamp(-CLIP_VALUE, CLIP_VALUE) for g in total]
        with torch.no_grad():
            for p, g in zip(params, total):
                p -= LR * g


def _in_style(style: str, setup: str, body: list[str], names: dict[str, str], init: list[str] | None = None) -> str:
    """Put a loop body written with `{model}`, `{opt}`, `{n}`, ... placeholders into a script, a
    function `train(...)` or a `Trainer.fit` method (whose `__init__` also runs `init`)."""
    if style == "script":
        sub = {k: k if k != "n" else names["n"] for k in names}
        return setup + "\n" + "\n".join(ln.format(**sub, self="") for ln in (init or []) + body) + "\n"
    if style == "function":
        sub = {k: {"model": "net", "opt": "optimizer"}.get(k, names[k] if k == "n" else k) for k in names}
        params = ", ".join(["net", "optimizer", "batches", names["n"]] + [k for k in names if k not in ("model", "opt", "n")])
        args = ", ".join(["model", "opt", "batches", names["n"]] + [k for k in names if k not in ("model", "opt", "n")])
        text = "\n".join(ln.format(**sub, self="") for ln in (init or []) + body)
        return setup + f"\n\ndef train({params}):\n" + textwrap.indent(text, "    ") + f"\n\n\ntrain({args})\n"
    sub = {k: f"self.{k if k != 'n' else names['n']}" for k in names}
    members = [k for k in names if k != "n"] + [names["n"]]
    init_lines = [f"self.{m} = {m}" for m in members] + [ln.format(**sub, self="self.") for ln in init or []]
    text = "\n".join(ln.format(**sub, self="self.") for ln in body)
    return (setup + f"\n\nclass Trainer:\n    def __init__(self, {', '.join(members)}):\n"
            + textwrap.indent("\n".join(init_lines), "        ") + "\n\n    def fit(self, batches):\n"
            + textwrap.indent(text, "        ") + f"\n\n\nTrainer({', '.join(members)}).fit(batches)\n")


def _window_loop(n: int, body: list[str], step: list[str]) -> list[str]:
    """A loop over `batches` running `body` per micro-batch and `step` on every n-th."""
    if n == 1:
        return ["for x, y in batches:", *("    " + ln for ln in body + step)]
    return ["for i, (x, y) in enumerate(batches):", *("    " + ln for ln in body),
            "    if (i + 1) % {n} == 0:", *("        " + ln for ln in step)]


# -- GL007: GradScaler, clipping and the order of the two --------------------------------------------
@dataclass(frozen=True)
class AmpClip:
    """One model, fp32 or under a CPU GradScaler, with or without a clip, accumulating or not."""

    amp: bool
    accum: int  # 1: a step per batch
    clip: Literal["none", "boundary", "every_micro_batch"]
    clip_fn: Literal["norm", "value"]
    unscale: Literal["none", "at_clip", "at_step"]  # at_clip: right before the clip, on every micro-batch
    step: Literal["scaler", "bypass"]  # bypass: `opt.step()` on the scaler's gradients
    style: Literal["script", "function"]
    spelling: Literal["torch", "from_import"] = "torch"  # `torch.nn.utils.clip_grad_norm_` or `clip_grad_norm_`

    kind = "amp_clip"
    compared = ("model",)

    def verdict(self) -> Verdict:
        codes: set[str] = set()
        raises = ""
        if self.clip == "every_micro_batch":
            codes.add("GL007")  # a clip of a partial window, more gradients added after it
        if self.amp:
            if self.unscale == "at_clip" and self.clip == "every_micro_batch":
                codes.add("GL007")  # a second unscale_ before the step: PyTorch refuses it
                raises = "unscale_() has already been called"
            if self.clip != "none" and (self.unscale == "none" or (self.unscale == "at_step" and self.clip == "every_micro_batch")):
                codes.add("GL007")  # the clip sees gradients still multiplied by the scale
            if self.step == "bypass":
                codes.add("GL007")
        # a norm clip of scaled gradients applied without unscaling cuts them to the same max_norm as
        # the reference's clip: the numbers may agree (but for clip_grad_norm_'s 1e-6 in the divisor)
        same_as_reference = self.step == "bypass" and self.clip == "boundary" and self.clip_fn == "norm"
        return Verdict(frozenset(codes), raises=raises, numbers="any" if same_as_reference else "as_buggy")

    def render(self) -> str:
        setup = SETUP.format(lr=LR, k=3 * self.accum if self.accum > 1 else 4, n_name="accum", n=self.accum)
        if self.amp:
            setup += 'scaler = torch.amp.GradScaler("cpu")\n'
        clip_fn = f"clip_grad_{self.clip_fn}_"
        if self.spelling == "from_import" and self.clip != "none":
            setup = setup.replace("import torch\n", f"import torch\nfrom torch.nn.utils import {clip_fn}\n", 1)
        clip = (clip_fn if self.spelling == "from_import" else f"torch.nn.utils.{clip_fn}") + "({model}.parameters(), " + (
            f"max_norm={MAX_NORM})" if self.clip_fn == "norm" else f"clip_value={CLIP_VALUE})")
        unscale = ["{scaler}.unscale_({opt})"]
        body = ["loss = criterion({model}(x), y)" + (" / {n}" if self.accum > 1 else "")]
        body.append("{scaler}.scale(loss).backward()" if self.amp else "loss.backward()")
        if self.clip == "every_micro_batch":
            body += (unscale if self.unscale == "at_clip" else []) + [clip]
        step = unscale if self.unscale == "at_step" else []
        step += [clip] if self.clip == "boundary" else []
        step += ["{scaler}.step({opt})", "{scaler}.update()"] if self.amp and self.step == "scaler" else ["{opt}.step()"]
        step.append("{opt}.zero_grad()")
        names = {"model": "", "opt": "", "n": "accum"} | ({"scaler": ""} if self.amp else {})
        return _in_style(self.style, setup, _window_loop(self.accum, body, step), names)

    def setup_source(self) -> str:
        return SETUP.format(lr=LR, k=3 * self.accum if self.accum > 1 else 4, n_name="accum", n=self.accum)

    def reference(self, ns: dict[str, Any]) -> None:
        _mean_gradient_steps(ns, self.accum, self.clip_fn if self.clip != "none" else "none")

    def describe(self) -> str:
        return (f"amp_clip(amp={self.amp}, accum={self.accum}, clip={self.clip}/{self.clip_fn}, unscale={self.unscale}, "
                f"step={self.step}, style={self.style}, spelling={self.spelling})")


def _valid_amp_clip(s: AmpClip) -> bool:
    if not s.amp and (s.unscale != "none" or s.step != "scaler"):
        return False
    if s.clip == "none" and (s.clip_fn != "norm" or s.unscale == "at_clip" or s.spelling != "torch"):
        return False
    if s.clip == "every_micro_batch" and s.accum == 1:
        return False  # the same program as a clip at the step
    if s.unscale == "at_clip" and s.clip != "every_micro_batch":
        return False  # at the step it is "at_step"
    # bypass after an unscale_: without scaler.update() the next unscale_ raises, a loud bug, not this one
    return s.step != "bypass" or s.unscale == "none"


amp_clips = st.builds(
    AmpClip, amp=st.booleans(), accum=st.sampled_from([1, 2, 3]),
    clip=st.sampled_from(["none", "boundary", "every_micro_batch"]), clip_fn=st.sampled_from(["norm", "value"]),
    unscale=st.sampled_from(["none", "at_clip", "at_step"]), step=st.sampled_from(["scaler", "bypass"]),
    style=st.sampled_from(["script", "function"]), spelling=st.sampled_from(["torch", "from_import"]),
).filter(_valid_amp_clip)


# -- GL008: a loss kept alive across iterations -------------------------------------------------------
@dataclass(frozen=True)
class KeptLoss:
    """One model whose loop keeps its losses somewhere, as tensors or as values."""

    keep: Literal["total_augassign", "total_assign", "list", "dict", "last", "window_sum"]
    form: Literal["tensor", "weighted", "item", "detach"]  # weighted: `loss * x.size(0)`, a tensor too
    accum: int
    style: Style
    epochs: int = 1  # more than one: an epoch loop around the batches, the accumulator made afresh in each

    kind = "kept_loss"
    compared = ("model",)

    def verdict(self) -> Verdict:
        kept = self.keep in ("total_augassign", "total_assign", "list", "dict") and self.form in ("tensor", "weighted")
        return Verdict(frozenset({"GL008"} if kept else set()), numbers="same")

    def render(self) -> str:
        setup = SETUP.format(lr=LR, k=6 * self.accum, n_name="accum", n=self.accum)
        names = {"model": "", "opt": "", "n": "accum"}
        if self.keep == "window_sum":
            body = ["for k in range(0, len(batches), {n}):", "    window_loss = 0.0",
                    "    for x, y in batches[k:k + {n}]:",
                    "        window_loss = window_loss + criterion({model}(x), y) / {n}",
                    "    {opt}.zero_grad()", "    window_loss.backward()", "    {opt}.step()"]
            return _in_style(self.style, setup, self._in_epochs([], body), names)
        value = {"tensor": "loss", "weighted": "loss * x.size(0)", "item": "loss.item()", "detach": "loss.detach()"}[self.form]
        init, store = {
            "total_augassign": (["{self}running = 0.0"], "{self}running += " + value),
            "total_assign": (["{self}running = 0.0"], "{self}running = {self}running + " + value),
            "list": (["{self}losses = []"], "{self}losses.append(" + value + ")"),
            "dict": (['{self}history = {{"loss": []}}'], '{self}history["loss"].append(' + value + ")"),
            "last": ([], "{self}last = " + value),
        }[self.keep]
        if self.accum == 1:
            body = ["{opt}.zero_grad()", "loss = criterion({model}(x), y)", "loss.backward()", "{opt}.step()", store]
            loop = ["for x, y in batches:", *("    " + ln for ln in body)]
        else:
            loop = _window_loop(self.accum, ["loss = criterion({model}(x), y) / {n}", "loss.backward()"],
                                ["{opt}.step()", "{opt}.zero_grad()"]) + ["    " + store]
        if self.epochs > 1:
            return _in_style(self.style, setup, self._in_epochs(init, loop), names)
        if self.style == "trainer":
            return _in_style(self.style, setup, loop, names, init)
        return _in_style(self.style, setup, init + loop, names)

    def _in_epochs(self, init: list[str], loop: list[str]) -> list[str]:
        if self.epochs == 1:
            return init + loop
        return [f"for epoch in range({self.epochs}):", *("    " + ln for ln in init + loop)]

    def setup_source(self) -> str:
        return SETUP.format(lr=LR, k=6 * self.accum, n_name="accum", n=self.accum)

    def reference(self, ns: dict[str, Any]) -> None:
        for _epoch in range(self.epochs):
            _mean_gradient_steps(ns, self.accum)

    def describe(self) -> str:
        return f"kept_loss(keep={self.keep}, form={self.form}, accum={self.accum}, style={self.style}, epochs={self.epochs})"


def _valid_kept_loss(s: KeptLoss) -> bool:
    if s.keep in ("last", "window_sum") and s.form != "tensor":
        return False  # a value, not a tensor: nothing to keep alive
    return s.keep != "window_sum" or s.accum > 1


kept_losses = st.builds(
    KeptLoss, keep=st.sampled_from(["total_augassign", "total_assign", "list", "dict", "last", "window_sum"]),
    form=st.sampled_from(["tensor", "weighted", "item", "detach"]), accum=st.sampled_from([1, 2]),
    style=st.sampled_from(["script", "function", "trainer"]), epochs=st.sampled_from([1, 2]),
).filter(_valid_kept_loss)


# -- GL009: a backward through a forward pass made before a step --------------------------------------
@dataclass(frozen=True)
class StaleGan:
    """A GAN iteration whose second backward may go through a graph the first model's step changed."""

    d_first: bool
    stale: bool  # D first: g_loss reuses `d_fake` from before opt_D.step(); G first: d_loss goes through
    # the un-detached `fake` made before opt_G.step()
    shared: bool  # D first: d_loss is built on the shared `d_fake = D(fake)` (backward with retain_graph)
    style: Style

    kind = "stale_gan"
    compared = ("G", "D")
    iterations = 3

    def verdict(self) -> Verdict:
        if self.stale:
            return Verdict(frozenset({"GL009"}), raises="modified by an inplace operation")
        return Verdict(frozenset())

    def _steps(self, G: str, D: str, opt_G: str, opt_D: str) -> list[str]:
        if self.d_first:
            fake_term = "d_fake" if self.shared else f"{D}(fake.detach())"
            return [
                f"fake = {G}(z)",
                *([f"d_fake = {D}(fake)"] if self.shared or self.stale else []),
                f"{opt_D}.zero_grad()",
                f"d_loss = F.softplus(-{D}(real)).mean() + F.softplus({fake_term}).mean()",
                "d_loss.backward(retain_graph=True)" if self.shared else "d_loss.backward()",
                f"{opt_D}.step()",
                f"{opt_G}.zero_grad()",
                f"g_loss = F.softplus(-{'d_fake' if self.stale else f'{D}(fake)'}).mean()",
                "g_loss.backward()",
                f"{opt_G}.step()",
            ]
        return [
            f"fake = {G}(z)",
            f"{opt_G}.zero_grad()",
            f"g_loss = F.softplus(-{D}(fake)).mean()",
            "g_loss.backward(retain_graph=True)" if self.stale else "g_loss.backward()",
            f"{opt_G}.step()",
            f"{opt_D}.zero_grad()",
            f"d_loss = F.softplus(-{D}(real)).mean() + F.softplus({D}({'fake' if self.stale else 'fake.detach()'})).mean()",
            "d_loss.backward()",
            f"{opt_D}.step()",
        ]

    def render(self) -> str:
        setup = self.setup_source()
        if self.style == "script":
            body = self._steps("G", "D", "opt_G", "opt_D")
            return setup + "\nfor real, z in zip(reals, noises):\n" + textwrap.indent("\n".join(body), "    ") + "\n"
        if self.style == "function":
            body = self._steps("gen", "disc", "g_optimizer", "d_optimizer")
            return (setup + "\n\ndef train(gen, disc, g_optimizer, d_optimizer):\n    for real, z in zip(reals, noises):\n"
                    + textwrap.indent("\n".join(body), "        ") + "\n\n\ntrain(G, D, opt_G, opt_D)\n")
        body = self._steps("self.G", "self.D", "self.opt_G", "self.opt_D")
        return (setup + "\n\nclass GANTrainer:\n    def __init__(self, G, D, opt_G, opt_D):\n        self.G, self.D = G, D\n"
                "        self.opt_G, self.opt_D = opt_G, opt_D\n\n    def train_step(self, real, z):\n"
                + textwrap.indent("\n".join(body), "        ")
                + "\n\n    def fit(self):\n        for real, z in zip(reals, noises):\n            self.train_step(real, z)\n"
                "\n\nGANTrainer(G, D, opt_G, opt_D).fit()\n")

    def setup_source(self) -> str:
        return GAN_SETUP.format(lr=LR, n=self.iterations)

    def reference(self, ns: dict[str, Any]) -> None:
        """Each model steps on its own loss; the fakes of an iteration are made once, before either step."""
        import torch
        import torch.nn.functional as F

        G, D = ns["G"], ns["D"]

        def update(params: list[Any], loss: Any) -> None:
            grads = torch.autograd.grad(loss, params)
            with torch.no_grad():
                for p, g in zip(params, grads):
                    p -= LR * g

        for real, z in zip(ns["reals"], ns["noises"]):
            fake = G(z).detach()
            if self.d_first:
                update(list(D.parameters()), F.softplus(-D(real)).mean() + F.softplus(D(fake)).mean())
                update(list(G.parameters()), F.softplus(-D(G(z))).mean())
            else:
                update(list(G.parameters()), F.softplus(-D(G(z))).mean())
                update(list(D.parameters()), F.softplus(-D(real)).mean() + F.softplus(D(fake)).mean())

    def describe(self) -> str:
        return f"stale_gan(d_first={self.d_first}, stale={self.stale}, shared={self.shared}, style={self.style})"


def _valid_stale_gan(s: StaleGan) -> bool:
    return s.d_first or not s.shared


stale_gans = st.builds(
    StaleGan, d_first=st.booleans(), stale=st.booleans(), shared=st.booleans(),
    style=st.sampled_from(["script", "function", "trainer"]),
).filter(_valid_stale_gan)


# -- GL010: a loss divided by a window nothing accumulates over, or divided twice ---------------------
@dataclass(frozen=True)
class DoubleScaling:
    """A loss divided (or not) by an accumulation count, in a loop that does or does not accumulate."""

    # accelerate: Accelerator(gradient_accumulation_steps=N) and accumulate(); accelerate_manual: an
    # Accelerator without a window (its backward divides nothing), the loop's own `if (i + 1) % N == 0:`
    loop: Literal["every_step", "window", "accelerate", "accelerate_manual"]
    divided: bool
    division: Literal["assign", "inline", "criterion", "augassign"]
    divisor: Literal["accumulation_steps", "grad_accum", "update_freq", "gradient_accumulation_steps"]
    accum: int
    style: Style

    kind = "double_scaling"
    compared = ("model",)

    def verdict(self) -> Verdict:
        if self.loop == "accelerate_manual":
            # the prepared model is DDP on several processes, and nothing switches its sync off (GL006, static
            # only: on one process nothing all-reduces for the guard to count)
            return Verdict(frozenset({"GL006"}) | (frozenset() if self.divided else frozenset({"GL003"})), blind=frozenset({"GL006"}),
                           numbers="same" if self.divided else "as_buggy")  # GL006 costs communication, not numbers
        if self.loop == "window":
            return Verdict(frozenset() if self.divided else frozenset({"GL003"}))
        if not self.divided:
            return Verdict(frozenset())
        # dividing with no accumulation is static only: the guard cannot tell it from a loss weight
        return Verdict(frozenset({"GL010"}), blind=frozenset({"GL010"}) if self.loop == "every_step" else frozenset())

    def render(self) -> str:
        setup = self.setup_source()
        names = {"model": "", "opt": "", "n": self.divisor}
        divide = self.divided
        loss = "loss = criterion({model}(x), y)" + (" / {n}" if divide and self.division == "criterion" else "")
        body = [loss]
        if divide and self.division == "assign":
            body.append("loss = loss / {n}")
        elif divide and self.division == "augassign":
            body.append("loss /= {n}")
        backward_of = "loss / {n}" if divide and self.division == "inline" else "loss"
        if self.loop.startswith("accelerate"):
            window = f"gradient_accumulation_steps={self.divisor}, " if self.loop == "accelerate" else ""
            setup = setup.replace("import torch\n", "import torch\nfrom accelerate import Accelerator\n", 1)
            setup += f"accelerator = Accelerator({window}cpu=True)\nmodel, opt = accelerator.prepare(model, opt)\n"
            names["accelerator"] = ""
            backward = f"{{accelerator}}.backward({backward_of})"
            if self.loop == "accelerate_manual":
                return _in_style(self.style, setup, _window_loop(self.accum, [*body, backward], ["{opt}.step()", "{opt}.zero_grad()"]), names)
            inner = [*body, backward, "{opt}.step()", "{opt}.zero_grad()"]
            loop = ["for x, y in batches:", "    with {accelerator}.accumulate({model}):", *("        " + ln for ln in inner)]
            return _in_style(self.style, setup, loop, names)
        body.append(f"({backward_of}).backward()" if backward_of != "loss" else "loss.backward()")
        if self.loop == "every_step":
            loop = _window_loop(1, ["{opt}.zero_grad()", *body], ["{opt}.step()"])
        else:
            loop = _window_loop(self.accum, body, ["{opt}.step()", "{opt}.zero_grad()"])
        return _in_style(self.style, setup, loop, names)

    def setup_source(self) -> str:
        return SETUP.format(lr=LR, k=3 * self.accum, n_name=self.divisor, n=self.accum)

    def reference(self, ns: dict[str, Any]) -> None:
        _mean_gradient_steps(ns, 1 if self.loop == "every_step" else self.accum)

    def describe(self) -> str:
        return (f"double_scaling(loop={self.loop}, divided={self.divided}, division={self.division}, "
                f"divisor={self.divisor}, accum={self.accum}, style={self.style})")


def _valid_double_scaling(s: DoubleScaling) -> bool:
    if not s.divided and s.division != "assign":
        return False
    return not (s.loop.startswith("accelerate") and s.style == "trainer")


double_scalings = st.builds(
    DoubleScaling, loop=st.sampled_from(["every_step", "window", "accelerate", "accelerate_manual"]), divided=st.booleans(),
    division=st.sampled_from(["assign", "inline", "criterion", "augassign"]),
    divisor=st.sampled_from(["accumulation_steps", "grad_accum", "update_freq", "gradient_accumulation_steps"]),
    accum=st.sampled_from([2, 3]), style=st.sampled_from(["script", "function", "trainer"]),
).filter(_valid_double_scaling)


programs = st.one_of(amp_clips, kept_losses, stale_gans, double_scalings)


# -- GL006: DDP accumulation with and without sync control ---------------------------------------------
DDP_SETUP = """\
import contextlib
import tempfile

import torch.distributed as dist

_rendezvous = tempfile.NamedTemporaryFile(delete=False)
dist.init_process_group("gloo", init_method=f"file://{_rendezvous.name}", rank=0, world_size=1)
ddp = torch.nn.parallel.DistributedDataParallel(model)
"""


@dataclass(frozen=True)
class DdpAccum:
    """One model wrapped in DDP on a one-process gloo group (made and torn down by the program),
    accumulating over `accum` micro-batches with or without switching gradient sync off."""

    sync: Literal["none", "no_sync_both", "no_sync_backward", "flag_before", "flag_after"]
    accum: int  # 1: a step per batch, nothing to switch off
    style: Literal["script", "function"]

    kind = "ddp_accum"
    compared = ("model",)

    def verdict(self) -> Verdict:
        # `no_sync_backward` and `flag_after` switch sync off only after the forward, when DDP has decided
        bug = self.accum > 1 and self.sync in ("none", "no_sync_backward", "flag_after")
        return Verdict(frozenset({"GL006"} if bug else set()), numbers="same")  # one rank: sync changes no number

    def render(self) -> str:
        setup = self.setup_source() + DDP_SETUP
        names = {"model": "", "opt": "", "n": "accum", "ddp": ""}
        boundary = "(i + 1) % {n} == 0"
        forward = "loss = criterion({ddp}(x), y)" + (" / {n}" if self.accum > 1 else "")
        if self.accum == 1 or self.sync == "none":
            body = _window_loop(self.accum, [forward, "loss.backward()"], ["{opt}.step()", "{opt}.zero_grad()"])
        else:
            head = ["for i, (x, y) in enumerate(batches):", f"    last = {boundary}"]
            context = "    ctx = contextlib.nullcontext() if last else {ddp}.no_sync()"
            if self.sync == "no_sync_both":
                inner = [context, "    with ctx:", "        " + forward, "        loss.backward()"]
            elif self.sync == "no_sync_backward":
                inner = ["    " + forward, context, "    with ctx:", "        loss.backward()"]
            elif self.sync == "flag_before":
                inner = ["    {ddp}.require_backward_grad_sync = last", "    " + forward, "    loss.backward()"]
            else:  # flag_after
                inner = ["    " + forward, "    {ddp}.require_backward_grad_sync = last", "    loss.backward()"]
            body = head + inner + ["    if last:", "        {opt}.step()", "        {opt}.zero_grad()"]
        return _in_style(self.style, setup, body, names) + "dist.destroy_process_group()\n"

    def setup_source(self) -> str:
        return SETUP.format(lr=LR, k=4 * self.accum, n_name="accum", n=self.accum)

    def reference(self, ns: dict[str, Any]) -> None:
        _mean_gradient_steps(ns, self.accum)

    def describe(self) -> str:
        return f"ddp_accum(sync={self.sync}, accum={self.accum}, style={self.style})"


def _valid_ddp_accum(s: DdpAccum) -> bool:
    return s.accum > 1 or s.sync == "none"


ddp_accums = st.builds(
    DdpAccum, sync=st.sampled_from(["none", "no_sync_both", "no_sync_backward", "flag_before", "flag_after"]),
    accum=st.sampled_from([1, 2, 3]), style=st.sampled_from(["script", "function"]),
).filter(_valid_ddp_accum)


def all_programs() -> list[Any]:
    """Every program of this grammar (the strategies above draw from the same space)."""
    out: list[Any] = []
    for amp, accum, clip, fn, unscale, step, style, spelling in itertools.product(
        (False, True), (1, 2, 3), ("none", "boundary", "every_micro_batch"), ("norm", "value"),
        ("none", "at_clip", "at_step"), ("scaler", "bypass"), ("script", "function"), ("torch", "from_import"),
    ):
        out.append(AmpClip(amp, accum, clip, fn, unscale, step, style, spelling))  # type: ignore[arg-type]
    for keep, form, accum, style, epochs in itertools.product(
        ("total_augassign", "total_assign", "list", "dict", "last", "window_sum"), ("tensor", "weighted", "item", "detach"),
        (1, 2), ("script", "function", "trainer"), (1, 2),
    ):
        out.append(KeptLoss(keep, form, accum, style, epochs))  # type: ignore[arg-type]
    for d_first, stale, shared, style in itertools.product((True, False), (True, False), (True, False),
                                                           ("script", "function", "trainer")):
        out.append(StaleGan(d_first, stale, shared, style))  # type: ignore[arg-type]
    for loop, divided, division, divisor, accum, style in itertools.product(
        ("every_step", "window", "accelerate", "accelerate_manual"), (True, False), ("assign", "inline", "criterion", "augassign"),
        ("accumulation_steps", "grad_accum", "update_freq", "gradient_accumulation_steps"), (2, 3),
        ("script", "function", "trainer"),
    ):
        out.append(DoubleScaling(loop, divided, division, divisor, accum, style))  # type: ignore[arg-type]
    for sync, accum, style in itertools.product(("none", "no_sync_both", "no_sync_backward", "flag_before", "flag_after"),
                                                (1, 2, 3), ("script", "function")):
        out.append(DdpAccum(sync, accum, style))  # type: ignore[arg-type]
    valid = {AmpClip: _valid_amp_clip, KeptLoss: _valid_kept_loss, StaleGan: _valid_stale_gan,
             DoubleScaling: _valid_double_scaling, DdpAccum: _valid_ddp_accum}
    return [p for p in out if valid[type(p)](p)]
