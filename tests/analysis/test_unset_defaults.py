"""Settings no run of the project sets (gradcheck_lint.project.unset_defaults): a certain window finding in a
function whose window count is a keyword of default one that no call of the project passes rests on the assumption
that someone sets it, and is possible (lockbox 31's Few-NERD: `grad_iter=1` never passed by its script, a certain
GL004 on `it % grad_iter == 0`); a call that passes it, by keyword or by place, keeps the finding certain."""

from __future__ import annotations

from pathlib import Path

import pytest

from gradcheck_lint.cache import ResultCache
from gradcheck_lint.config import Settings
from gradcheck_lint.diagnostics import Diagnostic
from gradcheck_lint.runner import lint_files
from support import project_tree

FRAMEWORK = """\
    import torch


    class Framework:
        def __init__(self, loader):
            self.loader = loader

        def train(self, model, name, learning_rate=0.1, val_step=100, grad_iter=1):
            optimizer = torch.optim.SGD(model.parameters(), lr=learning_rate)
            model.train()
            it = 0
            for x in self.loader:
                loss = model(x).mean() / grad_iter
                loss.backward()
                if it % grad_iter == 0:
                    optimizer.step()
                    optimizer.zero_grad()
                if it % val_step == 0:
                    print(name, it)
                it += 1
"""
DEMO = """\
    import torch
    from framework import Framework


    def main():
        model = torch.nn.Linear(4, 1)
        framework = Framework([torch.randn(2, 4) for _ in range(8)])
        {call}


    if __name__ == "__main__":
        main()
"""
GATE = 15  # the line of `if it % grad_iter == 0:`


def _lint(root: Path, cache: ResultCache | None = None) -> list[tuple[int, str, str]]:
    found: list[Diagnostic] = lint_files([str(root / "framework.py")], Settings.default(), cache=cache)
    return [(d.line, d.code, d.certainty.value) for d in found if d.code != "GL000"]


def _tree(tmp: Path, call: str) -> Path:
    return project_tree(tmp / "p", {"framework.py": FRAMEWORK, "demo.py": DEMO.format(call=call)})


@pytest.mark.parametrize("call", ['framework.train(model, "run", val_step=50)', 'framework.train(model, "run")'])
def test_a_window_no_call_of_the_project_sets_keeps_its_finding_possible(tmp_path: Path, call: str) -> None:
    root = _tree(tmp_path, call)
    assert _lint(root) == [(GATE, "GL004", "possible")]
    [d] = [d for d in lint_files([str(root / "framework.py")], Settings.default()) if d.code == "GL004"]
    assert any("`grad_iter` is set above its default 1" in a for a in d.assumptions)


@pytest.mark.parametrize("call", ['framework.train(model, "run", grad_iter=4)',
                                  'framework.train(model, "run", 0.1, 100, 4)',
                                  'framework.train(*args)',
                                  'framework.train(model, "run", **options)'])
def test_a_call_that_may_set_the_window_keeps_the_finding_certain(tmp_path: Path, call: str) -> None:
    assert _lint(_tree(tmp_path, call)) == [(GATE, "GL004", "certain")]


def test_without_any_call_of_the_function_nothing_is_decided(tmp_path: Path) -> None:
    # `model.train()` names another function (it gives fewer arguments than `train` requires)
    assert _lint(_tree(tmp_path, "model.train()")) == [(GATE, "GL004", "certain")]


def test_a_window_counted_by_an_attribute_is_not_decided_here(tmp_path: Path) -> None:
    text = FRAMEWORK.replace("if it % grad_iter == 0:", "if it % self.accum == 0:")
    demo = DEMO.format(call='framework.train(model, "x")')
    root = project_tree(tmp_path / "p", {"framework.py": text, "demo.py": demo})
    assert [code for _line, code, certainty in _lint(root) if certainty == "certain"] != []


def test_a_call_added_later_is_seen_through_the_cache(tmp_path: Path) -> None:
    root = _tree(tmp_path, 'framework.train(model, "run")')
    cache = ResultCache(tmp_path / "cache")
    assert _lint(root, cache) == [(GATE, "GL004", "possible")]
    (root / "demo.py").write_text((root / "demo.py").read_text().replace('"run")', '"run", grad_iter=4)'))
    assert _lint(root, cache) == [(GATE, "GL004", "certain")]


