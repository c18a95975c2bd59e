"""GL008: a function called in the loop that stores into its parameter keeps nothing past the iteration when the
argument is made at the call itself: a display (`parse_output([mel, post, gate], pred)`, which appends to it:
Char2Prosody) or a copy (`to_flow(f.permute(0, 2, 1).clone())`, which writes slices of it: LapIRN). Lockbox 36, four
certain false alarms; read after its opening. Handed a list made once before the loop, the appends accumulate."""

from __future__ import annotations

import pytest

from gradcheck_lint.api import check_source

SCRIPT = """\
import torch


def parse_output(outputs, extra):
    outputs.append(extra)
    return outputs


def train(model, loader, opt):
    BEFORE
    for x in loader:
        opt.zero_grad()
        out = model(x)
        outs = parse_output(ARGUMENT, out.sum())
        loss = outs[0].pow(2).mean()
        loss.backward()
        opt.step()
    return outs


m = torch.nn.Linear(3, 3)
train(m, [torch.randn(2, 3)] * 3, torch.optim.SGD(m.parameters(), lr=0.1))
"""


@pytest.mark.parametrize("before, argument, kept", [
    ("pass", "[out]", False),
    ("pass", "[out.clone()]", False),
    ("kept = [torch.zeros(2, 3)]", "kept", True),
])
def test_a_parameter_handed_a_display_made_at_the_call(before: str, argument: str, kept: bool) -> None:
    text = SCRIPT.replace("BEFORE", before).replace("ARGUMENT", argument)
    found = [(d.code, d.line) for d in check_source(text, "train.py")]
    assert (("GL008", 5) in found) is kept, found
