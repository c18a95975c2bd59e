"""A window counted where the step is, by a helper's caller: `train_step(...)` runs one micro-batch's backward and
clip, and `train_epoch(model, loader, optimizer, args)` steps under `if (i + 1) % args.accum == 0:`, `args` handed
down from `args = parse_args()` (a function of the script returning `parser.parse_args()`), the options printed with
`vars(args).items()`. With `--accum` of default 1 that nothing of the project sets, every run has windows of one, and
the clip's finding in `train_step` rests on the window being larger: `possible` (PyTorch_finetune_GPT2, lockbox 43).
Three facts were not read: the window of a function whose gate is its caller's; a parameter that every call hands
the parsed options; options parsed by a function of the script. A `vars(args)` only read changes no option.
The finding stays certain where a run may set the window, or where the options may be another script's."""

from __future__ import annotations

from pathlib import Path

import pytest

from gradcheck_lint.config import Settings
from gradcheck_lint.runner import lint_files
from support import project_tree

TRAIN = """\
import argparse

import torch


def parse_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--accum", type=int, default=1)
    return parser.parse_args()


def train_step(model, x, optimizer, accum=1):
    loss = model(x).pow(2).mean() / accum
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    return loss.item()


def train_epoch(model, loader, optimizer, args):
    for i, x in enumerate(loader):
        train_step(model, x, optimizer, args.accum)
        if (i + 1) % args.accum == 0:
            optimizer.step()
            optimizer.zero_grad()


def main(args):
    model = torch.nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(args.epochs):
        train_epoch(model, [torch.randn(2, 4)] * 8, optimizer, args)


if __name__ == "__main__":
    args = parse_args()
    for key, value in sorted(vars(args).items()):
        print(key, value)
    main(args)
"""
CLIP = 16  # `clip_grad_norm_` in train_step
CONFIGS = "from configs import load_cfg\n"


def _gl007(tmp: Path, train: str, files: dict[str, str]) -> list[tuple[int, str]]:
    """The GL007 findings, the clip's line counted from `CLIP` (lines added above it move it)."""
    root = project_tree(tmp / "p", {"train.py": train, "run.sh": "python train.py --epochs 3\n", **files})
    clip = next(i for i, line in enumerate(train.splitlines(), 1) if "clip_grad_norm_" in line)
    return [(d.line - clip + CLIP, d.certainty.value) for d in lint_files([str(root / "train.py")], Settings.default())
            if d.code == "GL007"]


@pytest.mark.parametrize("train", [
    TRAIN,
    TRAIN.replace("import argparse\n", "import argparse\nimport json\n").replace(
        "    args = parse_args()\n", "    args = parse_args()\n    print(json.dumps(vars(args)))\n"),
    TRAIN.replace("def main(args):", "def main(opts):").replace("range(args.epochs)", "range(opts.epochs)").replace(
        "optimizer, args)\n\n\nif", "optimizer, opts)\n\n\nif"),  # handed on under another name
])
def test_a_window_of_one_counted_by_the_caller_of_options_handed_down_is_possible(tmp_path: Path, train: str) -> None:
    assert _gl007(tmp_path, train, {}) == [(CLIP, "possible")]


def test_a_function_of_the_same_name_in_a_script_that_does_not_import_this_one_is_another(tmp_path: Path) -> None:
    # (T5VQVAE's copies of old example scripts, each with its own `train(args, ...)`, lockbox 46 after its reading)
    other = ("import argparse\n\n\ndef train_epoch(model, loader, optimizer, args):\n    pass\n\n\n"
             "train_epoch(None, [], None, argparse.Namespace(accum=4))\n")
    assert _gl007(tmp_path, TRAIN, {"other_train.py": other}) == [(CLIP, "possible")]


def test_an_import_by_a_literal_name_outside_the_project_reaches_none_of_it(tmp_path: Path) -> None:
    # (T5VQVAE's vendored benchmark: `__import__("transformers", fromlist=[name])`, the installed package)
    other = ("import argparse\n\n\ndef train_epoch(model, loader, optimizer, args):\n    pass\n\n\n"
             "train_epoch(None, [], None, argparse.Namespace(accum=4))\n")
    bench = "def load(name):\n    return getattr(__import__(\"transformers\", fromlist=[name]), name)\n"
    assert _gl007(tmp_path / "a", TRAIN, {"other_train.py": other, "bench.py": bench}) == [(CLIP, "possible")]
    computed = "import importlib\n\n\ndef load(name):\n    return importlib.import_module(name)\n"
    assert _gl007(tmp_path / "b", TRAIN, {"other_train.py": other, "bench.py": computed}) == [(CLIP, "certain")]


@pytest.mark.parametrize(("train", "files"), [
    (TRAIN, {"run.sh": "python train.py --accum 4\n"}),  # a run sets it
    (CONFIGS + TRAIN.replace("    args = parse_args()\n",
                             "    args = parse_args()\n    vars(args).update(load_cfg())\n"), {}),
    (TRAIN.replace("    args = parse_args()\n", "    args = parse_args()\n    cfg = vars(args)\n"), {}),
    # another file calls train_epoch with options of its own
    (TRAIN, {"sweep.py": "import argparse\nfrom train import train_epoch\n"
                         "train_epoch(m, l, o, argparse.Namespace(epochs=1, accum=4))\n"}),
    # train_epoch is also handed something not parsed here
    (TRAIN.replace("    main(args)\n", "    main(args)\n    main(argparse.Namespace(epochs=1, accum=8))\n"), {}),
    # the caller of train_step that steps counts no window; another steps after each call
    (TRAIN.replace("def main(args):", "def finetune(model, x, optimizer):\n    train_step(model, x, optimizer)\n"
                   "    optimizer.step()\n\n\ndef main(args):"), {}),
])
def test_a_window_that_may_be_larger_keeps_the_finding_certain(tmp_path: Path, train: str,
                                                              files: dict[str, str]) -> None:
    assert _gl007(tmp_path, train, files) == [(CLIP, "certain")]
