"""The textual prefilter may skip parsing a file only when no rule could flag it.

Each test analyses files with the prefilter turned off and checks that every file the analysis
flags passes the prefilter: the fixtures, every rule's own examples, generated training programs
(`loopgen`, `fuzzing`) and mutants of all of them (lines deleted, names swapped, tokens replaced).
"""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fuzzing
import loopgen
from gradcheck_lint.analysis.apimodels import catalogue_for
from gradcheck_lint.engine import analyse_text
from gradcheck_lint.notebooks import VirtualModule, parse_notebook, python_cells
from gradcheck_lint.prefilter import REQUIRED_WORDS, might_train, triggers_for
from gradcheck_lint.registry import all_rules
from support import FIXTURES, load_fixtures, load_notebook_fixtures

ANALYSIS_CODES = frozenset(all_rules())
LOSS_HOOKS = sorted({h.method for h in catalogue_for().hooks() if h.normaliser or h.divides_returned})
CLIPS = re.compile(r"\b(?:" + "|".join(map(re.escape, triggers_for(catalogue_for()).clip_words)) + r")\b")
SYNCS = re.compile("|".join(map(re.escape, triggers_for(catalogue_for()).sync_words)))


def without_triggers(text: str) -> str:
    """The other triggers renamed too: loss hooks (`def compute_loss(`), clips (a clip and a step pass) and
    sync switches (a backward and `no_sync()` pass)."""
    for hook in LOSS_HOOKS:
        text = re.sub(rf"\bdef(\s+){hook}\b", rf"def\g<1>{hook}_renamed", text)
    triggers = triggers_for(catalogue_for())
    for named in (triggers.backward_patterns, triggers.step_patterns):  # objects whose call is one, by name
        if named is not None:  # (`loss_scaler(` in a docstring, too)
            text = named.sub("renamed(", text)
    return SYNCS.sub("sync_renamed", CLIPS.sub("clip_renamed", text))
SETTINGS = dict(derandomize=True, deadline=None, suppress_health_check=list(HealthCheck))


def flagged(text: str) -> set[str]:
    """The analysis codes reported with the prefilter off."""
    return {d.code for d in analyse_text(text, "t.py", prefilter=False).diagnostics} & ANALYSIS_CODES


def assert_kept(text: str) -> bool:
    """Fail if the analysis flags `text` but the prefilter would drop it; return whether it was flagged."""
    codes = flagged(text)
    assert not codes or might_train(text), f"the prefilter drops a file flagged {sorted(codes)}:\n{text}"
    return bool(codes)


def test_every_flagged_fixture_passes_the_prefilter() -> None:
    count = sum(assert_kept(f.path.read_text(encoding="utf-8")) for f in load_fixtures())
    assert count >= 40  # the fixtures hold dozens of buggy scripts: the test is not vacuous


def test_every_flagged_notebook_passes_the_prefilter() -> None:
    count = 0
    for nb in load_notebook_fixtures():
        module = VirtualModule.join(python_cells(parse_notebook(nb.path.read_text(encoding="utf-8"))))
        count += assert_kept(module.text)
    assert count >= 1


def test_every_rule_example_passes_the_prefilter() -> None:
    flagged_examples = 0
    for rule in all_rules().values():
        for example in rule.INVALID:
            flagged_examples += assert_kept(example.source)
        for example in rule.VALID:
            assert_kept(example)
    assert flagged_examples >= len(all_rules())


def test_all_generated_training_loops_pass_the_prefilter() -> None:
    programs = loopgen.all_programs()[::13]  # a thirteenth of the grammar, every shape represented
    assert sum(assert_kept(spec.render()) for spec in programs) > len(programs) // 2


@settings(max_examples=120, **SETTINGS)  # type: ignore[arg-type]
@given(fuzzing.training_programs())
def test_generated_statement_soup_passes_the_prefilter(source: str) -> None:
    assert_kept(source)


@settings(max_examples=200, **SETTINGS)  # type: ignore[arg-type]
@given(st.sampled_from(sorted(p for p in FIXTURES.rglob("*.py"))), fuzzing.mutation_steps())
def test_mutated_fixtures_pass_the_prefilter(path, steps) -> None:  # type: ignore[no-untyped-def]
    data = fuzzing.mutate(path.read_bytes(), steps)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return
    assert_kept(text)


