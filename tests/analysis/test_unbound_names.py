"""A statement that reads a misspelt name (bound in no scope it sees, one edit from a name bound there) raises
NameError on every run: its path ends there (UniCL's `criterion(outputs, targets)` after `ouputs = ...`;
GL007 on the clipping below it described code that never runs). A free name with no near-miss (a snippet's
input), names bound anywhere in sight, builtins, Python 2's builtins, names a `try` may catch the error of,
reads that only run on some evaluations, and modules that bind names out of sight (`from x import *`,
`globals()`) leave the path open."""

import ast
import textwrap

import pytest

from gradcheck_lint import check_source
from gradcheck_lint.analysis.unbound_names import raising_statements
from gradcheck_lint.config import Settings

LOOP = """
import torch
{header}

def train_one_epoch(model, criterion, loader, optimizer, accum):
    optimizer.zero_grad()
    for idx, (samples, targets) in enumerate(loader):
        ouputs = model(samples)
{read}
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        if (idx + 1) % accum == 0:
            optimizer.step()
            optimizer.zero_grad()
"""


def _codes(read: str, header: str = "") -> list[str]:
    text = textwrap.dedent(LOOP.format(read=read, header=header))
    return sorted(d.code for d in check_source(text, "train.py", settings=Settings.default()) if d.code.startswith("GL00"))


def test_a_read_of_a_name_bound_nowhere_ends_the_path() -> None:
    assert _codes("        loss = criterion(outputs, targets) / accum") == []


@pytest.mark.parametrize("read, header", [
    ("        loss = criterion(ouputs, targets) / accum", ""),  # the name that is bound
    ("        loss = criterion(predictions, targets) / accum", ""),  # free, like a snippet's input: no near-miss
    ("        loss = criterion(outputs, targets) / accum", "outputs = None"),  # a module global
    ("        loss = criterion(ouputs if xrange else outputs, targets) / accum", ""),  # a py2 builtin; an arm not always read
    ("        try:\n            loss = criterion(outputs, targets) / accum\n        except NameError:\n"
     "            loss = criterion(ouputs, targets) / accum", ""),
    ("        loss = criterion(outputs, targets) / accum", "from helpers import *"),
    ("        loss = criterion(ouputs, targets) / accum\n        globals()['x'] = 1", ""),
])
def test_names_in_sight_or_errors_that_may_be_caught_leave_the_path_open(read: str, header: str) -> None:
    assert _codes(read, header) == ["GL007"]


def test_scopes_are_python_scopes() -> None:
    tree = ast.parse(textwrap.dedent("""
        import os
        def outer(alpha):
            beta = 1
            def inner():
                return alpha + beta + os.sep + len("")
            class C:
                gamma = 3
                def method(self):
                    return alpah
            for i in range(3):
                print(later)
            later = 2
            return inner
        def uses_global():
            global made
            made = 1
        print(made)
        print(maed)
    """))
    raising = raising_statements(tree)
    lines = sorted(n.lineno for n in ast.walk(tree) if id(n) in raising)
    # a method sees the function around its class (`alpha`), not the class; order inside one scope is not judged
    assert lines == [10, 19]
