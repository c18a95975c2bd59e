"""A method whose body only raises, on a module known only by the class a parameter is annotated with, is a
placeholder a subclass overrides (`raise RuntimeError('Subclass and implement this function')`), not what the
object runs (`definitions.raises_only`). maml_tryout's `maml_learn(model: MamlModel, ...)` called such a stub at
the top of each episode: every path ended there, and the missing clear was missed (lockbox 19, after its
opening). A module built in sight from the class itself really raises there."""

from __future__ import annotations

import pytest

from gradcheck_lint.engine import analyse_text

TEXT = """\
import torch


class Base(torch.nn.Module):
    def get_state(self):
        raise RuntimeError("Subclass and implement this function")


def learn(n: int, x, model{annotation}):
    {build}
    optimizer = torch.optim.Adam(model.parameters())
    for episode in range(n):
        model.get_state()
        loss = model(x).sum()
        loss.backward()
        optimizer.step()
"""


@pytest.mark.parametrize(("annotation", "build", "gl001"), [
    (": Base", "pass", True),  # an object of some subclass: the stub is not what it runs
    ("", "model = Base()", False),  # built in sight from the class itself: the stub raises, nothing steps
])
def test_a_raising_stub_of_a_declared_class(annotation: str, build: str, gl001: bool) -> None:
    text = TEXT.format(annotation=annotation, build=build)
    found = [d for d in analyse_text(text, "train.py").diagnostics if d.code == "GL001"]
    assert bool(found) is gl001
