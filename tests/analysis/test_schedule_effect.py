"""The `schedule` effect and the `unless` field of the API models: a call that runs a step function it is
given on each micro-batch and backpropagates the loss that function computes (Megatron Core's
`forward_backward_func`), divided by its micro-batch count; `forward_only=True` runs no backward."""

from __future__ import annotations

import textwrap

import pytest

from gradcheck_lint.analysis.apimodels import ModelError, parse_model_file
from gradcheck_lint.config import load_settings
from gradcheck_lint.engine import analyse_text

HEAD = """\
from functools import partial

import torch
from megatron.core.distributed import DistributedDataParallel, DistributedDataParallelConfig
from megatron.core.optimizer import OptimizerConfig, get_megatron_optimizer
from megatron.core.pipeline_parallel import get_forward_backward_func


def loss_func(loss_mask, output_tensor):
    loss = torch.sum(output_tensor.view(-1) * loss_mask.view(-1)) / loss_mask.sum(){divided}
    return loss, {{"lm loss": loss.detach()}}


def forward_step(data_iterator, model):
    tokens, loss_mask = next(data_iterator)
    return model(tokens), partial(loss_func, loss_mask)


def train(config, module, data_iterator, train_iters, num_microbatches, forward_only):
    model = DistributedDataParallel(config, DistributedDataParallelConfig(), module)
    optimizer = get_megatron_optimizer(OptimizerConfig(lr=1e-4), [model])
    forward_backward_func = get_forward_backward_func()
    for _ in range(train_iters):
{clear}        optimizer.zero_grad()
        forward_backward_func(forward_step_func=forward_step, data_iterator=data_iterator, model=[model],
                              num_microbatches=num_microbatches, seq_length=64, micro_batch_size=1, forward_only={only})
        optimizer.step()
"""
CLEAR = "        model.zero_grad_buffer()\n"


def found(text: str, path: str = "train.py") -> list[tuple[int, str]]:
    return sorted((d.line, d.code) for d in analyse_text(text, path).diagnostics)


def line_of(text: str, snippet: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if snippet in line)


def test_a_loss_function_dividing_by_the_micro_batch_count_divides_twice() -> None:
    text = HEAD.format(divided=" / num_microbatches", clear=CLEAR, only="False")
    # `num_microbatches` in `loss_func` is a global the analysis cannot see: the name says what it counts
    text = text.replace("def loss_func(loss_mask, output_tensor):", "num_microbatches = 8\n\n\ndef loss_func(loss_mask, output_tensor):")
    assert found(text) == [(line_of(text, "forward_backward_func(forward_step_func"), "GL010")]
    assert found(HEAD.format(divided="", clear=CLEAR, only="False")) == []


def test_without_zero_grad_buffer_the_buffers_keep_accumulating() -> None:
    bug = HEAD.format(divided="", clear="", only="False")
    assert found(bug) == [(line_of(bug, "optimizer.step()"), "GL001")]
    [diagnostic] = analyse_text(bug, "train.py").diagnostics
    assert "`model.zero_grad_buffer()`" in diagnostic.help


@pytest.mark.parametrize("clear,expected", [("model.zero_grad_buffer()", []), ("model.zero_grad()", ["GL001"])])
def test_only_zero_grad_buffer_clears_what_a_megatron_optimizer_steps_on(clear: str, expected: list[str]) -> None:
    """`torch.nn.Module.zero_grad` sets `.grad` to None; the DDP buffers (`main_grad`) the optimizer reads stay."""
    text = HEAD.format(divided="", clear=f"        {clear}\n", only="False")
    assert [code for _line, code in found(text)] == expected


@pytest.mark.parametrize("only,expected", [("True", []), ("False", ["GL001"])])
def test_forward_only_runs_no_backward(only: str, expected: list[str]) -> None:
    assert [code for _line, code in found(HEAD.format(divided="", clear="", only=only))] == expected


def test_forward_only_read_from_a_flag_backpropagates_on_its_false_paths() -> None:
    text = HEAD.format(divided="", clear="", only="forward_only")
    assert [code for _line, code in found(text)] == ["GL001"]


def test_a_step_function_out_of_sight_still_backpropagates_through_the_model() -> None:
    text = textwrap.dedent("""\
        from megatron.core.distributed import DistributedDataParallel
        from megatron.core.optimizer import get_megatron_optimizer
        from megatron.core.pipeline_parallel import get_forward_backward_func
        from mylab.steps import forward_step


        def train(config, ddp_config, module, buckets, opt_config):
            model = DistributedDataParallel(config, ddp_config, module)
            optimizer = get_megatron_optimizer(opt_config, [model])
            forward_backward_func = get_forward_backward_func()
            for batch in buckets:
                for data_iterator in batch:
                    model.zero_grad_buffer()
                    forward_backward_func(forward_step_func=forward_step, data_iterator=data_iterator, model=[model],
                                          num_microbatches=4, seq_length=64, micro_batch_size=1)
                optimizer.step()
        """)
    assert found(text) == [(line_of(text, "model.zero_grad_buffer()"), "GL002")]


