"""How the guard tells a loss's constant weight from its division by the window (`windows.py`), and
which backward passes count as micro-batches of one window."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from gradcheck_lint.runtime.evidence import BackwardPass, Site  # noqa: E402
from gradcheck_lint.runtime.loss_scale import graph_scale  # noqa: E402
from gradcheck_lint.runtime.windows import micro_batches, scaling_kind, window_kind  # noqa: E402


def _scale(loss: torch.Tensor):  # type: ignore[no-untyped-def]
    return graph_scale(loss.grad_fn)


def test_each_constant_is_kept_apart_with_the_way_it_was_written() -> None:
    x = torch.ones(3, requires_grad=True)
    a = x.sum()
    assert _scale(a) == ((),)
    assert _scale((a * 0.5) / 2) == (((0.5, True), (0.5, False)),)
    assert _scale(a / 4 + 0.1 * a) == tuple(sorted({((0.25, True),), ((0.1, False),)}))


@pytest.mark.parametrize(("build", "n", "kind"), [
    (lambda a: a, 4, "unscaled"),
    (lambda a: a / 4, 4, "scaled"),
    (lambda a: a * 0.25, 4, "scaled"),
    (lambda a: 0.5 * a, 4, "weighted"),  # a weight of the objective; the window is not divided
    (lambda a: 0.5 * a / 4, 4, "scaled"),
    (lambda a: (a + a) * 0.5 / 2, 2, "scaled"),  # `* 0.5` beside `/ 2` over a window of 2: divided once
    (lambda a: a / 2 / 2, 2, "twice"),
    (lambda a: a / (2 * 3), 3, "scaled"),  # two losses averaged and the window in one divisor
    (lambda a: a + 0.1 * a.pow(2), 2, "unscaled"),  # the main term is bare, 0.1 is no window of 2
])
def test_scaling_kind_of_one_pass(build, n: int, kind: str) -> None:  # type: ignore[no-untyped-def]
    x = torch.ones(3, requires_grad=True)
    assert scaling_kind(_scale(build(x.sum())), 1.0, n) == kind


def test_a_weight_is_told_from_a_per_micro_batch_normalisation_by_comparing_the_micro_batches() -> None:
    x = torch.ones(3, requires_grad=True)
    same = [_scale(0.5 * x.sum()) for _ in range(4)]
    varying = [_scale(x.sum() / k) for k in (5, 7, 3, 9)]
    assert window_kind(same, 1.0, 4) == "weighted"
    assert window_kind(varying, 1.0, 4) == "unknown"
    assert window_kind([_scale(x.sum() / 4)] * 4, 0.25, 4) == "twice"  # divided, then `p.grad /= 4` too


def test_losses_of_one_batch_are_one_micro_batch() -> None:
    site = Site("train.py", 9, "loss.backward()", col=9)
    encoder = {1, 2}
    # one pass per task head on a shared encoder: the same line, each wrote a head the others did not
    heads = [BackwardPass(i, site, writes=frozenset(encoder | {10 + i})) for i in range(1, 4)]
    assert micro_batches(heads) == 1
    # two micro-batches of two heads each
    window = [BackwardPass(i, site, writes=frozenset(encoder | {10 + i % 2})) for i in range(1, 5)]
    assert micro_batches(window) == 2
    # a layer only the first micro-batch reaches: its parameters grow and shrink, still one window
    reach = [BackwardPass(1, site, writes=frozenset(encoder | {10})), BackwardPass(2, site, writes=frozenset({10})),
             BackwardPass(3, site, writes=frozenset({10}))]
    assert micro_batches(reach) == 3
    # three losses of one retained forward graph, then a micro-batch of its own
    same = frozenset(encoder)
    retained = [BackwardPass(1, site, writes=same), BackwardPass(2, site, writes=same, batch=1),
                BackwardPass(3, site, writes=same, batch=1), BackwardPass(4, site, writes=same)]
    assert micro_batches(retained) == 2
    # the steady cycle does not tell what a pass wrote: counted with all the others
    assert micro_batches([BackwardPass(1, site), BackwardPass(2, site, writes=same)]) == 2
