"""GL002: gradients are cleared between the backward and the step that should apply them."""

from __future__ import annotations

import ast
from collections.abc import Iterable

from .. import messages
from ..analysis import TrainingModel
from ..analysis.conditions import Condition
from ..analysis.conventions import convention
from ..analysis.events import Backward, Clear, Step
from ..analysis.gradstate import PathState
from ..analysis.names import NON_FINITE
from ..analysis.provenance import Assumption, assumed
from ..analysis.syntax import code
from ..analysis.values import Holder
from ..fixplan import (
    SAFE,
    UNSAFE,
    FixPlan,
    MoveAfter,
    after_step,
    alone_on_line,
    block_of,
    body_of,
    exits_between,
    on_one_line,
    scope_of,
    source,
    statement_of,
)
from ..registry import Finding, Invalid, Rule, register


@register
class ZeroGradBeforeStep(Rule):
    code = "GL002"
    name = "zero-grad-before-step"
    summary = "Gradients are cleared after backward() and before the step() that should use them."

    VALID = (
        """
import torch
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for x in torch.randn(8, 4).split(2):
    opt.zero_grad()
    model(x).sum().backward()
    opt.step()
""",
        """
import torch
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for i, x in enumerate(torch.randn(8, 4).split(2)):
    (model(x).sum() / 4).backward()
    if (i + 1) % 4 == 0:
        opt.step()
        opt.zero_grad()
""",
    )
    INVALID = (
        Invalid(
            """
import torch
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for x in torch.randn(8, 4).split(2):
    model(x).sum().backward()
    opt.zero_grad()
    opt.step()
""",
            line=7,
            fixed="""
import torch
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for x in torch.randn(8, 4).split(2):
    model(x).sum().backward()
    opt.step()
    opt.zero_grad()
""",
            fix="safe",
        ),
        Invalid(
            """
import torch
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for i, x in enumerate(torch.randn(8, 4).split(2)):
    (model(x).sum() / 4).backward()
    if (i + 1) % 4 == 0:
        opt.step()
    opt.zero_grad()
""",
            line=9,
            fixed="""
import torch
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for i, x in enumerate(torch.randn(8, 4).split(2)):
    (model(x).sum() / 4).backward()
    if (i + 1) % 4 == 0:
        opt.step()
        opt.zero_grad()
""",
            fix="unsafe",
        ),
    )

    def check(self, model: TrainingModel) -> Iterable[Finding]:
        reported: set[int] = set()
        for clear in model.hook_clears:  # `self.optimizer.zero_grad()` in a Trainer's `training_step`
            reported.add(id(clear.call))
            msg, help_ = messages.clear_in_automatic_hook(code(clear.call), clear.method)
            # the framework calls the hook with automatic optimization on, a setting made out of sight
            yield Finding(clear.call, msg, help_, (assumed(Assumption.CONFIG),))
        others: dict[tuple[int, int], bool] = {}  # see _another_models_loss
        for step in sorted(model.steps.values(), key=lambda s: model.order(s.node)):
            holders = model.optimizer_holders(step.optimizer)
            for state in step.states():
                gates = [c for c in model.guards(step, state) if c.is_accumulation_gate]
                # the gradients of this optimizer's own losses first: a clear that also drops what another
                # model's loss wrote here (a GAN's `g_loss` into D) is named for the loss whose step it spoils
                order = {d: _another_models_loss(model, d.backward, step, others) for d in state.discards}
                for discard in sorted(state.discards, key=lambda d: (order[d], d)):
                    if discard.clear in reported or not any(discard.holder.overlaps(h) for h in holders):
                        continue
                    clear = model.clears.get(discard.clear)
                    backward = model.backwards.get(discard.backward)
                    if clear is None or backward is None:
                        continue
                    if discard.refilled and not discard.refilled_same or discard.restored:
                        # refilled by another backward: a by-product cleared on purpose; or put back by hand (a
                        # backup of the gradients restored after the clears of an adversarial attack's passes)
                        continue
                    if discard.refilled and not (_within_window(clear, backward, step)
                                                 or (gates and _in_gated_loop(clear, backward, step))):
                        # A clear that starts each window (or each epoch, dropping at most a trailing partial window).
                        continue
                    if order[discard] and discard.applied_elsewhere and any(
                            c.backward != discard.backward and c.fresh for _, c in state.held(holders)):
                        # `loss_G.backward(); opt_G.step()` ... `opt_D.zero_grad(); loss_D.backward(); opt_D.step()`:
                        # the generator's leftovers in D, after its own step; D steps on its own loss
                        continue
                    if _skips_non_finite(model, clear) or _step_only_if_finite(model, step, clear) \
                            or _in_dropping_arm(model, clear) \
                            or _left_by_a_skipped_step(model, step, clear, backward):
                        continue  # `if grad_norm.isnan(): zero_grad(); continue`: a corrupted window dropped on purpose
                    if gates and _whole_window_skipped(model, clear, step, gates):
                        continue
                    reported.add(discard.clear)
                    msg, help_ = messages.zero_grad_before_step(
                        clear.call_text,
                        backward.call_text,
                        model.line(backward.node),
                        step.call_text,
                        model.line(step.node),
                        accumulation=(gates[0].key if gates else "the inner micro-batch loop") if discard.refilled else None,
                        outer_loop_line=(_outer_window_line(model, clear, backward, step)
                                         if discard.refilled and not gates else None),
                    )
                    lost = next((c for h, c in state.held(holders) if c.backward == discard.backward), None)
                    facts = (clear.provenance, step.provenance, backward.loss.provenance if lost is None else lost.provenance)
                    if discard.holder.pseudo and any(not h.pseudo for h in clear.holders):
                        # the optimizer's parameters are not known (built out of sight): that this clear of a model
                        # (`self.model.base.zero_grad()`, a part of it) wiped them all is assumed (FL-bench's
                        # clients freeze the base or the head so, and step on the rest)
                        facts = (*facts, assumed(Assumption.OPAQUE))
                    if not clear.everything and not any(discard.holder.overlaps(h) for h in clear.holders):
                        # the clear reached these gradients only as the clear of an optimizer whose parameters are
                        # not known, taken to own what its steps applied (`gradstate.PathState.clear`'s
                        # `consumed_by`): assumed (a trainer's `self.train(optimizer=Optimizer)`, handed the class,
                        # or an object made out of sight, is no known optimizer of the model's)
                        facts = (*facts, assumed(Assumption.OPAQUE))
                    if discard.refilled and not gates and _alternation_assumed(model, step):
                        # `def train_on_batch(self, batch, update=True): ... if update: self.opt.step()`, the
                        # function taken as called once per batch: that calls alternate between stepping and
                        # not is the callers' doing, not read (nodegam probes the batch size with `update=False`)
                        facts = (*facts, assumed(Assumption.PARAMETER))
                    if not discard.refilled and not gates and _freezes_a_part(clear, holders):
                        # the gradients of a part of the model dropped right before the step, with no window:
                        # that part does not move this step (DINO freezes its last layer so), a bug or a freeze
                        # as the author meant it
                        facts = (*facts, assumed(Assumption.INTENT))
                    if discard.refilled and any(model.untied_flush(g.statement) for g in gates):
                        # the step of a flush after the loop (`if n_months % N != 0:`) whose count is not read as the
                        # gate's: that a path leaves a partial window and skips it, for this clear to drop, is assumed
                        facts = (*facts, assumed(Assumption.FLUSH))
                    yield Finding(clear.node, msg, help_, facts, fix=self._fix(model, clear, step, state))

    @staticmethod
    def _fix(model: TrainingModel, clear: Clear, step: Step, state: PathState) -> FixPlan | None:
        """Move the clearing call to right after the step (after `scaler.update()` when it follows)."""
        call = clear.node
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "zero_grad"):
            return None  # `p.grad = None` in a loop over parameters: the loop would have to move too
        moved, point = statement_of(model, call), after_step(model, step)
        if moved is None or point is None:
            return None
        anchor = point[1]
        home, target = block_of(model, moved), block_of(model, anchor)
        if on_one_line(moved, anchor) or scope_of(model, moved) is not scope_of(model, anchor):
            return None
        if len(body_of(model, moved) or ()) <= 1:
            return None  # the clear is the whole body of its block
        holders = model.optimizer_holders(step.optimizer)
        # The clear covers only this optimizer's parameters, and no other optimizer steps on them.
        own = not clear.everything and bool(clear.holders) and all(_within(h, holders) for h in clear.holders)
        others = any(
            s.optimizer.uid != step.optimizer.uid and any(h.overlaps(x) for h in model.optimizer_holders(s.optimizer) for x in clear.holders)
            for s in model.steps.values()
        )
        same_block = home is not None and home is target
        # The clear also drops what another model's loss wrote into these parameters (a GAN's `g_loss.backward()`
        # through D): after the step it would no longer keep them out of it (GL005 on the moved code).
        shielding = any(_another_models_loss(model, d.backward, step) for d in state.discards if d.clear == clear.id)
        safe = (alone_on_line(model, moved) and alone_on_line(model, anchor) and same_block and own and not others
                and not exits_between(model, moved, anchor) and not shielding)
        description = f"Move `{source(model, call)}` after `{source(model, anchor)}`"
        return FixPlan(description, (MoveAfter(moved, anchor),), SAFE if safe else UNSAFE)


