"""The replay's lane (runtime/replay.py): on a replayed cycle that is not verified, each clear, backward
pass and step is recognised by the frames it was called from, and nothing is verified: no `.grad` read,
no place looked up, no list of parameters built. Counted, not timed: over a long run of a small GAN
(two optimizers, windows of two), the verification functions run on verified cycles only; a bug that
starts late with a changed pattern of calls is still reported as the full path reports it, at the same
step; `verify_every_cycle` checks every call on the full path.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest

torch = pytest.importorskip("torch")
import test_runtime_replay as replay_programs  # noqa: E402
from test_runtime_replay import ACCUM, Gan, steady  # noqa: E402

from gradcheck_lint.runtime import guard, recorder, replay  # noqa: E402
from gradcheck_lint.runtime.probe import Probe  # noqa: E402

LONG = 400  # iterations of the long run
LATE = 300  # the iteration a late bug starts at: deep in the lane


def _counting(monkeypatch: pytest.MonkeyPatch, calls: Counter[str]) -> None:
    """Count the calls of the replay's verification functions and of the per-parameter list a clear
    builds, split by whether the replayed cycle under way is verified."""
    live: list[replay.Replay] = []

    def counted(name: str, owner: Any) -> None:
        static = isinstance(owner.__dict__[name], staticmethod)
        original = getattr(owner, name)

        def call(*args: Any, **kwargs: Any) -> Any:
            current = live[-1] if live else None
            state = "verified" if current is None or current.verify else "not verified"
            calls[f"{name} {state}"] += 1
            return original(*args, **kwargs)

        monkeypatch.setattr(owner, name, staticmethod(call) if static else call)

    for name in ("_next", "_ended", "clear", "before_backward", "before_step"):
        counted(name, replay.Replay)
    counted("_params_of", Probe)
    init = replay.Replay.__init__

    def made(self: replay.Replay, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        live.append(self)

    monkeypatch.setattr(replay.Replay, "__init__", made)
    next_cycle = replay.Replay._next_cycle

    def cycle_drawn(self: replay.Replay) -> None:
        ahead = self.plain  # cycles drawn earlier with those not verified (`Replay.plain`), counted then
        next_cycle(self)
        if ahead:
            return
        n = 1 + self.plain  # this cycle, and those drawn with it: their start only counts down
        calls["cycles verified" if self.verify else "cycles not verified"] += n
        calls["cycles on the lane"] += n * getattr(self, "lane", False)

    monkeypatch.setattr(replay.Replay, "_next_cycle", cycle_drawn)


def test_cycles_not_verified_run_no_verification(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: Counter[str] = Counter()
    _counting(monkeypatch, calls)
    gan = Gan()
    with guard(gan.models(), gan.optimizers(), mode="record") as g:
        for i in range(LONG):
            steady(gan, i)
        assert g._probe is not None and g._probe._replay is not None
    assert len(g.report()) == 0
    not_verified = calls["cycles not verified"]
    assert not_verified > LONG // 2
    # no `.grad` is read on a cycle not verified (main read none either, but called the check at each step)
    assert calls["_ended not verified"] == 0
    # the per-call checks of the replay's methods (8 calls a cycle: 2 clears, 4 passes, 2 steps) run on a
    # cycle not verified only on the first passes of each line (GL008 tags its first `TAG_ALL`): the loss
    # factors and later tags are read on the verified cycles, one draw per cycle (on c624210: all 8, every
    # cycle; then one cycle in `GRAPH_EVERY` and about one pass in `TAG_EVERY`, drawn apart)
    assert calls["_next not verified"] < 3 * not_verified
    assert calls["clear not verified"] < not_verified
    # and no list of parameters is built for a clear on the lane (on main: one per clear)
    assert calls["_params_of not verified"] < not_verified
    assert calls["cycles on the lane"] > LONG // 2


# -- a bug that starts deep in the lane, with a changed pattern of calls --------------------------
def late_missing_clear(gan: Gan, i: int) -> None:
    if i < LATE:
        gan.opt_D.zero_grad()  # from then on D's gradients pile up across steps (GL001)
    for k in range(ACCUM):
        gan.d_loss(k).backward()
    gan.opt_D.step()
    gan.opt_G.zero_grad()
    for k in range(ACCUM):
        gan.g_loss(k).backward()
    gan.opt_G.step()


def _starting_late(loop: Callable[..., None]) -> Callable[[Gan, int], None]:
    """One of test_runtime_replay's late bugs, started at `LATE` instead."""
    def late(gan: Gan, i: int) -> None:
        loop(gan, i, start=LATE)
    late.__name__ = loop.__name__
    return late


