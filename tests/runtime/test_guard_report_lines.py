"""The guard's report lines: one per finding, honest step counts, the user's names, relative paths.

The programs are in `report_programs/`, each with `# expect:` comments where the static side anchors.
"""

from __future__ import annotations

import functools
import json
import os
import runpy
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from gradcheck_lint.runtime.guard import disable, enable  # noqa: E402
from gradcheck_lint.runtime.report import Finding, FindingLog, Report  # noqa: E402
from support import ROOT, invoke, parse_expectations  # noqa: E402

PROGRAMS = Path(__file__).resolve().with_name("report_programs")


def run_guarded(name: str) -> Report:
    enable(mode="record")
    try:
        runpy.run_path(str(PROGRAMS / name), run_name="__main__")
    finally:
        report = disable()
    return report


def static_messages(name: str) -> dict[tuple[int, str], str]:
    result = invoke(str(PROGRAMS / name), "--format", "json")
    return {(d["line"], d["code"]): d["message"] for d in json.loads(result.stdout)}


def test_one_line_for_a_clear_first_seen_only_by_its_effect() -> None:
    # Two clears between the backward and the steps: at the first step the guard cannot tell which
    # one cleared (its hooks on `opt_D.zero_grad` come with that step), later it can. One line.
    report = run_guarded("gan_two_clears_after_backward.py")
    assert [(f.line, f.code) for f in report] == [(15, "GL002")]
    f = report[0]
    assert (f.steps, f.first_step, f.optimizer) == (4, 1, "opt_D")  # all four steps, from the first
    assert "saw only by its effect" not in f.message
    assert static_messages("gan_two_clears_after_backward.py")[(15, "GL002")] == f.message


def test_a_vague_sighting_without_its_precise_finding_stays() -> None:
    log = FindingLog()
    vague = Finding("GL002", "zero-grad-before-step", "a.py", 9, 5, "vague", "h", optimizer="opt", subsumed_by="a.py:5:5")
    log.add(vague, 1)
    assert [f.message for f in log.report()] == ["vague"]
    log.add(Finding("GL002", "zero-grad-before-step", "a.py", 7, 5, "other", "h", optimizer="opt", refines="a.py:6:5"), 2)
    assert [f.message for f in log.report()] == ["vague", "other"]  # another backward: another finding


def test_every_unscaled_window_is_counted() -> None:
    report = run_guarded("unscaled_window_every_step.py")
    namespace = runpy.run_path(str(PROGRAMS / "unscaled_window_every_step.py"))
    windows = len(namespace["data"]) // namespace["accum"]
    assert [(f.code, f.steps, f.first_step) for f in report] == [("GL003", windows, 1)]


def test_the_off_by_one_window_is_the_first_step() -> None:
    report = run_guarded("off_by_one_zero_based.py")
    assert [(f.code, f.first_step, f.steps) for f in report] == [("GL004", 1, 1)]


def test_gl005_names_the_model_as_the_code_does() -> None:
    report = run_guarded("ddpg_critic_leak.py")
    leak = next(f for f in report if f.code == "GL005")
    assert "`critic`" in leak.message and "these parameters" not in leak.message
    assert static_messages("ddpg_critic_leak.py")[(leak.line, "GL005")] == leak.message


@pytest.mark.parametrize("fixture", ["trainer_class_update_d_update_g.py", "gan_g_first_d_zeroed_after_step.py",
                                     "gan_d_loss_undetached_fake.py"])
def test_gl005_words_equal_the_static_sides_on_fixtures(fixture: str) -> None:
    path = ROOT / "fixtures" / "cross_model_grad_leak" / fixture
    enable(mode="record")
    try:
        runpy.run_path(str(path), run_name="__main__")
    finally:
        report = disable()
    static = {(d["line"], d["code"]): d["message"] for d in json.loads(invoke(str(path), "--format", "json").stdout)}
    leaks = [f for f in report if f.code == "GL005"]
    assert leaks and all(static[(f.line, f.code)] == f.message for f in leaks)


