"""Differential testing of GL006-GL010: generated programs and their bug-free twins, judged three ways.

Each program of `loopgen_contract` is linted statically, run under the runtime guard and compared with
its reference (see `loopgen_run`); the verdicts must agree with one another and with the spec's.
Disagreements the generator found are kept below as regressions once fixed. `benchmarks/differential.py`
runs the whole grammar.
"""

from __future__ import annotations

import tempfile

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("torch")

import loopgen_contract as lc
import loopgen_run

SETTINGS = {"derandomize": True, "deadline": None, "suppress_health_check": [HealthCheck.too_slow, HealthCheck.filter_too_much]}


def _check(spec: loopgen_run.Spec) -> None:
    with tempfile.TemporaryDirectory() as directory:
        judgement = loopgen_run.judge(spec, directory)
    assert not judgement.disagreements(), judgement.report()


@settings(max_examples=80, **SETTINGS)  # type: ignore[arg-type]
@given(lc.amp_clips)
def test_amp_and_clip_loops_agree(spec: lc.AmpClip) -> None:
    _check(spec)


@settings(max_examples=60, **SETTINGS)  # type: ignore[arg-type]
@given(lc.kept_losses)
def test_loops_keeping_their_losses_agree(spec: lc.KeptLoss) -> None:
    _check(spec)


@pytest.mark.parametrize("spec", [p for p in lc.all_programs() if isinstance(p, lc.StaleGan)], ids=lambda s: s.describe())
def test_gans_backpropagating_through_stale_graphs_agree(spec: lc.StaleGan) -> None:
    """All eighteen: each one raises (the bug) or trains (its twin), in three styles."""
    _check(spec)


@settings(max_examples=80, **SETTINGS)  # type: ignore[arg-type]
@given(lc.double_scalings)
def test_loss_divisions_agree(spec: lc.DoubleScaling) -> None:
    _check(spec)


@pytest.mark.parametrize("spec", [p for p in lc.all_programs() if isinstance(p, lc.DdpAccum)], ids=lambda s: s.describe())
def test_ddp_accumulation_loops_agree(spec: lc.DdpAccum) -> None:
    """All of them (a one-process gloo group each): sync off before the forward, too late, or never."""
    _check(spec)


def test_ddp_programs_make_their_process_group_in_a_process_of_their_own(monkeypatch: pytest.MonkeyPatch) -> None:
    """A gloo group freed in the test's process can deadlock it (the garbage collector frees DDP's reducer
    at any later allocation, and the group's destructor joins gloo's threads with the GIL held): the
    programs that make one run in a forked child under a time limit (own_process), never here."""
    import os

    import torch.distributed as dist

    made: list[int] = []
    init = dist.init_process_group

    def spy(*args: object, **kwargs: object) -> None:
        made.append(os.getpid())
        init(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(dist, "init_process_group", spy)
    spec = lc.DdpAccum("no_sync_both", 2, "function")
    _check(spec)
    assert made == [] and not dist.is_initialized()


# The twins: correct programs are a third of this grammar, and false alarms matter most.
correct_programs = st.one_of(lc.amp_clips, lc.kept_losses, lc.double_scalings).filter(
    lambda s: not s.verdict().buggy)


@settings(max_examples=60, **SETTINGS)  # type: ignore[arg-type]
@given(correct_programs)
def test_correct_twins_are_clean_three_ways(spec: loopgen_run.Spec) -> None:
    assert not spec.verdict().buggy
    _check(spec)


def test_every_rule_has_bugs_and_twins_in_each_style() -> None:
    programs = lc.all_programs()
    for kind, code in (("ddp_accum", "GL006"), ("amp_clip", "GL007"), ("kept_loss", "GL008"), ("stale_gan", "GL009"),
                       ("double_scaling", "GL010")):
        of_kind = [p for p in programs if p.kind == kind]
        for style in {p.style for p in of_kind}:
            assert any(code in p.verdict().expected for p in of_kind if p.style == style), (kind, style)
            assert any(not p.verdict().buggy for p in of_kind if p.style == style), (kind, style)
    assert any(p.verdict().raises for p in programs if p.kind == "amp_clip")  # unscale_ twice
    assert any(p.verdict().blind for p in programs)  # GL010 with no accumulation, static only


# found by the generator: window losses summed over an inner loop into one backward (once a GL010 false alarm)
@pytest.mark.parametrize(("style", "epochs"), [("script", 1), ("function", 1), ("trainer", 2)])
def test_regression_window_losses_summed_for_one_backward(style: str, epochs: int) -> None:
    _check(lc.KeptLoss("window_sum", "tensor", 2, style, epochs))  # type: ignore[arg-type]