late_longer_window = _starting_late(replay_programs.late_longer_window)  # a third micro-batch (GL003)
late_clear_after_backward = _starting_late(replay_programs.late_clear_after_backward)  # D's window dropped (GL002)


def late_new_backward_line(gan: Gan, i: int) -> None:
    gan.opt_D.zero_grad()
    for k in range(ACCUM):
        if i >= LATE:
            gan.d_loss(k, divide=False).backward()  # another line, the window no longer divided (GL003)
        else:
            gan.d_loss(k).backward()
    gan.opt_D.step()
    gan.opt_G.zero_grad()
    for k in range(ACCUM):
        gan.g_loss(k).backward()
    gan.opt_G.step()


LATE_BUGS = [late_missing_clear, late_longer_window, late_clear_after_backward, late_new_backward_line]


def _report(loop: Callable[[Gan, int], None], fast: bool, verify_every_cycle: bool = False,
            lane: list[int] | None = None) -> list[tuple[object, ...]]:
    gan = Gan()
    was, recorder.ENABLED = recorder.ENABLED, fast
    try:
        with guard(gan.models(), gan.optimizers(), mode="record", verify_every_cycle=verify_every_cycle) as g:
            for i in range(LATE + 40):
                if lane is not None and i == LATE:
                    probe = g._probe
                    assert probe is not None
                    lane.append(int(probe._replay is not None and any(f is not None for f in probe._replay.facts)))
                loop(gan, i)
    finally:
        recorder.ENABLED = was
    return [(f.path, f.line, f.col, f.code, f.steps, f.first_step, f.message, f.optimizer) for f in g.report()]


@pytest.mark.parametrize("loop", LATE_BUGS, ids=lambda f: f.__name__)
def test_a_bug_that_starts_deep_in_the_lane_is_reported_as_by_the_full_path(loop: Callable[[Gan, int], None]) -> None:
    lane: list[int] = []
    fast = _report(loop, True, lane=lane)
    assert lane == [1]  # the replay had learned its lane when the bug started
    full = _report(loop, False)
    assert fast == full != []
    assert {f[5] for f in fast} <= {LATE + 1, LATE + 2}  # the step the bug first shows at (no delay)


def grads_dropped_by_hand_once(gan: Gan, i: int) -> None:
    gan.opt_D.zero_grad()
    for k in range(ACCUM):
        gan.d_loss(k).backward()
        if i == LATE and k == 0:
            for p in gan.D.parameters():
                p.grad = None  # once, behind the probe's back: only the `.grad` show it (GL002)
    gan.opt_D.step()
    gan.opt_G.zero_grad()
    for k in range(ACCUM):
        gan.g_loss(k).backward()
    gan.opt_G.step()


def test_verify_every_cycle_checks_every_call_on_the_full_path() -> None:
    """A change only the `.grad` show, on one cycle deep in a steady run: found at its step with the
    option, as the full path finds it (sampled, only if that cycle is verified: the rule documents say so)."""
    full = _report(grads_dropped_by_hand_once, False)
    assert [f[3] for f in full] == ["GL002"]
    assert _report(grads_dropped_by_hand_once, True, verify_every_cycle=True) == full
    gan = Gan()
    with guard(gan.models(), gan.optimizers(), mode="record", verify_every_cycle=True) as g:
        for i in range(40):
            steady(gan, i)
        assert g._probe is not None and g._probe._replay is None and g._probe._cycle is None


def test_verify_every_cycle_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GRADLINT_VERIFY_EVERY_CYCLE", "1")
    assert guard().verify_every_cycle is True
    assert guard(verify_every_cycle=False).verify_every_cycle is False
    monkeypatch.setenv("GRADLINT_VERIFY_EVERY_CYCLE", "0")
    assert guard().verify_every_cycle is False


