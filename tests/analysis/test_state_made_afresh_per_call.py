"""A tensor a method makes afresh on every call (`self.h0 = torch.zeros(...)`) and then writes a graph into
(`self.h0[-1] = self.proj(z)`) holds one call's graph: the next call drops it. It was read as an accumulator
kept on the object across the loop's iterations (GL008, `certain`; lockbox 15's sa-vae decoder, development
material now). A tensor made only once (`if self.h0 is None:`), or extended from itself, still keeps every
iteration's graph."""

from __future__ import annotations

import pytest

from gradcheck_lint.engine import analyse_text
from support import parse_expected_findings

_DECODER = """\
import torch
import torch.nn as nn


class Decoder(nn.Module):
    def __init__(self, hidden=8):
        super().__init__()
        self.rnn = nn.LSTM(4, hidden, batch_first=True)
        self.proj = nn.Linear(2, hidden)
        self.hidden = hidden
        self.h0 = None

    def {method}(self, x, z, init_h=True):
{start}
        self.h0[-1] = self.proj(z){mark}
        out, _ = self.rnn(x, (self.h0, torch.zeros_like(self.h0)))
        return out


model = Decoder()
opt = torch.optim.SGD(model.parameters(), lr=0.1)


def train(data):
    for x, z in data:
        opt.zero_grad()
        out = {call}
        out.mean().backward()
        opt.step()
"""

_FRESH = "        self.h0 = torch.zeros(1, x.size(0), self.hidden)"
_FRESH_UNLESS_KEPT = """\
        if init_h:
            self.h0 = torch.zeros(1, x.size(0), self.hidden)
        else:
            self.h0.data.zero_()"""
_ONCE = """\
        if self.h0 is None:
            self.h0 = torch.zeros(1, x.size(0), self.hidden)"""

CASES = {
    # name: (start of the method, method name, call, GL008 expected)
    "fresh_in_forward": (_FRESH, "forward", "model(x, z)", False),
    "fresh_in_named_method": (_FRESH, "decode", "model.decode(x, z)", False),
    "fresh_unless_told_to_keep": (_FRESH_UNLESS_KEPT, "decode", "model.decode(x, z)", False),
    "made_once_in_forward": (_ONCE, "forward", "model(x, z)", True),
    "made_once_in_named_method": (_ONCE, "decode", "model.decode(x, z)", True),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_state_made_afresh_by_each_call_holds_one_graph(name: str) -> None:
    start, method, call, reported = CASES[name]
    text = (_DECODER.replace("{start}", start).replace("{method}", method).replace("{call}", call)
            .replace("{mark}", "  # expect: GL008" if reported else ""))
    expected = {(line, code) for line, code, _c in parse_expected_findings(text) if code == "GL008"}
    found = {(d.span.line, d.code) for d in analyse_text(text, "train.py").diagnostics if d.code == "GL008"}
    assert bool(expected) == reported
    assert found == expected


def test_a_decoder_of_another_file_that_makes_its_state_afresh(tmp_path) -> None:
    """sa-vae's shape: the decoder in `models.py`, its method called from the loop of `train.py`."""
    from gradcheck_lint.config import Settings
    from support import project_tree

    models, _, loop = _DECODER.partition("model = Decoder()\n")
    for start, reported in ((_FRESH_UNLESS_KEPT, False), (_ONCE, True)):
        root = project_tree(tmp_path / str(reported), {
            "models.py": models.replace("{start}", start).replace("{method}", "decode").replace("{mark}", ""),
            "train.py": "import torch\nfrom models import Decoder\n\nmodel = Decoder()\n"
                        + loop.replace("{call}", "model.decode(x, z)"),
        })
        path = root / "train.py"
        report = analyse_text(path.read_text(), str(path), Settings.default().with_enabled(frozenset({"GL008"})))
        assert bool(report.diagnostics) == reported, (start, [d.message for d in report.diagnostics])
