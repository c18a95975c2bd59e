"""Running values that keep every iteration's graph (GL008): an assignment whose value combines the
accumulator's previous value with a new graph-carrying term is an accumulation whatever its arithmetic
(`analysis.accumulation.combined_terms`: an exponential moving average, `acc * m + x`, `torch.add`, a
tensor method), and an assignment that runs only while the accumulator is unset starts it once, it does
not reset it (`initialisations`: the `else:` of `if ema:`, `if ema is None:`, `if i == 0:`). Averages of
numbers, detached values, resets after each step and plain rebinding stay silent."""

from __future__ import annotations

import ast

import pytest

from gradcheck_lint import check_source
from gradcheck_lint.analysis.accumulation import combined_terms, initialisations, loop_counters


def codes(text: str) -> list[tuple[int, str]]:
    return sorted((d.line, d.code) for d in check_source(text))


LOOP = """\
import torch
from torch import nn

model = nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
{init}
for i, x in enumerate(torch.randn(50, 8, 4)):
    opt.zero_grad()
    loss = model(x).pow(2).mean()
    loss.backward()
    opt.step()
{body}
"""

# (start before the loop, the loop's last statements, the line GL008 anchors to)
KEEPING = {
    "ema-started-in-else": ("ema = None", "    if ema:\n        ema = 0.9 * ema + 0.1 * loss\n    else:\n        ema = loss", 13),
    "ema-started-if-none": ("ema = None", "    if ema is None:\n        ema = loss\n    else:\n        ema = 0.9 * ema + 0.1 * loss", 15),
    "ema-started-in-else-of-not-none": ("ema = None", "    if ema is not None:\n        ema = 0.9 * ema + 0.1 * loss\n    else:\n        ema = loss", 13),
    "ema-started-on-first-iteration": ("ema = 0.0", "    if i == 0:\n        ema = loss\n    else:\n        ema = 0.9 * ema + 0.1 * loss", 15),
    "sum-started-in-else": ("acc = None", "    if acc:\n        acc = acc + loss\n    else:\n        acc = loss", 13),
    "ema": ("ema = 0.0", "    ema = 0.9 * ema + 0.1 * loss", 12),
    "decayed-sum": ("acc = 0.0", "    acc = acc * 0.5 + loss", 12),
    "torch-add": ("acc = torch.zeros(())", "    acc = torch.add(acc, loss)", 12),
    "tensor-methods": ("acc = torch.zeros(())", "    acc = acc.mul(0.9).add(loss)", 12),
    "lerp": ("ema = torch.zeros(())", "    ema = ema.lerp(loss, 0.1)", 12),
    "concatenation": ("acc = torch.zeros(0)", "    acc = torch.cat([acc, loss.view(1)])", 12),
    "conditional-arm": ("ema = None", "    ema = loss if ema is None else 0.9 * ema + 0.1 * loss", 12),
}

SILENT = {
    "ema-of-item": ("ema = None", "    if ema is None:\n        ema = loss.item()\n    else:\n        ema = 0.9 * ema + 0.1 * loss.item()"),
    "ema-of-detached": ("ema = 0.0", "    ema = 0.9 * ema + 0.1 * loss.detach()"),
    "ema-of-float": ("ema = 0.0", "    ema = 0.9 * ema + 0.1 * float(loss)"),
    "ema-of-item-started-with-one-graph": ("ema = None", "    if ema is None:\n        ema = loss\n    else:\n        ema = 0.9 * ema + 0.1 * loss.item()"),
    "rebound-every-iteration": ("ema = 0.0", "    ema = loss"),
    "sum-reset-after-some-steps": ("acc = 0.0", "    acc = acc + loss\n    if i % 5 == 0:\n        acc = 0.0"),
    "reset-under-a-test-of-another-name": ("acc = 0.0", "    if i % 5:\n        acc = acc * 0.9 + loss\n    else:\n        acc = loss"),
    "restarted-every-tenth-iteration": ("ema = None", "    if ema and i % 10:\n        ema = 0.9 * ema + 0.1 * loss\n    else:\n        ema = loss"),
    "one-or-the-other": ("best = None", "    best = loss if best is None else best"),
    "previous-value-detached": ("acc = 0.0", "    acc = acc.detach() * 0.9 + loss"),
    "decay-only": ("acc = 1.0", "    acc = acc * 0.99"),
}


@pytest.mark.parametrize(("init", "body", "line"), KEEPING.values(), ids=list(KEEPING))
def test_a_running_value_of_the_loss_keeps_every_graph(init: str, body: str, line: int) -> None:
    assert codes(LOOP.format(init=init, body=body)) == [(line, "GL008")]


@pytest.mark.parametrize(("init", "body"), SILENT.values(), ids=list(SILENT))
def test_values_numbers_and_resets_keep_no_graph(init: str, body: str) -> None:
    assert codes(LOOP.format(init=init, body=body)) == []


