"""The fixes that move or wrap code (GL006, GL007, GL008, GL010): libcst codemods run only when fixing."""

from __future__ import annotations

import ast
import difflib
import io
import json
import shutil
import subprocess
import sys
import textwrap
import tokenize
from pathlib import Path

import pytest

from gradcheck_lint import check_source
from gradcheck_lint.codemods import edits as codemod_edits
from gradcheck_lint.codemods import transform
from gradcheck_lint.diagnostics import Applicability, Codemod, Diagnostic, Span
from gradcheck_lint.fixes import fix_file, fix_source
from script_runs import run_scripts
from support import FIXTURES, load_fixtures

CODES = {"GL006", "GL007", "GL008", "GL010"}
DIRS = ("ddp_accumulation_without_no_sync", "amp_scaled_gradients", "loss_graph_kept_alive", "double_loss_scaling")
BUGS = [f for f in load_fixtures() if f.id.split("/")[0] in DIRS and any(code in CODES for _line, code in f.expected)]

# What the fix of each bug fixture does: its applicability, the lines it removes and the lines it adds
# (None: no fix is offered, and why is in the rule's "Fix safety").
EXPECTED: dict[str, tuple[str, list[str], list[str]] | None] = {
    "ddp_accumulation_without_no_sync/trainer_reloads_its_best_model_after_the_loop.py": None,  # the wrap is conditional: no one rewrite
    "ddp_accumulation_without_no_sync/loss_terms_listed_by_a_comprehension.py": ("unsafe", [
        "            out = model(x)",
        "            terms = [nn.functional.mse_loss(out[:, k], y[:, k]) for k in range(2)]",
        "            loss_values = [v / update_interval for v in terms]",
        "            sum(loss_values).backward()  # expect: GL006",
    ], [
        "import contextlib",
        "            with (contextlib.nullcontext() if (it + 1) % update_interval == 0 else model.no_sync()):",
        "                out = model(x)",
        "                terms = [nn.functional.mse_loss(out[:, k], y[:, k]) for k in range(2)]",
        "                loss_values = [v / update_interval for v in terms]",
        "                sum(loss_values).backward()  # expect: GL006",
    ]),
    "ddp_accumulation_without_no_sync/accumulate_without_no_sync.py": ("unsafe", [
        "            loss = nn.functional.mse_loss(model(x), y) / accum_iter",
        "            loss.backward()  # expect: GL006",
    ], [
        "import contextlib",
        "            with (contextlib.nullcontext() if (it + 1) % accum_iter == 0 else model.no_sync()):",
        "                loss = nn.functional.mse_loss(model(x), y) / accum_iter",
        "                loss.backward()  # expect: GL006",
    ]),
    "ddp_accumulation_without_no_sync/accelerate_accumulate_given_inner_module.py": None,
    "ddp_accumulation_without_no_sync/accelerate_prepared_model_manual_window.py": None,
    "ddp_accumulation_without_no_sync/one_process_launch_project/train_lora.py": None,
    "ddp_accumulation_without_no_sync/accelerate_text_encoder_outside_accumulate.py": None,
    "ddp_accumulation_without_no_sync/fabric_setup_manual_window.py": None,
    "ddp_accumulation_without_no_sync/no_sync_around_backward_only.py": None,
    "ddp_accumulation_without_no_sync/no_sync_chosen_into_variable_around_backward_only.py": None,
    "ddp_accumulation_without_no_sync/sync_flag_set_after_forward.py": None,
    "ddp_accumulation_without_no_sync/trainer_chunks_without_no_sync.py": None,
    "ddp_accumulation_without_no_sync/trainer_prepares_parts_backward_in_helper.py": None,
    "amp_scaled_gradients/clip_before_unscale.py": ("safe", [], ["    scaler.unscale_(optimizer)"]),
    "amp_scaled_gradients/clip_before_backward.py": None,  # moving a clip past the backward: not offered
    "amp_scaled_gradients/clip_every_micro_batch_fp32.py": None,
    "amp_scaled_gradients/clip_gated_by_another_setting_than_the_scaler.py": None,  # the clip is under its own test
    "amp_scaled_gradients/step_bypasses_scaler.py": None,
    "amp_scaled_gradients/unscale_every_micro_batch.py": None,
    "amp_scaled_gradients/unscale_again_after_a_skipped_step.py": None,  # where `update()` belongs is the author's choice
    "loss_graph_kept_alive/ensemble_fold_losses_summed_as_tensors.py": (
        "safe", ["        total_loss += loss  # expect: GL008"], ["        total_loss += loss.detach()  # expect: GL008"]),
    "loss_graph_kept_alive/epoch_total_loss_tensor.py": ("safe", ["        total_loss += loss  # expect: GL008"],
                                                    ["        total_loss += loss.detach()  # expect: GL008"]),
    "loss_graph_kept_alive/loss_dict_items_turned_into_numbers_after_a_skip.py": (
        "safe", ['        train_loss += loss_dict["loss"]  # expect: GL008'],
        ['        train_loss += loss_dict["loss"].detach()  # expect: GL008']),
    "loss_graph_kept_alive/deepspeed_window_losses_kept_for_the_run.py": (
        "safe", ["            history.append(loss)  # expect: GL008"],
        ["            history.append(loss.detach())  # expect: GL008"]),
    "loss_graph_kept_alive/replay_buffer_keeps_the_outputs.py": (
        "unsafe", ["            self.samples.append(x)  # expect: GL008"],
        ["            self.samples.append(x.detach())  # expect: GL008"]),
    "loss_graph_kept_alive/losses_list_for_logging.py": ("safe", ["    train_losses.append(loss)  # expect: GL008"],
                                                    ["    train_losses.append(loss.detach())  # expect: GL008"]),
    "loss_graph_kept_alive/loss_terms_of_a_model_method_kept_per_batch.py": None,  # a tuple or a tensor: no one rewrite
    "loss_graph_kept_alive/running_loss_summed_in_place_with_add.py": None,  # an in-place sum: no rewrite offered yet
    "loss_graph_kept_alive/running_sum_assignment.py": ("safe", ["        running = running + loss * inputs.size(0)  # expect: GL008"],
                                                   ["        running = running + (loss * inputs.size(0)).detach()  # expect: GL008"]),
    "loss_graph_kept_alive/helper_appends_to_callers_list.py": ("unsafe", ["    hist.append(loss)  # expect: GL008"],
                                                          ["    hist.append(loss.detach())  # expect: GL008"]),
    "loss_graph_kept_alive/multi_discriminator_losses_summed_over_epoch.py": ("safe", ["                    errD_total += errD  # expect: GL008"],
                                                                         ["                    errD_total += errD.detach()  # expect: GL008"]),
    "loss_graph_kept_alive/running_loss_from_loss_function_argument.py": ("unsafe", ["        running_loss += loss  # expect: GL008"],
                                                                     ["        running_loss += loss.item()  # expect: GL008"]),
    "loss_graph_kept_alive/model_returns_loss_and_hit_count_total_loss_tensor.py": ("safe", ["            tot_loss += loss  # expect: GL008"],
                                                                              ["            tot_loss += loss.detach()  # expect: GL008"]),
    "loss_graph_kept_alive/horovod_metric_sums_loss_tensor.py": ("unsafe", ["        self.sum += hvd.allreduce(val.cpu(), name=self.name)  # expect: GL008"],
                                                             ["        self.sum += hvd.allreduce(val.cpu(), name=self.name).detach()  # expect: GL008"]),
    "loss_graph_kept_alive/step_outputs_dict_appended_with_its_loss.py": None,  # the dict holds the graph in one item: no `.detach()` of it
    "loss_graph_kept_alive/total_from_trainer_object_method.py": (
        "safe", ["        total_loss += total  # expect: GL008"], ["        total_loss += total.detach()  # expect: GL008"]),
    "loss_graph_kept_alive/shared_meter_project/base.py": None,  # the keeping statement is in another file: no fix
    "loss_graph_kept_alive/trainer_history_dict.py": ("unsafe", ['        self.history["loss"].append(loss)  # expect: GL008'],
                                                 ['        self.history["loss"].append(loss.detach())  # expect: GL008']),
    "loss_graph_kept_alive/discriminator_repetitions_loss_summed_over_epoch.py": (
        "safe", ["            loss_d_sum += loss_d  # expect: GL008"], ["            loss_d_sum += loss_d.detach()  # expect: GL008"]),
    # in a method of the history object: `self.values` is an attribute, which code out of sight may backpropagate
    "loss_graph_kept_alive/history_object_appends_loss_tensor.py": (
        "unsafe", ["        self.values.append(val)  # expect: GL008"], ["        self.values.append(val.detach())  # expect: GL008"]),
    "amp_scaled_gradients/clip_before_unscale_in_loop_setting_model_sync_flag.py": None,  # clip and unscale under different tests
    "amp_scaled_gradients/accelerate_fp16_torch_clip.py": None,  # scaled by the Accelerator: no scaler of the code's to unscale
    # the dict `step` returned holds the graph in its "loss" item: no `.detach()` of it
    "loss_graph_kept_alive/lightning_training_step_outputs_keep_the_loss.py": None,
    # `losses[-1].backward()` after the append: the item must keep its graph until then
    "loss_graph_kept_alive/loss_history_backpropagated_through_its_last_item.py": None,
    # the running average's new term detached: the start (`else: loss_ema = loss`) keeps one graph, not one per step
    "loss_graph_kept_alive/loss_ema_started_on_first_iteration.py": (
        "safe", ["        loss_ema = ema_alpha * loss_ema + (1 - ema_alpha) * loss  # expect: GL008"],
        ["        loss_ema = ema_alpha * loss_ema + (1 - ema_alpha) * loss.detach()  # expect: GL008"]),
    "loss_graph_kept_alive/multi_scale_discriminator_scores_loss_list.py": (
        "unsafe", ["        avg_adv_loss.append(adv_loss)  # expect: GL008"], ["        avg_adv_loss.append(adv_loss.detach())  # expect: GL008"]),
    "loss_graph_kept_alive/named_tuple_of_losses_summed_over_epoch.py": (
        "safe", ["        total_loss += total  # expect: GL008"], ["        total_loss += total.detach()  # expect: GL008"]),
    # the division is right for the window the hooks' steps do not keep: which of the two to change is the author's
    "amp_scaled_gradients/clip_with_optimizer_step_in_backward_hooks.py": None,
    "double_loss_scaling/accelerate_accumulate_divided_again.py": ("safe", ["        loss = loss / gradient_accumulation_steps"], []),
    "double_loss_scaling/deepspeed_engine_divided_again.py": ("unsafe", ["        loss = loss / args.gradient_accumulation_steps"], []),
    "double_loss_scaling/megatron_loss_func_divides_by_num_microbatches.py": None,  # divided in the loss function the schedule calls
    "double_loss_scaling/divided_but_steps_every_batch.py": None,
    "double_loss_scaling/trainer_divides_by_grad_accum_without_accumulating.py": None,
    # the framework divides while nothing accumulates: wrapping the loop in `accelerator.accumulate` is the author's call
    "double_loss_scaling/accelerate_window_without_accumulate_context.py": None,
    "double_loss_scaling/accelerate_without_accumulation_steps_divided.py": None,
    "double_loss_scaling/accelerator_built_out_of_sight_steps_every_batch.py": None,
    # an FSDP2 module has no `no_sync()`: its sync is a method call the author places before the forward
    "ddp_accumulation_without_no_sync/fsdp2_fully_shard_in_place_accumulates.py": None,
    # a norm read or noise added while scaled: where `unscale_` belongs (in a loop over parameters) is the author's call
    "amp_scaled_gradients/grad_norm_logged_before_unscale.py": None,
    "amp_scaled_gradients/grad_norm_of_each_parameter_read_before_unscale.py": None,
    "amp_scaled_gradients/gradient_noise_added_before_unscale.py": None,
    # a hook's returned loss that the framework divides again: where the division sits is the author's call
    "double_loss_scaling/lightning_training_step_divides_by_accumulation.py": None,
    # a plain step in the scaled arm (like step_bypasses_scaler): which step the arm means is the author's call
    "amp_scaled_gradients/scaler_tested_as_none_plain_step_in_scaled_arm.py": None,
    "amp_scaled_gradients/scaled_loss_assigned_in_one_arm_plain_step.py": None,
    # the manual division sits in an assignment to a dict item, read elsewhere too: removing it is the author's call
    "double_loss_scaling/accelerate_dict_item_divided_again.py": None,
    # a sync choice the wrong way round: no wrap to add, its test is to be turned round, which is the author's call
    "ddp_accumulation_without_no_sync/no_sync_chosen_inline_on_the_stepping_batch.py": None,
    # in a method of the meter object: `self.sum` is an attribute, which code out of sight may read as a tensor
    "loss_graph_kept_alive/average_meter_sums_tensors_it_is_given.py": (
        "unsafe", ["        self.sum += val * n  # expect: GL008"], ["        self.sum += (val * n).detach()  # expect: GL008"]),
    # the same in a meter kept in a logger's dict (its bounded window is left alone)
    "loss_graph_kept_alive/meter_of_a_loggers_dict_sums_loss_tensor.py": (
        "unsafe", ["        self.total += value * n  # expect: GL008"], ["        self.total += (value * n).detach()  # expect: GL008"]),
    "loss_graph_kept_alive/epoch_error_summed_with_its_graph.py": (
        "safe", ["        total_error += loss * x.shape[0]  # expect: GL008", "    history[epoch] = train(loader)  # expect: GL008"],
        ["        total_error += (loss * x.shape[0]).detach()  # expect: GL008", "    history[epoch] = train(loader).detach()  # expect: GL008"]),
    # the accuracy appended next to the loss keeps no graph: only the loss's append is rewritten
    "loss_graph_kept_alive/losses_kept_beside_accuracy_of_each_batch.py": (
        "safe", ["    history.append(loss)  # expect: GL008"], ["    history.append(loss.detach())  # expect: GL008"]),
    "loss_graph_kept_alive/outputs_kept_beside_accuracy_of_each_batch.py": (
        "safe", ["    kept.append(out)  # expect: GL008"], ["    kept.append(out.detach())  # expect: GL008"]),
    "loss_graph_kept_alive/peft_lora_running_loss_sum.py": (
        "safe", ["            loss_sum += loss  # expect: GL008"], ["            loss_sum += loss.detach()  # expect: GL008"]),
    # in a subclass's hook the base class's loop calls: `self.history` is an attribute, which code out of sight may read
    "loss_graph_kept_alive/base_loop_calls_subclass_hook_that_keeps_the_loss.py": (
        "unsafe", ["        self.history.append(loss)  # expect: GL008"],
        ["        self.history.append(loss.detach())  # expect: GL008"]),
}


