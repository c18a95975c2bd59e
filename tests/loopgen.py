"""Generated training programs with a numerical ground truth, for differential testing.

A program is a small frozen spec (one model, or a GAN) rendered to ordinary Python source. Running it
trains tiny float64 models with plain SGD; the ground truth is whether its final parameters equal those
of a reference implementation of the intended algorithm, written with `torch.autograd.grad` (no `.grad`
accumulation at all, so it cannot share the bugs under test). Each spec also says which diagnostics a
correct linter must give (`expected`) and which it may add on top of them (`tolerated`); the differential
test checks the static analyzer, the runtime guard and the numbers against one another and against it.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from typing import Any, Literal

from hypothesis import strategies as st

LR = 0.1

# -- one model, one optimizer: clears, accumulation, loss scaling ---------------------------------
Accumulation = Literal[
    "none",  # a step per batch
    "modulo",  # enumerate from 0, `if (i + 1) % accum == 0`
    "modulo_from_zero",  # enumerate from 0, `if i % accum == 0`: fires on the first micro-batch (GL004)
    "enumerate_from_one",  # enumerate(batches, 1), `if i % accum == 0`
    "enumerate_from_one_shifted",  # enumerate(batches, 1), `if (i + 1) % accum == 0`: first window short (GL004)
    "flag",  # `sync = (i + 1) % accum == 0` then `if sync:`
    "inner_loop",  # for window in windows: for x, y in window: ...; step
    "counter",  # count += 1; if count == accum: step; count = 0
    "counter_late",  # if count % accum == 0: step  (checked before count += 1: fires first) (GL004)
    "modulo_skip_first",  # enumerate from 0, `if i > 0 and i % accum == 0`: first window N + 1 (GL004)
]
ClearWhere = Literal[
    "start",  # first statement of the (outer) loop body
    "end",  # right after the step, in the step's block
    "between",  # after the backward, right before the step (GL002)
    "every_micro_batch",  # last statement of the per-micro-batch body, outside the step's block
    "missing",  # never (GL001)
    "once_before_loop",  # only before the loop (GL001)
]
ClearForm = Literal["opt", "opt_set_to_none", "model", "params_none", "helper"]
Scaling = Literal["none", "assign", "inline", "in_criterion", "grads", "twice"]
Style = Literal["script", "function", "trainer"]


@dataclass(frozen=True)
class Verdict:
    """What a correct linter reports: every code of `expected`, and nothing outside `tolerated`."""

    expected: frozenset[str]
    tolerated: frozenset[str] = frozenset()
    blind: frozenset[str] = frozenset()  # expected codes the runtime guard cannot observe (static only)
    raises: str = ""  # the program fails by design with this text in its error (PyTorch raises on the bug)
    # the final parameters against the reference: "as_buggy" they differ iff the program is buggy,
    # "same" they are equal all the same (a bug of memory or speed), "any" they are not compared
    numbers: Literal["as_buggy", "same", "any"] = "as_buggy"

    @property
    def buggy(self) -> bool:
        return bool(self.expected)

    @property
    def numbers_differ(self) -> bool:
        return self.buggy if self.numbers == "as_buggy" else False

    def admits(self, codes: set[str]) -> bool:
        return self.expected <= codes <= self.expected | self.tolerated

    def admits_at_runtime(self, codes: set[str]) -> bool:
        seen = self.expected - self.blind
        return seen <= codes <= seen | self.tolerated


@dataclass(frozen=True)
class SingleModel:
    """One model and one SGD optimizer, with or without gradient accumulation."""

    accumulation: Accumulation
    accum: int
    clear_where: ClearWhere
    clear_form: ClearForm
    scaling: Scaling
    style: Style
    amp: bool = False  # a GradScaler: `scaler.scale(loss).backward()`, `scaler.step(opt)`, `scaler.update()`

    kind = "single"

    @property
    def window(self) -> int:
        return 1 if self.accumulation == "none" else self.accum

    @property
    def micro_batches(self) -> int:
        if self.accumulation == "none":
            return 4
        # three steps at least, so that the runtime sees the windows settle after the first one
        return 3 * self.accum + (1 if self.accumulation == "modulo_skip_first" else 0)

    # -- what the program does, in the contract's words
    def verdict(self) -> Verdict:
        accumulating = self.window > 1
        codes: set[str] = set()
        tolerated: set[str] = set()
        discards = self.clear_where == "between" or (
            accumulating and (self.clear_where == "every_micro_batch" or (self.clear_where == "start" and self.accumulation != "inner_loop"))
        )
        if discards:
            codes.add("GL002")
            # once each micro-batch's gradients are dropped, nothing accumulates: the scaling and
            # the window's first size no longer matter to the step
            tolerated |= {"GL003", "GL004"}
        if self.clear_where in ("missing", "once_before_loop"):
            codes.add("GL001")
        if accumulating and not discards:
            if self.accumulation in ("modulo_from_zero", "enumerate_from_one_shifted", "counter_late", "modulo_skip_first"):
                codes.add("GL004")
            if self.scaling in ("none", "twice"):
                codes.add("GL003")
        return Verdict(frozenset(codes), frozenset(tolerated - codes))

    # -- rendering
    def render(self) -> str:
        return render_single(self)

    def setup_source(self) -> str:
        return _setup_source(self)

    def reference(self, ns: dict[str, Any]) -> None:
        reference_single(self, ns)

    compared = ("model",)

    def describe(self) -> str:
        return (f"single(accumulation={self.accumulation}, accum={self.accum}, clear={self.clear_where}/{self.clear_form}, "
                f"scaling={self.scaling}, style={self.style}, amp={self.amp})")


def _valid_single(s: SingleModel) -> bool:
    if s.accumulation == "none" and s.scaling != "none":
        return False
    if s.accumulation == "none" and s.clear_where == "every_micro_batch":
        return False  # the same program as "end"
    if s.clear_form == "helper" and s.style == "trainer":
        return False  # a trainer clears through its own method instead (rendered as such)
    if s.amp and (s.clear_where == "between" or (s.clear_where == "every_micro_batch" and s.accumulation == "inner_loop")):
        return False  # GradScaler.step raises on gradients cleared to None: a loud bug, not a silent one
    return True


single_models = st.builds(
    SingleModel,
    accumulation=st.sampled_from(list(Accumulation.__args__)),  # type: ignore[attr-defined]
    accum=st.sampled_from([2, 3]),
    clear_where=st.sampled_from(list(ClearWhere.__args__)),  # type: ignore[attr-defined]
    clear_form=st.sampled_from(list(ClearForm.__args__)),  # type: ignore[attr-defined]
    scaling=st.sampled_from(list(Scaling.__args__)),  # type: ignore[attr-defined]
    style=st.sampled_from(list(Style.__args__)),  # type: ignore[attr-defined]
    amp=st.booleans(),
).filter(_valid_single)


SINGLE_SETUP = """\
import torch

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 1)).double()
opt = torch.optim.SGD(model.parameters(), lr={lr})
criterion = torch.nn.MSELoss()
batches = [(torch.randn(2, 3, dtype=torch.float64), torch.randn(2, 1, dtype=torch.float64)) for _ in range({k})]
accum = {accum}
"""
AMP_SETUP = 'scaler = torch.amp.GradScaler("cpu")\n'


def _clear_lines(s: SingleModel, model: str, opt: str) -> list[str]:
    form = s.clear_form
    if form == "opt":
        return [f"{opt}.zero_grad()"]
    if form == "opt_set_to_none":
        return [f"{opt}.zero_grad(set_to_none=True)"]
    if form == "model":
        return [f"{model}.zero_grad()"]
    if form == "params_none":
        return [f"for p in {model}.parameters():", "    p.grad = None"]
    if s.style == "trainer":
        return ["self.reset_gradients()"]
    return [f"reset_gradients({opt})"]


def _single_body(s: SingleModel, model: str, opt: str, accum: str, counter: str) -> tuple[list[str], list[str], str]:
    """Return (lines before the loop, the loop, the loop header's iterable) for one style's names."""
    clear = _clear_lines(s, model, opt)
    where = s.clear_where

    def forward() -> list[str]:
        if s.scaling in ("in_criterion", "twice"):
            lines = [f"loss = criterion({model}(x), y) / {accum}"]
        else:
            lines = [f"loss = criterion({model}(x), y)"]
        if s.scaling == "assign":
            lines.append(f"loss = loss / {accum}")
        scaled = f"loss / {accum}" if s.scaling in ("inline", "twice") else "loss"
        if s.amp:
            lines.append(f"scaler.scale({scaled}).backward()")
        else:
            lines.append(f"({scaled}).backward()" if scaled != "loss" else "loss.backward()")
        return lines

    def step_block() -> list[str]:
        lines: list[str] = []
        if s.scaling == "grads":
            if s.amp:
                lines.append(f"scaler.unscale_({opt})")
            lines += [f"for p in {model}.parameters():", "    if p.grad is not None:", f"        p.grad /= {accum}"]
        if where == "between":
            lines += clear
        lines += [f"scaler.step({opt})", "scaler.update()"] if s.amp else [f"{opt}.step()"]
        if where == "end":
            lines += clear
        return lines

    before = list(clear) if where == "once_before_loop" else []
    acc = s.accumulation
    loop: list[str] = []
    if acc == "none":
        loop.append("for x, y in batches:")
        body = (clear if where == "start" else []) + forward() + step_block()
        loop += ["    " + ln for ln in body]
        return before, loop, "batches"
    if acc == "inner_loop":
        loop.append(f"for window in [batches[k:k + {accum}] for k in range(0, len(batches), {accum})]:")
        inner = forward() + (clear if where == "every_micro_batch" else [])
        body = (clear if where == "start" else []) + ["for x, y in window:"] + ["    " + ln for ln in inner] + step_block()
        loop += ["    " + ln for ln in body]
        return before, loop, "batches"
    if acc in ("counter", "counter_late"):
        before.append(f"{counter} = 0")
        loop.append("for x, y in batches:")
        body = (clear if where == "start" else []) + forward()
        if acc == "counter":
            body.append(f"{counter} += 1")
            body.append(f"if {counter} == {accum}:")
            body += ["    " + ln for ln in step_block() + [f"{counter} = 0"]]
        else:
            body.append(f"if {counter} % {accum} == 0:")
            body += ["    " + ln for ln in step_block()]
            body.append(f"{counter} += 1")
        body += clear if where == "every_micro_batch" else []
        loop += ["    " + ln for ln in body]
        return before, loop, "batches"
    start = ", 1" if acc in ("enumerate_from_one", "enumerate_from_one_shifted") else ""
    loop.append(f"for i, (x, y) in enumerate(batches{start}):")
    test = {
        "modulo": f"(i + 1) % {accum} == 0",
        "modulo_from_zero": f"i % {accum} == 0",
        "enumerate_from_one": f"i % {accum} == 0",
        "enumerate_from_one_shifted": f"(i + 1) % {accum} == 0",
        "modulo_skip_first": f"i > 0 and i % {accum} == 0",
        "flag": "sync",
    }[acc]
    body = (clear if where == "start" else []) + forward()
    if acc == "flag":
        body.append(f"sync = (i + 1) % {accum} == 0")
    body.append(f"if {test}:")
    body += ["    " + ln for ln in step_block()]
    body += clear if where == "every_micro_batch" else []
    loop += ["    " + ln for ln in body]
    return before, loop, "batches"


def render_single(s: SingleModel) -> str:
    setup = _setup_source(s)
    helper = ""
    if s.clear_form == "helper" and s.style != "trainer":
        helper = "\n\ndef reset_gradients(optimizer):\n    optimizer.zero_grad()\n"
    if s.style == "script":
        before, loop, _ = _single_body(s, "model", "opt", "accum", "count")
        return setup + helper + "\n" + "\n".join(before + loop) + "\n"
    if s.style == "function":
        before, loop, _ = _single_body(s, "net", "optimizer", "steps", "count")
        body = "\n".join(before + loop)
        return (setup + helper + "\n\ndef train(net, optimizer, batches, steps):\n" + textwrap.indent(body, "    ")
                + "\n\n\ntrain(model, opt, batches, accum)\n")
    # trainer: the loop lives in a method, the clear (helper form) in another
    before, loop, _ = _single_body(s, "self.model", "self.opt", "self.accum", "self.count")
    body = "\n".join(before + loop)
    reset = "\n    def reset_gradients(self):\n        self.opt.zero_grad()\n" if s.clear_form == "helper" else ""
    return (setup + "\n\nclass Trainer:\n    def __init__(self, model, opt, accum):\n        self.model = model\n"
            "        self.opt = opt\n        self.accum = accum\n" + reset
            + "\n    def fit(self, batches):\n" + textwrap.indent(body, "        ")
            + "\n\n\nTrainer(model, opt, accum).fit(batches)\n")


def reference_single(s: SingleModel, ns: dict[str, Any]) -> None:
    """Train `ns['model']` as intended: one SGD step per window, on the mean of its micro-batch grads."""
    import torch

    model, criterion, batches = ns["model"], ns["criterion"], ns["batches"]
    params = list(model.parameters())
    n = s.window
    for k in range(0, len(batches), n):
        total = [torch.zeros_like(p) for p in params]
        for x, y in batches[k:k + n]:
            grads = torch.autograd.grad(criterion(model(x), y), params)
            total = [t + g / n for t, g in zip(total, grads)]
        with torch.no_grad():
            for p, g in zip(params, total):
                p -= LR * g


# -- a GAN: two models, two optimizers, who writes into whom --------------------------------------
GanClear = Literal["before", "top", "missing"]


@dataclass(frozen=True)
class Gan:
    """A generator G and discriminator D trained in alternation."""

    d_first: bool
    detach: bool  # the discriminator's loss sees `fake.detach()`
    freeze_d: bool  # `D.requires_grad_(False)` around the generator's backward
    clear_d: Literal["before", "top", "missing", "wrong"]  # wrong: `opt_G.zero_grad()` where opt_D's belongs
    clear_g: GanClear
    reuse_fake: bool  # one `fake = G(z)` per iteration (only with D first and detach)
    style: Style
    detach_form: Literal["detach", "no_grad"] = "detach"  # `fake.detach()` or `with torch.no_grad(): fake = G(z)`
    freeze_form: Literal["requires_grad_", "loop"] = "requires_grad_"  # or `for p in D.parameters(): p.requires_grad = False`

    kind = "gan"
    iterations = 3

    def verdict(self) -> Verdict:
        """Replay the events of the loop on the contract: who holds which loss's gradients at each step."""
        held: dict[str, set[tuple[str, int]]] = {"G": set(), "D": set()}
        applied: dict[str, set[tuple[str, int]]] = {"G": set(), "D": set()}
        codes: set[str] = set()
        tolerated: set[str] = set()
        for it in range(self.iterations):
            for event, who in self.events():
                if event == "clear":
                    held[who].clear()
                elif event == "backward":
                    owner = "D" if who == "d_loss" else "G"
                    writes = {owner}
                    if who == "d_loss" and not self.detach:
                        writes.add("G")
                    if who == "g_loss" and not self.freeze_d:
                        writes.add("D")
                    for model in writes:
                        held[model].add((who, it))
                else:  # step
                    own = "d_loss" if who == "D" else "g_loss"
                    stale = held[who] & applied[who]
                    foreign = {c for c in held[who] - stale if c[0] != own}
                    if stale:
                        codes.add("GL001")
                        if foreign:
                            tolerated.add("GL005")
                    elif foreign:
                        codes.add("GL005")
                    applied[who] |= held[who]
        return Verdict(frozenset(codes), frozenset(tolerated - codes))

    def events(self) -> list[tuple[str, str]]:
        """One iteration as (event, model-or-loss) pairs, in program order."""
        d_clear = {"before": [("clear", "D")], "wrong": [("clear", "G")]}.get(self.clear_d, [])
        g_clear = [("clear", "G")] if self.clear_g == "before" else []
        d_step = d_clear + [("backward", "d_loss"), ("step", "D")]
        g_step = g_clear + [("backward", "g_loss"), ("step", "G")]
        top = ([("clear", "D")] if self.clear_d == "top" else []) + ([("clear", "G")] if self.clear_g == "top" else [])
        return top + (d_step + g_step if self.d_first else g_step + d_step)

    def render(self) -> str:
        return render_gan(self)

    def setup_source(self) -> str:
        return _setup_source(self)

    def reference(self, ns: dict[str, Any]) -> None:
        reference_gan(self, ns)

    compared = ("G", "D")

    def describe(self) -> str:
        return (f"gan(d_first={self.d_first}, detach={self.detach}, freeze_d={self.freeze_d}, clear_d={self.clear_d}, "
                f"clear_g={self.clear_g}, reuse_fake={self.reuse_fake}, style={self.style}, detach_form={self.detach_form}, "
                f"freeze_form={self.freeze_form})")


gans = st.builds(
    Gan,
    d_first=st.booleans(),
    detach=st.booleans(),
    freeze_d=st.booleans(),
    clear_d=st.sampled_from(["before", "top", "missing", "wrong"]),
    clear_g=st.sampled_from(["before", "top", "missing"]),
    reuse_fake=st.booleans(),
    style=st.sampled_from(["script", "function", "trainer"]),
    detach_form=st.sampled_from(["detach", "no_grad"]),
    freeze_form=st.sampled_from(["requires_grad_", "loop"]),
).filter(lambda g: _valid_gan(g))


def _valid_gan(g: Gan) -> bool:
    if g.reuse_fake and not (g.d_first and g.detach and g.detach_form == "detach"):
        return False  # one shared `fake` needs its graph for the generator's step
    if g.detach_form == "no_grad" and not g.detach:
        return False
    if g.freeze_form == "loop" and not g.freeze_d:
        return False
    return True

GAN_SETUP = """\
import torch
import torch.nn.functional as F

torch.manual_seed(0)
G = torch.nn.Sequential(torch.nn.Linear(2, 3), torch.nn.Tanh(), torch.nn.Linear(3, 3)).double()
D = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 1)).double()
opt_G = torch.optim.SGD(G.parameters(), lr={lr})
opt_D = torch.optim.SGD(D.parameters(), lr={lr})
reals = [torch.randn(4, 3, dtype=torch.float64) for _ in range({n})]
noises = [torch.randn(4, 2, dtype=torch.float64) for _ in range({n})]
"""


def _gan_steps(g: Gan, G: str, D: str, opt_G: str, opt_D: str) -> list[str]:
    d_clear = {"before": [f"{opt_D}.zero_grad()"], "wrong": [f"{opt_G}.zero_grad()"]}.get(g.clear_d, [])
    g_clear = [f"{opt_G}.zero_grad()"] if g.clear_g == "before" else []
    fake_d = "fake.detach()" if g.detach and g.detach_form == "detach" else "fake"
    if g.reuse_fake:
        make_fake: list[str] = []
    elif g.detach and g.detach_form == "no_grad":
        make_fake = ["with torch.no_grad():", f"    fake = {G}(z)"]
    else:
        make_fake = [f"fake = {G}(z)"]
    if g.freeze_form == "loop":
        freeze = [f"for p in {D}.parameters():", "    p.requires_grad = False"]
        unfreeze = [f"for p in {D}.parameters():", "    p.requires_grad = True"]
    else:
        freeze, unfreeze = [f"{D}.requires_grad_(False)"], [f"{D}.requires_grad_(True)"]
    d_step = make_fake + d_clear + [
        f"d_loss = F.softplus(-{D}(real)).mean() + F.softplus({D}({fake_d})).mean()",
        "d_loss.backward()",
        f"{opt_D}.step()",
    ]
    g_step = (freeze if g.freeze_d else []) + ([] if g.reuse_fake else [f"fake = {G}(z)"]) + g_clear + [
        f"g_loss = F.softplus(-{D}(fake)).mean()",
        "g_loss.backward()",
        f"{opt_G}.step()",
    ] + (unfreeze if g.freeze_d else [])
    top = []
    if g.clear_d == "top":
        top.append(f"{opt_D}.zero_grad()")
    if g.clear_g == "top":
        top.append(f"{opt_G}.zero_grad()")
    if g.reuse_fake:
        top.append(f"fake = {G}(z)")
    return top + (d_step + g_step if g.d_first else g_step + d_step)


def render_gan(g: Gan) -> str:
    setup = GAN_SETUP.format(lr=LR, n=g.iterations)
    if g.style == "script":
        body = _gan_steps(g, "G", "D", "opt_G", "opt_D")
        return setup + "\nfor real, z in zip(reals, noises):\n" + textwrap.indent("\n".join(body), "    ") + "\n"
    if g.style == "function":
        body = _gan_steps(g, "gen", "disc", "g_optimizer", "d_optimizer")
        return (setup + "\n\ndef train(gen, disc, g_optimizer, d_optimizer):\n    for real, z in zip(reals, noises):\n"
                + textwrap.indent("\n".join(body), "        ") + "\n\n\ntrain(G, D, opt_G, opt_D)\n")
    body = _gan_steps(g, "self.G", "self.D", "self.opt_G", "self.opt_D")
    return (setup + "\n\nclass GANTrainer:\n    def __init__(self, G, D, opt_G, opt_D):\n        self.G, self.D = G, D\n"
            "        self.opt_G, self.opt_D = opt_G, opt_D\n\n    def train_step(self, real, z):\n"
            + textwrap.indent("\n".join(body), "        ")
            + "\n\n    def fit(self):\n        for real, z in zip(reals, noises):\n            self.train_step(real, z)\n"
            "\n\nGANTrainer(G, D, opt_G, opt_D).fit()\n")


def reference_gan(g: Gan, ns: dict[str, Any]) -> None:
    """Train `ns['G']`, `ns['D']` as intended: each optimizer steps on its own loss's gradients only."""
    import torch
    import torch.nn.functional as F

    G, D = ns["G"], ns["D"]
    gp, dp = list(G.parameters()), list(D.parameters())

    def update(params: list[Any], loss: Any) -> None:
        grads = torch.autograd.grad(loss, params)
        with torch.no_grad():
            for p, gr in zip(params, grads):
                p -= LR * gr

    def d_update(real: Any, z: Any) -> None:
        fake = G(z).detach()
        update(dp, F.softplus(-D(real)).mean() + F.softplus(D(fake)).mean())

    def g_update(z: Any) -> None:
        update(gp, F.softplus(-D(G(z))).mean())

    for real, z in zip(ns["reals"], ns["noises"]):
        if g.d_first:
            d_update(real, z)
            g_update(z)
        else:
            g_update(z)
            d_update(real, z)


programs = st.one_of(single_models, gans)


def _setup_source(spec: SingleModel | Gan) -> str:
    if isinstance(spec, Gan):
        return GAN_SETUP.format(lr=LR, n=spec.iterations)
    return SINGLE_SETUP.format(lr=LR, k=spec.micro_batches, accum=spec.accum) + (AMP_SETUP if spec.amp else "")




def all_programs() -> list[SingleModel | Gan]:
    """Every program of the grammar (the strategies above draw from the same space)."""
    import itertools

    out: list[SingleModel | Gan] = []
    for acc, n, where, form, scaling, style, amp in itertools.product(
        Accumulation.__args__, (2, 3), ClearWhere.__args__, ClearForm.__args__,  # type: ignore[attr-defined]
        Scaling.__args__, Style.__args__, (False, True),  # type: ignore[attr-defined]
    ):
        s = SingleModel(acc, n, where, form, scaling, style, amp)
        if _valid_single(s):
            out.append(s)
    for d_first, detach, freeze, clear_d, clear_g, reuse, style, detach_form, freeze_form in itertools.product(
        (True, False), (True, False), (True, False), ("before", "top", "missing", "wrong"), ("before", "top", "missing"),
        (True, False), Style.__args__, ("detach", "no_grad"), ("requires_grad_", "loop"),  # type: ignore[attr-defined]
    ):
        g = Gan(d_first, detach, freeze, clear_d, clear_g, reuse, style, detach_form, freeze_form)  # type: ignore[arg-type]
        if _valid_gan(g):
            out.append(g)
    return out
