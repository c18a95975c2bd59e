"""The replay's schedule of verified cycles (runtime/replay.py, `Replay._next_cycle`): dense at first, then
thinning out to one in `VERIFY_SPARSEST` on average; dense again after any change of pattern (a new
replay); and a bug that starts late in a run that was correct before is still reported on it, at the
step the full path names when the calls show it, some verified cycles later when only the `.grad`, the
loss's factors or GL008's tags show it.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Callable

import pytest

torch = pytest.importorskip("torch")
from test_runtime_replay import (  # noqa: E402
    ACCUM,
    Gan,
    grads_dropped_by_hand_from_then_on,
    late_kept_losses,
    late_undivided_loss,
    steady,
)

from gradcheck_lint.runtime import guard, recorder, replay  # noqa: E402

LATE = 300  # the step a bug starts at, in a run correct until then (the ramp to `VERIFY_SPARSEST` ends near 130)


def _verified(loop: Callable[[Gan, int], None], iterations: int) -> list[tuple[int, bool]]:
    """For each iteration, the replay it ended on (0 if none; counted from 1 in order of appearance) and
    whether the cycle it starts next is verified."""
    gan = Gan()
    seen: dict[int, int] = {}
    out: list[tuple[int, bool]] = []
    held: list[object] = []  # the replays, kept alive so that their ids are not reused
    with guard(gan.models(), gan.optimizers(), mode="record") as g:
        for i in range(iterations):
            loop(gan, i)
            r = g._probe._replay if g._probe is not None else None
            if r is None:
                out.append((0, False))
                continue
            if id(r) not in seen:
                held.append(r)
                seen[id(r)] = len(seen) + 1
            out.append((seen[id(r)], r.verify))
    return out


def test_the_verified_cycles_thin_out_to_the_floor() -> None:
    """Dense at first, then sparser: past the ramp, about one cycle in `VERIFY_SPARSEST` (before, the rate
    stayed at one in `VERIFY_EVERY`: about 88 of these 700)."""
    trace = _verified(steady, 1000)
    assert {r for r, _v in trace[20:]} == {1}  # one replay all along
    first = next(i for i, (r, _v) in enumerate(trace) if r)
    assert all(v for _r, v in trace[first:first + replay.VERIFY_ALL - 1])
    late = sum(v for _r, v in trace[300:])
    assert 700 / replay.VERIFY_SPARSEST / 3 <= late <= 700 / replay.VERIFY_SPARSEST * 2


def _window_grows(gan: Gan, i: int) -> None:
    accum = ACCUM + (i >= LATE)  # a window of 3 micro-batches from `LATE` on, each divided by 3
    gan.opt_D.zero_grad()
    for k in range(accum):
        (gan.d_loss(k % ACCUM, divide=False) / accum).backward()
    gan.opt_D.step()
    gan.opt_G.zero_grad()
    for k in range(ACCUM):
        gan.g_loss(k).backward()
    gan.opt_G.step()


Extra = list[tuple[torch.nn.Module, torch.optim.Optimizer]]


def _second_generator(gan: Gan, i: int, extra: Extra = []) -> None:  # noqa: B006 - one run's list
    if i == 0:
        extra.clear()
    steady(gan, i)
    if i >= LATE:
        if not extra:
            model = torch.nn.Linear(4, 4)
            extra.append((model, torch.optim.SGD(model.parameters(), lr=0.1)))
        model, opt = extra[0]
        opt.zero_grad()
        model(gan.real[0]).pow(2).mean().backward()
        opt.step()


def _one_missing_clear(gan: Gan, i: int) -> None:
    if i != LATE:
        gan.opt_D.zero_grad()  # missing once: a finding (GL001), then the same loop again
    for k in range(ACCUM):
        gan.d_loss(k).backward()
    gan.opt_D.step()
    gan.opt_G.zero_grad()
    for k in range(ACCUM):
        gan.g_loss(k).backward()
    gan.opt_G.step()


@pytest.mark.parametrize("loop", [_window_grows, _second_generator, _one_missing_clear],
                         ids=["new window size", "new optimizer", "a finding"])
def test_the_schedule_resets_on_a_change_of_pattern(loop: Callable[[Gan, int], None]) -> None:
    """Thinned out by step `LATE` (at most one cycle in 16 verified, where one in `VERIFY_EVERY` was); a
    change of pattern there ends the replay, and the next one verifies its first `VERIFY_ALL` cycles
    again, then thins out again."""
    trace = _verified(loop, LATE + 400)
    before = trace[LATE - 200:LATE]
    assert {r for r, _v in before} == {1} and sum(v for _r, v in before) <= 200 // 16
    after = [(r, v) for r, v in trace[LATE:] if r > 1]
    assert after, "no new replay after the change"
    newest = max(r for r, _v in after)
    cycles = [v for r, v in after if r == newest]
    assert all(cycles[:replay.VERIFY_ALL - 1])
    assert sum(cycles[-200:]) <= 200 // 16


def _report(loop: Callable[[Gan, int], None], fast: bool, iterations: int) -> list[tuple[object, ...]]:
    gan = Gan()
    was, recorder.ENABLED = recorder.ENABLED, fast
    try:
        with guard(gan.models(), gan.optimizers(), mode="record") as g:
            for i in range(iterations):
                loop(gan, i)
    finally:
        recorder.ENABLED = was
    return [(f.path, f.line, f.code, f.first_step) for f in g.report()]


def _missing_clear_from_late_on(gan: Gan, i: int) -> None:
    if i < LATE:
        gan.opt_D.zero_grad()  # the clear stops at step `LATE`
    for k in range(ACCUM):
        gan.d_loss(k).backward()
    gan.opt_D.step()
    gan.opt_G.zero_grad()
    for k in range(ACCUM):
        gan.g_loss(k).backward()
    gan.opt_G.step()


# the bugs of `test_runtime_replay`, starting at `LATE` instead
_grads_dropped_from_late_on = functools.partial(grads_dropped_by_hand_from_then_on, start=LATE)
_undivided_from_late_on = functools.partial(late_undivided_loss, start=LATE)
_kept_from_late_on = functools.partial(late_kept_losses, start=LATE)


def test_a_missing_clear_from_a_late_step_is_reported_at_that_step() -> None:
    """The calls show it: found at the step it happens on, however sparse the verified cycles are by then."""
    fast = _report(_missing_clear_from_late_on, True, LATE + 20)
    assert fast == _report(_missing_clear_from_late_on, False, LATE + 20)
    assert sorted((code, step) for _p, _l, code, step in fast) == [("GL001", LATE + 1), ("GL005", LATE + 1)]


@pytest.mark.parametrize("loop, every", [(_grads_dropped_from_late_on, "VERIFY_SPARSEST"),
                                         (_undivided_from_late_on, "VERIFY_SPARSEST"),
                                         (_kept_from_late_on, "TAG_EVERY")],
                         ids=["grads dropped by hand", "loss no longer divided", "graphs kept"])
def test_a_bug_only_sampled_cycles_show_is_still_reported_late_in_a_run(loop: Callable[[Gan, int], None],
                                                                         every: str) -> None:
    """From step `LATE` on, a bug no call shows: the full path's finding, on the same line, some sampled
    cycles later (the verified ones by then one in `VERIFY_SPARSEST`; GL008's tags one in `TAG_EVERY`)."""
    mean = getattr(replay, every)
    iterations = LATE + 8 * mean
    full, fast = _report(loop, False, iterations), _report(loop, True, iterations)
    assert [f[:3] for f in fast] == [f[:3] for f in full] != []
    for a, b in zip(fast, full):
        assert 0 <= int(a[3]) - int(b[3]) <= 8 * mean  # type: ignore[call-overload]


def test_the_first_tags_of_a_line_are_made_on_the_lane(monkeypatch: pytest.MonkeyPatch) -> None:
    """Past the dense start, no pass leaves the lane for GL008's first `TAG_ALL` tags of its line: the lane
    tags them itself (before, they took the replay's methods: the benchmark GAN's first 30 or so
    iterations off the lane), and as many passes are tagged as when the replay's methods tag them."""
    from gradcheck_lint.runtime import monitors

    off_lane: list[bool] = []
    before_backward = replay.Replay.before_backward

    def noting(self: replay.Replay, *args: object, **kwargs: object) -> bool:
        off_lane.append(self.verify)
        return before_backward(self, *args, **kwargs)  # type: ignore[arg-type]

    tagged: list[object] = []
    tag = monitors.Monitors.tag

    def counting(self: monitors.Monitors, site: object, grad_fn: object) -> None:
        tagged.append(site)
        tag(self, site, grad_fn)  # type: ignore[arg-type]

    def run(lane: bool) -> int:
        off_lane.clear()
        tagged.clear()
        monkeypatch.setattr(replay, "LANE", lane)
        gan = Gan()
        with guard(gan.models(), gan.optimizers(), mode="record") as g:
            for i in range(3 * monitors.TAG_ALL):
                steady(gan, i)
        assert len(g.report()) == 0
        return len(tagged)

    monkeypatch.setattr(replay.Replay, "before_backward", noting)
    monkeypatch.setattr(monitors.Monitors, "tag", counting)
    on_lane = run(True)
    assert off_lane.count(False) == 0  # every pass of a cycle not verified on the lane
    assert on_lane == run(False) >= 2 * monitors.TAG_ALL


def _drawn_one_by_one(cycles: int) -> dict[int, tuple[bool, bool]]:
    """The schedule as `Replay._next_cycle` drew it one cycle at a time before 2026-11-30 (its module's
    docstring): for each cycle from the second replayed on, whether it is verified and whether it tags."""
    draw = random.Random(replay._VERIFY_SEED).random
    gap = replay._cycle.gap
    left, every = gap(draw(), replay.VERIFY_EVERY), min(2 * replay.VERIFY_EVERY,
                                                         max(replay.VERIFY_SPARSEST, replay.VERIFY_EVERY))
    tag_left = gap(draw(), replay.TAG_EVERY)
    out: dict[int, tuple[bool, bool]] = {}
    for cycle in range(1, cycles):
        tag_left -= 1
        tags = tag_left <= 0
        if tags:
            tag_left = gap(draw(), replay.TAG_EVERY)
        if cycle < replay.VERIFY_ALL:
            sampled = True
        else:
            left -= 1
            sampled = left <= 0
            if sampled:
                left = gap(draw(), every)
                every = min(2 * every, max(replay.VERIFY_SPARSEST, replay.VERIFY_EVERY))
        out[cycle + 1] = (sampled, tags or sampled)
    return out


def test_the_cycles_drawn_in_one_go_are_those_drawn_one_by_one() -> None:
    """The cycles up to the next that verifies or tags are drawn in one go (`Replay.plain`, counted down by
    the lane's step post-hook): each cycle is verified and tags exactly as when each was drawn on its own.
    (A pin for that refactor: the draws before it pass it too; a countdown one cycle off fails it.)"""
    gan = Gan()
    seen: dict[int, tuple[bool, bool]] = {}
    with guard(gan.models(), gan.optimizers(), mode="record") as g:
        r = None
        for i in range(700):
            steady(gan, i)
            now = g._probe._replay if g._probe is not None else None
            if now is None:
                continue
            assert r is None or now is r  # one replay all along
            r = now
            seen[r.cycle + 1] = (r.verify, r.tagging)  # what the cycle starting next does
    assert r is not None and not r.always and r.cycle > 600
    expected = _drawn_one_by_one(r.cycle + 1)
    assert {c: seen[c] for c in expected if c in seen and c > 1} == {c: expected[c] for c in expected
                                                                     if c in seen and c > 1}
    assert sum(v for v, _t in seen.values()) < len(seen) // 8  # the floor is reached: a test of the schedule
