"""The guard's fast path (runtime/cycle.py) gives the same findings as the full path.

Each loop runs steadily for a while (a clear, one backward pass and a step, so the fast path takes
over), then leaves the steady cycle in its own way: a skipped step, a missing clear, a rescale, a
clip, a clear between backward and step, a closure, a second model. It runs twice in record mode,
with the fast path on and off, and the two reports must be equal, finding for finding.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402

from gradcheck_lint.runtime import cycle, guard  # noqa: E402
from runtime_models import SmallCNN, cnn_batch  # noqa: E402


@pytest.fixture(autouse=True)
def _cycle_first(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests are of the steady cycle (cycle.py): established without the replay tried first."""
    monkeypatch.setattr(cycle, "REPLAY_FIRST", False)


def _loss(model: nn.Module, scale: float = 1.0) -> torch.Tensor:
    x, y = cnn_batch()
    return nn.functional.cross_entropy(model(x), y) * scale


def steady_then_skipped_step(model: nn.Module, opt: torch.optim.Optimizer) -> None:
    for i in range(12):
        _loss(model).backward()
        if i != 7:  # a `continue` after backward: the next step applies the skipped pass too (GL001)
            opt.step()
            opt.zero_grad()


def steady_then_warm_up(model: nn.Module, opt: torch.optim.Optimizer) -> None:
    accumulate = 1
    for i in range(16):
        if i == 8:
            accumulate = 2  # a warm-up that grows the window, each pass divided by it: no finding
        _loss(model, 1.0 / accumulate).backward()
        if (i + 1) % accumulate == 0:
            opt.step()
            opt.zero_grad()


def steady_then_missing_clear(model: nn.Module, opt: torch.optim.Optimizer) -> None:
    for i in range(12):
        if i < 6:
            opt.zero_grad()
        _loss(model).backward()
        opt.step()


def steady_then_unscaled_window(model: nn.Module, opt: torch.optim.Optimizer) -> None:
    for i in range(20):
        # from step 6 on, windows of two passes, the loss not divided: GL003, and GL001 at the first
        # (after windows of one, a window of two whose passes are not divided is a skipped step's)
        _loss(model).backward()
        if i < 6 or i % 2 == 1:
            opt.step()
            opt.zero_grad()


def steady_then_clear_before_step(model: nn.Module, opt: torch.optim.Optimizer) -> None:
    for i in range(12):
        opt.zero_grad()
        _loss(model).backward()
        if i >= 8:
            opt.zero_grad()  # between backward and step (GL002)
        opt.step()


def steady_with_rescale_and_clip(model: nn.Module, opt: torch.optim.Optimizer) -> None:
    for i in range(14):
        opt.zero_grad(set_to_none=i % 3 != 0)
        _loss(model).backward()
        if i % 4 == 1:
            torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
        if i % 5 == 2:
            for p in model.parameters():
                p.grad /= 2
        opt.step()


def steady_then_grad_set_to_none_by_hand(model: nn.Module, opt: torch.optim.Optimizer) -> None:
    for i in range(12):
        if i < 6:
            opt.zero_grad()
        else:
            for p in model.parameters():
                p.grad = None
        _loss(model).backward()
        opt.step()


def steady_then_closure(model: nn.Module, opt: torch.optim.Optimizer) -> None:
    for i in range(12):
        if i < 6:
            opt.zero_grad()
            _loss(model).backward()
            opt.step()
        else:
            def closure() -> torch.Tensor:
                opt.zero_grad()
                loss = _loss(model)
                loss.backward()
                return loss

            opt.step(closure)


def steady_then_model_zero_grad_and_kept_losses(model: nn.Module, opt: torch.optim.Optimizer) -> None:
    losses = []
    for i in range(14):
        (model if i % 2 else opt).zero_grad()
        loss = _loss(model)
        loss.backward()
        if i >= 6:
            losses.append(loss)  # graphs kept alive (GL008)
        opt.step()


LOOPS = [steady_then_skipped_step, steady_then_warm_up, steady_then_missing_clear, steady_then_unscaled_window,
         steady_then_clear_before_step, steady_with_rescale_and_clip, steady_then_grad_set_to_none_by_hand,
         steady_then_closure, steady_then_model_zero_grad_and_kept_losses]


def _run(loop: Callable[[nn.Module, torch.optim.Optimizer], None], fast: bool, process_wide: bool) -> list[tuple[object, ...]]:
    torch.manual_seed(0)
    model = SmallCNN()
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    was, cycle.ENABLED = cycle.ENABLED, fast
    g = guard(mode="record") if process_wide else guard(model, opt, mode="record")
    try:
        g.start(process_wide=process_wide)
        loop(model, opt)
    finally:
        g.stop()
        cycle.ENABLED = was
    return [(f.path, f.line, f.col, f.code, f.steps, f.first_step, f.message, f.optimizer) for f in g.report()]