# gflownet's shape: the loss function returns a tuple of graph-carrying terms, the first is backpropagated
# and an average of the second is started in the `else:` of a test of the average itself
TERMS = """\
import torch
from torch import nn


class Trainer:
    def __init__(self):
        self.net = nn.Linear(4, 1)
        self.opt = torch.optim.Adam(self.net.parameters())
        self.alpha = 0.5

    def loss_terms(self, x):
        out = self.net(x)
        main, aux = out.pow(2).mean(), out.abs().mean()
        return (main + aux, main, aux), out

    def train(self, n):
        main_ema = None
        for _ in range(n):
            losses, _out = self.loss_terms(torch.randn(8, 4))
            losses[0].backward()
            self.opt.step()
            self.opt.zero_grad()
            if main_ema:
                main_ema = {blend}
            else:
                main_ema = {start}
"""


def test_an_average_of_a_term_of_the_loss_tuple_keeps_its_graph() -> None:
    text = TERMS.format(blend="self.alpha * losses[1] + (1.0 - self.alpha) * main_ema", start="losses[1]")
    found = check_source(text)
    assert [(d.line, d.code) for d in found] == [(24, "GL008")]
    assert "`losses[1]`" in found[0].message  # the term that carries the graph, not the whole blend


# gflownet itself: two averages blended together, started together in the `else:` of a test of both
PAIR = """\
import torch
from torch import nn

model = nn.Linear(4, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
term_ema, flow_ema = None, None
for x in torch.randn(50, 8, 4):
    out = model(x)
    term, flow = out[:, 0].pow(2).mean(), out[:, 1].pow(2).mean()
    opt.zero_grad()
    (term + flow).backward()
    opt.step()
    if term_ema and flow_ema:
        term_ema = 0.9 * term_ema + 0.1 * term
        flow_ema = 0.9 * flow_ema + 0.1 * flow
    else:
{start}
"""


def test_two_averages_started_together_keep_their_graphs() -> None:
    assert codes(PAIR.format(start="        term_ema = term\n        flow_ema = flow")) == [(14, "GL008"), (15, "GL008")]


def test_an_average_of_the_terms_value_is_silent() -> None:
    text = TERMS.format(blend="self.alpha * losses[1].item() + (1.0 - self.alpha) * main_ema", start="losses[1].item()")
    assert codes(text) == []


def _terms(source: str, target: str) -> list[str] | None:
    found = combined_terms(ast.parse(source, mode="eval").body, target, frozenset({"item", "detach"}))
    return None if found is None else [ast.unparse(t) for t in found]


@pytest.mark.parametrize(("source", "terms"), [
    ("acc + loss", ["loss"]),
    ("a * loss + (1 - a) * acc", ["a * loss", "1 - a"]),
    ("-acc", []),
    ("torch.cat([acc, x], 0)", ["x", "0"]),
    ("x.lerp(acc, w)", ["x", "w"]),
    ("x if acc is None else acc + x", ["x"]),
    ("acc.detach() + x", None),
    ("acc.item()", None),
    ("x if acc is None else acc", []),
    ("f(acc, x)", None),
    ("acc.from_config(acc.config, **kw)", None),  # a method of another object makes anything of it
    ("acc.mean(0) + x", ["0", "x"]),
    ("acc > x", None),
])
def test_terms_combined_with_the_previous_value(source: str, terms: list[str] | None) -> None:
    assert _terms(source, "acc") == terms


@pytest.mark.parametrize(("test", "started"), [
    ("if acc:\n    pass\nelse:\n    acc = x", True),
    ("if not acc:\n    acc = x", True),
    ("if acc is None:\n    acc = x", True),
    ("if acc is not None:\n    pass\nelse:\n    acc = x", True),
    ("if acc is None and ready:\n    acc = x", True),
    ("if acc and other:\n    pass\nelse:\n    acc = x\n    other = y", True),
    ("if acc and other:\n    pass\nelse:\n    acc = x", False),
    ("if i == 0:\n    acc = x", True),
    ("if i != 0:\n    pass\nelse:\n    acc = x", True),
    ("if acc:\n    acc = x", False),
    ("if acc is None or ready:\n    acc = x", False),
    ("if other is None:\n    acc = x", False),
    ("if j == 0:\n    acc = x", False),
    ("acc = x", False),
])
def test_assignments_that_run_only_while_unset(test: str, started: bool) -> None:
    loop = ast.parse("for i, b in enumerate(loader):\n" + "\n".join("    " + line for line in test.splitlines())).body[0]
    assert isinstance(loop, ast.For)
    found = initialisations(loop.body, loop_counters(loop))
    assert ("acc" in found.values()) is started
