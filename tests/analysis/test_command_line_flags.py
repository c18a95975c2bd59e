"""Command-line flags no command line can turn (`command_line`): `action="store_true", default=True` is True on
every run. NucleiSegmentation (lockbox 29) built its scaler `if args.use_amp` with such a flag; a test of it takes one
arm, unless the module changes the flag itself."""

from __future__ import annotations

import pytest

from gradcheck_lint.engine import analyse_text

SCRIPT = """\
import argparse
import torch

parser = argparse.ArgumentParser()
parser.add_argument("--use-amp", {flag})
parser.add_argument("--accum", type=int, default=4)
args = parser.parse_args()
{change}

model = torch.nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
scaler = torch.amp.GradScaler("cuda")
for x, y in [(torch.randn(8, 4), torch.randn(8, 1))] * 8:
    optimizer.zero_grad()
    loss = torch.nn.functional.mse_loss(model(x), y)
    scaler.scale(loss).backward()
    if {test}:
        scaler.step(optimizer)
        scaler.update()
    else:
        optimizer.step()
"""


def codes(flag: str, test: str, change: str = "") -> list[tuple[int, str]]:
    source = SCRIPT.format(flag=flag, test=test, change=change)
    return [(d.line, d.code) for d in analyse_text(source, "train.py").diagnostics]


@pytest.mark.parametrize(("flag", "test"), [
    ('action="store_true", default=True', "args.use_amp"),
    ('action="store_false", default=False', "not args.use_amp"),
    ('action="store_true", default=True', "args.use_amp and not args.accum"),
    ('dest="use_amp", action="store_true", default=True', "args.use_amp"),
])
def test_a_flag_no_command_line_turns_takes_one_arm(flag: str, test: str) -> None:
    assert codes(flag, test) == [] if "accum" not in test else [(21, "GL007")]


@pytest.mark.parametrize(("flag", "test", "change"), [
    ('action="store_true"', "args.use_amp", ""),  # default False: either way
    ('action="store_true", default=True', "args.use_amp", "args.use_amp = args.accum > 1"),
    ('action="store_true", default=True', "args.use_amp", "parser.set_defaults(use_amp=False)"),
])
def test_a_flag_the_run_may_turn_leaves_both_arms(flag: str, test: str, change: str) -> None:
    assert codes(flag, test, change) == [(21, "GL007")]


HANDED_SCALER = """\
import argparse
import torch
from torch.amp import GradScaler


def train_one_epoch(args, model, optimizer, loader, scaler):
    optimizer.zero_grad()
    for i, (x, y) in enumerate(loader):
        loss = torch.nn.functional.mse_loss(model(x), y) / args.accum
        if scaler:
            scaler.scale(loss).backward()
        else:
            loss.backward()
        if (i + 1) % args.accum == 0:
            if scaler:
                scaler.step(optimizer)
                scaler.update()
            else:
                optimizer.step()
            optimizer.zero_grad()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--use_amp", action="store_true", default=True)
    parser.add_argument("--accum", type=int, default=1)
    args = parser.parse_args()
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = {scaler}
    for epoch in range(3):
        train_one_epoch(args, model, optimizer, [], scaler)


if __name__ == "__main__":
    main()
"""


@pytest.mark.parametrize(("scaler", "expected"), [
    ("GradScaler() if args.use_amp else None", [11]),  # the flag holds: the scaler is there, one arm runs
    ("GradScaler()", [11]),  # `if scaler:` of a GradScaler handed in: it has no truth of its own, it is there
    ("GradScaler() if args.accum > 1 else None", [11, 13]),  # either arm
])
def test_the_arm_a_handed_scaler_takes(scaler: str, expected: list[int]) -> None:
    """NucleiSegmentation (lockbox 29): the plain-backward arm of a DDP loop without `no_sync` was reported beside the
    scaled one (GL006 twice), though the scaler always exists."""
    found = analyse_text(HANDED_SCALER.format(scaler=scaler), "train.py").diagnostics
    assert [d.line for d in found if d.code == "GL006"] == expected
