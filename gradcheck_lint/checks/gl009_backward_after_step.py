"""GL009: a backward pass goes through a graph whose parameters an optimizer step already changed."""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable

from .. import messages
from ..analysis import TrainingModel
from ..analysis.events import Backward, Step
from ..analysis.provenance import MODELLED, Assumption, assumed
from ..analysis.saved_tensors import SavedTable, attribute_saves, class_saves, saved_table
from ..analysis.syntax import code
from ..analysis.values import Holder
from ..fixplan import scope_of
from ..registry import Finding, Invalid, Rule, register


@register
class BackwardAfterStep(Rule):
    code = "GL009"
    name = "backward-after-step"
    summary = "A backward pass goes through a forward pass made before an optimizer step changed that model's parameters."

    VALID = (
        """
import torch
from torch import nn
G, D = nn.Linear(2, 4), nn.Linear(4, 1)
opt_G, opt_D = torch.optim.Adam(G.parameters()), torch.optim.Adam(D.parameters())
bce = nn.BCEWithLogitsLoss()
for real in torch.randn(8, 4, 4):
    fake = G(torch.randn(4, 2))
    opt_D.zero_grad()
    d_loss = bce(D(real), torch.ones(4, 1)) + bce(D(fake.detach()), torch.zeros(4, 1))
    d_loss.backward()
    opt_D.step()
    opt_G.zero_grad()
    g_loss = bce(D(fake), torch.ones(4, 1))
    g_loss.backward()
    opt_G.step()
""",
    )
    INVALID = (
        Invalid(
            """
import torch
from torch import nn
G, D = nn.Linear(2, 4), nn.Linear(4, 1)
opt_G, opt_D = torch.optim.Adam(G.parameters()), torch.optim.Adam(D.parameters())
bce = nn.BCEWithLogitsLoss()
for real in torch.randn(8, 4, 4):
    fake = G(torch.randn(4, 2))
    d_fake = D(fake)
    opt_D.zero_grad()
    d_loss = bce(D(real), torch.ones(4, 1)) + bce(d_fake, torch.zeros(4, 1))
    d_loss.backward(retain_graph=True)
    opt_D.step()
    opt_G.zero_grad()
    g_loss = bce(d_fake, torch.ones(4, 1))
    g_loss.backward()
    opt_G.step()
""",
            line=16,
        ),
    )

    def check(self, model: TrainingModel) -> Iterable[Finding]:
        reported: set[tuple[int, int]] = set()
        table = saved_table()
        for backward in sorted(model.backwards.values(), key=lambda b: model.order(b.node)):
            # one per backward and place: a helper of another file (`update_params(opt, net, loss)`) is reported at
            # the call that ran the stale backward, not at the first call of it
            place = (id(backward.node), id(model.anchor(backward.node, backward.via)[0])) if backward.stale_graphs else (0, 0)
            if not backward.stale_graphs or place in reported:
                continue
            # Only a parameter some op saved for backward makes it raise: a layer known to save its weight
            # (linear, convolution, norm) makes the finding certain; layers known to save none of theirs
            # (an embedding, activations) make none; a module the table does not know leaves it possible.
            saves = {g: _stepped_saves(model, table, g) for g in backward.stale_graphs}
            # a container (`nn.Sequential`) runs its children, each in the set on its own: judged by them when
            # one of them is known, else not known
            children_known = any(v is not None for g, v in saves.items() if not _container(model, g[0]))
            saves = {g: (False if children_known else None) if _container(model, g[0]) else v for g, v in saves.items()}
            # a graph built once before the loop whose every iteration backpropagates through it: the first pass freed
            # what it saved (any op between a parameter and the loss saves the input it multiplied, or the indices it
            # took), so the next raises whatever the step changed (`x = emb(ids)`, then `for k in range(n):` and a
            # backward through it)
            again = {g for g in backward.stale_graphs if _built_before_its_loop(model, backward, g[1])}
            saves = {g: True if g in again and v is False else v for g, v in saves.items()}
            if not any(v is not False for v in saves.values()):
                continue
            known = any(saves.values())
            # the first by module, forward and step in source order (the step's id is its node's address)
            # a graph stale only because a value the previous iteration left still holds it is an assumption
            # unless the analysis read the forward that made it: a class of another file may return it
            # detached (transformer-xl's `mems`); firm ones come first
            live = [g for g in backward.stale_graphs if saves[g] is not False]
            firm = [g for g in live if g in backward.firm_graphs or _forward_read(model, g[0])]
            pool = firm or live
            # ... and those some path's loss held through code read: a method not read may hand on no graph
            read = [g for g in pool if g in backward.read_graphs]
            pool = read or pool
            holder, site, step_id, step_text = min(pool, key=lambda g: _stale_order(model, g))
            loop = _built_before_its_loop(model, backward, site)
            forward = model.forward_sites.get(site)
            step = model.step_node(step_id)
            reported.add(place)
            msg, help_ = messages.backward_after_step(
                backward.call_text,
                model.table.holder_name(holder),
                code(forward) if forward is not None else None,
                model.line(forward) if forward is not None else None,
                step_text,
                model.line(step) if step is not None else None,
                saved=known and bool(read),
                freed_loop=model.line(loop) if loop is not None else None,
            )
            module = model.table.entities.get(holder.uid)
            stepper = next((s for s in model.steps.values() if id(s.node) == step_id), None)
            facts = [x.provenance for x in (module, stepper) if x is not None]
            if not firm:
                facts.append(assumed(Assumption.CARRIED))
            if not read:
                facts.append(assumed(Assumption.OPAQUE))
            if stepper is not None and _picked_by_index(model, stepper):
                facts.append(assumed(Assumption.CHOICE))
            yield Finding(backward.node, msg, help_, (*facts, MODELLED if known else assumed(Assumption.SAVED)), via=backward.via)