def _freezes_a_part(clear: Clear, holders: Iterable[Holder]) -> bool:
    """The clear covers a part of what the step updates and not all of it (`for p in
    head.last_layer.parameters(): p.grad = None`), so the rest of the model still steps on its gradients."""
    stepped = list(holders)
    if clear.everything or not clear.holders or not stepped:
        return False
    inside = all(any(_within(h, [s]) for s in stepped) for h in clear.holders)
    return inside and not all(_within(s, clear.holders) for s in stepped)


def _another_models_loss(model: TrainingModel, backward_id: int, step: Step,
                         memo: dict[tuple[int, int], bool] | None = None) -> bool:
    """The backward also wrote parameters another optimizer steps and this one does not: another model's loss.
    `memo`: answers so far for this model, by backward and optimizer (asked once per discard of every path)."""
    key = (backward_id, step.optimizer.uid)
    if memo is not None and key in memo:
        return memo[key]
    backward = model.backwards.get(backward_id)
    mine = model.optimizer_holders(step.optimizer)
    found = backward is not None and any(s.optimizer.uid != step.optimizer.uid and any(
        w.overlaps(h) and not any(w.overlaps(m) for m in mine) for w in backward.written for h in model.optimizer_holders(s.optimizer))
        for s in model.steps.values())
    if memo is not None:
        memo[key] = found
    return found


