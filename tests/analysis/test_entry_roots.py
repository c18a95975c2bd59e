"""Entry roots (gradcheck_lint/analysis/entrypoints.py): a function nothing in the file calls is analysed
from its own definition, except one whose whole body reruns what the module's top-level code already ran."""

from __future__ import annotations

import pytest

from gradcheck_lint import check_source
from gradcheck_lint.analysis.inlining import Inliner

BUGGY_MAIN = """\
import torch

model = torch.nn.Linear(3, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loader = [(torch.randn(4, 3), torch.randn(4, 1)) for _ in range(6)]


def main():
    for x, y in loader:
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
"""

XLA_SPAWN = """

def _mp_fn(index):
    # For xla_spawn (TPUs)
    main()
"""

MAIN_BLOCK = """

if __name__ == "__main__":
    main()
"""


def runs_of_main(src: str, monkeypatch: pytest.MonkeyPatch) -> tuple[list[tuple[str, int]], int]:
    """The findings (code, line) and how many times `main`'s body was interpreted."""
    runs = []
    original = Inliner._run_inlined

    def spy(self, fn, *args, **kwargs):  # type: ignore[no-untyped-def]
        if fn.name == "main":
            runs.append(fn.name)
        return original(self, fn, *args, **kwargs)

    monkeypatch.setattr(Inliner, "_run_inlined", spy)
    return [(d.code, d.line) for d in check_source(src)], len(runs)


def test_an_xla_spawn_entry_does_not_run_main_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """HF's `def _mp_fn(index): main()` beside `if __name__ == "__main__": main()`: main runs once, with
    the findings of the file without `_mp_fn`."""
    alone, _ = runs_of_main(BUGGY_MAIN + MAIN_BLOCK, monkeypatch)
    found, runs = runs_of_main(BUGGY_MAIN + XLA_SPAWN + MAIN_BLOCK, monkeypatch)
    assert alone == found == [("GL001", 12)]
    assert runs == 1


def test_an_entry_that_is_the_only_caller_is_still_analysed(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without a top-level call of `main`, `_mp_fn` is the way in: main is analysed from there."""
    found, runs = runs_of_main(BUGGY_MAIN + XLA_SPAWN, monkeypatch)
    assert found == [("GL001", 12)]
    assert runs == 1
