"""The runtime counterparts of GL006-GL009 (gradcheck_lint/runtime/monitors.py), on real models."""

from __future__ import annotations

from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402

from gradcheck_lint.runtime import guard  # noqa: E402
from gradcheck_lint.runtime.evidence import UNKNOWN_SITE  # noqa: E402
from gradcheck_lint.runtime.guard import GradientContractError  # noqa: E402


def _model() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))


def _batches(n: int = 6) -> list[tuple[torch.Tensor, torch.Tensor]]:
    return [(torch.randn(4, 8), torch.randn(4, 1)) for _ in range(n)]


def _amp_loop(unscale_first: bool, through_scaler: bool = True) -> list[tuple[str, int]]:
    model = _model()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    scaler = torch.amp.GradScaler("cpu")
    with guard(model, opt, mode="record") as g:
        for x, y in _batches():
            opt.zero_grad()
            scaler.scale(nn.functional.mse_loss(model(x), y)).backward()
            if unscale_first:
                scaler.unscale_(opt)
            clip_line = _line_of_next() + 1
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            if through_scaler:
                scaler.step(opt)
                scaler.update()
            else:
                opt.step()
    return [(f.code, f.line - clip_line) for f in g.report()]


def _line_of_next() -> int:
    import sys

    return sys._getframe(1).f_lineno


def test_gl007_clip_of_scaled_gradients_is_reported_at_the_clip_and_unscale_first_is_silent() -> None:
    assert _amp_loop(unscale_first=False) == [("GL007", 0)]
    assert _amp_loop(unscale_first=True) == []


def test_gl007_step_that_bypasses_the_scaler() -> None:
    found = _amp_loop(unscale_first=False, through_scaler=False)
    assert [code for code, _ in found] == ["GL007", "GL007"]  # the clip, then the bypassing step
    assert found[1][1] == 5  # `opt.step()`, five lines below the clip


def test_gl007_clip_of_a_partial_window_and_clip_on_the_boundary() -> None:
    def run(clip_every_micro_batch: bool) -> list[str]:
        model = _model()
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        with guard(model, opt, mode="record") as g:
            for i, (x, y) in enumerate(_batches(8)):
                (nn.functional.mse_loss(model(x), y) / 4).backward()
                if clip_every_micro_batch:
                    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                if (i + 1) % 4 == 0:
                    if not clip_every_micro_batch:
                        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                    opt.step()
                    opt.zero_grad()
        return [f.code for f in g.report()]

    assert run(True) == ["GL007"]
    assert run(False) == []


@pytest.mark.parametrize("set_to_none", [True, False])
@pytest.mark.parametrize("window", [4, 1])
def test_gl007_a_clip_of_gradients_just_stepped_and_cleared_clips_no_window(set_to_none: bool, window: int) -> None:
    # the clip gated on the step's condition, after the step and the clear (a trainer's step method
    # that steps and clears, then `if sync_gradients: clip`): it finds no gradient written since the
    # clear, so the next micro-batch's backward does not add to a clipped partial window
    model = _model()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    with guard(model, opt, mode="record") as g:
        for i, (x, y) in enumerate(_batches(24)):
            (nn.functional.mse_loss(model(x), y) / window).backward()
            if (i + 1) % window == 0:
                opt.step()
                opt.zero_grad(set_to_none=set_to_none)
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    assert list(g.report()) == []


def test_gl007_a_clip_after_a_clear_still_counts_once_a_backward_wrote_again() -> None:
    # cleared, then a micro-batch's backward, then the clip on every micro-batch: a partial window again
    model = _model()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    with guard(model, opt, mode="record") as g:
        for i, (x, y) in enumerate(_batches(8)):
            (nn.functional.mse_loss(model(x), y) / 4).backward()
            clip_line = _line_of_next() + 1
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            if (i + 1) % 4 == 0:
                opt.step()
                opt.zero_grad()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    assert [(f.code, f.line - clip_line) for f in g.report()] == [("GL007", 0)]


def test_gl007_in_raise_mode_raises_at_the_clip() -> None:
    model = _model()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    scaler = torch.amp.GradScaler("cpu")
    x, y = _batches(1)[0]
    with pytest.raises(GradientContractError, match="GL007"), guard(model, opt):
        scaler.scale(nn.functional.mse_loss(model(x), y)).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)