def parses(text: str) -> bool:
    try:
        ast.parse(text)
    except SyntaxError:
        return False
    return True


def comments(text: str) -> list[str]:
    return [t.string for t in tokenize.generate_tokens(io.StringIO(text).readline) if t.type == tokenize.COMMENT]


def changed_lines(old: str, new: str) -> tuple[list[str], list[str]]:
    diff = list(difflib.unified_diff(old.splitlines(), new.splitlines(), lineterm="", n=0))
    removed = [d[1:] for d in diff if d.startswith("-") and not d.startswith("---")]
    added = [d[1:] for d in diff if d.startswith("+") and not d.startswith("+++")]
    return removed, added


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "gradcheck_lint", "--no-cache", *args], capture_output=True, text=True, cwd=cwd, timeout=600)


def test_every_bug_fixture_has_an_expectation() -> None:
    assert sorted(f.id for f in BUGS) == sorted(EXPECTED)


@pytest.mark.parametrize("fixture", BUGS, ids=lambda f: f.id)
def test_fixture_fix(fixture) -> None:  # type: ignore[no-untyped-def]
    """The fix parses, silences its rule, changes exactly the expected lines (comments kept), and a second fix is a no-op."""
    text = fixture.path.read_text(encoding="utf-8")
    codes = {code for _line, code in fixture.expected if code in CODES}
    expected = EXPECTED[fixture.id]
    before = check_source(text, fixture.id)
    offered = [d for d in before if d.code in codes and d.fix is not None]
    result = fix_source(text, fixture.id, None, unsafe=True)
    if expected is None:
        assert offered == [] and result.text == text and result.applied == 0
        return
    applicability, removed, added = expected
    assert {d.fix.applicability.value for d in offered if d.fix} == {applicability}
    assert all(d.fix and d.fix.codemod is not None and d.fix.edits == () for d in offered), "codemod fixes get their edits when fixing"
    assert parses(result.text)
    assert not {d.code for d in check_source(result.text, fixture.id)} & codes, result.text
    assert changed_lines(text, result.text) == (removed, added)
    assert sorted(comments(text)) == sorted(comments(result.text))
    again = fix_source(result.text, fixture.id, None, unsafe=True)
    assert again.applied == 0 and again.text == result.text
    # Plain --fix applies it only when it is safe.
    safe_only = fix_source(text, fixture.id, None, unsafe=False)
    assert (safe_only.text == result.text) == (applicability == "safe")
    if applicability == "unsafe":
        assert safe_only.text == text


