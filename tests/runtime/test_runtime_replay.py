"""The replay of a steady cycle (runtime/replay.py): a GAN with accumulation windows and two optimizers
runs on it, the state it writes out when it ends is the full path's, and a deviation after a long
steady run is reported as the full path reports it, at the same step: at once when the calls show it,
whether or not the cycle it happens in is verified (reads the sampled `.grad`); on a verified cycle
when only the `.grad` show it (`p.grad = None` by hand).

The full path (`recorder.ENABLED = False`) is the reference, as in test_runtime_lazy_cycle.py.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

torch = pytest.importorskip("torch")
from test_runtime_lazy_cycle import _state  # noqa: E402
from torch import nn  # noqa: E402

from gradcheck_lint.runtime import guard, recorder, replay  # noqa: E402
from gradcheck_lint.runtime.windows import UNREAD  # noqa: E402

STEADY = 24  # iterations on the replay before the loop changes (it starts after about six)
ACCUM = 2
bce = nn.functional.binary_cross_entropy_with_logits


class Gan:
    """A small MLP GAN: D's window of `ACCUM` micro-batches and its step, then G's (whose loss writes D's
    gradients too, dropped by the next `opt_D.zero_grad()`)."""

    def __init__(self, opt_class: type[torch.optim.Optimizer] = torch.optim.Adam) -> None:
        torch.manual_seed(0)
        self.G = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
        self.D = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 1))
        self.opt_G = opt_class(self.G.parameters(), lr=1e-3)
        self.opt_D = opt_class(self.D.parameters(), lr=1e-3)
        self.real = torch.randn(ACCUM, 16, 4)
        self.z = torch.randn(ACCUM, 16, 8)
        self.ones, self.zeros = torch.ones(16, 1), torch.zeros(16, 1)

    def d_loss(self, k: int, divide: bool = True) -> torch.Tensor:
        fake = self.G(self.z[k]).detach()
        loss = bce(self.D(self.real[k]), self.ones) + bce(self.D(fake), self.zeros)
        return loss / ACCUM if divide else loss

    def g_loss(self, k: int) -> torch.Tensor:
        return bce(self.D(self.G(self.z[k])), self.ones) / ACCUM

    def models(self) -> dict[str, nn.Module]:
        return {"G": self.G, "D": self.D}

    def optimizers(self) -> list[torch.optim.Optimizer]:
        return [self.opt_G, self.opt_D]


def steady(gan: Gan, i: int, look: Callable[[], None] = lambda: None) -> None:
    gan.opt_D.zero_grad()
    look()
    for k in range(ACCUM):
        gan.d_loss(k).backward()
        look()
    gan.opt_D.step()
    look()
    gan.opt_G.zero_grad()
    look()
    for k in range(ACCUM):
        gan.g_loss(k).backward()
        look()
    gan.opt_G.step()
    look()


def _trace(fast: bool, opt_class: type[torch.optim.Optimizer] = torch.optim.Adam) -> list[dict[str, Any]]:
    """The state after each call of every iteration (each look writes the replay's state out and goes on)."""
    gan = Gan(opt_class)
    was, recorder.ENABLED = recorder.ENABLED, fast
    states: list[dict[str, Any]] = []
    try:
        with guard(gan.models(), gan.optimizers(), mode="record") as g:
            for i in range(STEADY):
                steady(gan, i, (lambda: states.append(_state(g))) if i >= 4 else (lambda: None))
            assert (g._probe._replay is not None) == fast  # type: ignore[union-attr]
    finally:
        recorder.ENABLED = was
    return states


class ZeroingAdam(torch.optim.Adam):
    """Its own `zero_grad` zeroes the gradients: not torch's clear, so the replay reads what it left."""

    def zero_grad(self, set_to_none: bool = True) -> None:
        super().zero_grad(set_to_none=False)


@pytest.mark.parametrize("opt_class", [torch.optim.Adam, ZeroingAdam], ids=["set_to_none", "zeroed"])
def test_the_written_out_state_is_the_full_paths(opt_class: type[torch.optim.Optimizer]) -> None:
    fast, full = _trace(True, opt_class), _trace(False, opt_class)
    assert len(fast) == len(full)
    for i, (a, b) in enumerate(zip(fast, full)):
        # the replay reads a loss's factors on the passes of some cycles only: unread is `()`
        b["passes"] = [bp[:2] + (UNREAD,) + bp[3:] if ap[2] == UNREAD else bp for ap, bp in zip(a["passes"], b["passes"])]
        # after a clear, a sentinel's copy of the gradient it cleared is not kept (`replay_handover.materialize`): no step measures it
        for state in (a, b) if "zero_grad" in a["last_event"].text else ():
            state["observed"] = [(grad, v, (-1, -1), False) if copied and pending is None
                                 else (grad, v, pending, copied) for grad, v, pending, copied in state["observed"]]
        assert a == b, f"state {i} differs"


def test_a_gan_with_accumulation_runs_on_the_replay(monkeypatch: pytest.MonkeyPatch) -> None:
    from gradcheck_lint.runtime.probe import Probe

    gan = Gan()
    full: list[str] = []
    original = Probe.full_before_backward

    def counted(self: Probe, *args: Any, **kwargs: Any) -> None:
        full.append("backward")
        original(self, *args, **kwargs)

    monkeypatch.setattr(Probe, "full_before_backward", counted)
    with guard(gan.models(), gan.optimizers()) as g:
        for i in range(40):  # from one place: a backward line's caller is part of the cycle
            if i == 10:
                full.clear()
            steady(gan, i)
        assert g._probe is not None and g._probe._replay is not None
    assert full == []  # no backward pass took the full path once the replay started
    assert g.steps_checked() == 80
    assert len(g.report()) == 0


# -- loops that leave the steady cycle after a long run -------------------------------------------
def late_missing_clear(gan: Gan, i: int) -> None:
    if i != STEADY:
        gan.opt_D.zero_grad()
    for k in range(ACCUM):
        gan.d_loss(k).backward()
    gan.opt_D.step()
    gan.opt_G.zero_grad()
    for k in range(ACCUM):
        gan.g_loss(k).backward()
    gan.opt_G.step()


def late_longer_window(gan: Gan, i: int, start: int = STEADY) -> None:
    gan.opt_D.zero_grad()
    for k in range(ACCUM + (i >= start)):  # a third micro-batch, divided by 2 (GL003 on the window)
        gan.d_loss(k % ACCUM).backward()
    gan.opt_D.step()
    gan.opt_G.zero_grad()
    for k in range(ACCUM):
        gan.g_loss(k).backward()
    gan.opt_G.step()


def late_clear_after_backward(gan: Gan, i: int, start: int = STEADY) -> None:
    gan.opt_D.zero_grad()
    for k in range(ACCUM):
        gan.d_loss(k).backward()
    if i >= start:
        gan.opt_D.zero_grad()  # drops D's window before its step (GL002)
    gan.opt_D.step()
    gan.opt_G.zero_grad()
    for k in range(ACCUM):
        gan.g_loss(k).backward()
    gan.opt_G.step()


def late_grads_dropped_by_hand(gan: Gan, i: int) -> None:
    gan.opt_D.zero_grad()
    for k in range(ACCUM):
        gan.d_loss(k).backward()
        if i == STEADY and k == 0:
            for p in gan.D.parameters():
                p.grad = None  # the first micro-batch dropped behind the probe's back
    gan.opt_D.step()
    gan.opt_G.zero_grad()
    for k in range(ACCUM):
        gan.g_loss(k).backward()
    gan.opt_G.step()


def grads_dropped_by_hand_from_then_on(gan: Gan, i: int, start: int = STEADY) -> None:
    gan.opt_D.zero_grad()
    for k in range(ACCUM):
        gan.d_loss(k).backward()
        if i >= start and k == 0:
            for p in gan.D.parameters():
                p.grad = None  # every first micro-batch dropped behind the probe's back, from then on
    gan.opt_D.step()
    gan.opt_G.zero_grad()
    for k in range(ACCUM):
        gan.g_loss(k).backward()
    gan.opt_G.step()


def late_rescale_in_place(gan: Gan, i: int) -> None:
    gan.opt_D.zero_grad()
    for k in range(ACCUM):
        gan.d_loss(k, divide=i < STEADY).backward()
    if i >= STEADY:
        for p in gan.D.parameters():
            p.grad /= ACCUM  # the window divided in place instead: no finding
    gan.opt_D.step()
    gan.opt_G.zero_grad()
    for k in range(ACCUM):
        gan.g_loss(k).backward()
    gan.opt_G.step()


def always_undivided(gan: Gan, i: int) -> None:
    gan.opt_D.zero_grad()
    for k in range(ACCUM):
        gan.d_loss(k, divide=False).backward()  # every window (GL003 on each: no replay)
    gan.opt_D.step()
    gan.opt_G.zero_grad()
    for k in range(ACCUM):
        gan.g_loss(k).backward()
    gan.opt_G.step()


def late_kept_losses(gan: Gan, i: int, kept: list[torch.Tensor] = [],  # noqa: B006 - one run's list
                     start: int = STEADY) -> None:
    if i == 0:
        kept.clear()
    gan.opt_D.zero_grad()
    for k in range(ACCUM):
        loss = gan.d_loss(k)
        loss.backward()
        if i >= start:
            kept.append(loss)  # graphs kept alive from here (GL008)
    gan.opt_D.step()
    gan.opt_G.zero_grad()
    for k in range(ACCUM):
        gan.g_loss(k).backward()
    gan.opt_G.step()


def late_undivided_loss(gan: Gan, i: int, start: int = STEADY) -> None:
    gan.opt_D.zero_grad()
    for k in range(ACCUM):
        gan.d_loss(k, divide=i < start).backward()  # the same calls, the loss no longer divided (GL003)
    gan.opt_D.step()
    gan.opt_G.zero_grad()
    for k in range(ACCUM):
        gan.g_loss(k).backward()
    gan.opt_G.step()


EXACT = [late_missing_clear, late_longer_window, late_clear_after_backward, late_grads_dropped_by_hand,
         late_rescale_in_place, always_undivided]
# deviations the calls show (which call, where, for which optimizer or parameters): the replay falls
# back at the call that differs, on a cycle that reads no `.grad` too; and a correct change of the loop
# (the window divided in place instead of each loss) is no finding however it is sampled
BY_CALLS = [late_missing_clear, late_longer_window, late_clear_after_backward, late_rescale_in_place,
            always_undivided]
VERIFIED = {"all": (0, 1, 1), "none": (0, 2**62, 2**62),
            "sampled": (replay.VERIFY_ALL, replay.VERIFY_EVERY, replay.VERIFY_SPARSEST)}


def _report(loop: Callable[[Gan, int], None], fast: bool, iterations: int = STEADY + 40,
            verified: str = "all") -> list[tuple[object, ...]]:
    """The findings; `verified`: which cycles of the replay read the sampled `.grad` (`VERIFIED`)."""
    gan = Gan()
    was, recorder.ENABLED = recorder.ENABLED, fast
    sampling = replay.VERIFY_ALL, replay.VERIFY_EVERY, replay.VERIFY_SPARSEST
    replay.VERIFY_ALL, replay.VERIFY_EVERY, replay.VERIFY_SPARSEST = VERIFIED[verified]
    try:
        with guard(gan.models(), gan.optimizers(), mode="record") as g:
            for i in range(iterations):
                loop(gan, i)
    finally:
        recorder.ENABLED = was
        replay.VERIFY_ALL, replay.VERIFY_EVERY, replay.VERIFY_SPARSEST = sampling
    return [(f.path, f.line, f.col, f.code, f.steps, f.first_step, f.message, f.optimizer) for f in g.report()]


@pytest.mark.parametrize("loop", EXACT, ids=lambda f: f.__name__)
def test_a_late_deviation_is_reported_as_by_the_full_path(loop: Callable[[Gan, int], None]) -> None:
    """Every cycle verified."""
    assert _report(loop, True) == _report(loop, False)


@pytest.mark.parametrize("verified", ["none", "sampled"])
@pytest.mark.parametrize("loop", BY_CALLS, ids=lambda f: f.__name__)
def test_a_deviation_of_the_calls_is_found_on_a_cycle_not_verified(loop: Callable[[Gan, int], None],
                                                                     verified: str) -> None:
    assert _report(loop, True, verified=verified) == _report(loop, False)


def test_a_change_only_the_grads_show_is_found_on_a_verified_cycle() -> None:
    """`p.grad = None` by hand from some step on: the same finding as the full path's, found on the first
    verified cycle it happens in (some cycles later: the verified cycles thin out to one in
    `VERIFY_SPARSEST` on average); never verified, never found; once, found only if its cycle is
    verified (the rule document of GL002 says so)."""
    loop = grads_dropped_by_hand_from_then_on
    iterations = STEADY + 4 * replay.VERIFY_SPARSEST
    full = _report(loop, False, iterations)
    sampled = _report(loop, True, iterations, verified="sampled")
    assert [f[3] for f in full] == [f[3] for f in sampled] == ["GL002"]
    assert [f[:3] for f in full] == [f[:3] for f in sampled]
    assert 0 <= int(sampled[0][5]) - int(full[0][5]) <= 4 * replay.VERIFY_SPARSEST  # type: ignore[call-overload]
    assert _report(loop, True, verified="none") == []
    assert _report(late_grads_dropped_by_hand, True, verified="none") == []


def test_late_deviations_are_found_at_their_step() -> None:
    found = {loop.__name__: sorted((f[3], f[5]) for f in _report(loop, True)) for loop in EXACT}
    assert found["late_missing_clear"] == [("GL001", STEADY + 1), ("GL005", STEADY + 1)]
    assert found["late_clear_after_backward"] == [("GL002", STEADY + 1)]
    assert found["late_rescale_in_place"] == []
    assert [code for code, _step in found["late_longer_window"]] == ["GL003"]
    assert found["always_undivided"] == [("GL003", 1)]


@pytest.mark.parametrize("verified", ["all", "sampled"])
@pytest.mark.parametrize("loop", [late_kept_losses, late_undivided_loss], ids=lambda f: f.__name__)
def test_what_is_sampled_is_found_later(loop: Callable[[Gan, int], None], verified: str) -> None:
    """A loss's factors are read on the verified cycles, GL008's tags on those and on one cycle in
    `TAG_EVERY` (said in the rule documents): the same findings, a step or two later when every cycle is
    sampled, and a few sampled cycles later when the verified cycles thin out (to one in `VERIFY_SPARSEST`)
    and one in `TAG_EVERY` tags."""
    iterations = STEADY + 6 * replay.VERIFY_SPARSEST
    fast, full = _report(loop, True, iterations, verified), _report(loop, False, iterations)
    assert [f[:5] for f in fast if f[3] != "GL003"] == [f[:5] for f in full if f[3] != "GL003"] or loop is late_kept_losses
    assert [f[3] for f in fast] == [f[3] for f in full] != []
    every = replay.TAG_EVERY if loop is late_kept_losses else replay.VERIFY_SPARSEST
    late = 2 if verified == "all" else 6 * every
    for a, b in zip(fast, full):
        assert 0 <= int(a[5]) - int(b[5]) <= late  # type: ignore[call-overload]