def test_gl009_inplace_error_after_a_step_keeps_propagating_with_the_diagnostic_as_a_note() -> None:
    torch.manual_seed(0)
    gen, disc = nn.Linear(4, 8), nn.Sequential(nn.Linear(8, 8), nn.Tanh(), nn.Linear(8, 1))
    opt_g, opt_d = torch.optim.Adam(gen.parameters()), torch.optim.Adam(disc.parameters())
    with guard({"G": gen, "D": disc}, [opt_g, opt_d], mode="record") as g:
        fake = gen(torch.randn(4, 4))
        d_out = disc(fake)
        opt_d.zero_grad()
        d_out.mean().backward(retain_graph=True)
        opt_d.step()
        with pytest.raises(RuntimeError, match="inplace operation") as info:
            (-d_out.mean()).backward()
    assert [f.code for f in g.report()] == ["GL009"]
    assert "`opt_d.step()`" in g.report()[0].message and "`D`'s parameters" in g.report()[0].message
    # the forward whose graph was reused, found in the source on the error path: `d_out = disc(fake)`
    line = next(i for i, text in enumerate(Path(__file__).read_text().splitlines(), 1) if "d_out = disc(fake)" in text)
    assert f"the graph of `disc(fake)` at line {line}" in g.report()[0].message, g.report()[0].message
    assert any("GL009" in note for note in getattr(info.value, "__notes__", []))


def test_gl009_is_not_claimed_for_an_inplace_error_no_step_caused() -> None:
    model = _model()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    with guard(model, opt, mode="record") as g:
        x = torch.randn(4, 8, requires_grad=True)
        h = torch.sigmoid(x)
        loss = (h * 2).sum() + model(x).sum()
        h.add_(1)  # the user's own in-place change, no optimizer step involved
        with pytest.raises(RuntimeError, match="inplace operation"):
            loss.backward()
    assert list(g.report()) == []


@pytest.mark.parametrize(("keep", "expected"), [("tensor", ["GL008"]), ("list", ["GL008"]), ("item", []),
                                                 ("last", []), ("detach", [])])
def test_gl008_graphs_kept_by_a_running_total_or_a_list(keep: str, expected: list[str]) -> None:
    model = _model()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    total: object = 0.0
    kept: list[object] = []
    last = None
    with guard(model, opt, mode="record") as g:
        for x, y in _batches(8):
            opt.zero_grad()
            loss = nn.functional.mse_loss(model(x), y)
            loss.backward()
            opt.step()
            if keep == "tensor":
                total = total + loss
            elif keep == "list":
                kept.append(loss)
            elif keep == "item":
                total += loss.item()
            elif keep == "last":
                last = loss  # one graph at a time: not growing
            else:
                kept.append(loss.detach())
    assert [f.code for f in g.report()] == expected
    del last


def _kept_late(start: int, every: int, steps: int) -> int | None:
    """A steady loop that starts keeping every `every`-th loss's graph at step `start`: the step at
    which GL008 is first reported (None: not within `steps`)."""
    model = _model()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(4, 8), torch.randn(4, 1)
    kept: list[torch.Tensor] = []
    with guard(model, opt, mode="record") as g:
        for i in range(steps):
            opt.zero_grad()
            loss = nn.functional.mse_loss(model(x), y)
            loss.backward()
            opt.step()
            if i >= start and (i - start) % every == 0:
                kept.append(loss)
            if g.report():
                assert [f.code for f in g.report()] == ["GL008"]
                return i
    return None


def test_gl008_graphs_kept_from_late_in_a_steady_run_are_reported() -> None:
    # past the first `TAG_ALL` passes of the line the steady cycle tags the passes of its verified
    # cycles, one in `VERIFY_EVERY`: a loop that starts keeping every graph late is reported a few
    # dozen steps later, not at once
    from gradcheck_lint.runtime import cycle, monitors

    start = 2 * monitors.TAG_ALL
    found = _kept_late(start, 1, start + 20 * cycle.VERIFY_EVERY)
    assert found is not None and start + 2 <= found < start + 10 * cycle.VERIFY_EVERY


@pytest.mark.parametrize("offset", [0, 3, 7])
def test_gl008_every_tenth_graph_kept_from_late_in_a_steady_run_is_reported(offset: int) -> None:
    # a loop that keeps one loss in ten (a logging interval) meets the sampled tags too, at any
    # offset: three tagged kept graphs take about 3 x `VERIFY_EVERY` kept losses, 240 steps on average
    from gradcheck_lint.runtime import monitors

    start = 2 * monitors.TAG_ALL + offset
    assert _kept_late(start, 10, start + 1500) is not None