def test_the_process_wide_guard_takes_the_lane_at_its_steps_too(monkeypatch: pytest.MonkeyPatch) -> None:
    """`gradlint run`'s guard steps through global hooks, one frame deeper: the step's frames are read as
    an optimizer's own hook reads them, so its steps are recognised on the lane as well. The lane's checks
    are the entry points' own (no method of the replay): what is counted is the calls that did not take
    it, which go through the replay's methods (on main before rtcost4, every step did)."""
    from gradcheck_lint.runtime.guard import disable, enable

    off_lane: Counter[str] = Counter()
    for name in ("clear", "before_backward", "before_step"):
        original = getattr(replay.Replay, name)

        def call(self: Any, *args: Any, _original: Any = original, _name: str = name, **kwargs: Any) -> Any:
            off_lane[_name] += 1
            return _original(self, *args, **kwargs)

        monkeypatch.setattr(replay.Replay, name, call)
    gan = Gan()
    iterations = 120
    enable(mode="record")
    try:
        for i in range(iterations):
            steady(gan, i)
    finally:
        report = disable()
    assert len(report) == 0
    # 2 clears, 4 passes and 2 steps an iteration; off the lane: the cycles before the replay and its first
    # verified ones, GL008's first `TAG_ALL` passes of each of the two lines, then about one cycle in 8
    steps = clears = 2 * iterations
    assert off_lane["before_step"] < steps // 2 and off_lane["clear"] < clears // 2
    assert off_lane["before_backward"] < 4 * iterations // 2


def test_a_loop_of_one_optimizer_is_replayed_on_the_lane(monkeypatch: pytest.MonkeyPatch) -> None:
    """A plain clear / backward / step loop of one optimizer is taken by the replay, not by the steady
    cycle of `cycle.py` (which compares the parameters a clear and a step list on every cycle): its cycles
    not verified read no `.grad` and build no list of parameters; a clear dropped late is still reported
    at its line, as with the steady cycle and the full path."""
    from torch import nn

    from gradcheck_lint.runtime import cycle

    def run(drop_clear_at: int | None) -> tuple[list[tuple[int, str]], Counter[str], bool, bool]:
        calls: Counter[str] = Counter()
        _counting(monkeypatch, calls)
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        x, y = torch.randn(4, 8), torch.randn(4, 1)
        with guard(model, opt, mode="record") as g:
            for i in range(LONG):
                if drop_clear_at is None or i < drop_clear_at:
                    opt.zero_grad()
                nn.functional.mse_loss(model(x), y).backward()
                opt.step()
                if i == LATE - 1:
                    probe = g._probe
                    assert probe is not None
                    on_replay, on_cycle = probe._replay is not None, probe._cycle is not None
        monkeypatch.undo()
        return sorted({(f.line, f.code) for f in g.report()}), calls, on_replay, on_cycle

    found, calls, on_replay, on_cycle = run(None)
    assert found == [] and on_replay and not on_cycle
    assert calls["cycles not verified"] > LONG // 2 and calls["_ended not verified"] == 0
    assert calls["_params_of not verified"] == 0
    late, _calls, _r, _c = run(LATE)
    monkeypatch.setattr(cycle, "REPLAY_FIRST", False)  # the steady cycle of one optimizer, as before
    assert late and late == run(LATE)[0]


def test_steps_through_an_lr_scheduler_take_the_lane(monkeypatch: pytest.MonkeyPatch) -> None:
    """An LR scheduler wraps `optimizer.step` (torch's `patch_track_step_called`), so each step hook sees
    one more internal frame between torch's step wrapper and the user's call. It changes no gradient and
    nothing the guard checks: the step is recognised on the lane as without it (`SiteMemo.mid`). On main
    before rt18, every step of such a loop went through `Replay.before_step` and its place lookup (194 of
    200 here); a clear dropped late is still reported at its line, as by the full path."""
    from torch import nn

    def run(drop_clear_at: int | None, fast: bool = True) -> tuple[list[tuple[int, str, int]], int]:
        off_lane = [0]
        original = replay.Replay.before_step

        def before_step(self: Any, *args: Any, **kwargs: Any) -> Any:
            off_lane[0] += 1
            return original(self, *args, **kwargs)

        monkeypatch.setattr(replay.Replay, "before_step", before_step)
        monkeypatch.setattr(recorder, "ENABLED", fast)
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        sched = torch.optim.lr_scheduler.StepLR(opt, step_size=50, gamma=0.5)
        x, y = torch.randn(4, 8), torch.randn(4, 1)
        with guard(model, opt, mode="record") as g:
            for i in range(LATE + 40):
                if drop_clear_at is None or i < drop_clear_at:
                    opt.zero_grad()
                nn.functional.mse_loss(model(x), y).backward()
                opt.step()
                sched.step()
        monkeypatch.undo()
        return sorted({(f.line, f.code, f.first_step) for f in g.report()}), off_lane[0]

    found, off_lane = run(None)
    assert found == []
    assert off_lane < (LATE + 40) // 4  # the replay's first cycles and its verified ones
    late, _off = run(LATE)
    assert late and late == run(LATE, fast=False)[0]


