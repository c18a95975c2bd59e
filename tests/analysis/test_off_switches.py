"""Switches no run turns on (gradcheck_lint.project.off_switches): a GL007 that holds only where a GradScaler scales is
possible when every scaler the file builds is off on every run the project makes (voicechanger, lockbox 44:
`GradScaler(enabled=args.fp16)` of `-fp16` default False, four certain GL007 read false; SpeakerClassifier: a scaler
built only under `if use_scaler:`, `model_config["train"]["half_precision"]` False in every config, two read false);
where some run may turn it on, the finding stays certain."""

from __future__ import annotations

from pathlib import Path

import pytest

from gradcheck_lint.config import Settings
from gradcheck_lint.runner import lint_files
from support import project_tree

OPTION_SCRIPT = """\
    import argparse

    import torch

    parser = argparse.ArgumentParser()
    parser.add_argument({option})
    args = parser.parse_args()

    model = torch.nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = torch.cuda.amp.GradScaler({switch})
    for x in [torch.randn(2, 4)] * 8:
        optimizer.zero_grad()
        loss = model(x).pow(2).mean()
        scaler.scale(loss).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(optimizer)
        scaler.update()
"""
CLIP = 16


def _gl007(root: Path, script: str) -> list[tuple[int, str]]:
    found = lint_files([str(root / script)], Settings.default())
    return [(d.line, d.certainty.value) for d in found if d.code == "GL007"]


def _option_project(tmp: Path, option: str, switch: str, files: dict[str, str]) -> list[tuple[int, str]]:
    root = project_tree(tmp / "p", {"train.py": OPTION_SCRIPT.format(option=option, switch=switch), **files})
    return _gl007(root, "train.py")


@pytest.mark.parametrize(("option", "switch", "files"), [
    ("'-fp16', default=False, type=bool", "enabled=args.fp16", {}),  # voicechanger's
    ("'--amp', action='store_true'", "enabled=args.amp", {}),  # a flag: False unless given
    ("'--amp', action='store_true'", "enabled=args.amp", {"README.md": "Run `python train.py`.\n"}),
    ("'--amp', action='store_true'", "enabled=args.amp", {"run.sh": "python train.py --amp False\n"}),
])
def test_a_scaler_switched_by_an_option_no_run_turns_on_makes_gl007_possible(tmp_path: Path, option: str,
                                                                             switch: str, files: dict[str, str]
                                                                             ) -> None:
    assert _option_project(tmp_path, option, switch, files) == [(CLIP, "possible")]
    [d] = [d for d in lint_files([str(tmp_path / "p" / "train.py")], Settings.default()) if d.code == "GL007"]
    assert any("that the GradScaler is on" in a for a in d.assumptions)


@pytest.mark.parametrize(("option", "switch", "files"), [
    ("'-fp16', default=False, type=bool", "", {}),  # built on
    ("'-fp16', default=True, type=bool", "enabled=args.fp16", {}),  # on by default
    ("'--amp', action='store_true'", "enabled=args.amp", {"run.sh": "python train.py --amp\n"}),  # a launch turns it on
    ("'--amp', action='store_true'", "enabled=args.amp", {"README.md": "Mixed precision: `python train.py --amp`.\n"}),
    ("'-fp16', default=False, type=bool", "enabled=args.fp16", {"run.sh": "python train.py -fp16 True\n"}),
    ("'--amp', action='store_false'", "enabled=args.amp", {}),  # a flag that is True unless given
    ("'--amp', type=int", "enabled=args.amp", {}),  # no default written: not read as a setting's value
])
def test_a_scaler_some_run_may_turn_on_keeps_gl007_certain(tmp_path: Path, option: str, switch: str,
                                                           files: dict[str, str]) -> None:
    assert _option_project(tmp_path, option, switch, files) == [(CLIP, "certain")]


CONFIG_SCRIPT = """\
    import sys

    import torch
    import yaml
    from torch import GradScaler


    def train(model_config, loader):
        use_scaler = model_config["train"]["half_precision"]
        if use_scaler:
            scaler = GradScaler()
        else:
            scaler = None
        model = torch.nn.Linear(4, 1)
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
        for x in loader:
            optimizer.zero_grad()
            loss = model(x).pow(2).mean()
            if use_scaler:
                scaler.scale(loss).backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                scaler.step(optimizer)
                scaler.update()
            else:
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                optimizer.step()


    if __name__ == "__main__":
        with open(sys.argv[1]) as f:
            train(yaml.safe_load(f), [torch.randn(2, 4)] * 8)
"""
CONFIG_CLIP = 21


@pytest.mark.parametrize(("configs", "expected"), [
    ({"config/a.yaml": "train:\n  half_precision: False\n", "config/b.yaml": "train:\n  half_precision: false\n"},
     "possible"),
    ({"config/a.yaml": "train:\n  half_precision: False\n", "config/b.yaml": "train:\n  half_precision: True\n"},
     "certain"),  # one config turns it on
    ({}, "certain"),  # nothing of the project sets it: it comes from outside
])
def test_a_scaler_built_only_under_a_setting_every_config_sets_off(tmp_path: Path, configs: dict[str, str],
                                                                    expected: str) -> None:
    root = project_tree(tmp_path / "p", {"train.py": CONFIG_SCRIPT, **configs})
    assert _gl007(root, "train.py") == [(CONFIG_CLIP, expected)]