@pytest.mark.parametrize("process_wide", [False, True], ids=["guard", "process-wide"])
@pytest.mark.parametrize("loop", LOOPS, ids=lambda f: f.__name__)
def test_fast_path_gives_the_full_paths_findings(loop, process_wide: bool) -> None:  # type: ignore[no-untyped-def]
    assert _run(loop, True, process_wide) == _run(loop, False, process_wide)


def test_the_buggy_loops_are_found() -> None:
    codes = {loop.__name__: {f[3] for f in _run(loop, True, False)}
             for loop in (steady_then_skipped_step, steady_then_missing_clear, steady_then_unscaled_window,
                          steady_then_clear_before_step, steady_then_model_zero_grad_and_kept_losses)}
    assert codes == {"steady_then_skipped_step": {"GL001"}, "steady_then_missing_clear": {"GL001"},
                     "steady_then_unscaled_window": {"GL001", "GL003"}, "steady_then_clear_before_step": {"GL002"},
                     "steady_then_model_zero_grad_and_kept_losses": {"GL008"}}


def test_a_steady_loop_runs_on_the_fast_path() -> None:
    torch.manual_seed(0)
    model = SmallCNN()
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    phases = []
    with guard(model, opt) as g:
        for _ in range(8):
            opt.zero_grad()
            _loss(model).backward()
            opt.step()
            probe = g._probe
            assert probe is not None
            phases.append(probe._cycle.phase if probe._cycle is not None else None)
    # four windows of one pass, then the cycle is steady: it stays on the fast path
    assert phases[:3] == [None, None, None] and phases[3:] == [cycle.STEPPED] * 5
    assert list(g.report()) == []


def test_a_pass_whose_factors_the_cycle_did_not_read_takes_those_of_the_next_pass_of_its_line() -> None:
    from gradcheck_lint.runtime.evidence import BackwardPass, Site
    from gradcheck_lint.runtime.windows import UNREAD
    from gradcheck_lint.runtime.windows import scales_of as _scales

    site = Site("train.py", 7, "loss.backward()", col=5)
    unread, half, other = BackwardPass(1, site, scale=UNREAD), BackwardPass(2, site, scale=(0.5,)), BackwardPass(3, site, scale=(1.0,))
    assert _scales([half, unread]) == [(0.5,), (0.5,)]  # in the order of the passes, whatever the window's
    assert _scales([unread, half, other]) == [(0.5,), (0.5,), (1.0,)]
    assert _scales([unread]) == [None]  # nothing read after it: unknown, no finding


def test_the_cycle_reads_the_loss_factors_on_its_verified_cycles_only(monkeypatch: pytest.MonkeyPatch) -> None:
    from gradcheck_lint.runtime import loss_scale

    reads = []
    read = loss_scale.graph_scale

    def counted(grad_fn: object) -> object:
        reads.append(1)
        return read(grad_fn)

    # the full path reads them through `LossGraph.scale`, the cycle with `graph_scale` itself
    monkeypatch.setattr(loss_scale, "graph_scale", counted)
    monkeypatch.setattr(cycle, "graph_scale", counted)
    torch.manual_seed(0)
    model = SmallCNN()
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    with guard(model, opt, mode="record") as g:
        for _ in range(40):
            opt.zero_grad()
            _loss(model).backward()
            opt.step()
    assert len(g.report()) == 0
    # the full path's first passes, the first `VERIFY_ALL` cycles, then one in `VERIFY_EVERY` (pseudo-random)
    assert cycle.VERIFY_ALL < len(reads) < 40 * 2 // 3


def test_window_sizes_keep_constant_memory() -> None:
    from gradcheck_lint.runtime.windows import WindowSizes

    sizes = WindowSizes()
    for k in [3, 1, 1] + [1] * 100_000 + [2]:
        sizes.append(k)
    assert len(sizes) == 100_004
    assert (sizes[0], sizes[1], sizes[2], sizes[-2], sizes[-1]) == (3, 1, 1, 1, 2)
    assert sizes.non_unit == 2
    assert len(sizes.head) == 3
    with pytest.raises(IndexError):
        sizes[50]


def test_a_long_steady_run_keeps_the_ledger_small() -> None:
    # what is bounded is the ledger's record per step, whatever the model: a small one keeps 600 steps cheap
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    x, y = torch.randn(4, 8), torch.tensor([0, 1, 2, 0])
    with guard(model, opt, mode="record") as g:
        for _ in range(600):
            opt.zero_grad()
            nn.functional.cross_entropy(model(x), y).backward()
            opt.step()
        ledger = g._probe.ledger
        assert len(ledger.passes) <= 300 and len(ledger._held) <= 300
