"""`self.attr(...)` runs a function of the module a method stored there: the stores of a class are read
once per file, not walked again at every such call."""

from __future__ import annotations

import ast

import pytest

import gradcheck_lint.analysis.definitions as definitions
from gradcheck_lint.analysis.apimodels import catalogue_for
from gradcheck_lint.analysis.definitions import Definitions
from gradcheck_lint.analysis.names import ImportMap

CODE = """
def hinge(a, b):
    return a - b


def vanilla(a, b):
    return a + b


class Base:
    def __init__(self):
        self.base_loss = vanilla


class Loss(Base):
    def __init__(self, kind):
        super().__init__()
        self.disc_loss = hinge if kind == "hinge" else vanilla
        self.other = vanilla
        self.mixed = hinge

    def reset(self):
        self.mixed = lambda a, b: a
        self.other = self.other = vanilla
"""


def _definitions() -> Definitions:
    module = ast.parse(CODE)
    return Definitions(module, ImportMap.of(module), catalogue_for())


def _names(found: list[ast.FunctionDef | ast.AsyncFunctionDef]) -> list[str]:
    return [fn.name for fn in found]


def test_the_functions_stored_on_self_by_the_class_and_its_bases() -> None:
    defs = _definitions()
    loss = defs.classes["Loss"]
    assert _names(defs.stored_functions(loss, "disc_loss")) == ["hinge", "vanilla"]  # either branch
    assert _names(defs.stored_functions(loss, "other")) == ["vanilla"]  # stored three times, listed once
    assert defs.stored_functions(loss, "mixed") == []  # a lambda is stored there too
    assert _names(defs.stored_functions(loss, "base_loss")) == ["vanilla"]  # by a base of this file
    assert defs.stored_functions(loss, "unset") == [] and defs.stored_functions(None, "disc_loss") == []


def test_a_class_is_walked_once_for_all_its_calls(monkeypatch: pytest.MonkeyPatch) -> None:
    defs = _definitions()
    walked: list[str] = []
    real = definitions.breadth_first

    def counting(node: ast.AST):  # type: ignore[no-untyped-def]
        walked.append(getattr(node, "name", ""))
        return real(node)

    monkeypatch.setattr(definitions, "breadth_first", counting)  # the analysis's ast.walk
    loss = defs.classes["Loss"]
    for _ in range(5):
        for attr in ("disc_loss", "other", "mixed", "unset"):
            defs.stored_functions(loss, attr)
    assert sorted(walked) == ["__init__", "__init__", "reset"]  # each method of Loss and of Base, once
