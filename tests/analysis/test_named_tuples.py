"""Named tuples (`analysis/named_tuples.py`): calling a `namedtuple`/`NamedTuple` class builds a tuple whose
fields are its items, by position or keyword; `t.field` reads the item, unpacking gives them in order, and a
backward of `t.field` marks that item as holding a graph. bubbliiiing/faster-rcnn (lockbox 2) returned its
losses as a `LossTuple` after `losses.total_loss.backward()`; its epoch loop summed the unpacked total."""

from __future__ import annotations

import ast

import pytest

from gradcheck_lint.analysis import named_tuples
from gradcheck_lint.analysis.names import ImportMap
from gradcheck_lint.analysis.syntax import arguments
from gradcheck_lint.analysis.values import Value
from gradcheck_lint.engine import analyse_text

DEFINITIONS = {
    'Losses = namedtuple("Losses", ["reg", "cls", "total"])': ("reg", "cls", "total"),
    'Losses = collections.namedtuple("Losses", "reg cls total")': ("reg", "cls", "total"),
    'Losses = namedtuple("Losses", "reg, cls, total")': ("reg", "cls", "total"),
    'Losses = namedtuple("Losses", field_names=("reg", "cls", "total"))': ("reg", "cls", "total"),
    'Losses = typing.NamedTuple("Losses", [("reg", Tensor), ("cls", Tensor), ("total", Tensor)])': ("reg", "cls", "total"),
    "class Losses(typing.NamedTuple):\n    reg: Tensor\n    cls: Tensor\n    total: Tensor": ("reg", "cls", "total"),
    'Losses = namedtuple("Losses", names)': (),
}


@pytest.mark.parametrize("source", DEFINITIONS)
def test_the_fields_of_each_way_of_defining_a_named_tuple(source: str) -> None:
    text = f"import collections\nimport typing\nfrom collections import namedtuple\n{source}\n"
    module = ast.parse(text)
    assert named_tuples.defined(module.body, ImportMap.of(module)) == {"Losses": DEFINITIONS[source]}


def test_plain_classes_and_other_calls_are_no_named_tuples() -> None:
    text = "import collections\nclass Losses(object):\n    reg: int\nLosses2 = collections.OrderedDict(a=1)\n"
    module = ast.parse(text)
    assert named_tuples.defined(module.body, ImportMap.of(module)) == {}


def test_fields_read_the_items_by_position_and_keyword() -> None:
    call = ast.parse("Losses(a, total=c, cls=b)", mode="eval").body
    assert isinstance(call, ast.Call)
    a, b, c = (Value(const=i) for i in (1, 2, 3))
    built = named_tuples.construct(("reg", "cls", "total"), arguments(call), [a, c, b])
    assert [named_tuples.field(built, f) for f in ("reg", "cls", "total")] == [a, b, c]
    assert built.spread() == [a, b, c]
    assert named_tuples.field(built, "other") is None
    assert named_tuples.field(Value(items=(("0", a),)), "reg") is None  # a plain tuple has no fields


EPOCH = """\
import collections
import torch

Losses = collections.namedtuple("Losses", ["reg", "total"])
model = torch.nn.Linear(4, 2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)


def train_step(x, y):
    optimizer.zero_grad()
    out = model(x)
    reg = out.pow(2).mean()
    losses = Losses(reg, reg + (out - y).abs().mean())
    losses.total.backward()
    optimizer.step()
    return losses


running = 0.0
for x, y in loader:
    {use}
"""


def gl008(text: str) -> list[int]:
    return [d.span.line for d in analyse_text(text, "train.py").diagnostics if d.code == "GL008"]


@pytest.mark.parametrize("use", [
    "reg, total = train_step(x, y)\n    running += total",
    "losses = train_step(x, y)\n    running += losses.total",
    "losses = train_step(x, y)\n    running += losses[1]",
    "running += train_step(x, y).total",
])
def test_a_graph_carrying_field_summed_across_iterations_is_gl008(use: str) -> None:
    text = EPOCH.format(use=use)
    assert gl008(text) == [text.splitlines().index("    " + use.splitlines()[-1].strip()) + 1]


@pytest.mark.parametrize("use", [
    "reg, total = train_step(x, y)\n    running += total.item()",
    "losses = train_step(x, y)\n    running += losses.total.item()",
    "losses = train_step(x, y)\n    running += float(losses.total)",
    "running += train_step(x, y).total.detach()",
])
def test_the_same_fields_taken_as_numbers_are_silent(use: str) -> None:
    assert gl008(EPOCH.format(use=use)) == []