# A window counted by a field of a settings object (ResRep, lockbox 30: `cfg.grad_accum_iters`, a namedtuple field
# that the one function building the config fills from its keyword `grad_accum_iters=1`, which no script passes; the
# test handed to the step function as `if_accum_grad`): every run has windows of one micro-batch.
CONFIG = """\
    from collections import namedtuple

    TrainConfig = namedtuple("TrainConfig", ["lr", "max_epochs", "grad_accum_iters"])


    def get_config(lr, max_epochs, grad_accum_iters=1):
        return TrainConfig(lr=lr, max_epochs=max_epochs, grad_accum_iters=grad_accum_iters)


    def get_test_config(lr):
        return TrainConfig(lr=lr, max_epochs=0, grad_accum_iters=None)
"""
TRAIN = """\
    import torch


    def train_one_step(model, x, optimizer, if_accum_grad):
        loss = model(x).pow(2).mean()
        loss.backward()
        if not if_accum_grad:
            optimizer.step()
            optimizer.zero_grad()


    def train_main(model, loader, cfg):
        optimizer = torch.optim.SGD(model.parameters(), lr=cfg.lr)
        iteration = 0
        for _epoch in range(cfg.max_epochs):
            for x in loader:
                iteration += 1
                if_accum_grad = (iteration % cfg.grad_accum_iters) != 0
                train_one_step(model, x, optimizer, if_accum_grad)
"""
SCRIPT = """\
    import torch
    from config import get_config
    from train import train_main

    if __name__ == "__main__":
        cfg = get_config({args})
        train_main(torch.nn.Linear(4, 1), [torch.randn(2, 4) for _ in range(8)], cfg)
"""
BACKWARD = 6  # the line of `loss.backward()` in train.py


def _lint_train(tmp: Path, files: dict[str, str]) -> list[tuple[int, str, str]]:
    root = project_tree(tmp / "p", {"config.py": CONFIG, "train.py": TRAIN, "script.py": SCRIPT.format(args="0.1, 10"),
                                    **files})
    found = lint_files([str(root / "train.py")], Settings.default())
    return [(d.line, d.code, d.certainty.value) for d in found if d.code == "GL003"]


def test_a_window_counted_by_a_settings_field_no_run_sets_above_one_is_possible(tmp_path: Path) -> None:
    assert _lint_train(tmp_path, {}) == [(BACKWARD, "GL003", "possible")]
    root = tmp_path / "p"
    [d] = [d for d in lint_files([str(root / "train.py")], Settings.default()) if d.code == "GL003"]
    assert any("`grad_accum_iters` is set above 1" in a for a in d.assumptions)


@pytest.mark.parametrize("files", [
    {"script.py": SCRIPT.format(args="0.1, 10, grad_accum_iters=4")},  # the keyword passed
    {"script.py": SCRIPT.format(args="0.1, 10, 4")},  # ... by place
    {"tune.py": "from config import get_config\ncfg = get_config(0.1, 10)._replace(grad_accum_iters=8)\n"},
    {"patch.py": "def patch(cfg):\n    cfg.grad_accum_iters = 8\n"},  # an assignment of another value
    {"cli.py": "import argparse\np = argparse.ArgumentParser()\np.add_argument('--grad_accum_iters', type=int)\n"},
    {"configs/big.yaml": "grad_accum_iters: 8\n"},  # a config file names it
    {"settings.py": "from dataclasses import dataclass\n@dataclass\nclass S:\n    grad_accum_iters: int = 1\n"},
    {"positional.py": "from config import TrainConfig\ncfg = TrainConfig(0.1, 10, 4)\n"},  # the field given by place
])
def test_a_place_that_may_set_the_field_above_one_keeps_the_finding_certain(tmp_path: Path, files: dict[str, str]
                                                                            ) -> None:
    assert _lint_train(tmp_path, files) == [(BACKWARD, "GL003", "certain")]


# A window counted by a field of the learner itself (`self.meta_batch_size = 1` in `__init__`, Leon0402's baselines,
# lockbox 32): a class of the same name in a sibling baseline that sets its own field to 2 is another object's.
LEARNER = """\
    import torch


    class MyMetaLearner:
        def __init__(self, model):
            self.model = model
            self.meta_batch_size = 1
            self.optimizer = torch.optim.Adam(model.parameters())

        def meta_fit(self, tasks):
            for i, x in enumerate(tasks):
                loss = self.model(x).pow(2).mean()
                loss.backward()
                if (i + 1) % self.meta_batch_size == 0:
                    self.optimizer.step()
                    self.optimizer.zero_grad()
"""
RUN = """\
    import torch
    from learner import MyMetaLearner

    if __name__ == "__main__":
        MyMetaLearner(torch.nn.Linear(4, 1)).meta_fit([torch.randn(2, 4) for _ in range(8)])
"""