def test_the_lane_tells_the_monitors_of_a_step_end_only_when_they_have_more_to_do_than_count_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """At a step end the monitors (GL006-GL009) count the step and note the optimizer's last step; with
    nothing pending (no GradScaler scale, clip, DDP window or kept total) and GL008's graphs not due, that is
    all they do, so the lane's step post-hook passes such step ends without calling `Monitors.after_step`
    (`Replay.owed`), and they are told before the monitors next read anything (`Monitors._catch_up`). On
    main before rt18 every step end of a replayed cycle called it (2 an iteration here)."""
    from gradcheck_lint.runtime.monitors import Monitors

    calls = [0]
    original = Monitors.after_step

    def after_step(self: Any, *args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Monitors, "after_step", after_step)
    gan = Gan()
    with guard(gan.models(), gan.optimizers(), mode="record") as g:
        for i in range(LONG):
            if i == LONG // 2:
                calls[0] = 0  # the second half: past the replay's start and GL008's first tags
            steady(gan, i)
        probe = g._probe
        assert probe is not None and probe.monitors is not None
        probe.steps_checked()  # (tells the monitors the owed step ends)
        assert probe.monitors.steps == 2 * LONG
        last = dict(probe.monitors._step_order)
    assert len(g.report()) == 0
    # of the second half's LONG step ends: those after a tag (GL008's tag cycles, one in 8) and those at which
    # the tagged graphs are due (75 here); on main, all of them
    assert calls[0] < LONG // 2
    assert last == {id(gan.opt_D): 2 * LONG - 1, id(gan.opt_G): 2 * LONG}


def late_kept_losses(gan: Gan, i: int, kept: list[torch.Tensor] = []) -> None:  # noqa: B006
    gan.opt_D.zero_grad()
    for k in range(ACCUM):
        gan.d_loss(k).backward()
    gan.opt_D.step()
    gan.opt_G.zero_grad()
    for k in range(ACCUM):
        loss = gan.g_loss(k)
        loss.backward(retain_graph=False)
        if i >= LATE:
            kept.append(loss)  # from then on every G loss keeps its graph (GL008)
    gan.opt_G.step()


def test_a_graph_kept_late_is_reported_at_the_same_step_with_owed_step_ends() -> None:
    """GL008 counts graphs' ages in steps: with the lane's step ends owed to the monitors, the same finding
    at the same step as on the full path."""
    kept: list[torch.Tensor] = []

    def loop(gan: Gan, i: int) -> None:
        late_kept_losses(gan, i, kept)

    fast = _report(loop, True)
    kept.clear()
    full = _report(loop, False)
    assert fast == full
    assert [f[3] for f in fast] == ["GL008"]


def test_an_in_place_error_after_a_step_on_the_lane_names_the_last_step_as_the_full_path() -> None:
    """GL009 reads each optimizer's last step and their order (`Monitors.backward_failed`): told from the
    owed step ends first, as the full path tells them at each step."""

    def loop(gan: Gan, i: int) -> None:
        steady(gan, i)
        if i == LATE:
            loss = gan.g_loss(0)
            gan.g_loss(1).backward()
            gan.opt_G.step()  # between the forward of `loss` and its backward: G's weights changed in place
            with pytest.raises(RuntimeError):
                loss.backward()

    fast = _report(loop, True)
    full = _report(loop, False)
    assert fast == full
    assert "GL009" in [f[3] for f in fast]
