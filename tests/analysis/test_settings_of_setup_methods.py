"""Settings fixed once for the run (`analysis/worlds.py`) are also tested in the setup methods `__init__`
calls (`self.init_main()`), and a world whose multi-process setting is off (`self.ddp`) is one process by
that name: a framework-prepared model there is a DDP wrapper only by assumption (lockbox 26's CityLayout
GL006: the model prepared, then unwrapped with `.module` in a setup method when `self.ddp` is on)."""

from __future__ import annotations

import pytest
from test_worlds import TRAINER

from gradcheck_lint import check_source


def codes(text: str) -> list[tuple[int, str, str]]:
    return [(d.line, d.code, d.certainty.value) for d in check_source(text)]


# test_worlds.py's improved-diffusion TrainLoop with the fp16 set-up moved into a method `__init__` calls
SETUP_METHOD = TRAINER.replace("""\
        self.model_params = list(model.parameters())
        self.master_params = self.model_params
        if self.use_fp16:
            self.master_params = master_copy(self.model_params)
        self.opt = torch.optim.AdamW(self.master_params, lr=1e-4)
""", """\
        self.setup_params()
        self.opt = torch.optim.AdamW(self.master_params, lr=1e-4)

    def setup_params(self):
        self.model_params = list(self.model.parameters())
        self.master_params = self.model_params
        if self.use_fp16:
            self.master_params = master_copy(self.model_params)
""").replace("            if {test}:", "            if self.use_fp16:")


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


LOOP = """\
    def train(self):
        it = iter(self.loader)
        while True:
            for _ in range(self.accum):
                loss = self.model(next(it)).mean() / self.accum
                self.accelerator.backward(loss)
            self.optimizer.step()
            self.optimizer.zero_grad()
"""


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

{loop}"""


@pytest.mark.parametrize("flag", ["ddp", "multigpu", "use_distributed"])
def test_a_prepared_model_in_the_world_whose_multi_process_setting_is_off_is_possible_ddp(flag: str) -> None:
    assert codes(PREPARED.format(flag=flag, loop=LOOP)) == [(24, "GL006", "possible")]


def test_a_setting_not_named_for_processes_says_nothing_of_them() -> None:
    assert codes(PREPARED.format(flag="unwrap", loop=LOOP)) == [(24, "GL006", "certain")]


def test_the_world_where_the_model_stays_wrapped_and_the_setting_is_on_is_certain() -> None:
    # no unwrap: in the world where `ddp` is on, the prepared model is DDP on several processes
    text = PREPARED.format(flag="ddp", loop=LOOP).replace("            self.model = self.model.module\n", "            print('ddp')\n")
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

{loop}"""


@pytest.mark.parametrize("wrapped", ["self.accelerator.prepare(model)", "self.accelerator.prepare_model(model)"])
def test_a_model_handed_in_and_prepared_accumulates_through_a_ddp_wrapper(wrapped: str) -> None:
    assert codes(HANDED_IN.format(wrapped=wrapped, loop=LOOP)) == [(18, "GL006", "certain")]


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
