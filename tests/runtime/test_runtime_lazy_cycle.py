"""The steady cycle's lazy bookkeeping (runtime/cycle.py): what it keeps in place of the ledger's
tables is written back exactly, and a deviation after a long steady run is reported as the full path
reports it, at the same step.

The full path (`cycle.ENABLED = False`) is the reference: after any call of a steady loop, the ledger
and the observations of a guard on the fast path, once flushed, are those of a guard on the full
path; and the findings of loops that leave the steady cycle late are the same, step for step.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402

from gradcheck_lint.runtime import cycle, guard  # noqa: E402
from gradcheck_lint.runtime.windows import UNREAD  # noqa: E402
from runtime_models import SmallCNN, cnn_batch  # noqa: E402


@pytest.fixture(autouse=True)
def _cycle_first(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests are of the steady cycle (cycle.py): established without the replay tried first."""
    monkeypatch.setattr(cycle, "REPLAY_FIRST", False)

STEADY = 40  # steps on the fast path before the loop changes (the cycle starts after four)


def _loss(model: nn.Module, scale: float = 1.0) -> torch.Tensor:
    x, y = cnn_batch()
    return nn.functional.cross_entropy(model(x), y) * scale


def _state(g: guard) -> dict[str, Any]:
    """What the full path reads of the ledger and the observations, after a flush."""
    probe = g._probe
    assert probe is not None
    probe.steps_checked()  # flushes the cycle's bookkeeping (and keeps the cycle)
    ledger = probe.ledger
    keys = [k for k, _obs in probe.watched]
    held = {bid for k in keys for bid in ledger.held.get(k, ())}

    def pass_state(bid: int) -> tuple[object, ...]:
        bp = ledger.passes[bid]
        return (bp.id, bp.site, bp.scale, bp.via, sorted(opts[o] for o in bp.consumers), bp.live)

    index = {k: i for i, k in enumerate(keys)}
    opts = {o: f"optimizer {i}" for i, o in enumerate(probe.optimizers)}

    def grad(key: int, gid: int) -> str:
        """An observed `.grad`, by what it is now (the ids differ from run to run)."""
        p = probe.observed[key].param()
        return "none" if gid == id(None) else "current" if p is not None and gid == id(p.grad) else "other"

    def pending(key: int, value: Any) -> Any:
        return value if value is None or value == (-1, -1) else (grad(key, value[0]), value[1])

    return {
        "held": [ledger.held.get(k) for k in keys],
        "held_counts": {bid: n for bid, n in ledger._held.items() if n},
        "passes": sorted(pass_state(bid) for bid in held),
        "live": sorted(bp.id for bp in ledger._live if bp.live),
        "current": ledger.current,
        "next": ledger._next,
        "clear_runs": dict(ledger.clear_runs),
        "windows": {opts[o]: (len(s), list(s.head), s[-1], s.non_unit) for o, s in ledger.windows.items()},
        "since": {opts[o]: sorted(s) for o, s in ledger._since_step.items()},
        "discards": {opts[o]: [(d.backward, d.clear) for d in ds] for o, ds in ledger.discards.items() if ds},
        "rescaled": sorted(index[k] for k in ledger._rescaled),
        "observed": [(grad(k, obs.grad_id), obs.version, pending(k, obs.pending), obs.snapshot is not None)
                     for k, obs in probe.watched],
        "deferred": [(index[id(obs.param())], pending(id(obs.param()), obs.pending)) for obs in probe._deferred
                     if obs.pending is not None],
        "last_event": probe.last_event,
        "steps": probe.monitors.steps if probe.monitors is not None else None,
    }


class ZeroingSGD(torch.optim.SGD):
    """An optimizer whose own `zero_grad` zeroes the gradients whatever `set_to_none` says: not torch's
    clear, so the steady cycle must read what it left (`cycle._sets_none` holds for torch's only)."""

    def zero_grad(self, set_to_none: bool = True) -> None:
        super().zero_grad(set_to_none=False)