def test_gl008_the_steady_cycle_tags_the_passes_of_its_verified_cycles(monkeypatch: pytest.MonkeyPatch) -> None:
    """One draw per cycle for all that is sampled: the passes tagged are the first `TAG_ALL` of the line,
    then exactly those of the verified cycles (which also read every `.grad` and the loss's factors)."""
    from gradcheck_lint.runtime import cycle, monitors
    from gradcheck_lint.runtime.probe import Probe

    tagged: list[bool] = []
    before_backward = monitors.Monitors.before_backward

    def recording(self: monitors.Monitors, site: object, tensors: object, grad_fn: object = None) -> None:
        tagged.append(grad_fn is not None)
        before_backward(self, site, tensors, grad_fn)  # type: ignore[arg-type]

    monkeypatch.setattr(monitors.Monitors, "before_backward", recording)
    verified: list[bool] = []
    cycle_before = cycle.Cycle.before_backward

    def noting(self: cycle.Cycle, *args: object, **kwargs: object) -> bool:
        verify = self.verify
        taken = cycle_before(self, *args, **kwargs)  # type: ignore[arg-type]
        if taken:
            verified.append(verify)
        return taken

    monkeypatch.setattr(cycle.Cycle, "before_backward", noting)
    full_passes = [0]
    full_before_backward = Probe.full_before_backward

    def counting(self: Probe, *args: object, **kwargs: object) -> None:
        full_passes[0] += 1
        full_before_backward(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Probe, "full_before_backward", counting)
    monkeypatch.setattr(cycle, "REPLAY_FIRST", False)  # the steady cycle's tags (the replay's: test_runtime_replay)
    torch.manual_seed(0)
    model = _model()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(4, 8), torch.randn(4, 1)
    steps = monitors.TAG_ALL + 40 * cycle.VERIFY_EVERY
    with guard(model, opt) as g:
        for _ in range(steps):
            opt.zero_grad()
            nn.functional.mse_loss(model(x), y).backward()
            opt.step()
        assert g._probe is not None and g._probe._cycle is not None
    # the full path calls `before_backward` on every pass and tags it; the cycle only on the passes it
    # tags: its first `TAG_ALL`, then those of its verified cycles
    assert 0 < full_passes[0] < 8 and full_passes[0] + len(verified) == steps
    first = monitors.TAG_ALL  # counted from the cycle's first pass (the full path tags all its own)
    expected = full_passes[0] + first + sum(verified[first:])
    assert len(tagged) == expected and all(tagged)
    assert 0 < sum(verified[first:]) < len(verified[first:]) / 2


_DDP_PROGRAM = """\
import contextlib, json, os, sys, tempfile
import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP
from gradcheck_lint.runtime import guard

no_sync = sys.argv[1] == "1"
torch.manual_seed(0)
with tempfile.NamedTemporaryFile() as rendezvous:
    dist.init_process_group("gloo", init_method=f"file://{rendezvous.name}", rank=0, world_size=1)
    model = DDP(nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1)))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    batches = [(torch.randn(4, 8), torch.randn(4, 1)) for _ in range(8)]
    with guard(model, opt, mode="record") as g:
        for i, (x, y) in enumerate(batches):
            last = (i + 1) % 4 == 0
            with (model.no_sync() if no_sync and not last else contextlib.nullcontext()):
                backward_line = sys._getframe().f_lineno + 1
                (nn.functional.mse_loss(model(x), y) / 4).backward()
            if last:
                opt.step()
                opt.zero_grad()
    found = [(f.code, f.line - backward_line) for f in g.report()]
    dist.destroy_process_group()
print(json.dumps(found), flush=True)
os._exit(0)  # the answer is out: gloo's threads are not left to C++ destructors at exit (they can hang)
"""


def _ddp_run(no_sync: bool) -> list[tuple[str, int]]:
    """One rank of gloo DDP under the guard, in a fresh interpreter with a time limit: a process group
    torn down in a long-lived test worker once hung in gloo's teardown (the main thread waiting for gloo's
    loop thread with the GIL held), which must fail a test, never stall the suite (see own_process)."""
    import json
    import sys

    import own_process
    import torch.distributed as dist

    if not dist.is_available():
        pytest.skip("torch.distributed is not available")
    done = own_process.run_command([sys.executable, "-c", _DDP_PROGRAM, "1" if no_sync else "0"], timeout=120,
                                   what=f"one-rank DDP (no_sync={no_sync})")
    assert done.returncode == 0, done.stderr
    return [tuple(x) for x in json.loads(done.stdout.strip().splitlines()[-1])]


def test_gl006_ddp_accumulation_without_no_sync_and_with_it() -> None:
    assert _ddp_run(no_sync=False) == [("GL006", 0)]
    assert _ddp_run(no_sync=True) == []