def test_fixed_fixtures_still_run(tmp_path: Path) -> None:
    """The fixed scripts that run on CPU still run (`total_loss.item()` after `.detach()`, the unscale, `no_sync` under gloo)."""
    pytest.importorskip("torch")
    scripts = {}
    for fixture in BUGS:
        if EXPECTED[fixture.id] is None or fixture.static_only:
            continue
        fixed = tmp_path / fixture.path.name
        fixed.write_text(fix_source(fixture.path.read_text(encoding="utf-8"), fixture.id, None, unsafe=True).text, encoding="utf-8")
        scripts[fixture.id] = fixed
    # each in a process of its own, forked from one that imported torch (tests/forkserver.py), plainly
    results = run_scripts(list(scripts.values()), "plain", cwd=tmp_path)
    for rel, fixed in scripts.items():
        assert not results[str(fixed)]["error"], (rel, results[str(fixed)]["error"])
    assert len(scripts) >= 5, scripts


def test_unsafe_diff_round_trips_with_patch(tmp_path: Path) -> None:
    if shutil.which("patch") is None:
        pytest.skip("`patch` is not installed")
    for root in ("a", "b"):
        for d in DIRS:
            shutil.copytree(FIXTURES / d, tmp_path / root / d)
    diff = run("--diff", "--unsafe-fixes", *DIRS, cwd=tmp_path / "a")
    assert diff.returncode == 1, diff.stderr
    assert "+import contextlib" in diff.stdout and "+    scaler.unscale_(optimizer)" in diff.stdout
    applied = subprocess.run(["patch", "-p0", "--batch", "--silent"], input=diff.stdout, text=True, cwd=tmp_path / "a", capture_output=True)
    assert applied.returncode == 0, applied.stdout + applied.stderr
    fixed = run("--fix", "--unsafe-fixes", *DIRS, cwd=tmp_path / "b")
    # one fix per finding of a bug fixture that has fixes (epoch_error_summed_with_its_graph has two)
    offered = sum(len({line for line, code in f.expected if code in CODES}) for f in BUGS if EXPECTED[f.id] is not None)
    assert f"Fixed {offered} problems." in fixed.stdout, fixed.stdout + fixed.stderr
    for d in DIRS:
        for p in sorted((tmp_path / "b" / d).glob("*.py")):
            assert (tmp_path / "a" / d / p.name).read_bytes() == p.read_bytes(), p.name
    assert run("--diff", "--unsafe-fixes", *DIRS, cwd=tmp_path / "b").stdout == ""