def _within_window(clear: Clear, backward: Backward, step: Step) -> bool:
    """The clear runs again and again between the backward and its step: some loop around both the clear and
    the backward leaves the step out (the step comes after it), so each of its iterations clears what the
    one before wrote, and only the last reaches the step. The clear may sit in the backward's innermost loop
    (`for mb in batch: zero_grad(); backward()`) or further out (`for chunk in chunks: zero_grad(); for mb in
    chunk: backward()`), with the step after the chunks. A clear whose loops all hold the step too (`for batch
    in loader: zero_grad(); for mb in micro(batch): backward(); step()`) starts each window instead."""
    return any(
        (b and c and b[-1] == c[-1] and b[-1] not in s) or _outer_window(b, s, c) is not None
        for b in backward.loop_stacks for s in step.loop_stacks for c in clear.loop_stacks
    )


def _outer_window(b: tuple[int, ...], s: tuple[int, ...], c: tuple[int, ...]) -> int | None:
    """The loop of the clear's stack `c` around the backward's own loop (of `b`, in the same call context) that
    the step's stack `s` directly encloses (the step comes after it, in that loop's parent): None if none. The
    stacks of one call context share their outer loops; a step reached from another context (a helper that
    also runs elsewhere) says nothing of this loop."""
    if not b:
        return None  # a backward outside any loop
    for k, loop in enumerate(c):
        if loop != b[-1] and b[: k + 1] == c[: k + 1] and len(b) > k + 1 and s == c[:k]:
            return loop
    return None


def _outer_window_line(model: TrainingModel, clear: Clear, backward: Backward, step: Step) -> int | None:
    """The line of the loop whose iterations the clear separates when that loop is not the backward's innermost
    one (`for chunk in chunks: zero_grad(); for mb in chunk: backward()`): None when the clear sits in the
    backward's own loop. Of several, the first in the code (loop ids are addresses)."""
    found = [_outer_window(b, s, c) for b in backward.loop_stacks for s in step.loop_stacks for c in clear.loop_stacks
             if b and c and c[-1] != b[-1]]
    nodes = [model.loops[lid].node for lid in found if lid is not None and lid in model.loops]
    return model.line(min(nodes, key=model.order)) if nodes else None


