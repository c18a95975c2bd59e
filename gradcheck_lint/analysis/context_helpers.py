"""Generator functions run by a call: what their `yield`s give, and the contexts they run in.

A call of a generator function of the project (`def chain(*its): for it in its: yield from it`) is run
like any function (`inlining`); what iterating it gives is what its `yield`s give, so the call's value is
the union of the values yielded on the paths run (`Run.yielded`): an optimizer built over
`chain(enc.parameters(), head.parameters())` owns both modules' parameters. Before, the call was worth no value,
and the optimizer owned nothing known (a clear of one of the two modules was not seen to leave the other's
gradients).

Context managers written as generators:

Projects wrap a model's gradient-sync switch in a helper of their own:

    @contextlib.contextmanager
    def ddp_sync(module, sync):
        if sync or not isinstance(module, DDP):
            yield
        else:
            with module.no_sync():
                yield

    with ddp_sync(model, sync=(accum_idx == grad_accumulation - 1)):
        loss = model(x); accelerator.backward(loss)

The body of the `with` runs where the helper yields. Calling the helper runs its body like any function
(`inlining`), so each `yield` it reaches is met in the frame it runs in: the contexts entered around it
(`module.no_sync()`, `torch.no_grad()`). The call's value is the context the `with` body enters: gradient
sync off for a wrapper switched off at every `yield` reached, off on some paths only ("maybe") when some
`yield` runs with it on; no grad when every `yield` runs without grad. Read as an opaque call before, the helper
entered nothing, and the micro-batches it switched off were said to all-reduce (lockbox 17's justgrpo GL006).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from . import names as N
from .flow import Frame
from .values import Value, join


def is_context_manager(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """`@contextlib.contextmanager` / `@contextmanager` (and the async twins) on a generator function."""
    return any(N.last_name(d) in ("contextmanager", "asynccontextmanager") for d in fn.decorator_list)


@dataclass
class Run:
    """One run of a generator function's body: the frames its `yield`s were met in, and what they gave."""

    entry: Frame
    frames: list[Frame] = field(default_factory=list)
    values: list[Value] = field(default_factory=list)

    def yielded(self) -> Value | None:
        """What iterating the call gives: the union of the values yielded (None: no `yield` reached)."""
        return join(self.values) if self.values else None


class YieldContexts:
    """The frames each `yield` of a generator function being run is met in, and the values it gives, per run
    (runs nest)."""

    def __init__(self) -> None:
        self._runs: list[tuple[int, Run]] = []

    def start(self, fn: ast.AST, entry: Frame) -> None:
        self._runs.append((id(fn), Run(entry)))

    def met(self, frame: Frame, value: Value) -> None:
        """A `yield` reached in `frame`, giving `value` (for `yield from it`, `it`'s): recorded for the innermost
        run of the function it is in."""
        if frame.function is None:
            return
        for key, run in reversed(self._runs):
            if key == id(frame.function):
                run.frames.append(frame)
                run.values.append(value)
                return

    def finish(self, fn: ast.AST) -> Run | None:
        """The run of `fn` that ends (None: none was started)."""
        while self._runs:  # (a run left open by an error in the helper's body is dropped with it)
            key, run = self._runs.pop()
            if key == id(fn):
                return run
        return None


def entered_context(run: Run | None) -> Value | None:
    """The context a `with` body enters through a context-manager helper's run (None: none, or no `yield`
    reached)."""
    if run is None or not run.frames:
        return None
    entry = run.entry
    off = [f.sync_off - entry.sync_off for f in run.frames]
    maybe = [f.sync_maybe - entry.sync_maybe for f in run.frames]
    switched = frozenset().union(*off, *maybe)
    if switched:
        sure = frozenset.intersection(*off)
        if sure == switched:
            return Value(const=("context", "sync", switched, True))
        return Value(const=("context", "sync", switched, False))
    if not entry.no_grad and all(f.no_grad for f in run.frames):
        return Value(const=("context", "no_grad", 0))
    return None