def _lint_learner(tmp: Path, files: dict[str, str]) -> list[tuple[int, str, str]]:
    root = project_tree(tmp / "p", {"learner.py": LEARNER, "run.py": RUN, **files})
    found = lint_files([str(root / "learner.py")], Settings.default())
    return [(d.line, d.code, d.certainty.value) for d in found if d.code == "GL003"]


@pytest.mark.parametrize("files", [
    {},
    {"other/learner.py": LEARNER.replace("= 1", "= 2")},  # another class of that name
    {"child.py": "from learner import MyMetaLearner\nclass Big(MyMetaLearner):\n    def __init__(self, m):\n"
                 "        super().__init__(m)\n        self.meta_batch_size = 4\n"},  # a subclass no run makes
])
def test_a_window_counted_by_an_own_field_set_to_one_is_possible(tmp_path: Path, files: dict[str, str]) -> None:
    assert _lint_learner(tmp_path, files) == [(13, "GL003", "possible")]


@pytest.mark.parametrize("files", [
    {"child.py": "from learner import MyMetaLearner\nclass Big(MyMetaLearner):\n    def __init__(self, m):\n"
                 "        super().__init__(m)\n        self.meta_batch_size = 4\n\nBig(None)\n"},  # a subclass sets its own
    {"child.py": "from learner import MyMetaLearner\nfrom registry import register\n@register\n"
                 "class Big(MyMetaLearner):\n    def __init__(self, m):\n"
                 "        super().__init__(m)\n        self.meta_batch_size = 4\n"},  # ... made through a registry
    {"tune.py": "def tune(learner):\n    learner.meta_batch_size = 8\n"},  # set on the object from outside
])
def test_a_field_a_subclass_or_another_object_sets_keeps_the_finding_certain(tmp_path: Path, files: dict[str, str]
                                                                              ) -> None:
    assert _lint_learner(tmp_path, files) == [(13, "GL003", "certain")]


# A window counted by a plain class used as a namespace of settings (MS-swing, lockbox 37: `class CFG:` in
# import_tool.py with `accumulation_steps = 1`, read as `CFG.accumulation_steps` by the training scripts).
NAMESPACE = """\
    class CFG:
        epochs = 2
        accumulation_steps = 1
"""
SCRIPT_CFG = """\
    import torch
    from config import CFG


    def main(model, loader):
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        total_step = 0
        for epoch in range(CFG.epochs):
            for x in loader:
                total_step += 1
                loss = model(x).pow(2).mean()
                loss.backward()
                if total_step % CFG.accumulation_steps == 0:
                    optimizer.step()
                    optimizer.zero_grad()


    if __name__ == "__main__":
        main(torch.nn.Linear(4, 1), [torch.randn(2, 4) for _ in range(8)])
"""


def _lint_namespace(tmp: Path, config: str, files: dict[str, str] | None = None) -> list[tuple[int, str, str]]:
    root = project_tree(tmp / "p", {"config.py": config, "train.py": SCRIPT_CFG, **(files or {})})
    found = lint_files([str(root / "train.py")], Settings.default())
    return [(d.line, d.code, d.certainty.value) for d in found if d.code == "GL003"]


def test_a_window_of_a_settings_namespace_set_to_one_is_possible(tmp_path: Path) -> None:
    assert _lint_namespace(tmp_path, NAMESPACE) == [(12, "GL003", "possible")]


@pytest.mark.parametrize(("config", "files"), [
    (NAMESPACE.replace("= 1", "= 4"), {}),  # set above one
    ("    from dataclasses import dataclass\n\n\n    @dataclass\n" + NAMESPACE.lstrip().replace("class CFG:", "    class CFG:"),
     {}),  # a dataclass: its constructor may be handed another value
    (NAMESPACE, {"tune.py": "from config import CFG\nCFG.accumulation_steps = 8\n"}),  # set from outside
])
def test_a_namespace_field_that_may_be_above_one_keeps_the_finding_certain(tmp_path: Path, config: str,
                                                                          files: dict[str, str]) -> None:
    assert _lint_namespace(tmp_path, config, files) == [(12, "GL003", "certain")]


