"""The memoised user sites of backward passes and steps (`sites.memo_site`, and its answer compared
inline by the probe's wrappers) are the sites a fresh walk of the stack finds."""

from __future__ import annotations

import sys
from typing import Any

import pytest

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402

from gradcheck_lint.runtime import guard, torch_patches  # noqa: E402
from gradcheck_lint.runtime.sites import SiteMemo  # noqa: E402


class _Recorder:
    """Stands in for a probe in `torch_patches._ACTIVE`: records what the backward wrapper tells it."""

    def __init__(self) -> None:
        self._cycle = None
        self._replay = None
        self.monitors = None
        self.retained = False
        self.seen: list[tuple[int, Any]] = []

    def full_before_backward(self, site: Any, tensors: Any, graph: Any, via: Any) -> None:
        self.seen.append((site.line, via))

    def full_after_backward(self, site: Any) -> None:
        pass


def _loss() -> torch.Tensor:
    return (torch.ones(2, requires_grad=True) * 3).sum()


def _helper(loss: torch.Tensor) -> None:
    loss.backward()


def _from_a() -> None:
    _helper(_loss())


def _from_b() -> None:
    _helper(_loss())


def _backward_sites(fresh: bool, monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, Any]]:
    recorder = _Recorder()
    torch_patches.activate(recorder)  # type: ignore[arg-type]
    try:
        for _i in range(4):
            for run in (_from_a, _from_b, _from_a, _from_a, lambda: _loss().backward(), lambda: _helper(_loss())):
                if fresh:  # no memo: every call walks the stack
                    monkeypatch.setattr(torch_patches, "_BACKWARD_SITES", [SiteMemo() for _ in range(4)])
                run()
    finally:
        torch_patches.deactivate(recorder)  # type: ignore[arg-type]
    return recorder.seen


def test_the_backward_wrappers_inline_memo_gives_the_sites_and_callers_of_a_fresh_walk(monkeypatch: pytest.MonkeyPatch) -> None:
    memoised = _backward_sites(False, monkeypatch)
    fresh = _backward_sites(True, monkeypatch)
    assert memoised == fresh
    assert len({via for _line, via in memoised}) >= 3  # `_from_a`, `_from_b` and the lambda: three callers


def test_the_step_hooks_inline_memo_gives_the_site_of_a_fresh_walk() -> None:
    torch.manual_seed(0)
    model = nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    lines: list[tuple[int, int]] = []

    def step_here() -> None:
        opt.step()

    with guard(model, opt, mode="record") as g:
        memos = g._probe._step_sites  # type: ignore[attr-defined]
        for i in range(12):
            opt.zero_grad()
            model(torch.randn(3, 4)).sum().backward()
            if i % 3 == 0:
                opt.step(); expected = sys._getframe().f_lineno  # noqa: E702
            elif i % 3 == 1:
                step_here(); expected = step_here.__code__.co_firstlineno + 1  # noqa: E702
            else:
                opt.step(); expected = sys._getframe().f_lineno  # noqa: E702
            lines.append((memos[id(opt)].site.line, expected))
    assert all(got == want for got, want in lines), lines
    assert len(g.report()) == 0


_MODULE_LEVEL = """
import json, sys, torch
from gradcheck_lint.runtime import torch_patches
from gradcheck_lint.runtime.sites import SiteMemo

class Recorder:
    _cycle = None
    _replay = None
    monitors = None
    retained = False
    def __init__(self):
        self.seen = []
    def full_before_backward(self, site, tensors, graph, via):
        self.seen.append((site.line, via))
    def full_after_backward(self, site):
        pass

out = []
for fresh in (False, True):
    recorder = Recorder()
    torch_patches.activate(recorder)
    for i in range(6):
        if fresh:
            torch_patches._BACKWARD_SITES = [SiteMemo() for _ in range(4)]
        if i % 3:
            (torch.ones(2, requires_grad=True) * 3).sum().backward()
        else:
            (torch.ones(2, requires_grad=True) * 2).sum().backward()
    torch_patches.deactivate(recorder)
    out.append(recorder.seen)
print(json.dumps(out))
"""


