"""GL008: a tensor with its autograd graph is accumulated across iterations."""

from __future__ import annotations

import ast
from collections.abc import Iterable

from .. import messages
from ..analysis import TrainingModel
from ..analysis.syntax import code
from ..codemod_plans import keep_values_only
from ..registry import Finding, Invalid, Rule, register


@register
class LossGraphKeptAlive(Rule):
    code = "GL008"
    name = "loss-graph-kept-alive"
    summary = "A loss tensor (with its autograd graph) is accumulated across iterations, so every iteration's graph stays in memory."

    VALID = (
        """
import torch
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
total_loss = 0.0
for x in torch.randn(8, 2, 4):
    opt.zero_grad()
    loss = model(x).pow(2).mean()
    loss.backward()
    opt.step()
    total_loss += loss.item()
""",
    )
    INVALID = (
        Invalid(
            """
import torch
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
total_loss = 0.0
for x in torch.randn(8, 2, 4):
    opt.zero_grad()
    loss = model(x).pow(2).mean()
    loss.backward()
    opt.step()
    total_loss += loss
""",
            line=11,
            fixed="""
import torch
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
total_loss = 0.0
for x in torch.randn(8, 2, 4):
    opt.zero_grad()
    loss = model(x).pow(2).mean()
    loss.backward()
    opt.step()
    total_loss += loss.item()
""",
            fix="unsafe",
        ),
    )

    def check(self, model: TrainingModel) -> Iterable[Finding]:
        for event in sorted(model.keepalives, key=lambda e: model.order(e.node)):
            if event.trained:
                continue
            loop = model.loops.get(event.loop)
            framework = loop is not None and loop.framework  # the framework backpropagates and steps after each call
            stepped = framework or any(event.loop in stack for s in model.steps.values() for stack in s.loop_stacks)
            if not stepped:
                continue  # kept only until the step after the loop (the tasks of a meta-batch): bounded, not a leak
            trained = framework or any(event.loop in stack for b in model.backwards.values() for stack in b.loop_stacks)
            if not trained:
                continue  # a loop that never backpropagates trains nothing (an evaluation loop that steps a scheduler)
            node = loop.node if loop is not None else None
            calls_of = node.name if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) else ""
            msg, help_ = messages.loss_graph_kept_alive(
                code(event.node), event.shown, code(event.stored), model.line(loop.node) if loop is not None else None,
                via_item=_as_written(event.via_item), calls_of=calls_of, framework=framework,
                backward_later=event.backpropagated_later,
            )
            yield Finding(event.node, msg, help_, (event.provenance,), fix=keep_values_only(model, event))


def _as_written(item: str) -> str:
    """`output[loss]` (an item key) as the code writes it: `output["loss"]`."""
    if "[" not in item:
        return item
    base, _, key = item.partition("[")
    key = key.rstrip("]")
    return f'{base}["{key}"]' if key.isidentifier() else f"{base}[{key}]"
