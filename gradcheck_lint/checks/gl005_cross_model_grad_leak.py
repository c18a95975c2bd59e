"""GL005: one model's optimizer steps on gradients another model's loss wrote into it."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable

from .. import messages
from ..analysis import TrainingModel
from ..analysis.events import Step
from ..analysis.gradstate import UNDONE, Contribution
from ..analysis.issued_for import issued_for_other_model
from ..analysis.names import roles
from ..analysis.provenance import Assumption, assumed
from ..analysis.values import Holder
from ..registry import Finding, Invalid, Rule, register


@register
class CrossModelGradLeak(Rule):
    code = "GL005"
    name = "cross-model-grad-leak"
    summary = "A backward reaches another model's parameters and that model's optimizer steps on them."

    VALID = (
        """
import torch
from torch import nn
G, D = nn.Linear(2, 4), nn.Linear(4, 1)
opt_G = torch.optim.Adam(G.parameters())
opt_D = torch.optim.Adam(D.parameters())
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
opt_G = torch.optim.Adam(G.parameters())
opt_D = torch.optim.Adam(D.parameters())
bce = nn.BCEWithLogitsLoss()
for real in torch.randn(8, 4, 4):
    fake = G(torch.randn(4, 2))
    opt_G.zero_grad()
    g_loss = bce(D(fake), torch.ones(4, 1))
    g_loss.backward()
    opt_G.step()
    d_loss = bce(D(real), torch.ones(4, 1)) + bce(D(fake.detach()), torch.zeros(4, 1))
    d_loss.backward()
    opt_D.step()
    opt_D.zero_grad()