# -- libcst only when fixing ------------------------------------------------------------------------
_PROBE = """
import sys
{block}
from gradcheck_lint.cli import main
try:
    main(sys.argv[1:])
except SystemExit as exit:
    code = exit.code
print("LIBCST" if sys.modules.get("libcst") is not None else "NO-LIBCST", code)
"""


def _probe(tmp_path: Path, *args: str, block: str = "", cache: str | None = None) -> tuple[str, str]:
    script = tmp_path / "probe.py"
    script.write_text(_PROBE.format(block=block), encoding="utf-8")
    caching = ["--cache-dir", cache] if cache else ["--no-cache"]
    proc = subprocess.run([sys.executable, str(script), *caching, "--jobs", "1", *args], capture_output=True, text=True, cwd=tmp_path, timeout=300)
    return proc.stdout.strip().splitlines()[-1], proc.stderr


def test_libcst_is_imported_only_when_fixing(tmp_path: Path) -> None:
    """libcst is imported to apply a codemod fix, or to try one whose finding a listing marks `[*]` (a fix is
    offered only if it removes its finding); a listing with nothing of the kind, or answered from the cache,
    never imports it."""
    shutil.copy(FIXTURES / "amp_scaled_gradients/clip_before_unscale.py", tmp_path / "t.py")
    shutil.copy(FIXTURES / "missing_zero_grad/no_zero_grad_plain_loop.py", tmp_path / "plain.py")
    assert _probe(tmp_path, "plain.py")[0] == "NO-LIBCST 1"
    assert _probe(tmp_path, "t.py")[0] == "LIBCST 1"  # the codemod is tried, in memory
    cache = str(tmp_path / "cache")
    assert _probe(tmp_path, "t.py", cache=cache)[0] == "LIBCST 1"
    assert _probe(tmp_path, "t.py", cache=cache)[0] == "NO-LIBCST 1"
    assert _probe(tmp_path, "--unsafe-fixes", "--format", "json", "t.py", cache=cache)[0] == "LIBCST 1"
    assert _probe(tmp_path, "--unsafe-fixes", "--format", "json", "t.py", cache=cache)[0] == "NO-LIBCST 1"
    assert _probe(tmp_path, "--statistics", "t.py")[0] == "NO-LIBCST 1"  # no fix is shown
    assert _probe(tmp_path, "--diff", "t.py")[0] == "LIBCST 1"  # the probe does see an import
    plain = subprocess.run([sys.executable, "-c", "import sys, gradcheck_lint, gradcheck_lint.fixes, gradcheck_lint.cli; print('libcst' in sys.modules)"],
                           capture_output=True, text=True, timeout=120)
    assert plain.stdout.strip() == "False", plain.stderr