@settings(max_examples=60, **SETTINGS)  # type: ignore[arg-type]
@given(st.sampled_from(sorted(p for p in FIXTURES.rglob("*.py"))), st.sampled_from(REQUIRED_WORDS), st.data())
def test_a_file_without_a_required_word_is_never_flagged(path, word, data) -> None:  # type: ignore[no-untyped-def]
    """Removing one required word everywhere (renaming it) leaves nothing any rule reports.

    A framework loss hook (`def compute_loss(` in a Trainer subclass) is the third trigger: the
    framework's own backward and step train on what it returns, so its definitions are renamed too; and a
    clip with a step is the fourth (GL007: a clip of gradients a scaler then steps on, the backward elsewhere),
    and a backward with a sync switch the fifth (GL006: `no_sync()` only after the forward, the step elsewhere).
    """
    text = path.read_text(encoding="utf-8")
    replacement = data.draw(st.sampled_from(["bwd", "update", "apply", word.upper()]))
    mutated = without_triggers(text.replace(word, replacement))
    assert not might_train(mutated)
    assert flagged(mutated) == set()


@pytest.mark.parametrize("word", REQUIRED_WORDS)
def test_no_fixture_without_a_required_word_is_flagged(word: str) -> None:
    """Every fixture, not a sample: a rule that fires with no backward pass or no step in the file
    (a GL006 late sync switch, a GL010 double division, a GL008 list, a GL001 clear gate) would be
    dropped by the prefilter, and so would differ with and without it."""
    offenders = []
    for path in sorted(FIXTURES.rglob("*.py")):
        mutated = without_triggers(path.read_text(encoding="utf-8").replace(word, "bwd" if word == "backward" else "update"))
        codes = flagged(mutated)
        if codes:
            offenders.append((path.relative_to(FIXTURES).as_posix(), sorted(codes)))
    assert offenders == []


def test_a_loss_hook_alone_passes_the_prefilter() -> None:
    """A Trainer subclass whose `compute_loss` ignores `num_items_in_batch` calls no backward and no step
    itself, yet GL003 reports it: the hook's definition is what lets it through."""
    assert "compute_loss" in LOSS_HOOKS
    text = (FIXTURES / "unscaled_accumulated_loss" / "hf_compute_loss_ignores_num_items.py").read_text(encoding="utf-8")
    bare = text.replace("backward", "bwd").replace("step", "update")
    assert flagged(bare) == {"GL003"}
    assert might_train(bare)
    renamed = re.sub(r"\bdef(\s+)compute_loss\b", r"def\g<1>compute_loss_renamed", bare)
    assert not might_train(renamed) and flagged(renamed) == set()


def test_a_hook_whose_loss_the_framework_divides_passes_the_prefilter_where_accumulation_is_named() -> None:
    """A LightningModule's `training_step` that divides its returned loss by `accumulate_grad_batches`
    calls no backward and no step itself, yet GL010 reports it; without "accum" in the file it is skipped."""
    text = (FIXTURES / "double_loss_scaling" / "lightning_training_step_divides_by_accumulation.py").read_text(encoding="utf-8")
    bare = text.replace("backward", "bwd").replace(".step(", ".update(")
    assert flagged(bare) == {"GL010"}
    assert might_train(bare)
    renamed = re.sub(r"\bdef(\s+)training_step\b", r"def\g<1>training_step_renamed", bare)
    assert not might_train(renamed) and flagged(renamed) == set()
    assert not might_train(re.sub(r"accumulate_grad_batches", "n", bare, flags=re.I))


def test_a_clip_and_a_step_alone_pass_the_prefilter() -> None:
    """A step helper handed the scaler (returnn's `Updater.step(grad_scaler=...)`) calls no backward: its
    clip and its `scaler.step` let it through, and GL007 reports the clip of gradients still scaled."""
    text = (FIXTURES / "amp_scaled_gradients" / "clip_before_unscale.py").read_text(encoding="utf-8")
    bare = text.replace("backward", "bwd")
    assert might_train(bare) and "GL007" in flagged(bare)
    assert not might_train(without_triggers(bare)) and flagged(without_triggers(bare)) == set()


def test_a_backward_and_a_sync_switch_alone_pass_the_prefilter() -> None:
    """A trainer whose step is in its base class (LoongForge) calls a backward and `no_sync()`: it passes, and
    GL006 reports `no_sync()` wrapping the backward only."""
    text = (FIXTURES / "ddp_accumulation_without_no_sync" / "no_sync_around_backward_only.py").read_text(encoding="utf-8")
    bare = text.replace("step", "update")
    assert might_train(bare) and "GL006" in flagged(bare)
    assert not might_train(without_triggers(bare)) and flagged(without_triggers(bare)) == set()


def test_the_prefilter_really_skips_parsing(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """A file without the words is not parsed at all: a broken parser would otherwise be noticed."""
    import gradcheck_lint.engine as engine

    def refuse(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise AssertionError("parsed")

    monkeypatch.setattr(engine, "_parse_python", refuse)
    assert analyse_text("import torch\nx = torch.zeros(3)\nloss.backward()\n", "lib.py").diagnostics == []
    assert analyse_text("def f(:\n    opt.step()\n", "broken.py").diagnostics == []  # not parsed: not reported