""",
            line=16,
        ),
    )

    def check(self, model: TrainingModel) -> Iterable[Finding]:
        # `_adversaries_summed` per pass and model, and each pass's summands: asked once per contribution a step holds
        # (20,000 times in a 1,400-line trainer)
        summed: dict[tuple[int, Holder, frozenset[int]], bool] = {}
        summands: dict[int, list[str]] = {}

        def adversaries_summed(c: Contribution, holder: Holder) -> bool:
            key = (c.backward, holder, frozenset(c.consumers))
            found = summed.get(key)
            if found is None:
                found = summed[key] = _adversaries_summed(model, c, holder, summands)
            return found

        for step in sorted(model.steps.values(), key=lambda s: model.order(s.node)):
            opt = step.optimizer
            holders = model.optimizer_holders(opt)
            leak = None
            for state in sorted(step.states(), key=lambda s: len(s.grads)):
                held = state.held(holders)
                for holder, c in held:
                    if UNDONE in c.consumers:
                        continue  # applied by a step that trains nothing (`trials`): no other model's step used them
                    # applied in this group of steps (`live`): a joint objective of the models stepped together,
                    # unless this model holds a pass of its own that no step applied yet and the pass is named for
                    # the model whose optimizer applied it (a GAN's discriminator: its `d_loss` pass, and the
                    # generator's `g_loss` that also reached it; then `opt_G.step(); opt_D.step()`). Either alone
                    # is no witness: SAC's `pi_loss` reaches the critic, whose step applies it first
                    # ... or unless the pass's loss sums the players' own losses (`lossDreal + lossDfake + lossG`)
                    joint = c.live and not (_own_pass_beside(holder, c, held) and _named_for_consumer(model, c, holder)
                                            or adversaries_summed(c, holder))
                    if (c.consumers and opt.uid not in c.consumers and not joint and c.certain and not holder.pseudo
                            and not model.stale_within_same_model(holder, c, held, holders)
                            and not all(_made_alike(model, step, u, opt.uid)
                                        and any(s.node is step.node for s in model.steps_of(u)) for u in c.consumers)
                            and not all(u in model.table.entities and model.optimizer_holders(model.table.entities[u]) == holders
                                        for u in c.consumers)
                            and not model.exclusive(model.backwards[c.backward].node, step.node)):
                        # (two optimizers of exactly the same parameters, such as a DeepSpeed engine and the
                        # optimizer it wraps, are one model's: no other model's loss is involved)
                        # (an optimizer built afresh on each call of a helper is one optimizer of the code:
                        # its earlier instance stepping these gradients is GL001's stale gradient, not a leak)
                        loss = model.backwards[c.backward].loss_text
                        named = re.fullmatch(r"[A-Za-z_][\w.]*", loss) is not None
                        if named and roles(loss) & roles(model.table.holder_name(holder)):
                            continue  # the loss is named for this model too: a joint objective
                        own = next((model.backwards[o.backward] for _h, o in held if o.fresh and o.backward != c.backward), None)
                        leak = (holder, c, own, _own_pass_beside(holder, c, held, holders))
                        break
                if leak:
                    break
            if leak is None:
                issued = next(filter(None, (issued_for_other_model(model, step, state, holders) for state in
                                            sorted(step.states(), key=lambda s: len(s.grads)))), None)
                if issued is not None:
                    msg, help_ = messages.backward_issued_for_other_model(
                        step.call_text, issued.other.call_text, model.line(issued.other.node), model.table.holder_name(issued.holder),
                        issued.clear.call_text, model.line(issued.clear.node), issued.own.call_text, model.line(issued.own.node),
                        model.optimizer_text(step), discarded=issued.discarded)
                    facts = [step.provenance, issued.clear.provenance]
                    if not issued.discarded:
                        facts.append(assumed(Assumption.INTENT))  # the pass may be meant to train this model too
                    yield Finding(step.node, msg, help_, tuple(facts))
                continue
            holder, c, own, witnessed = leak
            backward = model.backwards[c.backward]
            other_uid = min(c.consumers)
            other_steps = model.steps_of(other_uid)
            other = other_steps[0] if other_steps else None
            msg, help_ = messages.cross_model_grad_leak(
                step.call_text,
                backward.call_text,
                model.line(backward.node),
                model.table.holder_name(holder),
                other.call_text if other else None,
                model.line(other.node) if other else None,
                model.optimizer_text(step),
                own.call_text if own else None,
                own_first=c.live and own is not None and model.order(own.node) < model.order(backward.node),
            )
            others = [model.table.entities[u].provenance for u in sorted(c.consumers) if u in model.table.entities]
            if any(p.startswith("[") for h in model.optimizer_holders(opt) for p in h.path):
                # a part of a module picked by a test (`[p for n, p in model.named_parameters() if "emb_2" in n]`):
                # whether the other loss reaches it at all is not known (it reaches the module, as far as read)
                others.append(assumed(Assumption.PICKED))
            if any(model.table.ownership_unknown(u) for u in c.consumers):
                # the optimizer that applied the pass first has parameters not known: that they are not this step's
                # own is assumed (darts-pt: the model's optimizer handed in before `reset_optimizer` built another)
                others.append(assumed(Assumption.OWNERSHIP))
            if c.live or not witnessed:
                # the other model's loss may be meant to train this one too: so it is when the model has no pass
                # of its own that only its optimizer applies (a shared embedding that a critic's and an actor's
                # losses train, each stepping their own head first), and not certainly a leak
                others.append(assumed(Assumption.INTENT))
            yield Finding(step.node, msg, help_, (step.provenance, c.provenance, *others))


def _own_pass_beside(holder: Holder, c: Contribution, held: list[tuple[Holder, Contribution]],
                     stepped: frozenset[Holder] | None = None) -> bool:
    """`holder` also holds a pass of another backward that no optimizer applied yet: a loss of its own. With the
    stepping optimizer's holders (`stepped`), also a pass into the part of `holder` that optimizer owns: a loss
    module whose whole forward the other model's loss ran (`loss_fn(x, rec)`) and whose `discriminator` part has a
    loss of its own (`loss_fn.d_loss(x, rec)`)."""
    def own_part(h: Holder) -> bool:
        return h == holder or stepped is not None and h.overlaps(holder) and any(h.overlaps(x) for x in stepped)
    return any(own_part(h) and o.fresh and o.certain and o.backward != c.backward for h, o in held)


def _named_for_consumer(model: TrainingModel, c: Contribution, holder: Holder) -> bool:
    """The pass's loss is named for a model an optimizer that applied it updates (`overall_vae_loss` for the
    VAE's optimizer), not for `holder`'s model."""
    loss = model.backwards[c.backward].loss_text
    if re.fullmatch(r"[A-Za-z_][\w.]*", loss) is None:
        return False
    named = roles(loss)
    if not named or named & roles(model.table.holder_name(holder)):
        return False
    for uid in c.consumers:
        ent = model.table.entities.get(uid)
        if ent is not None and any(named & roles(model.table.holder_name(h)) for h in model.optimizer_holders(ent)):
            return True
    return False


def _made_alike(model: TrainingModel, step: Step, one: int, other: int) -> bool:
    """Two optimizers stepped at one node are taken for one (made afresh on each call of a helper, or handed to
    it on two calls), unless the node steps an attribute of `self` and they were built by different constructor
    calls: each instance holds its own (FastVocoder's generator and discriminator optimizers, each wrapped in a
    `ScheduledOptim` whose one `self._optimizer.step()` steps both)."""
    func = step.node.func
    receiver = func.value if isinstance(func, ast.Attribute) else None
    own = isinstance(receiver, ast.Attribute) and isinstance(receiver.value, ast.Name) and receiver.value.id == "self"
    made = model.table.made_at
    return not own or made.get(one) == made.get(other)


def _adversaries_summed(model: TrainingModel, c: Contribution, holder: Holder, summands: dict[int, list[str]]) -> bool:
    """The pass's loss is a sum of named losses, one named for `holder`'s model and another for a model an optimizer
    that applied the pass updates, one of the two a discriminator (`loss = lossDreal + lossDfake + lossG`, then
    `optimizerG.step(); optimizerD.step()`): the players' own losses summed into one backward, so that each steps on
    its adversary's loss too; not one objective the models share. (Names: an assumption of intent, said.)"""
    if c.backward not in summands:
        backward = model.backwards[c.backward]
        summands[c.backward] = _summand_names(model, backward.node, backward.loss_text)
    # (a capital letter alone inside a name is a model's letter: `lossDreal` -> {d}, as `loss_D_real`)
    named = [roles(n) | roles(re.sub(r"(?<=[a-z])([A-Z])(?=[a-z])", r"_\1_", n)) for n in summands[c.backward]]
    own = roles(model.table.holder_name(holder))
    others: set[str] = set()
    for uid in c.consumers:
        ent = model.table.entities.get(uid)
        if ent is not None:
            for h in model.optimizer_holders(ent):
                others |= roles(model.table.holder_name(h))
    others -= own
    if len(named) < 2 or not own or not others or "d" not in own | others:
        return False
    return any(r & own and not r & others for r in named) and any(r & others and not r & own for r in named)