def _trace(fast: bool, look_every_call: bool, set_to_none: bool,
           opt_class: type[torch.optim.Optimizer] = torch.optim.SGD) -> list[dict[str, Any]]:
    """A steady loop; the state after each call of the last three steps (and, with `look_every_call`,
    of every step: the cycle is then flushed at every call)."""
    torch.manual_seed(0)
    model = SmallCNN()
    opt = opt_class(model.parameters(), lr=1e-3)
    was, cycle.ENABLED = cycle.ENABLED, fast
    states = []
    try:
        with guard(model, opt, mode="record") as g:
            for i in range(STEADY):
                look = look_every_call or i >= STEADY - 3
                opt.zero_grad(set_to_none=set_to_none)
                if look:
                    states.append(_state(g))
                loss = _loss(model)
                loss.backward()
                if look:
                    states.append(_state(g))
                opt.step()
                if look:
                    states.append(_state(g))
            assert (g._probe._cycle is not None) == fast  # type: ignore[union-attr]
    finally:
        cycle.ENABLED = was
    return states


@pytest.mark.parametrize("set_to_none", [True, False], ids=["set_to_none", "zeroed"])
@pytest.mark.parametrize("look_every_call", [False, True], ids=["flushed-late", "flushed-every-call"])
def test_the_flushed_ledger_is_the_full_paths(look_every_call: bool, set_to_none: bool) -> None:
    fast, full = [_trace(f, look_every_call, set_to_none) for f in (True, False)]  # one call site: the same `via`
    assert len(fast) == len(full)
    for i, (a, b) in enumerate(zip(fast, full)):
        # the cycle reads a loss's factors on the passes of verified cycles only: unread is `()`
        b["passes"] = [bp[:2] + (UNREAD,) + bp[3:] if ap[2] == UNREAD else bp for ap, bp in zip(a["passes"], b["passes"])]
        assert a == b, f"state {i} differs"


@pytest.mark.parametrize("look_every_call", [False, True], ids=["flushed-late", "flushed-every-call"])
def test_a_zero_grad_of_the_optimizers_own_is_read_after_the_clear(look_every_call: bool) -> None:
    fast, full = [_trace(f, look_every_call, True, ZeroingSGD) for f in (True, False)]
    for i, (a, b) in enumerate(zip(fast, full)):
        b["passes"] = [bp[:2] + (UNREAD,) + bp[3:] if ap[2] == UNREAD else bp for ap, bp in zip(a["passes"], b["passes"])]
        assert a == b, f"state {i} differs"
    # after its clear every `.grad` is a zeroed tensor, not None, and the flushed state says so
    assert all(grad == "current" for grad, *_rest in fast[-3]["observed"])


def test_torchs_own_clears_are_known_to_leave_none() -> None:
    assert cycle._sets_none((), {}) and cycle._sets_none((True,), {}) and cycle._sets_none((), {"set_to_none": True})
    assert not cycle._sets_none((False,), {}) and not cycle._sets_none((), {"set_to_none": False})
    assert not cycle._sets_none((), {"set_to_none": torch.tensor(True)})  # not `True` itself: not assumed


def test_a_watched_parameter_that_dies_changes_the_generation() -> None:
    """The steady cycle compares a clear's parameters with its own by id: sound only while none of them
    died (a dead tensor's id can name a new one), which `Probe.generation` then says."""
    import gc

    model = SmallCNN()
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    extra = nn.Parameter(torch.zeros(3))
    with guard(model, opt) as g:
        probe = g._probe
        assert probe is not None
        probe.watch_param(extra)
        before = probe.generation
        del extra
        gc.collect()
        assert probe.generation > before


def test_steps_checked_counts_the_steps_of_the_cycle() -> None:
    torch.manual_seed(0)
    model = SmallCNN()
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    with guard(model, opt) as g:
        for i in range(1, 31):
            opt.zero_grad()
            _loss(model).backward()
            opt.step()
            if i % 10 == 0:
                assert g.steps_checked() == i
        assert g._probe is not None and g._probe._cycle is not None
    assert g.steps_checked() == 30