# The window a framework is given, from a settings object made of a dict literal (AtharvBhat's diffusion trainers,
# lockbox 40: `Accelerator(gradient_accumulation_steps=config.gradient_accumulation_steps)` of a config made by a
# helper from `{"gradient_accumulation_steps": 1, ...}`, and a notebook of the project setting 1 too): a clip on every
# micro-batch inside `accelerator.accumulate` (GL007) rests on a window of more than one that no run of the project has.
ACCEL_UTILS = """\
    import torch
    from accelerate import Accelerator


    def get_config_class(config_dict):
        class TrainConfig:
            def __init__(self, config):
                for key in config:
                    setattr(self, key, config[key])

        return TrainConfig(config_dict)


    def train_loop(config, model, optimizer, loader):
        accelerator = Accelerator(gradient_accumulation_steps=config.gradient_accumulation_steps)
        model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
        for epoch in range(config.num_epochs):
            for batch in loader:
                with accelerator.accumulate(model):
                    loss = model(batch).mean()
                    accelerator.backward(loss)
                    accelerator.clip_grad_norm_(model.parameters(), 1.0)
                    optimizer.step()
                    optimizer.zero_grad()
"""
ACCEL_SCRIPT = """\
    import torch
    import utils

    config_dict = {{"gradient_accumulation_steps": {window}, "num_epochs": 3}}
    config = utils.get_config_class(config_dict)
    model = torch.nn.Linear(4, 1)
    utils.train_loop(config, model, torch.optim.Adam(model.parameters()), [torch.randn(2, 4)] * 8)
"""
CLIP = 22  # the line of the clip in utils.py


def _notebook(source: str) -> str:
    import json
    cells = [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None, "source": line}
             for line in ("!pip install accelerate\n", source)]
    return json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5})


def _lint_accel(tmp: Path, window: str, files: dict[str, str]) -> list[tuple[int, str, str]]:
    root = project_tree(tmp / "p", {"utils.py": ACCEL_UTILS, "train.py": ACCEL_SCRIPT.format(window=window), **files})
    found = lint_files([str(root / "utils.py")], Settings.default())
    return [(d.line, d.code, d.certainty.value) for d in found if d.code == "GL007"]


def test_a_framework_window_every_settings_dict_of_the_project_sets_to_one_is_possible(tmp_path: Path) -> None:
    notebook = _notebook('config = {"gradient_accumulation_steps": 1, "num_epochs": 1}\n')
    assert _lint_accel(tmp_path, "1", {"eval/eval.ipynb": notebook}) == [(CLIP, "GL007", "possible")]


@pytest.mark.parametrize(("window", "files"), [
    ("4", {}),  # the script's dict sets 4
    ("1", {"eval/eval.ipynb": _notebook('config = {"gradient_accumulation_steps": 8}\n')}),  # a notebook sets 8
    ("1", {"tune.py": "def tune(d):\n    d['gradient_accumulation_steps'] = 8\n"}),  # an item stored later
])
def test_a_framework_window_set_above_one_somewhere_keeps_the_finding_certain(tmp_path: Path, window: str,
                                                                              files: dict[str, str]) -> None:
    assert _lint_accel(tmp_path, window, files) == [(CLIP, "GL007", "certain")]


# A window counted by a command-line option whose default is one and that nothing of the project sets otherwise
# (minimind_note, lockbox 41: `parser.add_argument("--accumulation_steps", type=int, default=1)`, no launch script or
# config that gives it): every run the project makes has windows of one micro-batch.
ARGPARSE_SCRIPT = """\
    import argparse

    import torch


    def train_epoch(model, loader, optimizer, args):
        for step, x in enumerate(loader):
            loss = model(x).pow(2).mean()
            loss.backward()
            if (step + 1) % args.accumulation_steps == 0:
                optimizer.step()
                optimizer.zero_grad()


    if __name__ == "__main__":
        parser = argparse.ArgumentParser()
        parser.add_argument("--epochs", type=int, default=2)
        parser.add_argument({option}, type=int{more})
        args = parser.parse_args()
        model = torch.nn.Linear(4, 1)
        train_epoch(model, [torch.randn(2, 4)] * 8, torch.optim.SGD(model.parameters(), lr=0.1), args)
"""
ARGPARSE_BACKWARD = 9


def _lint_argparse(tmp: Path, option: str, more: str, files: dict[str, str]) -> list[tuple[int, str, str]]:
    root = project_tree(tmp / "p", {"train.py": ARGPARSE_SCRIPT.format(option=option, more=more), **files})
    found = lint_files([str(root / "train.py")], Settings.default())
    return [(d.line, d.code, d.certainty.value) for d in found if d.code == "GL003"]