def test_monitors_put_back_every_torch_entry_point_they_watch() -> None:
    from torch.nn.parallel import DistributedDataParallel

    before = (torch.nn.utils.clip_grad_norm_, torch.nn.utils.clip_grad_value_, torch.amp.GradScaler.scale,
              torch.amp.GradScaler.unscale_, DistributedDataParallel.forward, torch.autograd.backward)
    model = _model()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    outer = guard(model, opt, mode="record")
    with outer:
        assert torch.nn.utils.clip_grad_norm_ is not before[0]
        with guard(model, opt, mode="record"):  # nested: the outer one keeps watching when it ends
            pass
        assert torch.nn.utils.clip_grad_norm_ is not before[0]
    after = (torch.nn.utils.clip_grad_norm_, torch.nn.utils.clip_grad_value_, torch.amp.GradScaler.scale,
             torch.amp.GradScaler.unscale_, DistributedDataParallel.forward, torch.autograd.backward)
    assert after == before
    with pytest.raises(ValueError), guard(model, opt, mode="record"):
        raise ValueError("the body fails")
    assert torch.nn.utils.clip_grad_norm_ is before[0] and torch.amp.GradScaler.scale is before[2]


def test_ids_of_dead_parameters_and_optimizers_reused_by_new_ones_start_clean() -> None:
    """First-order meta-learning makes a model copy and an optimizer per task: CPython gives the new
    objects the ids of the dead ones, which must not inherit their gradient history."""
    import copy

    from gradcheck_lint.runtime.guard import disable, enable

    torch.manual_seed(0)
    model = _model()
    meta_optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    enable(mode="record")
    try:
        for _meta_iteration in range(6):
            meta_optimizer.zero_grad()
            for p in model.parameters():
                p.grad = torch.zeros_like(p)
            for _task in range(4):
                x, y = torch.randn(8, 8), torch.randn(8, 1)
                local_model = copy.deepcopy(model)
                local_optim = torch.optim.SGD(local_model.parameters(), lr=0.1)
                for _ in range(2):
                    local_optim.zero_grad()
                    nn.functional.mse_loss(local_model(x[:4]), y[:4]).backward()
                    local_optim.step()
                local_optim.zero_grad()
                nn.functional.mse_loss(local_model(x[4:]), y[4:]).backward()
                for p_global, p_local in zip(model.parameters(), local_model.parameters()):
                    p_global.grad += p_local.grad
                del local_model, local_optim
            meta_optimizer.step()
    finally:
        report = disable()
    assert list(report) == []


def test_a_reused_parameter_id_does_not_inherit_the_dead_parameters_contributions() -> None:
    """The same, made deterministic: the probe's state of a dead parameter filed under the id of a new
    tensor (what CPython does when it hands the freed slot to the next object of that size)."""
    from gradcheck_lint.runtime.probe import Probe

    probe = Probe(lambda *_: None)
    dead = nn.Parameter(torch.zeros(3))
    probe.watch_param(dead)
    probe.ledger.begin_backward(UNKNOWN_SITE)
    probe.ledger.accumulated(id(dead))
    probe.ledger.end_backward()
    new = nn.Parameter(torch.zeros(3))
    key = id(new)
    probe.observed[key] = probe.observed.pop(id(dead))
    probe.watched = [(key, obs) for _k, obs in probe.watched]
    probe.ledger.held[key] = probe.ledger.held.pop(id(dead))
    del dead
    assert probe.ledger.contributions(key)
    probe.watch_param(new)
    assert probe.observed[key].param() is new
    assert not probe.ledger.contributions(key)
    assert [k for k, _obs in probe.watched] == [key]


def test_the_same_source_run_from_two_paths_is_reported_at_each_path(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Code objects compare by value: the guard's cache of call sites must not give the second copy of
    a script the first copy's file (the differential tests run generated programs over and over)."""
    import runpy

    from gradcheck_lint.runtime.guard import disable, enable

    source = (
        "import torch\n"
        "model = torch.nn.Linear(3, 1)\n"
        "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "for x in torch.randn(4, 2, 3):\n"
        "    model(x).sum().backward()\n"
        "    opt.step()\n"
    )
    seen = []
    for name in ("first", "second"):
        path = tmp_path / name / "train.py"
        path.parent.mkdir()
        path.write_text(source)
        enable(mode="record")
        try:
            runpy.run_path(str(path), run_name="__main__")
        finally:
            report = disable()
        seen.append([(f.code, f.path) for f in report])
    assert seen == [[("GL001", str(tmp_path / "first" / "train.py"))], [("GL001", str(tmp_path / "second" / "train.py"))]]