# -- loops that leave the steady cycle after a long run -------------------------------------------
def late_missing_clear(model: nn.Module, opt: torch.optim.Optimizer) -> None:
    for i in range(STEADY + 5):
        if i != STEADY:  # one clear missing: the step after applies the pass before again (GL001)
            opt.zero_grad()
        _loss(model).backward()
        opt.step()


def late_window_of_two_undivided(model: nn.Module, opt: torch.optim.Optimizer) -> None:
    for i in range(STEADY + 12):
        _loss(model).backward()
        if i < STEADY or i % 2 == 1:  # from here, two passes a step, the loss not divided (GL001, GL003)
            opt.step()
            opt.zero_grad()


def late_clear_between_backward_and_step(model: nn.Module, opt: torch.optim.Optimizer) -> None:
    for i in range(STEADY + 5):
        opt.zero_grad()
        _loss(model).backward()
        if i == STEADY:
            opt.zero_grad()  # drops the pass before its step (GL002)
        opt.step()


def late_new_clear_site(model: nn.Module, opt: torch.optim.Optimizer) -> None:
    for i in range(STEADY + 10):
        if i < STEADY:
            opt.zero_grad()
        else:
            model.zero_grad()  # another clearing call, over the same parameters
        _loss(model).backward()
        opt.step()
        if i == STEADY + 5:
            opt.zero_grad()  # and a clear right after a step, then another before the backward


def late_rescale_between_backward_and_step(model: nn.Module, opt: torch.optim.Optimizer) -> None:
    for i in range(STEADY + 12):
        _loss(model).backward()
        if i >= STEADY:
            for p in model.parameters():
                p.grad /= 2  # in place, between the pass and the step
        if i < STEADY or i % 2 == 1:
            opt.step()
            opt.zero_grad()


def late_kept_losses(model: nn.Module, opt: torch.optim.Optimizer) -> None:
    kept = []
    for i in range(STEADY + 8):
        opt.zero_grad()
        loss = _loss(model)
        loss.backward()
        if i >= STEADY:
            kept.append(loss)  # graphs kept alive from here (GL008)
        opt.step()


def late_frozen_layer(model: nn.Module, opt: torch.optim.Optimizer) -> None:
    for i in range(STEADY + 6):
        opt.zero_grad()
        if i == STEADY:
            model.head.weight.requires_grad_(False)  # a pass that does not write every parameter
        if i == STEADY + 3:
            model.head.weight.requires_grad_(True)
        _loss(model).backward()
        opt.step()


def _late_step_writes(model: nn.Module, opt: torch.optim.Optimizer, write: Callable[[torch.Tensor], None]) -> None:
    """From STEADY on, the step itself changes the gradients (a hook registered after the guard's runs
    inside `opt.step()`, after the guard's check): the cycle's step no longer re-reads them, the next
    call does."""
    for i in range(STEADY + 6):
        if i == STEADY:
            opt.register_step_pre_hook(lambda o, args, kwargs: [write(p) for p in model.parameters()] and None)
        if i != STEADY + 3:  # and once a clear missing after such a step (GL001)
            opt.zero_grad()
        _loss(model).backward()
        opt.step()


def late_step_rescales_in_place(model: nn.Module, opt: torch.optim.Optimizer) -> None:
    _late_step_writes(model, opt, lambda p: p.grad.mul_(0.5))  # type: ignore[union-attr]


def late_step_drops_gradients(model: nn.Module, opt: torch.optim.Optimizer) -> None:
    def drop(p: torch.Tensor) -> None:
        p.grad = None
    _late_step_writes(model, opt, drop)


