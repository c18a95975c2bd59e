"""Clears inside a framework's automatic hook: `self.optimizer.zero_grad()` in a Trainer's `training_step`.

Under automatic optimization the framework calls the hook once per micro-batch, runs the backward of
what it returns (or the hook runs it), and steps and clears only at the end of each accumulation window
(`gradient_accumulation_steps` of transformers' Trainer, `accumulate_grad_batches` of Lightning's). A clear
made by the hook itself runs on every micro-batch: with a window of more than one it discards the
gradients of the window's earlier micro-batches, and the step applies the last one alone (GL002). With a
window of one it is harmless, and the window is configured out of sight (a command line, a config file):
the finding is possible. Read from the class definitions alone.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from .losshooks import automatic_hooks
from .parts import LossHooksHost
from .walk import own_nodes


@dataclass(frozen=True)
class HookClear:
    """A `zero_grad()` call in the body of an automatic framework hook."""

    call: ast.Call
    method: str  # `MyTrainer.training_step`


def hook_clears(interp: LossHooksHost) -> list[HookClear]:
    out: list[HookClear] = []
    for method, fn, _hook in automatic_hooks(interp):
        calls = [n for n in own_nodes(fn) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)]
        if any(c.func.attr == "step" for c in calls):  # type: ignore[attr-defined]
            continue  # the override steps itself (an RL trainer's `training_step`): its clear may be its own window's
        out += [HookClear(c, method) for c in calls if c.func.attr == "zero_grad"]  # type: ignore[attr-defined]
    return sorted(out, key=lambda c: (c.call.lineno, c.call.col_offset))