def _built_before_its_loop(model: TrainingModel, backward: Backward, site: int) -> ast.AST | None:
    """The loop around the backward (in its function, not retaining the graph) that the forward call of the stale graph
    sits before: every iteration after the first backpropagates through a graph the first freed. None otherwise."""
    forward = model.forward_sites.get(site)
    if backward.retain_graph or forward is None:
        return None
    up = model.parent(backward.node)
    while up is not None and not isinstance(up, _SCOPES):
        if isinstance(up, (ast.For, ast.AsyncFor, ast.While)) and backward.node in _own(up):
            inside = any(n is forward for n in ast.walk(up))
            scope = scope_of(model, up)
            if not inside and scope is not None and any(n is forward for n in ast.walk(scope)) \
                    and model.order(forward) < model.order(up):
                return up
            return None
        up = model.parent(up)
    return None


_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.Module)


def _own(loop: ast.AST) -> list[ast.AST]:
    """The nodes of a loop's body (its `else` excluded)."""
    return [n for stmt in getattr(loop, "body", []) for n in ast.walk(stmt)]


_CONTAINERS = frozenset({"torch.nn.Sequential", "torch.nn.ModuleList", "torch.nn.ModuleDict"})


def _picked_by_index(model: TrainingModel, step: Step) -> bool:
    """The step's optimizer is the item of a loop's index (`for i in range(n): ... self.optimizers[i].step()`): each
    iteration steps another item. Objects kept in one list are read as one, so which model's graph the backward goes
    through after which item's step rests on the pairing of items the analysis does not follow (`outputs[i]` with
    `optimizers[i]`, mutual learning's loop over its models: DCML, lockbox 32)."""
    receiver = step.node.func.value if isinstance(step.node.func, ast.Attribute) else None
    if not isinstance(receiver, ast.Subscript) or not isinstance(receiver.slice, ast.Name):
        return False
    index = receiver.slice.id
    up = model.parent(step.node)
    while up is not None and not isinstance(up, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Module)):
        if isinstance(up, (ast.For, ast.AsyncFor)) and any(
                isinstance(n, ast.Name) and n.id == index for n in ast.walk(up.target)):
            return True
        up = model.parent(up)
    return False


def _stale_order(model: TrainingModel, graph: tuple[Holder, int, int, str]) -> tuple[Holder, int, tuple[int, int, int, int], str]:
    holder, site, step_id, step_text = graph
    step = model.step_node(step_id)
    return holder, site, model.order(step) if step is not None else (-1, -1, 0, 0), step_text


def _forward_read(model: TrainingModel, holder: Holder) -> bool:
    """A module whose forward the analysis read: one of torch's own (`nn.Sequential`, `nn.LSTM`: it returns
    what it computed, graph and all) or a class of this file (run as written, `detach()` and `no_grad` seen)."""
    qualified = model.table.classes.get(holder.uid) if not holder.pseudo else None
    if qualified is None:
        return False
    return qualified.startswith("torch.") and not holder.path or qualified in model.class_defs


def _stepped_saves(model: TrainingModel, table: SavedTable, graph: tuple[Holder, int, int, str]) -> bool | None:
    """Whether the forward pass behind a stale graph saved parameters the step changed: when the step changed only
    parts of the module whose forward built the graph (an optimizer over `[model.alpha]` or a DARTS supernet's
    architecture parameters, the graph of the whole model's forward), what those parts save decides, not the
    layers beside them it never stepped (`_saves`)."""
    holder, _site, step_id, _text = graph
    stepper = next((s for s in model.steps.values() if id(s.node) == step_id), None)
    stepped = [h for h in model.table.optimizer_holders(stepper.optimizer) if h.overlaps(holder)] if stepper else []
    if not stepped or any(h.pseudo or len(h.path) <= len(holder.path) for h in stepped):
        return _saves(model, table, holder)
    found = [_saves(model, table, h) for h in stepped]
    return True if any(found) else False if all(f is False for f in found) else None


def _container(model: TrainingModel, holder: Holder) -> bool:
    return not holder.path and model.table.classes.get(holder.uid) in _CONTAINERS


def _saves(model: TrainingModel, table: SavedTable, holder: Holder) -> bool | None:
    """Whether the forward pass of this module saves parameters of its own for backward (the generated
    table of torch.nn modules, also for the layers a class of the user's read in the project builds, through
    the classes of the user's it builds in turn); None when not known (a class out of sight, a container, a part
    of a part)."""
    if holder.pseudo or len(holder.path) > 1:
        return None
    qualified = model.table.classes.get(holder.uid)
    if qualified is None:
        return None
    if holder.path:  # a part of a module of a class read (`critic.Q1` of `self.Q1 = nn.Linear(...)`): the layers built for it
        read = _class_read(model, qualified)
        if read is None:
            return None
        return attribute_saves(read[0], holder.path[0], read[1], table, lambda q: _class_read(model, q))
    found = table.layer_saves(qualified)
    if found is not None:
        return bool(found)
    read = _class_read(model, qualified)  # a class built in sight: what layers it is made of
    return class_saves(read[0], read[1], table, lambda q: _class_read(model, q)) if read is not None else None


def _class_read(model: TrainingModel, qualified: str) -> tuple[ast.ClassDef, Callable[[ast.AST], str | None]] | None:
    """The definition of a class of this file, or of another file of the project, and how its names qualify."""
    cls = model.class_defs.get(qualified)
    if cls is not None:
        return cls, model.qualify
    return model.project.class_source(qualified) if model.project is not None else None