LATE = [late_missing_clear, late_window_of_two_undivided, late_clear_between_backward_and_step, late_new_clear_site,
        late_rescale_between_backward_and_step, late_kept_losses, late_frozen_layer, late_step_rescales_in_place,
        late_step_drops_gradients]


def late_grads_dropped_between_backward_and_step(model: nn.Module, opt: torch.optim.Optimizer) -> None:
    for i in range(STEADY + 60):
        opt.zero_grad()
        _loss(model).backward()
        if i >= STEADY:
            for p in model.parameters():
                p.grad = None  # the pass dropped behind the probe's back before its step, from then on (GL002)
        opt.step()


# which cycles of the steady cycle read every `.grad` (`cycle.VERIFY_ALL`, `cycle.VERIFY_EVERY`)
VERIFIED = {"all": (0, 1), "none": (0, 2**62), "sampled": (cycle.VERIFY_ALL, cycle.VERIFY_EVERY)}


def _report(loop: Callable[[nn.Module, torch.optim.Optimizer], None], fast: bool,
            verified: str = "sampled") -> list[tuple[object, ...]]:
    torch.manual_seed(0)
    model = SmallCNN()
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    was, cycle.ENABLED = cycle.ENABLED, fast
    sampling = cycle.VERIFY_ALL, cycle.VERIFY_EVERY
    cycle.VERIFY_ALL, cycle.VERIFY_EVERY = VERIFIED[verified]
    try:
        with guard(model, opt, mode="record") as g:
            loop(model, opt)
    finally:
        cycle.ENABLED = was
        cycle.VERIFY_ALL, cycle.VERIFY_EVERY = sampling
    return [(f.path, f.line, f.col, f.code, f.steps, f.first_step, f.message, f.optimizer) for f in g.report()]


@pytest.mark.parametrize("verified", ["all", "sampled"])
@pytest.mark.parametrize("loop", LATE, ids=lambda f: f.__name__)
def test_a_late_deviation_is_reported_as_by_the_full_path(loop: Callable[[nn.Module, torch.optim.Optimizer], None],
                                                          verified: str) -> None:
    """Deviations the calls show, and those the `.grad` show right after a verified cycle's start (the
    cycle is re-established after each fallback, and its first `VERIFY_ALL` cycles are verified)."""
    assert _report(loop, True, verified) == _report(loop, False)


def test_a_change_only_the_grads_show_is_found_on_a_verified_cycle() -> None:
    """`p.grad = None` by hand between the pass and the step, from a late step on: the full path reports
    GL002 at once; the steady cycle, which reads the `.grad` on its first cycles and then on one cycle in
    `VERIFY_EVERY` only (GL002's rule document says so), on the first verified cycle it happens in, at the
    same place; never verified, never. Every cycle verified, at once."""
    loop = late_grads_dropped_between_backward_and_step
    full = _report(loop, False)
    sampled = _report(loop, True, "sampled")
    assert [f[3] for f in full] == [f[3] for f in sampled] == ["GL002"]
    assert [f[:3] for f in full] == [f[:3] for f in sampled]
    assert 0 <= int(sampled[0][5]) - int(full[0][5]) <= 4 * cycle.VERIFY_EVERY  # type: ignore[call-overload]
    assert _report(loop, True, "all") == full
    assert _report(loop, True, "none") == []


def test_late_deviations_are_found_at_their_step() -> None:
    found = {loop.__name__: sorted((f[3], f[5]) for f in _report(loop, True))
             for loop in (late_missing_clear, late_window_of_two_undivided, late_clear_between_backward_and_step,
                          late_kept_losses)}
    assert found["late_missing_clear"] == [("GL001", STEADY + 1)]
    assert found["late_clear_between_backward_and_step"] == [("GL002", STEADY + 1)]
    # the first window of two passes comes after STEADY windows of one
    assert found["late_window_of_two_undivided"] == [("GL001", STEADY + 1), ("GL003", STEADY + 2)]
    assert [code for code, _step in found["late_kept_losses"]] == ["GL008"]