def test_without_libcst_files_needing_codemods_are_left_untouched(tmp_path: Path) -> None:
    shutil.copy(FIXTURES / "amp_scaled_gradients/clip_before_unscale.py", tmp_path / "amp.py")
    shutil.copy(FIXTURES / "missing_zero_grad/no_zero_grad_plain_loop.py", tmp_path / "plain.py")
    amp = (tmp_path / "amp.py").read_bytes()
    plain = (tmp_path / "plain.py").read_bytes()
    status, stderr = _probe(tmp_path, "--fix", "amp.py", "plain.py", block="sys.modules['libcst'] = None  # import libcst raises ImportError")
    assert status == "NO-LIBCST 2"
    assert "need libcst, which is not installed" in stderr and "amp.py" in stderr and "plain.py" not in stderr
    assert (tmp_path / "amp.py").read_bytes() == amp
    assert (tmp_path / "plain.py").read_bytes() != plain  # a text-edit fix needs no libcst


# -- the codemods themselves ----------------------------------------------------------------------
def _fix(src: str, unsafe: bool = True) -> str:
    return fix_source(textwrap.dedent(src), "t.py", None, unsafe=unsafe).text


def test_json_carries_the_codemod_and_reads_back(tmp_path: Path) -> None:
    shutil.copy(FIXTURES / "double_loss_scaling/accelerate_accumulate_divided_again.py", tmp_path / "t.py")
    out = run("--format", "json", "t.py", cwd=tmp_path)
    [d] = json.loads(out.stdout)
    assert d["fix"]["codemod"] == {"kind": "drop_division", "spans": [{"line": 17, "column": 9, "end_line": 17, "end_column": 50}],
                                   "args": {"remove": "1"}}
    assert d["fix"]["edits"] == [] and d["fix"]["applicability"] == "safe"
    back = Diagnostic.from_json(d)
    assert back.fix is not None and back.fix.codemod == Codemod("drop_division", (Span(17, 9, 17, 50),), (("remove", "1"),))


