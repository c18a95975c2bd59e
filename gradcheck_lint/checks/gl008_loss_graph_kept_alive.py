"""GL008: a tensor with its autograd graph is accumulated across iterations."""

from __future__ import annotations

import ast
from collections.abc import Iterable

from .. import messages
from ..analysis import TrainingModel
from ..analysis.events import KeepAlive
from ..analysis.provenance import Assumption, Provenance, assumed
from ..analysis.syntax import code
from ..codemod_plans import keep_values_only
from ..fixplan import scope_of
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
            if loop is not None and (loop.ran and not loop.iterates or _leaves_after(model, event.node, loop.node)) \
                    and all(all(fresh for _, fresh in context) for context in event.outer):
                # `total += loss; break`: no iteration goes round after the graph is kept, and any loop around makes
                # the total afresh: one graph is kept, nothing grows
                continue
            framework = loop is not None and loop.framework  # the framework backpropagates and steps after each call
            stepped = framework or _steps_in(model, event.loop)
            outlived = None if stepped else _step_loop_outlived(model, event)
            if not stepped and outlived is None:
                # kept only until the step after the loop (the tasks of a meta-batch, one window's micro-batches
                # in a list made afresh for each step): bounded, not a leak
                continue
            trained = framework or any(event.loop in stack for b in model.backwards.values() for stack in b.loop_stacks)
            if not trained:
                continue  # a loop that never backpropagates trains nothing (an evaluation loop that steps a scheduler)
            node = loop.node if loop is not None else None
            calls_of = node.name if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) else ""
            shown = model.loops.get(outlived) if outlived is not None else loop  # the loop whose iterations it outlives
            at = model.line(shown.node) if shown is not None else None
            msg, help_ = messages.loss_graph_kept_alive(
                code(event.node), event.shown, code(event.stored), at,
                via_item=_as_written(event.via_item), calls_of=calls_of, framework=framework,
                backward_later=event.backpropagated_later, sequence=isinstance(event.stored, (ast.List, ast.Tuple)),
                freed_by=None if event.via_item else _freed_by(model, event),
            )
            facts: tuple[Provenance, ...] = (event.provenance,)
            if shown is not None and shown.implicit:
                # the calls of a function nothing here calls, taken to run once per batch: a calling context assumed
                # (Lightning's `validation_step`, which nothing in the catalogue calls so, runs under no grad)
                facts = (*facts, assumed(Assumption.CONTEXT))
            yield Finding(event.node, msg, help_, facts, fix=keep_values_only(model, event), via=event.via)


def _freed_by(model: TrainingModel, event: KeepAlive) -> tuple[str, int] | None:
    """The backward call, and its line, that runs through the stored value itself (`loss.backward()`,
    `scaler.scale(loss).backward()` of `total += loss`) in the same iteration of the loop, in the same function, and
    does not retain the graph: it freed the activations the kept graph saved. None when no such call is read."""
    stored = code(event.stored)
    home = scope_of(model, event.node)
    for b in sorted(model.backwards.values(), key=lambda b: model.order(b.node)):
        if b.loss_text == stored and not b.retain_graph and scope_of(model, b.node) is home \
                and any(event.loop in stack for stack in b.loop_stacks):
            return b.call_text, model.line(b.node)
    return None


def _leaves_after(model: TrainingModel, node: ast.AST, loop: ast.AST) -> bool:
    """Every iteration that runs the keeping statement then leaves the loop: a `break`, `return` or `raise` follows
    it in its block, or in a block around it within the loop, with no `continue` before (OpenFL's `for idx, batch
    in enumerate(loader): if idx < n: continue ... total_loss += loss; break`: the loop goes round only before the
    statement runs). A loop between the statement and `loop` stops the reading (its `break` leaves only itself)."""
    current: ast.AST = node
    while not isinstance(current, ast.stmt):
        up = model.parent(current)
        if up is None:
            return False
        current = up
    while current is not loop:
        parent = model.parent(current)
        if parent is None or isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.Module)):
            return False
        block = next((b for b in (getattr(parent, f, None) for f in ("body", "orelse", "finalbody"))
                      if isinstance(b, list) and any(x is current for x in b)), None)
        if block is None:
            return False
        after = block[next(i for i, x in enumerate(block) if x is current) + 1:]
        for stmt in after:
            if isinstance(stmt, ast.Continue):
                return False
            if isinstance(stmt, (ast.Break, ast.Return, ast.Raise)):
                return True
        if parent is not loop and isinstance(parent, (ast.For, ast.AsyncFor, ast.While)):
            return False
        current = parent
    return False


def _steps_in(model: TrainingModel, loop: int) -> bool:
    """Some step runs inside the loop: not a framework's gated step in a loop that runs one of its windows (`for _ in
    range(engine.gradient_accumulation_steps()): ... engine.step()`), which steps after the loop's last iteration only,
    as a step after the loop would."""
    one_window = _runs_one_window(model, loop)
    return any(loop in stack and not (one_window and s.framework_gated)
               for s in model.steps.values() for stack in s.loop_stacks)


def _runs_one_window(model: TrainingModel, lid: int) -> bool:
    """The loop is `for _ in range(n)` with `n` an object's accumulation window as read (`window_size`), directly or
    through a name the enclosing function binds to it once."""
    loop = model.loops.get(lid)
    node = loop.node if loop is not None else None
    if not (isinstance(node, ast.For) and isinstance(node.iter, ast.Call) and isinstance(node.iter.func, ast.Name)
            and node.iter.func.id == "range" and len(node.iter.args) == 1 and not node.iter.keywords):
        return False
    bound = node.iter.args[0]
    if isinstance(bound, ast.Name):
        scope = scope_of(model, node)
        if scope is None:
            return False
        values = [n.value for n in ast.walk(scope) if isinstance(n, ast.Assign)
                  and any(isinstance(t, ast.Name) and t.id == bound.id for t in n.targets)]
        if len(values) != 1 or any(isinstance(n, (ast.AugAssign, ast.AnnAssign)) and isinstance(n.target, ast.Name)
                                   and n.target.id == bound.id for n in ast.walk(scope)):
            return False
        bound = values[0]
    return id(bound) in model.window_reads


def _step_loop_outlived(model: TrainingModel, event: KeepAlive) -> int | None:
    """The loop that steps around the storing loop (whose step comes after it: a micro-batch loop) when the
    accumulator is not made afresh within its iterations (`losses = []` once for the run, `for chunk in loader:
    for mb in chunk: losses.append(loss)`, then the step): every step's graphs stay. None when each step's
    iteration makes it anew (one window's graphs, dropped at the next step) or no loop around steps."""
    found: list[int] = []
    for context in event.outer:
        for lid, fresh in context:
            if _steps_in(model, lid):
                if not fresh and lid in model.loops:
                    found.append(lid)
                break
    # loop ids are addresses: the one shown is chosen by its place in the code, the same in every process
    return min(found, key=lambda lid: model.order(model.loops[lid].node)) if found else None


def _as_written(item: str) -> str:
    """`output[loss]` (an item key) as the code writes it: `output["loss"]`."""
    if "[" not in item:
        return item
    base, _, key = item.partition("[")
    key = key.rstrip("]")
    return f'{base}["{key}"]' if key.isidentifier() else f"{base}[{key}]"