def test_a_schedule_handed_in_is_known_by_its_name() -> None:
    """Megatron's `train_step(..., forward_backward_func)` and RL workers are handed the schedule."""
    text = textwrap.dedent("""\
        from megatron.core.distributed import DistributedDataParallel
        from megatron.core.optimizer import get_megatron_optimizer


        def train(forward_step_func, data_iterator, forward_backward_func, config, ddp_config, module, opt_config):
            model = DistributedDataParallel(config, ddp_config, module)
            optimizer = get_megatron_optimizer(opt_config, [model])
            for _ in range(10):
                model.zero_grad_buffer()
                forward_backward_func(forward_step_func=forward_step_func, data_iterator=data_iterator, model=[model],
                                      num_microbatches=4, seq_length=64, micro_batch_size=1)
                model.zero_grad_buffer()
                optimizer.step()
        """)
    assert found(text) == [(12, "GL002")]
    assert found(text.replace("forward_backward_func(", "run_schedule(")) == []  # a name that says nothing: unread


USER_SCHEDULE = """
[tool.gradlint]

[[tool.gradlint.models.call]]
name = "mylab.pipeline.run_microbatches"
effect = { effect = "schedule", function = "0|step_fn", arguments = "1|batches", loss = "returned", scales = "framework", window = "2|n" }
"""

USER_LOOP = """\
import torch
from mylab.pipeline import run_microbatches

model = torch.nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
accum_steps = 4


def step_fn(batch):
    loss = model(batch).pow(2).mean(){divided}
    return loss


for batches in torch.randn(8, 4, 2, 4):
    run_microbatches(step_fn, batches, accum_steps)
    optimizer.step()
    optimizer.zero_grad()
"""


def test_a_user_schedule_row_whose_function_returns_the_loss(tmp_path) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "pyproject.toml").write_text(USER_SCHEDULE)
    settings = load_settings([str(tmp_path)])
    bug = analyse_text(USER_LOOP.format(divided=" / accum_steps"), str(tmp_path / "t.py"), settings).diagnostics
    assert [(d.line, d.code) for d in bug] == [(15, "GL010")]
    assert analyse_text(USER_LOOP.format(divided=""), str(tmp_path / "t.py"), settings).diagnostics == []


@pytest.mark.parametrize("effect,message", [
    ({"effect": "schedule", "function": "0", "loss": "output"}, "loss must be one of"),
    ({"effect": "schedule", "loss": "returned"}, "names the `function`"),
    ({"effect": "schedule", "function": "0", "arguments": "a,b c"}, "not an argument reference"),
    ({"effect": "backward", "loss": "0", "when": "a", "unless": "b"}, "not both"),
])
def test_bad_schedule_rows_are_refused(effect: dict[str, str], message: str) -> None:
    with pytest.raises(ModelError, match=message):
        parse_model_file({"call": [{"name": "mylab.run", "effect": effect}]}, "pyproject.toml")


WORKER = """\
from functools import partial

import torch
from megatron.core.distributed import DistributedDataParallel
from megatron.core.optimizer import get_megatron_optimizer
from megatron.core.pipeline_parallel import get_forward_backward_func


class Worker:
    def __init__(self, config, ddp_config, module, opt_config, num_microbatches):
        self.model = DistributedDataParallel(config, ddp_config, module)
        self.optimizer = get_megatron_optimizer(opt_config, [self.model])
        self.forward_backward_func = get_forward_backward_func()
        self.num_microbatches = num_microbatches

    def loss_func(self, loss_mask, output_tensor):
        loss = torch.sum(output_tensor.view(-1) * loss_mask.view(-1)) / loss_mask.sum()
        return loss{divided}, {{"lm loss": loss.detach()}}

    def forward_step(self, data_iterator, model, vp_stage=None):
        tokens, loss_mask = next(data_iterator)
        return model(tokens), partial(self.loss_func, loss_mask)

    def train(self, data_iterator, steps):
        for _ in range(steps):
            self.model.zero_grad_buffer()
            self.optimizer.zero_grad()
            self.forward_backward_func(forward_step_func=partial(self.forward_step, vp_stage=0),
                                       data_iterator=data_iterator, model=[self.model],
                                       num_microbatches=self.num_microbatches, seq_length=64, micro_batch_size=1)
            self.optimizer.step()
"""


def test_a_worker_keeping_the_schedule_with_a_partial_step_function() -> None:
    """The schedule kept in an attribute, the step function a `partial` of a method, the loss a method's."""
    bug = WORKER.format(divided=" / self.num_microbatches")
    assert found(bug) == [(line_of(bug, "self.forward_backward_func("), "GL010")]
    assert found(WORKER.format(divided="")) == []


def test_a_hand_clip_before_the_megatron_step_is_no_amp_misuse() -> None:
    """The optimizer's `step()` unscales with its own grad scaler and clips by `config.clip_grad`: no torch
    GradScaler is in sight, so a hand clip before it is no clip of scaled gradients (GL007)."""
    text = HEAD.format(divided="", clear=CLEAR, only="False").replace(
        "        optimizer.step()", "        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n        optimizer.step()")
    assert "clip_grad_norm_" in text and found(text) == []


def test_the_fix_inserts_zero_grad_buffer_and_is_not_safe() -> None:
    """`optimizer.zero_grad()` after the step would change nothing: the fix names the model's clear, by a
    label the analysis gave it (not checked to be in scope there), so it is unsafe."""
    [diagnostic] = analyse_text(HEAD.format(divided="", clear="", only="False"), "train.py").diagnostics
    assert diagnostic.fix is not None and diagnostic.fix.applicability.value == "unsafe"
    assert [e.content.strip() for e in diagnostic.fix.edits] == ["model.zero_grad_buffer()"]