@pytest.mark.parametrize("files", [
    {},
    {"run.sh": "torchrun --nproc_per_node 2 train.py --epochs 3 --accumulation_steps 1\n"},  # a launch script gives 1
    {"configs/small.yaml": "epochs: 3\naccumulation_steps: 1  # one micro-batch\n"},  # a config file sets 1
    {"configs/small.json": '{\n  "epochs": 3,\n  "accumulation_steps": 1\n}\n'},
])
def test_a_command_line_option_of_default_one_nothing_sets_otherwise_is_possible(tmp_path: Path,
                                                                                  files: dict[str, str]) -> None:
    assert _lint_argparse(tmp_path, '"--accumulation_steps"', ", default=1", files) == [
        (ARGPARSE_BACKWARD, "GL003", "possible")]
    [d] = [d for d in lint_files([str(tmp_path / "p" / "train.py")], Settings.default()) if d.code == "GL003"]
    assert any("`accumulation_steps` is set above 1" in a for a in d.assumptions)


@pytest.mark.parametrize(("option", "more", "files"), [
    ('"--accumulation_steps"', ", default=8", {}),  # a default above one
    ('"--accumulation_steps"', ", default=1", {"run.sh": "python train.py --accumulation_steps 4\n"}),
    ('"--accumulation_steps"', ", default=1", {"configs/big.yaml": "accumulation_steps: 4\n"}),
    ('"--accumulation_steps"', ", default=1", {"README.md": "Run `python train.py --accumulation_steps N`.\n"}),
    ('"--accumulation_steps"', ", default=1, required=True", {}),  # every run gives it
    ('"--accumulation_steps"', "", {}),  # no default written
    ('"--accumulation-steps", dest="accumulation_steps"', ", default=1", {}),  # a destination given apart
    ('"--accum", dest="accumulation_steps"', ", default=1", {}),
    ('"--accumulation-steps"', ", default=4", {"configs/small.yaml": "accumulation_steps: 1\n"}),  # spelt with dashes
])
def test_a_command_line_option_that_may_be_above_one_keeps_the_finding_certain(tmp_path: Path, option: str, more: str,
                                                                               files: dict[str, str]) -> None:
    assert _lint_argparse(tmp_path, option, more, files) == [(ARGPARSE_BACKWARD, "GL003", "certain")]


# A window counted by a loop over its micro-batches whose count is a constructor's keyword of default one that no
# construction of the project passes (Nerfusion-EG3D, lockbox 41: `for _ in range(self.gradient_accumulate_every)`,
# `DiffTrainer(diffusion, config, results_folder=...)`).
LOOP_TRAINER = """\
    import torch


    class Trainer:
        def __init__(self, model, loader, *, gradient_accumulate_every=1, lr=1e-4):
            self.model = model
            self.dl = iter(loader)
            self.gradient_accumulate_every = gradient_accumulate_every
            self.opt = torch.optim.Adam(model.parameters(), lr=lr)

        def train(self, steps):
            for _step in range(steps):
                for _ in range(self.gradient_accumulate_every):
                    loss = self.model(next(self.dl)).pow(2).mean()
                    loss.backward()
                self.opt.step()
                self.opt.zero_grad()
"""
LOOP_RUN = """\
    import torch
    from trainer import Trainer

    if __name__ == "__main__":
        Trainer(torch.nn.Linear(4, 1), [torch.randn(2, 4)] * 64{more}).train(8)
"""
LOOP_BACKWARD = 15


def _lint_loop(tmp: Path, more: str, files: dict[str, str]) -> list[tuple[int, str, str]]:
    root = project_tree(tmp / "p", {"trainer.py": LOOP_TRAINER, "run.py": LOOP_RUN.format(more=more), **files})
    found = lint_files([str(root / "trainer.py")], Settings.default())
    return [(d.line, d.code, d.certainty.value) for d in found if d.code == "GL003"]


SUBCLASS = """\
from trainer import Trainer


class Big(Trainer):
{init}


def build(model, loader):
    return Big(model, loader{more})
"""
SUPER_INIT = """\
    def __init__(self, model, loader):
        super().__init__(model, loader{more})"""