def test_codemod_that_does_not_fit_changes_nothing() -> None:
    text = "x = 1\ny = x / 2\n"
    assert codemod_edits(text, Codemod("drop_division", (Span(1, 1, 1, 6),))) == ()  # not a division
    assert codemod_edits(text, Codemod("insert_before", (Span(7, 1, 7, 2),), (("code", "z = 0"),))) == ()
    assert codemod_edits(text, Codemod("no_such_kind", (Span(1, 1, 1, 6),))) == ()
    assert transform(text, Codemod("drop_division", (Span(2, 5, 2, 10),))) == "x = 1\ny = x\n"
    # parentheses stay where the remaining operand needs them, and only there
    assert transform("y = (a * b / n).sum()\n", Codemod("drop_division", (Span(1, 6, 1, 15),))) == "y = (a * b).sum()\n"
    assert transform("y = (a / n).sum()\n", Codemod("drop_division", (Span(1, 6, 1, 11),))) == "y = a.sum()\n"
    assert transform("y = [a + b][0]\n", Codemod("call_method", (Span(1, 6, 1, 11),), (("method", "detach"),))) == "y = [(a + b).detach()][0]\n"


def test_inline_division_and_comments_kept() -> None:
    src = """\
    from accelerate import Accelerator
    import torch
    accelerator = Accelerator(gradient_accumulation_steps=4)
    model = torch.nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    model, optimizer = accelerator.prepare(model, optimizer)
    for x in torch.randn(16, 2, 4):
        with accelerator.accumulate(model):
            loss = model(x).pow(2).mean()
            # the framework divides too
            accelerator.backward(loss / 4)   # odd   spacing kept
            optimizer.step()
            optimizer.zero_grad()
    """
    fixed = _fix(src, unsafe=False)
    assert "        # the framework divides too\n        accelerator.backward(loss)   # odd   spacing kept\n" in fixed


