"""A helper's body is read for what each name is bound to once, however many passes its reading takes
(`clipping_bodies._Body`: the names made from gradients grow to a fixed point, pass after pass)."""

from __future__ import annotations

import ast

import pytest

from gradcheck_lint.analysis import clipping_bodies

HELPER = """\
def clip(params, max_norm):
    grads = [p.grad for p in params]
    total = torch.norm(torch.stack([torch.norm(g) for g in grads]))
    coef = max_norm / (total + 1e-6)
    for g in grads:
        g.mul_(coef)
"""


def test_each_node_is_asked_what_it_binds_once(monkeypatch: pytest.MonkeyPatch) -> None:
    fn = ast.parse(HELPER).body[0]
    assert isinstance(fn, ast.FunctionDef)
    expected = clipping_bodies._read(fn)
    assert expected is not None  # it clips `params`
    asked: list[ast.AST] = []
    real = clipping_bodies._bindings

    def counting(node: ast.AST) -> list[tuple[list[str], ast.AST | None]]:
        asked.append(node)
        return real(node)

    monkeypatch.setattr(clipping_bodies, "_bindings", counting)
    assert clipping_bodies._read(fn) == expected
    walked = [n for stmt in fn.body for n in ast.walk(stmt)]  # (context nodes are shared: counted as walked)
    assert len(asked) == len(walked)


NO_NORM = """\
def scale(params, factor):
    grads = [p.grad for p in params]
    for g in grads:
        g.mul_(factor)
"""


def test_a_function_computing_no_norm_is_not_read(monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing rescales gradients by a factor of their norm where no norm is computed: such a function (most of
    them) is answered from its kept walk, without reading its body's bindings."""
    built: list[ast.AST] = []
    real = clipping_bodies._Body

    def counting(fn: ast.FunctionDef) -> clipping_bodies._Body:
        built.append(fn)
        return real(fn)

    monkeypatch.setattr(clipping_bodies, "_Body", counting)
    for source, clips in ((NO_NORM, False), (HELPER, True)):
        fn = ast.parse(source).body[0]
        assert isinstance(fn, ast.FunctionDef)
        assert (clipping_bodies._read(fn) is not None) == clips
    assert [fn.name for fn in built] == ["clip"]  # `scale` computes no norm: not read