@pytest.mark.parametrize(("more", "files"), [
    ("", {}),
    (", lr=1e-3", {}),
    ("", {"big.py": SUBCLASS.format(init=SUPER_INIT.format(more=", lr=0.1"), more="")}),  # a subclass hands on others
    ("", {"big.py": SUBCLASS.format(init="    pass", more="")}),  # a subclass made without it
])
def test_a_window_loop_counted_by_a_constructor_default_no_construction_passes_is_possible(
        tmp_path: Path, more: str, files: dict[str, str]) -> None:
    assert _lint_loop(tmp_path, more, files) == [(LOOP_BACKWARD, "GL003", "possible")]


@pytest.mark.parametrize(("more", "files"), [
    (", gradient_accumulate_every=4", {}),  # the construction passes it
    ("", {"big.py": SUBCLASS.format(init=SUPER_INIT.format(more=", gradient_accumulate_every=4"), more="")}),
    ("", {"big.py": SUBCLASS.format(init="    pass", more=", gradient_accumulate_every=2")}),  # constructed with it
    ("", {"big.py": SUBCLASS.format(init="    def __init__(self, model, loader):\n"
                                         "        Trainer.__init__(self, model, loader)", more="")}),  # not read
    ("", {"factory.py": "from trainer import Trainer\nMAKERS = {'plain': Trainer}\n"}),  # the class handed on
])
def test_a_window_loop_whose_count_may_be_set_keeps_the_finding_certain(tmp_path: Path, more: str,
                                                                        files: dict[str, str]) -> None:
    assert _lint_loop(tmp_path, more, files) == [(LOOP_BACKWARD, "GL003", "certain")]


# The same option read as the script's own parsed command line, a global of the module (minimind_note, lockbox 41: six
# scripts, each with its own `--accumulation_steps`; only train_pretrain.py's default is 8): another script's option
# of that name is another object.
GLOBAL_ARGS_SCRIPT = """\
    import argparse

    import torch


    def train_epoch(model, loader, optimizer):
        for step, x in enumerate(loader):
            loss = model(x).pow(2).mean()
            loss.backward()
            if (step + 1) % args.accumulation_steps == 0:
                optimizer.step()
                optimizer.zero_grad()


    if __name__ == "__main__":
        parser = argparse.ArgumentParser()
        parser.add_argument("--accumulation_steps", type=int, default={default})
        args = parser.parse_args(){after}
        model = torch.nn.Linear(4, 1)
        train_epoch(model, [torch.randn(2, 4)] * 8, torch.optim.SGD(model.parameters(), lr=0.1))
"""


def _lint_global(tmp: Path, default: int, after: str, files: dict[str, str]) -> list[tuple[int, str, str]]:
    script = GLOBAL_ARGS_SCRIPT.format(default=default, after=after)
    root = project_tree(tmp / "p", {"train_sft.py": script, **files})
    found = lint_files([str(root / "train_sft.py")], Settings.default())
    return [(d.line, d.code, d.certainty.value) for d in found if d.code == "GL003"]


@pytest.mark.parametrize("files", [
    {},
    {"train_pretrain.py": GLOBAL_ARGS_SCRIPT.format(default=8, after="")},  # another script's own option
    {"scripts/sft.sh": "torchrun train_sft.py --accumulation_steps 1\n"},
    {"launch.py": '"""Runs train_sft.py; give it `--accumulation_steps N` to accumulate."""\nimport train_sft\n'},
])
def test_the_scripts_own_option_of_default_one_is_possible_whatever_other_scripts_do(tmp_path: Path,
                                                                                     files: dict[str, str]) -> None:
    assert _lint_global(tmp_path, 1, "", files) == [(ARGPARSE_BACKWARD, "GL003", "possible")]
    [d] = [d for d in lint_files([str(tmp_path / "p" / "train_sft.py")], Settings.default()) if d.code == "GL003"]
    assert any("the script's command-line option has default 1" in a for a in d.assumptions)


@pytest.mark.parametrize(("default", "after", "files"), [
    (8, "", {}),
    (1, "", {"scripts/sft.sh": "torchrun train_sft.py --accumulation_steps 4\n"}),
    (1, "", {"sweep.py": "import subprocess\nsubprocess.run(['python', 'train_sft.py', '--accumulation_steps', '4'])\n"}),
    (1, "\n        vars(args).update({'accumulation_steps': 4})", {}),  # the parsed options changed wholesale
    (1, "\n        args.accumulation_steps = 4", {}),
])
def test_the_scripts_own_option_that_may_be_above_one_keeps_the_finding_certain(tmp_path: Path, default: int,
                                                                                after: str, files: dict[str, str]
                                                                                ) -> None:
    assert _lint_global(tmp_path, default, after, files) == [(ARGPARSE_BACKWARD, "GL003", "certain")]


