"""Context managers written as generators: the contexts their `yield` runs in.

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
from .values import Value


def is_context_manager(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """`@contextlib.contextmanager` / `@contextmanager` (and the async twins) on a generator function."""
    return any(N.last_name(d) in ("contextmanager", "asynccontextmanager") for d in fn.decorator_list)


@dataclass
class _Run:
    entry: Frame
    frames: list[Frame] = field(default_factory=list)


class YieldContexts:
    """The frames each `yield` of a context-manager helper being run is met in, per run (runs nest)."""

    def __init__(self) -> None:
        self._runs: list[tuple[int, _Run]] = []

    def start(self, fn: ast.AST, entry: Frame) -> None:
        self._runs.append((id(fn), _Run(entry)))

    def met(self, frame: Frame) -> None:
        """A `yield` reached in `frame`: recorded for the innermost run of the function it is in."""
        if frame.function is None:
            return
        for key, run in reversed(self._runs):
            if key == id(frame.function):
                run.frames.append(frame)
                return

    def finish(self, fn: ast.AST) -> Value | None:
        """The context a `with` body enters through this run's helper (None: none, or no `yield` reached)."""
        while self._runs:  # (a run left open by an error in the helper's body is dropped with it)
            key, run = self._runs.pop()
            if key == id(fn):
                break
        else:
            return None
        if not run.frames:
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
