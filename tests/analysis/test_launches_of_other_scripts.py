"""A command line gives its options to the script it launches (gradcheck_lint.project.launches).

`python train_llm.py --gradient_accumulation_steps 16` in a README or a shell script sets the option of
`train_llm.py`'s parser; `train.py` has an option of the same name, default 1, that nothing else sets. Every run of
`train.py` has windows of one micro-batch, and a certain window finding there rests on an assumption (MachineDetector,
lockbox 44: two GL007 on a clip of a window the project never makes larger than one). The launch line was taken to
set `train.py`'s option too. It still does where the script launched is `train.py`, where its run imports
`train.py` (at any depth), where it imports by a computed name, or where the script is not a file of the project.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gradcheck_lint.config import Settings
from gradcheck_lint.runner import lint_files
from support import project_tree

TRAIN = """\
    import argparse

    import torch

    from util.option import parser


    def train_epoch(model, loader, optimizer, args):
        for step, x in enumerate(loader):
            loss = model(x).pow(2).mean()
            loss.backward()
            if (step + 1) % args.gradient_accumulation_steps == 0:
                optimizer.step()
                optimizer.zero_grad()


    if __name__ == "__main__":
        args = parser.parse_args()
        model = torch.nn.Linear(4, 1)
        train_epoch(model, [torch.randn(2, 4)] * 8, torch.optim.SGD(model.parameters(), lr=0.1), args)
"""
OPTION = """\
    import argparse

    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--gradient_accumulation_steps", type=int, default=1, required=False)
"""
# another script of the project, with a parser of its own (a Trainer's arguments)
OTHER = """\
    import sys

    from transformers import HfArgumentParser, TrainingArguments


    def main():
        (args,) = HfArgumentParser(TrainingArguments).parse_args_into_dataclasses()
        print(args.gradient_accumulation_steps)


    if __name__ == "__main__":
        main()
"""
BACKWARD = 11  # `loss.backward()` in train.py
LAUNCH = ("python train_llm.py \\\n  --output_dir ckpts \\\n  --per_device_train_batch_size 2 \\\n"
          "  --gradient_accumulation_steps 16 \\\n  --fp16 True\n")


def _fenced(text: str) -> str:
    return f"## Training\n\n```bash\n{text}```\n"


def _gl003(tmp: Path, files: dict[str, str]) -> list[tuple[int, str]]:
    root = project_tree(tmp / "p", {"train.py": TRAIN, "util/__init__.py": "", "util/option.py": OPTION,
                                    "train_llm.py": OTHER, **files})
    found = lint_files([str(root / "train.py")], Settings.default())
    return [(d.line, d.certainty.value) for d in found if d.code == "GL003"]


@pytest.mark.parametrize("files", [
    {"README.md": f"## Training the LLM\n\n```bash\n{LAUNCH}```\n"},
    {"scripts/run_llm.sh": LAUNCH},
    {"scripts/run_llm.sh": "torchrun --nproc_per_node=8 train_llm.py --gradient_accumulation_steps 16\n"},
    {"scripts/run_llm.sh": "accelerate launch --num_processes 2 ./train_llm.py --gradient_accumulation_steps=4\n"},
    {"usage.py": f'USAGE = """\n{LAUNCH}"""\nprint(USAGE)\n'},  # a usage text written in a Python string
    {"README.md": f"```bash\n{LAUNCH}python train.py --epochs 3\n```\n"},  # this script launched with the default
    # a path written before the file moved: the project's file of that name
    {"scripts/run_llm.sh": LAUNCH.replace("train_llm.py", "./examples/single/train_llm.py")},
])
def test_a_launch_of_another_script_sets_its_options_not_this_ones(tmp_path: Path, files: dict[str, str]) -> None:
    assert _gl003(tmp_path, files) == [(BACKWARD, "possible")]


@pytest.mark.parametrize("files", [
    {"README.md": _fenced(LAUNCH.replace("train_llm.py", "train.py"))},  # this script itself
    {"README.md": _fenced(LAUNCH.replace("train_llm.py", "./train.py"))},
    {"README.md": _fenced(LAUNCH.replace("train_llm.py", "-m train"))},
    # the script launched imports this one, at some depth (its run may run this file's code)
    {"train_llm.py": "from pipeline import run\nrun()\n", "pipeline.py": "from train import train_epoch\n",
     "README.md": _fenced(LAUNCH)},
    {"train_llm.py": "from pkg.steps import run\nrun()\n", "pkg/__init__.py": "import train\n", "pkg/steps.py": "",
     "README.md": _fenced(LAUNCH)},  # through a package's `__init__.py`
    {"train_llm.py": "import importlib\nimportlib.import_module(name)\n", "README.md": _fenced(LAUNCH)},  # computed
    {"README.md": _fenced(LAUNCH.replace("train_llm.py", "$SCRIPT"))},  # a script not named
    {"README.md": _fenced(LAUNCH.replace("train_llm.py", "train_xxx.py"))},  # a placeholder: any script
    {"scripts/run.sh": LAUNCH.replace("train_llm.py", "old/train_v0.py")},  # one the project does not have
    {"README.md": _fenced(LAUNCH.replace("train_llm.py", "../other_repo/train_llm.py"))},  # not of the project
    {"README.md": "Set `--gradient_accumulation_steps 16` for a larger batch.\n"},  # no launch at all
])
def test_a_launch_that_may_run_this_script_may_set_its_option(tmp_path: Path, files: dict[str, str]) -> None:
    assert _gl003(tmp_path, files) == [(BACKWARD, "certain")]


def test_nothing_launched_with_the_option_the_finding_is_possible(tmp_path: Path) -> None:
    assert _gl003(tmp_path, {}) == [(BACKWARD, "possible")]