def test_the_backward_wrappers_inline_memo_at_a_scripts_module_level() -> None:
    # the user's frame is the top of the stack (`python train.py`): no caller above it
    import json
    import os
    import subprocess
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, "-c", _MODULE_LEVEL], capture_output=True, text=True, cwd=root, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    memoised, fresh = json.loads(proc.stdout.strip().splitlines()[-1])
    assert memoised == fresh
    assert len({line for line, _via in memoised}) == 2 and all(via is None for _line, via in memoised)


def test_backward_lines_called_in_turn_are_each_walked_once(monkeypatch: pytest.MonkeyPatch) -> None:
    # a GAN's discriminator and generator losses, backpropagated in turn from two places: each place
    # is walked once, then answered from its own memo (one memo was walked again on every pass)
    from gradcheck_lint.runtime import sites

    walks: list[int] = []
    walk = sites.memo_site

    def counted(*args: Any, **kwargs: Any) -> Any:
        walks.append(1)
        return walk(*args, **kwargs)

    monkeypatch.setattr(sites, "memo_site", counted)
    monkeypatch.setattr(torch_patches, "_BACKWARD_SITES", [SiteMemo() for _ in range(4)])
    recorder = _Recorder()
    torch_patches.activate(recorder)  # type: ignore[arg-type]
    try:
        for _i in range(10):
            _from_a()
            _from_b()
    finally:
        torch_patches.deactivate(recorder)  # type: ignore[arg-type]
    assert len(walks) == 2
    assert len(set(recorder.seen)) == 2 and len(recorder.seen) == 20


def test_two_optimizers_stepping_in_turn_keep_a_step_site_each() -> None:
    torch.manual_seed(0)
    g_model, d_model = nn.Linear(4, 4), nn.Linear(4, 1)
    opt_g = torch.optim.SGD(g_model.parameters(), lr=0.01)
    opt_d = torch.optim.SGD(d_model.parameters(), lr=0.01)
    with guard([g_model, d_model], [opt_g, opt_d], mode="record") as g:
        for _i in range(6):
            opt_d.zero_grad()
            d_model(g_model(torch.randn(3, 4)).detach()).sum().backward()
            opt_d.step(); d_line = sys._getframe().f_lineno  # noqa: E702
            opt_g.zero_grad()
            d_model(g_model(torch.randn(3, 4))).sum().backward()
            opt_g.step(); g_line = sys._getframe().f_lineno  # noqa: E702
        memos = g._probe._step_sites  # type: ignore[attr-defined]
        assert (memos[id(opt_d)].site.line, memos[id(opt_g)].site.line) == (d_line, g_line)
        assert memos[id(opt_d)].chain and memos[id(opt_g)].chain
    assert len(g.report()) == 0


TWO_CALLS = '''\
from gradcheck_lint.runtime.sites import user_site


class Opt:
    def step(self):
        return user_site(2, ("step",))


a, b = Opt(), Opt()
first = a.step(); second = b.step()
'''


def test_two_calls_of_one_line_are_told_apart_by_the_running_instructions_span(tmp_path: Any) -> None:
    """The frame's instruction span picks the call it runs (`code.co_positions()` gives line, end line, column,
    end column; the calls are keyed by line, column, end line, end column): not the first call of the line."""
    path = tmp_path / "two_calls.py"
    path.write_text(TWO_CALLS, encoding="utf-8")
    namespace: dict[str, Any] = {}
    exec(compile(TWO_CALLS, str(path), "exec"), namespace)
    first, second = namespace["first"], namespace["second"]
    assert (first.line, first.col, first.text, first.receiver) == (10, 9, "a.step()", "a")
    assert (second.line, second.col, second.text, second.receiver) == (10, 28, "b.step()", "b")