def _summand_names(model: TrainingModel, call: ast.AST, loss: str) -> list[str]:
    """The names summed into `loss` by its last binding before the backward `call` in the same function
    (`loss = lossDreal + lossDfake + lossG`; a weighted term `0.5 * loss_adv` by its name)."""
    if re.fullmatch(r"[A-Za-z_]\w*", loss) is None:
        return []
    line = getattr(call, "lineno", 0)
    # the function the backward is written in (of this file or of another file of the project)
    scope: ast.AST = model.module
    up = model.parent(call)
    while up is not None:
        if isinstance(up, (ast.FunctionDef, ast.AsyncFunctionDef)):
            scope = up
            break
        up = model.parent(up)
    bound = None
    for node in ast.walk(scope):
        if (isinstance(node, ast.Assign) and node.lineno < line and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name) and node.targets[0].id == loss
                and (bound is None or node.lineno > bound.lineno)):
            bound = node
    if bound is None:
        return []
    out: list[str] = []
    todo: list[ast.expr] = [bound.value]
    while todo:
        expr = todo.pop()
        if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Add):
            todo += [expr.right, expr.left]
        elif isinstance(expr, ast.BinOp) and isinstance(expr.op, (ast.Mult, ast.Div)):
            terms = [e for e in (expr.left, expr.right) if isinstance(e, ast.Name)]
            if len(terms) == 1 and not isinstance(expr.left if terms[0] is expr.right else expr.right, ast.Name):
                out.append(terms[0].id)  # `0.5 * loss_adv`, `loss_adv * lambda_adv`... by place: one name
            elif terms:
                out.append(terms[0].id if isinstance(expr.op, ast.Div) else "")
        elif isinstance(expr, ast.Name):
            out.append(expr.id)
    return [n for n in out if n]

