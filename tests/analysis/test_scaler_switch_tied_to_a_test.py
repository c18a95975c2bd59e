"""A clip whose `unscale_` the code skips under a test (`if use_amp: scaler.unscale_(optimizer)`), with a scaler the
analysis cannot tie to that test: built switched by a setting in another method (`GradScaler(enabled=args.amp)` in the
manager's `__init__`, CAT, lockbox 32: two certain GL007), or known only by its name (`scaler = manager.scaler`). The
author ties the scaler to the test; that the scaler scales where the test is off is an assumption: the finding is
possible. A scaler built on in sight (`GradScaler()`) skipped so is a bug on the runs without the flag: certain; and a
scaler known by its name whose unscale no test skips stays certain."""

from __future__ import annotations

from gradcheck_lint import check_source
from gradcheck_lint.diagnostics import Certainty

MANAGER = """\
import torch
from torch.cuda.amp import GradScaler


class Manager:
    def __init__(self, args):
        self.model = torch.nn.Linear(4, 1)
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.1)
        self.scaler = {built}


def train(loader, args, manager):
    model, optimizer, scaler = manager.model, manager.optimizer, manager.scaler
    use_amp = args.amp
    for x in loader:
        loss = model(x).pow(2).mean()
        scaler.scale(loss).backward()
{unscale}
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad()
{call}"""
# the script's own run: the manager, and so its scaler, in sight (`parse_args`: a setting known only at run time)
RUN = """

def parse_args():
    import argparse
    parser = argparse.ArgumentParser()
    parser.add_argument("--amp", action="store_true")
    return parser.parse_args()


args = parse_args()
train([torch.randn(2, 4)] * 3, args, Manager(args))
"""

SKIPPED = "        if use_amp:\n            scaler.unscale_(optimizer)"


def gl007(built: str, unscale: str = SKIPPED, call: str = "") -> list[Certainty]:
    source = MANAGER.format(built=built, unscale=unscale, call=call)
    return [d.certainty for d in check_source(source) if d.code == "GL007"]


def test_a_scaler_switched_by_a_setting_elsewhere_and_an_unscale_under_a_test_leave_the_clip_possible() -> None:
    assert gl007("GradScaler(enabled=args.amp)") == [Certainty.POSSIBLE]


def test_a_scaler_built_on_in_sight_with_its_unscale_skipped_is_certain() -> None:
    assert gl007("GradScaler()", call=RUN) == [Certainty.CERTAIN]


def test_a_scaler_whose_unscale_no_test_skips_stays_certain() -> None:
    assert gl007("GradScaler(enabled=args.amp)", unscale="        pass") == [Certainty.CERTAIN]


def test_the_setting_read_in_sight_decides_it() -> None:
    """The run hands the same `args` to the manager and to the loop: the scaler is on exactly where the test is."""
    assert gl007("GradScaler(enabled=args.amp)", call=RUN) == []


def test_a_setting_of_the_same_name_in_sight_decides_and_one_of_another_name_does_not() -> None:
    """The manager built in sight from a second settings object: its scaler's setting `amp` is read as the loop's
    `args.amp` (`if use_amp:` decides it), and `if args.unscale:` reads no setting of that name: nothing ties the two."""
    run = RUN.replace("train([torch.randn(2, 4)] * 3, args, Manager(args))",
                      "train([torch.randn(2, 4)] * 3, args, Manager(parse_args()))")
    assert gl007("GradScaler(enabled=args.amp)", call=run) == []
    skipped = SKIPPED.replace("if use_amp:", "if args.unscale:")
    assert gl007("GradScaler(enabled=args.amp)", unscale=skipped, call=run) == [Certainty.CERTAIN]