def test_removed_statement_keeps_the_comment_above_it() -> None:
    src = """\
    from accelerate import Accelerator
    import torch
    accelerator = Accelerator(gradient_accumulation_steps=4)
    model = torch.nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    model, optimizer = accelerator.prepare(model, optimizer)
    for x in torch.randn(16, 2, 4):
        with accelerator.accumulate(model):
            loss = model(x).pow(2).mean()
            # scale for accumulation
            loss /= 4
            accelerator.backward(loss)
            optimizer.step()
            optimizer.zero_grad()
    """
    fixed = _fix(src, unsafe=True)
    assert "loss /= 4" not in fixed
    assert "        # scale for accumulation\n        accelerator.backward(loss)\n" in fixed


def test_item_for_a_number_total_is_unsafe() -> None:
    src = """\
    import torch
    model = torch.nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    total = 0.0
    for x in torch.randn(8, 2, 4):
        opt.zero_grad()
        loss = model(x).pow(2).mean()
        loss.backward()
        opt.step()
        total += loss
    print(total / 8)
    """
    [d] = [d for d in check_source(textwrap.dedent(src), "t.py") if d.code == "GL008"]
    assert d.fix is not None and d.fix.applicability is Applicability.UNSAFE and d.fix.codemod is not None
    assert d.fix.codemod.arg("method") == "item"
    assert "    total += loss.item()\n" in _fix(src)
    assert _fix(src, unsafe=False) == textwrap.dedent(src)