# The options parsed in the function that trains (GBDE's `main()`, lockbox 42: `args = parser.parse_args()` there,
# `--gradient_accumulation_steps` of default 1, and a check whose message names it); the clear at the top of every
# micro-batch drops the window's gradients only where the window is more than one.
LOCAL_ARGS_SCRIPT = """\
    import argparse

    import torch


    def main():
        parser = argparse.ArgumentParser()
        parser.add_argument("--gradient_accumulation_steps", type=int, default={default})
        args = parser.parse_args()
        if args.gradient_accumulation_steps < 1:
            raise ValueError("Invalid gradient_accumulation_steps parameter: {{}}, should be >= 1".format(
                args.gradient_accumulation_steps))
        model = torch.nn.Linear(4, 1)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        for step, x in enumerate([torch.randn(2, 4)] * 8):
            optimizer.zero_grad()
            loss = model(x).pow(2).mean()
            if args.gradient_accumulation_steps > 1:
                loss = loss / args.gradient_accumulation_steps
            loss.backward()
            if (step + 1) % args.gradient_accumulation_steps == 0:
                optimizer.step()


    if __name__ == "__main__":
        main()
"""
LOCAL_ARGS_CLEAR = 16


@pytest.mark.parametrize(("default", "certainty"), [(1, "possible"), (4, "certain")])
def test_options_parsed_in_the_training_function_with_a_message_naming_one(tmp_path: Path, default: int,
                                                                            certainty: str) -> None:
    root = project_tree(tmp_path / "p", {"run_classifier.py": LOCAL_ARGS_SCRIPT.format(default=default)})
    found = lint_files([str(root / "run_classifier.py")], Settings.default())
    assert [(d.line, d.code, d.certainty.value) for d in found if d.code == "GL002"] == [
        (LOCAL_ARGS_CLEAR, "GL002", certainty)]


# A script written at the top level whose window counts by a name bound once to its option (voicechanger, lockbox 44:
# `parser.add_argument('-gacc', '--gradient-accumulation', type=int, default=1)`, `grad_accm =
# args.gradient_accumulation`, then `if batch % grad_accm == 0:` around the clears and the steps): the option's own
# spellings (`-gacc`, and the dashed long one of its parser) are the option itself, not another setter; another file
# that spells either of them on a command line may set it.
TOP_LEVEL_SCRIPT = """\
    import argparse

    import torch

    parser = argparse.ArgumentParser()
    parser.add_argument("-e", "--epoch", default=2, type=int)
    parser.add_argument("-gacc", "--gradient-accumulation", type=int, default={default})
    args = parser.parse_args()
    grad_accm = args.gradient_accumulation

    model = torch.nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(args.epoch):
        for batch, x in enumerate([torch.randn(2, 4)] * 8):
            if batch % grad_accm == 0:
                optimizer.zero_grad()
            loss = model(x).pow(2).mean()
            loss.backward()
            if batch % grad_accm == 0:
                optimizer.step()
"""
TOP_LEVEL_CLEAR = 16


def _lint_top_level(tmp: Path, default: int, files: dict[str, str]) -> list[tuple[int, str, str]]:
    root = project_tree(tmp / "p", {"train_cyclegan.py": TOP_LEVEL_SCRIPT.format(default=default), **files})
    found = lint_files([str(root / "train_cyclegan.py")], Settings.default())
    return sorted({(d.line, d.code, d.certainty.value) for d in found if d.code in ("GL002", "GL004")})


@pytest.mark.parametrize("files", [
    {},
    {"README.md": "Train: `python train_cyclegan.py a/ b/ -e 60`.\n"},
    {"run.sh": "python train_cyclegan.py a/ b/ -gacc 1\n"},  # a launch that gives one
])
def test_a_top_level_window_of_an_alias_of_an_option_of_default_one_is_possible(tmp_path: Path,
                                                                                files: dict[str, str]) -> None:
    found = _lint_top_level(tmp_path, 1, files)
    assert found and all(certainty == "possible" for _, _, certainty in found), found
    assert (TOP_LEVEL_CLEAR, "GL002", "possible") in found


