"""Settings fixed once for the run (`analysis/worlds.py`) are also tested in the setup methods `__init__`
calls (`self.init_main()`), and a world whose multi-process setting is off (`self.ddp`) is one process by
that name: a framework-prepared model there is a DDP wrapper only by assumption (lockbox 26's CityLayout
GL006: the model prepared, then unwrapped with `.module` in a setup method when `self.ddp` is on)."""

from __future__ import annotations

import pytest

from gradcheck_lint import check_source


def codes(text: str) -> list[tuple[int, str, str]]:
    return [(d.line, d.code, d.certainty.value) for d in check_source(text)]


# test_worlds.py's improved-diffusion TrainLoop with the fp16 set-up moved into a method `__init__` calls
SETUP_METHOD = """\
import torch
from torch import nn


def zero_grad(params):
    for p in params:
        if p.grad is not None:
            p.grad.zero_()


def master_copy(params):
    return [nn.Parameter(torch.cat([p.detach().float().view(-1) for p in params]))]


def model_grads_to_master_grads(params, master):
    master[0].grad = torch.cat([p.grad.float().view(-1) for p in params])


class TrainLoop:
    def __init__(self, model, data, use_fp16=False):
        self.model = model
        self.data = data
        self.use_fp16 = use_fp16
        self.setup_params()
        self.opt = torch.optim.AdamW(self.master_params, lr=1e-4)

    def setup_params(self):
        self.model_params = list(self.model.parameters())
        self.master_params = self.model_params
        if self.use_fp16:
            self.master_params = master_copy(self.model_params)

    def run_loop(self):
        while True:
            batch = next(self.data)
{clear}            loss = self.losses(self.unknown_model, batch).mean()
            loss.backward()
            if self.use_fp16:
                model_grads_to_master_grads(self.model_params, self.master_params)
                self.opt.step()
            else:
                self.opt.step()
"""


def test_a_setting_tested_in_a_setup_method_is_one_world_per_run() -> None:
    assert codes(SETUP_METHOD.format(clear="            zero_grad(self.model_params)\n")) == []


def test_without_the_clear_the_fp32_world_of_a_setup_method_steps_stale_gradients() -> None:
    found = codes(SETUP_METHOD.format(clear=""))
    assert (42, "GL001") in {(line, code) for line, code, _ in found}


def test_a_setting_the_setup_method_assigns_again_is_no_world() -> None:
    # the setup method turns fp16 off itself: assigned twice, the run is not one world (the paths mix)
    text = SETUP_METHOD.format(clear="            zero_grad(self.model_params)\n").replace(
        "        self.master_params = self.model_params\n",
        "        self.master_params = self.model_params\n        self.use_fp16 = self.use_fp16 and torch.cuda.is_available()\n")
    assert (44, "GL001") in {(line, code) for line, code, _ in codes(text)}


# CityLayout's trainer, in short: the model is prepared by Accelerate, then unwrapped in the setup
# method when `self.ddp` says the run has several processes. With `ddp` off, Accelerate's model is DDP
# only when launched on several processes anyway, which the setting says is not how the script is run.
PREPARED = """\
import torch
from accelerate import Accelerator


class Trainer:
    def __init__(self, model, loader, {flag}=False, accum=4):
        self.{flag} = {flag}
        self.accelerator = Accelerator()
        self.accum = accum
        self.loader = loader
        self.init_main(model)

    def init_main(self, model):
        self.model = self.accelerator.prepare(model)
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=1e-4)
        if self.{flag}:
            self.model = self.model.module

    def train(self):
        it = iter(self.loader)
        while True:
            for _ in range(self.accum):
                loss = self.model(next(it)).mean() / self.accum
                self.accelerator.backward(loss)
            self.optimizer.step()
            self.optimizer.zero_grad()
"""


@pytest.mark.parametrize("flag", ["ddp", "multigpu", "use_distributed"])
def test_a_prepared_model_in_the_world_whose_multi_process_setting_is_off_is_possible_ddp(flag: str) -> None:
    assert codes(PREPARED.format(flag=flag)) == [(24, "GL006", "possible")]


def test_a_setting_not_named_for_processes_says_nothing_of_them() -> None:
    assert codes(PREPARED.format(flag="unwrap")) == [(24, "GL006", "certain")]


def test_the_world_where_the_model_stays_wrapped_and_the_setting_is_on_is_certain() -> None:
    # no unwrap: in the world where `ddp` is on, the prepared model is DDP on several processes
    text = PREPARED.format(flag="ddp").replace("            self.model = self.model.module\n", "            print('ddp')\n")
    assert codes(text) == [(24, "GL006", "certain")]


# What a framework call hands back wrapped for data parallelism is the model it was given: a constructor's
# parameter handed to `accelerator.prepare` is a model when what it returns is used as one.
HANDED_IN = """\
import torch
from accelerate import Accelerator


class Trainer:
    def __init__(self, model, loader, accum=4):
        self.accelerator = Accelerator()
        self.accum = accum
        self.loader = loader
        self.model = {wrapped}
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=1e-4)

    def train(self):
        it = iter(self.loader)
        while True:
            for _ in range(self.accum):
                loss = self.model(next(it)).mean() / self.accum
                self.accelerator.backward(loss)
            self.optimizer.step()
            self.optimizer.zero_grad()
"""


@pytest.mark.parametrize("wrapped", ["self.accelerator.prepare(model)", "self.accelerator.prepare_model(model)"])
def test_a_model_handed_in_and_prepared_accumulates_through_a_ddp_wrapper(wrapped: str) -> None:
    assert codes(HANDED_IN.format(wrapped=wrapped)) == [(18, "GL006", "certain")]


def test_a_model_handed_in_and_prepared_under_accumulate_is_silent() -> None:
    text = """\
import torch
from accelerate import Accelerator


class Trainer:
    def __init__(self, model, loader, accum=4):
        self.accelerator = Accelerator(gradient_accumulation_steps=accum)
        self.loader = loader
        self.model = self.accelerator.prepare(model)
        self.optimizer = self.accelerator.prepare(torch.optim.AdamW(self.model.parameters(), lr=1e-4))

    def train(self):
        for x in self.loader:
            with self.accelerator.accumulate(self.model):
                loss = self.model(x).mean()
                self.accelerator.backward(loss)
                self.optimizer.step()
                self.optimizer.zero_grad()
"""
    assert codes(text) == []