@functools.cache  # the same command, once per process: two tests read the run of accumulate_without_no_sync.py
def _gradlint_run(script: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    """`gradlint run` on a DDP program, under a time limit and once more on a timeout (see own_process)."""
    import own_process

    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    return own_process.run_command([sys.executable, "-m", "gradcheck_lint.run", str(script)], timeout=150,
                                   what=f"gradlint run {script.name}", cwd=cwd, env=env)


def test_gl006_names_the_ddp_model_and_says_an_inverted_no_sync_diverges() -> None:
    done = _gradlint_run(PROGRAMS / "ddp_no_sync_inverted.py", PROGRAMS)
    lines = [line for line in done.stderr.splitlines() if " GL006 " in line]
    assert done.returncode == 1 and len(lines) == 1, done.stderr
    # at the choice of `no_sync()` (where the static side anchors), relative to the working directory
    assert lines[0].startswith("ddp_no_sync_inverted.py:22:19: GL006 ")
    assert "`ddp_model`" in lines[0] and "Sequential" not in lines[0]
    assert "diverge" in lines[0] and "correct gradients" not in lines[0]
    # the static side's words: the choice's test, read through `last = ...`, not only what the guard saw
    static = static_messages("ddp_no_sync_inverted.py")[(22, "GL006")]
    assert _message(lines[0]) == static, (lines[0], static)
    assert "when `(it + 1) % accum == 0` holds" in static


@pytest.mark.parametrize(("script", "cwd"), [
    (ROOT / "fixtures" / "ddp_accumulation_without_no_sync" / "no_sync_chosen_inline_on_the_stepping_batch.py", ROOT),
    (PROGRAMS / "ddp_no_sync_inverted_chosen_into_name.py", PROGRAMS),
], ids=["inline_uncalled_method", "chosen_into_a_name"])
def test_gl006_inverted_choice_anchors_where_the_static_side_does(script: Path, cwd: Path) -> None:
    # `with (model.no_sync if c else nullcontext)():` and `ctx = model.no_sync if c else nullcontext` /
    # `with ctx():`: the choice (the conditional expression), not the backward, line and column alike
    done = _gradlint_run(script, cwd)
    lines = [line for line in done.stderr.splitlines() if " GL006 " in line]
    assert done.returncode == 1 and len(lines) == 1, done.stderr
    static = json.loads(invoke(str(script), "--format", "json").stdout)
    [(line, col, message)] = [(d["line"], d["column"], d["message"]) for d in static if d["code"] == "GL006"]
    assert lines[0].startswith(f"{script.relative_to(cwd).as_posix()}:{line}:{col}: GL006 "), (lines[0], line, col)
    assert _message(lines[0]) == message  # and the static side's words


def test_gl006_inverted_choice_made_by_an_if_statement_anchors_where_the_static_side_does() -> None:
    # `if last: with ddp_model.no_sync(): ...` / `else: ...`: the static side reads no choice in a statement
    # and anchors at the backward of the micro-batches that all-reduce; the guard did at the `with` (22:19)
    script = PROGRAMS / "ddp_no_sync_inverted_chosen_by_if.py"
    done = _gradlint_run(script, PROGRAMS)
    lines = [line for line in done.stderr.splitlines() if " GL006 " in line]
    assert done.returncode == 1 and len(lines) == 1, done.stderr
    static = json.loads(invoke(str(script), "--format", "json").stdout)
    [(line, col)] = [(d["line"], d["column"]) for d in static if d["code"] == "GL006"]
    assert (line, col) == (28, 17)
    assert lines[0].startswith(f"{script.name}:{line}:{col}: GL006 "), lines[0]
    # the guard's words stay what it saw: the stepping micro-batch's backward, by its line, and the divergence
    assert "`loss.backward()` at line 25 is the last micro-batch" in lines[0]
    assert "diverge" in lines[0] and "correct gradients" not in lines[0] and "`ddp_model`" in lines[0]


# The run of accumulate_without_no_sync.py (~5 s: a fresh interpreter importing torch, a gloo process group) is read by
# two tests: one xdist group puts them on one worker, where `_gradlint_run` makes it once.
_ACCUMULATE_RUN = pytest.mark.xdist_group("gl006_accumulate_without_no_sync_run")


@pytest.mark.parametrize("fixture", ["no_sync_around_backward_only.py", "no_sync_chosen_into_variable_around_backward_only.py",
                                     "sync_flag_set_after_forward.py", "trainer_chunks_without_no_sync.py",
                                     pytest.param("accumulate_without_no_sync.py", marks=_ACCUMULATE_RUN)])
def test_gl006_words_equal_the_static_sides_on_fixtures(fixture: str) -> None:
    # sync switched off after the forward that decided it (the first three): "switched off only after the
    # forward pass at line N", as statically, not "accumulates ... on every backward" or "the replicas diverge";
    # a backward in a helper whose window's loop is in the caller: "(run by `trainer.train_step(x, y)` at line 31)"
    script = ROOT / "fixtures" / "ddp_accumulation_without_no_sync" / fixture
    done = _gradlint_run(script, ROOT)
    found = {tuple(map(int, line.split(":")[1:3])): _message(line) for line in done.stderr.splitlines() if " GL006 " in line}
    static = {(d["line"], d["column"]): d["message"] for d in json.loads(invoke(str(script), "--format", "json").stdout)
              if d["code"] == "GL006"}
    assert found and found == static, (found, static)


def _message(line: str) -> str:
    """The message of a report line `path:line:col: CODE message [n steps, ...]`."""
    message = line.split(": ", 1)[1].split(" ", 1)[1]
    return message.rsplit(" [", 1)[0] if message.endswith("]") else message


@_ACCUMULATE_RUN
def test_gl006_names_the_model_variable_not_its_class() -> None:
    fixture = ROOT / "fixtures" / "ddp_accumulation_without_no_sync" / "accumulate_without_no_sync.py"
    done = _gradlint_run(fixture, ROOT)
    lines = [line for line in done.stderr.splitlines() if " GL006 " in line]
    assert len(lines) == 1 and lines[0].startswith("fixtures/ddp_accumulation_without_no_sync/accumulate_without_no_sync.py:21:13: "), done.stderr
    assert "through `model`" in lines[0] and "Sequential" not in lines[0]


def test_paths_relative_under_the_working_directory_absolute_outside(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    finding = Finding("GL001", "missing-zero-grad", str(PROGRAMS / "x.py"), 3, 5, "m", "h")
    monkeypatch.chdir(PROGRAMS)
    assert finding.format().startswith("x.py:3:5: GL001 m")
    monkeypatch.chdir(tmp_path)
    assert finding.format().startswith(f"{PROGRAMS / 'x.py'}:3:5: GL001 m")


def test_no_optimizer_step_is_not_a_contract_that_held() -> None:
    report = run_guarded("backward_without_optimizer.py")
    assert list(report) == [] and report.steps_checked == 0
    assert "held" not in report.summary() and "no optimizer step ran" in report.summary()
    assert "held on every step" in Report([], steps_checked=3).summary()


@pytest.mark.parametrize("name", sorted(p.name for p in PROGRAMS.glob("*.py") if "ddp" not in p.name))
def test_programs_report_exactly_their_expected_codes_once(name: str) -> None:
    expected = parse_expectations((PROGRAMS / name).read_text(encoding="utf-8"))
    report = run_guarded(name)
    codes = [f.code for f in report]
    assert len(codes) == len(set(codes)), str(report)  # one line per finding
    assert {(f.line, f.code) for f in report} == expected, str(report)  # on the static side's lines


def test_a_call_that_backpropagates_and_steps_is_not_named_twice() -> None:
    """A framework's `trainer.train()` is both the backward and the step the guard sees: the message says
    it accumulates into each of its optimizer steps, never "`trainer.train()` ... into one `trainer.train()`"."""
    from gradcheck_lint.messages import unscaled_accumulated_loss

    msg, _help = unscaled_accumulated_loss("trainer.train()", "loss", "trainer.train()", 12, "gradient_accumulation_steps")
    assert "into one `trainer.train()`" not in msg
    assert msg.startswith("`trainer.train()` accumulates several micro-batches into each of its optimizer steps, but `loss`")
    msg, _help = unscaled_accumulated_loss("loss.backward()", "loss", "opt.step()", 12, "accum")
    assert "into one `opt.step()` at line 12" in msg


def test_a_clear_is_judged_by_what_optimizers_still_have_to_step() -> None:
    """The part of a pass that parameters of another optimizer still hold unapplied is kept for a step
    (the first clear of the GAN above drops a by-product), even before that optimizer's first step;
    parameters no optimizer owns keep nothing: clearing the head loses the pass."""
    report = run_guarded("clear_before_step_backbone_of_no_optimizer.py")
    assert [(f.line, f.code, f.steps, f.first_step, f.optimizer) for f in report] == [(14, "GL002", 4, 1, "opt")]


_KEPT = sorted(p.name for p in (ROOT / "fixtures" / "loss_graph_kept_alive").glob("*.py")
               if "expect: GL008" in p.read_text(encoding="utf-8") and "static-only" not in p.read_text(encoding="utf-8")
               and "runtime-blind GL008" not in p.read_text(encoding="utf-8"))


@pytest.mark.parametrize("fixture", _KEPT)
def test_gl008_anchors_at_the_keeping_statement_with_the_static_words(fixture: str) -> None:
    """The guard sees graphs outlive their steps; the statement keeping them (`total += loss`, `.append`,
    in a helper the loss is handed to, or in the caller it is returned to) is looked up in the source,
    and the finding reads as the static one, on its line; a caller storing a returned running total too."""
    path = ROOT / "fixtures" / "loss_graph_kept_alive" / fixture
    enable(mode="record")
    try:
        runpy.run_path(str(path), run_name="__main__")
    finally:
        report = disable()
    static = {(d["line"], d["code"]): d["message"] for d in json.loads(invoke(str(path), "--format", "json").stdout)}
    kept = [f for f in report if f.code == "GL008"]
    # each keeping statement once (a function's running total, and the caller keeping what it returns), in the static words
    assert {f.line for f in kept} == {line for line, code in static if code == "GL008"}, (kept, static)
    assert len(kept) == len({f.line for f in kept}) and all(static[(f.line, "GL008")] == f.message for f in kept), (kept, static)


def test_a_clear_at_the_top_of_the_stepping_micro_batch_discards_the_earlier_ones() -> None:
    # Accelerate's prepared optimizer clears only on the micro-batch that syncs, but before its backward: the window's
    # earlier micro-batches are dropped, the last one is stepped. Not "the step sees no gradient".
    pytest.importorskip("accelerate")
    fixture = ROOT / "fixtures" / "zero_grad_before_step" / (
        "accelerate_prepared_clear_before_backward_inside_accumulate.py")
    enable(mode="record")
    try:
        runpy.run_path(str(fixture), run_name="__main__")
    finally:
        report = disable()
    assert [(f.line, f.code) for f in report] == [(21, "GL002")]
    message = report[0].message
    assert "from the earlier micro-batches of the window" in message and "only the last micro-batch reaches" in message
    assert "sees no gradient" not in message