def test_returned_list_gets_an_unsafe_detach() -> None:
    src = """\
    import torch
    def train(model, opt, batches):
        losses = []
        for x in batches:
            opt.zero_grad()
            loss = model(x).pow(2).mean()
            loss.backward()
            opt.step()
            losses.append(loss)
        return losses
    train(torch.nn.Linear(4, 1), None, [])
    """
    ds = [d for d in check_source(textwrap.dedent(src), "t.py") if d.code == "GL008"]
    for d in ds:
        assert d.fix is not None and d.fix.applicability is Applicability.UNSAFE


def test_clip_outside_the_steps_block_gets_no_unscale() -> None:
    src = """\
    import torch
    model = torch.nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler("cpu")
    for i, x in enumerate(torch.randn(8, 2, 4)):
        scaler.scale(model(x).pow(2).mean() / 4).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        if (i + 1) % 4 == 0:
            scaler.step(opt)
            scaler.update()
            opt.zero_grad()
    """
    ds = [d for d in check_source(textwrap.dedent(src), "t.py") if d.code == "GL007"]
    assert ds and all(d.fix is None for d in ds)


def test_unscale_goes_under_the_steps_condition_keeping_the_comment() -> None:
    src = """\
    import torch
    model = torch.nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler("cpu")
    for i, x in enumerate(torch.randn(8, 2, 4)):
        scaler.scale(model(x).pow(2).mean() / 4).backward()
        if (i + 1) % 4 == 0:
            # clip the window's gradient
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            scaler.step(opt)
            scaler.update()
            opt.zero_grad()
    """
    fixed = _fix(src, unsafe=False)
    assert ("        # clip the window's gradient\n        scaler.unscale_(opt)\n"
            "        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n") in fixed
    assert not [d for d in check_source(fixed, "t.py") if d.code == "GL007"]


def test_no_sync_wrap_keeps_crlf_and_tabs(tmp_path: Path) -> None:
    src = (FIXTURES / "ddp_accumulation_without_no_sync/accumulate_without_no_sync.py").read_text(encoding="utf-8")
    src = src.replace("    ", "\t")
    f = tmp_path / "t.py"
    f.write_bytes(src.replace("\n", "\r\n").encode("utf-8"))
    result = fix_file(str(f), unsafe=True)
    assert result.changed and result.fixed is not None
    data = result.fixed.encode("utf-8")
    assert b"\r\n" in data and b"\n" not in data.replace(b"\r\n", b"")
    assert "\t\t\twith (contextlib.nullcontext() if (it + 1) % accum_iter == 0 else model.no_sync()):\r\n\t\t\t\tloss = " in result.fixed
    assert not [d for d in check_source(result.fixed.replace("\r\n", "\n"), "t.py") if d.code == "GL006"]


def test_no_sync_test_reassigned_between_gets_no_fix() -> None:
    src = """\
    import torch
    from torch.nn.parallel import DistributedDataParallel as DDP
    model = DDP(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    step = 0
    for x in torch.randn(16, 2, 4):
        loss = model(x).pow(2).mean() / 4
        loss.backward()
        step += 1
        if step % 4 == 0:
            opt.step()
            opt.zero_grad()
    """
    ds = [d for d in check_source(textwrap.dedent(src), "t.py") if d.code == "GL006"]
    assert ds and all(d.fix is None for d in ds)