def _in_gated_loop(clear: Clear, backward: Backward, step: Step) -> bool:
    """The clear runs on every iteration of the loop whose iterations the gated step counts (the step's
    innermost loop, around the backward too): it clears on the micro-batches that do not step. A clear at
    the start of each epoch, outside that loop, drops at most a trailing partial window."""
    return any(
        s and s[-1] in c and s[-1] in b
        for b in backward.loop_stacks for s in step.loop_stacks for c in clear.loop_stacks
    )


def _within(holder: Holder, holders: Iterable[Holder]) -> bool:
    """The parameters of `holder` all belong to one of `holders`."""
    return any(h.uid == holder.uid and h.pseudo == holder.pseudo and holder.path[: len(h.path)] == h.path for h in holders)




def _whole_window_skipped(model: TrainingModel, clear: Clear, step: Step, gates: list[Condition]) -> bool:
    """The clear runs only where the window ends, under each of the step's window gates, right after an `if` that
    holds the step and tests something other than the window (`if optim_disc and optim_gen: opt2.step()` then
    `opt2.zero_grad()`, the flags set from the losses' values): what the clear drops is a whole window whose
    update that test skipped on purpose, never a micro-batch of a window that still steps."""
    if not clear.if_stacks or not all(all(g.id in stack for g in gates) for stack in clear.if_stacks):
        return False
    clear_stmt = statement_of(model, clear.node)
    block = block_of(model, clear_stmt) if clear_stmt is not None else None
    if block is None:
        return False
    window_tests = {id(g.statement) for g in gates}
    counters = {c for g in gates for c in g.counters}
    node: ast.AST | None = step.node
    while node is not None and not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Module)):
        parent = model.parent(node)
        if isinstance(parent, ast.If) and id(parent) in window_tests:
            return False  # up to the window's own gate: no other test holds the step back
        if isinstance(parent, ast.If) and any(x is parent for x in block):
            test = code(parent.test)
            return block.index(clear_stmt) > next(i for i, x in enumerate(block) if x is parent) \
                and "%" not in test and not any(c in test for c in counters)
        node = parent
    return False


def _step_only_if_finite(model: TrainingModel, step: Step, clear: Clear) -> bool:
    """The step runs under a test of the gradients' finiteness, and the clear comes after that test, outside
    it (GNMT's fp16 optimizer: `if math.isfinite(norm): optimizer.step() else: loss_scale /= 2`, then
    `model.zero_grad()`): the gradients the clear drops without a step are those of an overflowed window,
    skipped on purpose, as a GradScaler skips them."""
    clear_stmt = statement_of(model, clear.node)
    block = block_of(model, clear_stmt) if clear_stmt is not None else None
    if block is None:
        return False
    node: ast.AST | None = step.node
    while node is not None and not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Module)):
        parent = model.parent(node)
        # the test and the clear are statements of one block, the clear after it: it runs whatever the test said
        if isinstance(parent, ast.If) and NON_FINITE.search(code(parent.test)) and any(x is parent for x in block) \
                and block.index(clear_stmt) > next(i for i, x in enumerate(block) if x is parent):
            return True
        node = parent
    return False


def _left_by_a_skipped_step(model: TrainingModel, step: Step, clear: Clear, backward: Backward) -> bool:
    """The clear comes before the backward in their function (`zero_grad(); ...; backward()`), so what it drops was
    left by an earlier call or iteration that did not step; and the only tests the step sits under that the clear
    does not are of the loss's or gradients' finiteness (`if not np.isnan(loss): optimizer.step()`): that earlier
    pass skipped its step on a non-finite loss, and the clear drops those gradients on purpose."""
    home = scope_of(model, clear.node)
    if home is None or scope_of(model, backward.node) is not home or scope_of(model, step.node) is not home:
        return False
    return (model.line(clear.node) < model.line(backward.node)
            and model.skipped_only_if_not_finite(step, clear.if_stacks))


