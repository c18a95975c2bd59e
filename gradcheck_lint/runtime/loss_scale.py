"""Read the constant factors applied to a loss from its autograd graph (GL003 without a device sync)."""

from __future__ import annotations

from typing import Any

import torch

from .windows import Scale, Term

_SCALAR_OPS = {"MulBackward0": False, "MulBackward1": False, "DivBackward0": True, "DivBackward1": True}
_REDUCTION_SUM = 2  # torch's at::Reduction::Sum, saved by the backward nodes of its library losses
_PASS_THROUGH = {"NegBackward0", "CloneBackward0", "ViewBackward0", "SqueezeBackward0", "SqueezeBackward1",
                 "UnsqueezeBackward0", "ToCopyBackward0", "ReshapeAliasBackward0"}




def loss_scale(tensors: Any) -> tuple[float, ...] | None:
    """The constant factors below one applied to the terms of a loss: `loss / 4` -> (0.25,), a bare
    loss -> (1.0,), `(a + 0.1 * b) / 4` -> (0.025, 0.25): the product of each term's factors
    (`graph_scale` keeps them one by one).

    Reads the autograd graph from the root down through multiplications and divisions by a
    constant (a Python number or a CPU scalar: reading it never waits for a device), sums and
    differences (each term keeps its own factor), negation and views. Factors of one or more
    (GradScaler's scale, a loss weight) and factors held on an accelerator are neutral. None when a
    factor cannot be known without a device sync, or the graph is not understood, or a term is a
    library loss reduced by summing over its samples (`reduction="sum"`): micro-batch sums add up to
    the whole batch's sum, so such a loss is not to be divided by N (the static side's rule too).
    """
    if not isinstance(tensors, torch.Tensor):
        return None
    terms = graph_scale(tensors.grad_fn)
    return None if terms is None else tuple(sorted({product(term) for term in terms}))


def product(term: Term) -> float:
    """The factor a term's constants multiply it by."""
    out = 1.0
    for factor, _div in term:
        out *= factor
    return out


def graph_scale(grad_fn: Any) -> Scale | None:
    """The constant factors below one of each term of the loss whose `grad_fn` this is, each factor
    kept apart with the way it was written (`(a * 0.5) / 2` -> `(((0.5, True), (0.5, False)),)`:
    the division by 2 first, from the root); None: no graph, or not understood (`loss_scale`)."""
    if grad_fn is None:
        return None
    terms = _factors(grad_fn, 0)
    return None if terms is None else tuple(sorted(terms))


# how `_factors` reads a node, by its type: each autograd node type's `__name__` is a new string per read
_PASS, _SUM, _MUL, _DIV, _OTHER = range(5)
_KINDS: dict[type, int] = {}


def _kind(node_type: type) -> int:
    """`_factors`' reading of a node of this type, from its name (looked up once per type)."""
    name = node_type.__name__
    if len(_KINDS) >= 1024:  # (node types are few; classes made at run time could be many)
        _KINDS.clear()
    kind = (_PASS if name in _PASS_THROUGH else _SUM if name in ("AddBackward0", "SubBackward0")
            else (_DIV if _SCALAR_OPS[name] else _MUL) if name in _SCALAR_OPS else _OTHER)
    _KINDS[node_type] = kind
    return kind


def _factors(fn: Any, depth: int) -> set[Term] | None:
    if fn is None:
        return {()}
    if depth > 12:
        return None
    kind = _KINDS.get(type(fn))
    if kind is None:
        kind = _kind(type(fn))
    if kind == _PASS:
        return _factors(fn.next_functions[0][0], depth + 1) if fn.next_functions else {()}
    if kind == _SUM:
        out: set[Term] = set()
        for nf, _ in fn.next_functions:
            if nf is None:
                continue
            part = _factors(nf, depth + 1)
            if part is None:
                return None
            out |= part
        return out or {()}
    if kind != _OTHER:  # a multiplication or division by a scalar
        other = getattr(fn, "_saved_other", None)
        if not isinstance(other, torch.Tensor) or other.requires_grad or other.numel() != 1:
            return None
        inner = _factors(fn.next_functions[0][0], depth + 1)
        # `is_cpu` and `item()` of the one element: `device.type` and `reshape(()).item()` cost 2 and 8
        # µs more (this runs on every pass of the full path)
        if inner is None or not other.is_cpu:
            return inner  # a device-held factor: GradScaler's scale, unscaled again before the step
        value = abs(float(other.item()))
        if value == 0.0:
            return None
        div = kind == _DIV
        shrink = 1.0 / value if div else value
        # only factors below one can be a 1/N; growing ones are undone (GradScaler) or are weights
        return {((shrink, div), *term) for term in inner} if shrink < 1.0 else inner
    if getattr(fn, "_saved_reduction", None) == _REDUCTION_SUM:
        return None  # `F.cross_entropy(..., reduction="sum")`: summed over samples on purpose
    return {()}


class LossGraph:
    """The graph root of the tensors a backward pass starts from, and its constant factors, read on
    first use only: after the forward pass the root is cold, and wrapping it (and reading a saved
    attribute of it) costs more than the rest of the guard's work on a small model's step. The probe's
    steady cycle reads it on some passes only (see `cycle.Cycle.before_backward`)."""

    __slots__ = ("_tensors", "_fn", "_scale", "_state")

    def __init__(self, tensors: Any) -> None:
        self._tensors = tensors
        self._fn: Any = None
        self._scale: Scale | None = None
        self._state = 0  # 1: the root was read; 2: the factors too

    @property
    def grad_fn(self) -> Any:
        """The root (`grad_fn`) when the pass starts from one tensor, else None; read once (each read
        of `tensor.grad_fn` wraps the node anew)."""
        if self._state == 0:
            t = self._tensors
            self._fn = t.grad_fn if isinstance(t, torch.Tensor) else None
            self._state = 1
        return self._fn

    @property
    def scale(self) -> Scale | None:
        """`graph_scale` of the root."""
        if self._state < 2:
            self._scale = graph_scale(self.grad_fn)
            self._state = 2
        return self._scale