@pytest.mark.parametrize(("default", "files"), [
    (4, {}),  # a default above one
    (1, {"run.sh": "python train_cyclegan.py a/ b/ -gacc 4\n"}),  # the short spelling on a command line
    (1, {"README.md": "Accumulate with `--gradient-accumulation 8`.\n"}),  # the dashed long spelling in a document
    (1, {"sweep.py": "import subprocess\nsubprocess.run(['python', 'train_cyclegan.py', '-gacc', '4'])\n"}),
])
def test_a_top_level_window_whose_option_may_be_above_one_stays_certain(tmp_path: Path, default: int,
                                                                        files: dict[str, str]) -> None:
    found = _lint_top_level(tmp_path, default, files)
    assert (TOP_LEVEL_CLEAR, "GL002", "certain") in found, found


# A window handed to the Accelerator through `max(n, 1)`, of a field that the script's own option (spelt with dashes:
# `--gradient-accumulation-steps`, its default read) and every config of the project set to one (Kiny007, lockbox 44:
# a clear at the top of `accelerator.accumulate(...)`, a real bug where the window is more than one).
ACCUMULATE_SCRIPT = """\
    import argparse

    import torch
    from accelerate import Accelerator


    def parse_args():
        parser = argparse.ArgumentParser()
        parser.add_argument("--config", default="config/dcgan.yaml")
        parser.add_argument("--gradient-accumulation-steps", type=int, default={default})
        return parser.parse_args()


    def train(args):
        accelerator = Accelerator(gradient_accumulation_steps=max(args.gradient_accumulation_steps, 1))
        model = torch.nn.Linear(4, 1)
        optimizer = torch.optim.Adam(model.parameters())
        model, optimizer = accelerator.prepare(model, optimizer)
        for x in [torch.randn(2, 4)] * 8:
            with accelerator.accumulate(model):
                optimizer.zero_grad()
                loss = model(x).mean()
                accelerator.backward(loss)
                optimizer.step()


    if __name__ == "__main__":
        train(parse_args())
"""
ACCUMULATE_CLEAR = 21


@pytest.mark.parametrize(("default", "files", "certainty"), [
    (1, {"config/dcgan.yaml": "lr: 0.0002\ngradient_accumulation_steps: 1\n"}, "possible"),
    (1, {}, "possible"),
    (4, {}, "certain"),
    (1, {"config/dcgan.yaml": "gradient_accumulation_steps: 1\n", "config/big.yaml": "gradient_accumulation_steps: 4\n"},
     "certain"),
    (1, {"run.sh": "accelerate launch train.py --gradient-accumulation-steps 8\n"}, "certain"),
])
def test_a_window_handed_through_max_of_a_field_every_setter_sets_to_one(tmp_path: Path, default: int,
                                                                          files: dict[str, str], certainty: str) -> None:
    root = project_tree(tmp_path / "p", {"train.py": ACCUMULATE_SCRIPT.format(default=default), **files})
    found = lint_files([str(root / "train.py")], Settings.default())
    assert [(d.line, d.code, d.certainty.value) for d in found if d.code == "GL002"] == [
        (ACCUMULATE_CLEAR, "GL002", certainty)]


# A loss divided again by a framework's window (GL010) is divided twice only where the window is more than one: with
# a window of one on every run the project makes, the framework divides by nothing (FLOPS and train_reward, lockbox 43,
# read after its run: the frameworks' windows were 1 by default).
DIVIDED_SCRIPT = """\
    import argparse

    import torch
    from accelerate import Accelerator


    def main():
        parser = argparse.ArgumentParser()
        parser.add_argument("--gradient_accumulation_steps", type=int, default={default})
        args = parser.parse_args()
        accelerator = Accelerator(gradient_accumulation_steps=args.gradient_accumulation_steps)
        model = torch.nn.Linear(4, 1)
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
        model, optimizer = accelerator.prepare(model, optimizer)
        for x in [torch.randn(2, 4)] * 8:
            with accelerator.accumulate(model):
                loss = model(x).mean() / args.gradient_accumulation_steps
                accelerator.backward(loss)
                optimizer.step()
                optimizer.zero_grad()


    if __name__ == "__main__":
        main()
"""


@pytest.mark.parametrize(("default", "certainty"), [(1, "possible"), (4, "certain")])
def test_a_loss_divided_again_by_a_window_of_one(tmp_path: Path, default: int, certainty: str) -> None:
    root = project_tree(tmp_path / "p", {"train.py": DIVIDED_SCRIPT.format(default=default)})
    found = lint_files([str(root / "train.py")], Settings.default())
    assert [(d.code, d.certainty.value) for d in found if d.code == "GL010"] == [("GL010", certainty)]