def _skips_non_finite(model: TrainingModel, clear: Clear) -> bool:
    """The clear sits in a branch that leaves the iteration, taken when a loss or gradient norm is not
    finite or too large to step on: the window's gradients are dropped on purpose (sana-sprint's
    `if torch.logical_or(grad_norm.isnan(), grad_norm.isinf()): ...zero_grad(); continue`; imaginaire's
    `if torch.isfinite(total_norm) and total_norm > clip: if skip_grad: zero_grad(); scaler.step(opt); break`)."""
    node: ast.AST | None = clear.node
    leaves = False
    while node is not None and not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Module)):
        parent = model.parent(node)
        if isinstance(parent, ast.If) and node in parent.body:
            leaves = leaves or isinstance(parent.body[-1], (ast.Continue, ast.Break, ast.Return, ast.Raise))
            if leaves and (NON_FINITE.search(code(parent.test)) or _SKIP_TEST.search(code(parent.test))):
                return True
        node = parent
    return False


def _in_dropping_arm(model: TrainingModel, clear: Clear) -> bool:
    """The clear sits in the arm of a test that runs when a loss or gradient norm is not finite (`if not
    torch.isfinite(grad_norm): zero_grad() else: scaler.step(opt)`; `if torch.isnan(loss): bad = True;
    zero_grad()`), or that a flag asks to skip, against an arm that steps (`if skip_window: zero_grad() else:
    step()`): dropping that window's gradients is the test's purpose, whatever step comes later."""
    node: ast.AST | None = clear.node
    while node is not None and not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Module)):
        parent = model.parent(node)
        if isinstance(parent, ast.If):
            arm = _non_finite_arm(parent.test)
            if arm is None and parent.orelse:  # (a flag's arm against an arm that steps, not one that falls through)
                arm = _skipping_arm(parent.test)
            if arm is not None and any(x is node for x in (parent.body if arm else parent.orelse)):
                return True
        node = parent
    return False


def _without_not(test: ast.expr) -> tuple[ast.expr, bool]:
    """The test under its `not`s, and whether they negate it."""
    negated = False
    while isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        test, negated = test.operand, not negated
    return test, negated


def _skipping_arm(test: ast.expr) -> bool | None:
    """`if skip_window:` -> True (the body skips), `if not skip_window:` -> False; None for any other test."""
    test, negated = _without_not(test)
    name = test.id if isinstance(test, ast.Name) else test.attr if isinstance(test, ast.Attribute) else None
    return None if name is None or not _SKIP_TEST.match(name) else not negated


def _non_finite_arm(test: ast.expr) -> bool | None:
    """Which arm of an `if` on this test runs when the value tested is not finite: True the body (`if
    torch.isnan(loss):`, `if not torch.isfinite(norm):`), False the `else` (`if torch.isfinite(norm):`); None when
    the test is not only a finiteness test."""
    test, negated = _without_not(test)
    words = {w.lower() for w in NON_FINITE.findall(code(test))}
    if not words:
        return None
    if words == {"isfinite"}:
        finite_when_true = True
        if isinstance(test, ast.BoolOp):
            return None  # `isfinite(n) and n > clip`: the other arm is not only the non-finite one
    elif "isfinite" in words:
        return None
    else:
        finite_when_true = False
        if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
            return None
    return finite_when_true == negated


# A test that asks to skip this update (`if skip_grad:`, `if cfg.skip_step_on_large_norm:`).
_SKIP_TEST = convention("skip_test")


def _alternation_assumed(model: TrainingModel, step: Step) -> bool:
    """The step is skipped only by tests of its function's own parameters (`if update:`), in a function the
    analysis takes as called once per batch (its loop assumed, not read): whether one call steps and the next
    does not depends on what callers out of sight pass."""
    if not model.assumed_repeated(step):
        return False
    tests = [model.conditions.get(c) for stack in step.if_stacks for c in stack]
    if not tests or any(t is None or t.is_accumulation_gate or t.caller is not None for t in tests):
        return False
    node: ast.AST | None = step.node
    while node is not None and not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        node = model.parent(node)
    if node is None:
        return False
    args = node.args
    given = {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)} - {"self", "cls"}
    rebound = {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    return all(t is not None and t.names and set(t.names) <= given - rebound for t in tests)
