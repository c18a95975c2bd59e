"""GL007: gradients a GradScaler still scales are clipped or applied, or unscaled twice in one window."""

from __future__ import annotations

import ast
from collections.abc import Iterable

from .. import messages
from ..analysis import TrainingModel
from ..analysis.conventions import convention
from ..analysis.provenance import Assumption, assumed
from ..analysis.syntax import code, reads_grad_of
from ..analysis.walk import iter_tree
from ..codemod_plans import unscale_before_clip
from ..fixplan import scope_of
from ..registry import Finding, Invalid, Rule, register

# When one call breaks the order in several ways, the first of these is what is said about it.
_PRIORITY = ("clip_before_unscale", "clip_before_scaler_step", "modify_before_unscale", "norm_before_unscale", "unscale_twice",
             "bypass", "partial")


@register
class AmpScaledGradients(Rule):
    code = "GL007"
    name = "amp-scaled-gradients"
    summary = "Gradients still multiplied by a GradScaler's scale are clipped, modified or stepped on, or unscaled twice per step."

    VALID = (
        """
import torch
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
scaler = torch.amp.GradScaler("cpu")
for x in torch.randn(8, 2, 4):
    opt.zero_grad()
    scaler.scale(model(x).pow(2).mean()).backward()
    scaler.unscale_(opt)
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    scaler.step(opt)
    scaler.update()
""",
    )
    INVALID = (
        Invalid(
            """
import torch
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
scaler = torch.amp.GradScaler("cpu")
for x in torch.randn(8, 2, 4):
    opt.zero_grad()
    scaler.scale(model(x).pow(2).mean()).backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    scaler.step(opt)
    scaler.update()
""",
            line=9,
            fixed="""
import torch
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
scaler = torch.amp.GradScaler("cpu")
for x in torch.randn(8, 2, 4):
    opt.zero_grad()
    scaler.scale(model(x).pow(2).mean()).backward()
    scaler.unscale_(opt)
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    scaler.step(opt)
    scaler.update()
""",
            fix="safe",
        ),
    )

    def check(self, model: TrainingModel) -> Iterable[Finding]:
        reported: set[int] = set()
        for misuse in sorted(model.amp_misuses, key=lambda m: (model.order(m.node), _PRIORITY.index(m.kind))):
            if id(misuse.node) in reported:
                continue
            if misuse.kind == "bypass" and isinstance(misuse.node, ast.Call) and isinstance(misuse.node.func, ast.Attribute) \
                    and misuse.node.func.attr != "step":
                continue  # `xm.optimizer_step(opt)`: torch_xla's own step (its AMP has a scaler of its own)
            if misuse.kind in ("bypass", "clip_before_unscale") and misuse.other is not None and model.exclusive(misuse.node, misuse.other):
                continue  # `if use_amp: scaler.scale(loss).backward()` ... `else: optimizer.step()`: never on one run
            if not model.steps_of(misuse.optimizer.uid):
                continue  # every rule is about gradients a step applies: an optimizer never stepped has no window
            if misuse.kind == "norm_before_unscale" and _SCALE_READ.search(code(_statement_of(model, misuse.node))):
                continue  # `p.grad.norm() / scaler.get_scale()`: the norm is unscaled by hand
            if misuse.kind == "norm_before_unscale" and _used_free_of_scale(model, misuse.node):
                continue  # FGM's `r = eps * p.grad / norm`: a direction, the same whatever the scale
            if misuse.kind == "clip_before_scaler_step" and _unscales_somewhere(model):
                continue  # its backward is out of sight, and so may be which path unscales: HF Trainer's copies
            if misuse.kind == "partial" and any(h.overlaps(x) for h in model.optimizer_holders(misuse.optimizer)
                                                for x in model.table.hooked_after_accumulation):
                # a hook run after accumulation (`register_post_accumulate_grad_hook`) may step inside backward; a
                # gradient or communication hook only rescales what backward writes: the clip sees part of the window
                continue
            if misuse.kind == "partial" and all(_skipped_only_if_not_finite(model, s, misuse)
                                                for s in model.steps_of(misuse.optimizer.uid)):
                continue  # the step is skipped only on a non-finite gradient (see `_skipped_only_if_not_finite`)
            if misuse.kind == "partial" and not _on_a_stepping_run(model, misuse):
                continue  # `if deepspeed_plugin is None: optimizer.step()`: the clip is left over only on runs that never step
            reported.add(id(misuse.node))
            node = misuse.node
            opt = model.table.label(misuse.optimizer.uid)
            if misuse.kind == "bypass" and isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                opt = code(node.func.value)  # the name the step is called on
            other = code(misuse.other) if misuse.other is not None else None
            other_line = model.line(misuse.other) if misuse.other is not None else None
            # (the clip of a partial window mixes scaled and unscaled gradients only when what comes after is scaled)
            scaled = not misuse.framework_settings and any(b.amp_scaled for b in model.backwards.values()
                                                           if b.node is misuse.other)
            # a clip written before the backward of its own iteration (`zero_grad(); clip(); backward(); step()`): no
            # window is cut short, the step's gradients are never clipped
            said = "before_backward" if misuse.kind == "partial" and _written_before(model, misuse.node, misuse.other) \
                else misuse.kind
            # an `unscale_` outside the accumulation gate its optimizer's step sits under (`if (i + 1) % N == 0:`):
            # it runs again on the micro-batches that do not step, so it is a finding about the window
            window = _window_gate_not_around(model, misuse) if misuse.kind == "unscale_twice" else None
            msg, help_ = messages.amp_scaled_gradients(said, code(misuse.node), opt, other, other_line, scaled,
                                                       misuse.framework, misuse.framework_unscale, window=window)
            facts = [misuse.optimizer.provenance]
            if misuse.framework_settings and misuse.kind in _SCALE_DEPENDENT:
                # the framework scales only under a mixed-precision setting the code does not fix (`Accelerator()`,
                # told by `accelerate launch --mixed_precision fp16`, or `mixed_precision=args.mixed_precision`)
                facts.append(assumed(Assumption.CONFIG))
            if misuse.kind == "partial" and _owner_among_unknowns(model, misuse.optimizer.uid):
                # the window is that of one of several optimizers whose parameters are not known: that the clip's
                # parameters are this one's, and that the later backward writes them, is assumed (eval-nas's
                # controller optimizer, built by a factory out of sight beside the shared model's, never stepped in
                # the loop that clips the shared model). The one optimizer stepped, of parameters not known, is the
                # clipped parameters' (a model clipping `self.parameters()` for the optimizer a trainer gave it)
                facts.append(assumed(Assumption.OWNERSHIP))
            if misuse.switch_settings and _unscale_under_a_test(model, misuse.node, misuse.switch_settings):
                # scaled by a scaler that may be off (`GradScaler(enabled=args.amp)` built in another method, or a
                # scaler known by its name) and `if use_amp: scaler.unscale_(opt)` here, a test of a setting of that
                # name (CAT's manager, lockbox 32): the author ties the scaler to the test; that it is on where the
                # test is off is assumed
                facts.append(assumed(Assumption.CONFIG))
            if misuse.kind == "partial" and _another_steps_whole(model, misuse):
                # the clip is another optimizer's, whose step follows it with no backward between (`clip_grad_norm_(
                # net.parameters())` right before `optimizer.step()`, then `aux_loss.backward(); aux_optimizer.step()`
                # on part of the same model: CompressAI's quantiles, ModulatedAtt, lockbox 43): that this one's window
                # was meant to be clipped by it is the author's intent, not read
                facts.append(assumed(Assumption.INTENT))
            if misuse.kind == "modify_before_unscale" and _replaces_outright(misuse.node):
                # `p.grad.fill_(0.01)`, `p.grad.copy_(fake)`: values written in place of the gradients, not the
                # gradients changed (accelerate's tests fake a gradient to see the step skipped or taken): whether
                # they were meant in the scaled units is the author's intent, not read
                facts.append(assumed(Assumption.INTENT))
            yield Finding(misuse.node, msg, help_, tuple(facts), fix=unscale_before_clip(model, misuse))


def _replaces_outright(node: ast.AST) -> bool:
    """`p.grad.fill_(c)`, `p.grad.copy_(x)` of an `x` that does not read the gradient: the gradient replaced."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
        return False
    if node.func.attr == "fill_":
        return True
    grad = node.func.value
    owner = grad.value if isinstance(grad, ast.Attribute) and grad.attr == "grad" else None
    return node.func.attr == "copy_" and len(node.args) == 1 and owner is not None \
        and not reads_grad_of(node.args[0], owner)


_SCALE_READ = convention("loss_scale_read")
# the misuses that are one only where the gradients are scaled (a clip of part of a window is one whatever the scale)
_SCALE_DEPENDENT = frozenset({"clip_before_unscale", "norm_before_unscale", "modify_before_unscale"})


def _owner_among_unknowns(model: TrainingModel, uid: int) -> bool:
    """The optimizer's parameters are not known, and another stepped optimizer's are not either."""
    table = model.table
    if not table.ownership_unknown(uid):
        return False
    return any(other != uid and model.steps_of(other) and table.ownership_unknown(other)
               for other in table.ownership)


def _skipped_only_if_not_finite(model: TrainingModel, step, misuse) -> bool:
    """The step is skipped only on a non-finite gradient, in the same loop as the clip: the clip saw a whole
    (broken) window, not part of one (a clip in a micro-batch loop inside the step's loop still does)."""
    return model.skipped_only_if_not_finite(step, misuse.ifs) and _innermost_loop(model, step.node) is _innermost_loop(
        model, misuse.node)


def _innermost_loop(model: TrainingModel, node: ast.AST) -> ast.AST | None:
    """The `for`/`while` loop (or the function) closest around `node`."""
    up = model.parent(node)
    while up is not None and not isinstance(up, _LOOPS_OR_FUNCTIONS):
        up = model.parent(up)
    return up


_LOOPS_OR_FUNCTIONS = (ast.For, ast.AsyncFor, ast.While, ast.FunctionDef, ast.AsyncFunctionDef)


def _statement_of(model: TrainingModel, node: ast.AST) -> ast.AST:
    while not isinstance(node, ast.stmt):
        up = model.parent(node)
        if up is None:
            break
        node = up
    return node


def _used_free_of_scale(model: TrainingModel, node: ast.AST) -> bool:
    """`norm = torch.norm(p.grad)` whose every use a common scale of the gradients cannot change: a comparison with
    0, a finiteness test, and the denominator of a ratio with the same gradients (`eps * p.grad / norm`, the
    direction of an FGM or PGD attack). The scale cancels in the ratio and keeps the sign and finiteness."""
    stmt = _statement_of(model, node)
    if not (isinstance(stmt, ast.Assign) and stmt.value is node and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], ast.Name) and isinstance(node, ast.Call) and node.args):
        return False
    name, grads = stmt.targets[0].id, code(node.args[0])
    scope = _innermost_function(model, stmt)
    uses = [n for n in iter_tree(scope) if isinstance(n, ast.Name) and n.id == name and n is not stmt.targets[0]]
    ratios = 0
    for use in uses:
        up = model.parent(use)
        if isinstance(use.ctx, ast.Store) or up is None:
            return False
        if isinstance(up, ast.BinOp) and isinstance(up.op, ast.Div) and up.right is use \
                and any(code(n) == grads for n in iter_tree(up.left) if isinstance(n, (ast.Attribute, ast.Name))):
            ratios += 1
        elif isinstance(up, ast.Compare) and len(up.ops) == 1 and all(
                isinstance(o, ast.Constant) and o.value == 0 for o in (up.left, *up.comparators) if o is not use):
            continue
        elif isinstance(up, ast.Call) and _FINITENESS.search(code(up.func)):
            continue
        else:
            return False
    return ratios > 0


_FINITENESS = convention("non_finite")


def _innermost_function(model: TrainingModel, node: ast.AST) -> ast.AST:
    up = model.parent(node)
    while up is not None and not isinstance(up, (ast.FunctionDef, ast.AsyncFunctionDef)):
        up = model.parent(up)
    return up if up is not None else model.module


def _unscale_under_a_test(model: TrainingModel, clip: ast.AST, settings: set[str]) -> bool:
    """The function of the clip calls `unscale_` on an arm of an `if` that does not hold the clip, whose test reads a
    setting of one of these names (`if use_amp:` of `use_amp = args.amp` for "amp"; any test for "", a scaler known
    only by its name): a test the author takes for whether the scaler is on."""
    fn = _innermost_function(model, clip)
    aliases = {t.id: n.value for n in iter_tree(fn) if type(n) is ast.Assign
               for t in n.targets if type(t) is ast.Name}  # `use_amp = args.amp`

    def names(expr: ast.AST) -> set[str]:
        return {n.id if isinstance(n, ast.Name) else n.attr for n in iter_tree(expr) if isinstance(n, (ast.Name, ast.Attribute))}

    def tested(test: ast.expr) -> set[str]:
        found = names(test)
        return found.union(*(names(aliases[name]) for name in found if name in aliases))

    for node in iter_tree(fn):
        if type(node) is ast.If and not any(n is clip for n in iter_tree(node)) and any(
                type(n) is ast.Attribute and n.attr == "unscale_" for n in iter_tree(node)) and (
                "" in settings or settings & tested(node.test)):
            return True
    return False


def _unscales_somewhere(model: TrainingModel) -> bool:
    """The file calls `unscale_` somewhere (a helper that backpropagates and unscales, a branch before the
    clip): with the backward out of sight, which path unscales is not known well enough to say the clip
    sees scaled gradients."""
    return any(type(n) is ast.Attribute and n.attr == "unscale_" for n in iter_tree(model.module))


def _another_steps_whole(model: TrainingModel, misuse) -> bool:
    """Another optimizer's step, written in the clip's own function, follows the clip with no backward between."""
    outer = scope_of(model, misuse.node)
    return outer is not None and any(
        uid != misuse.optimizer.uid and scope_of(model, step) is outer
        for uid, step in model.clips_complete_for.get(id(misuse.node), set()))


def _window_gate_not_around(model: TrainingModel, misuse) -> str | None:
    """The accumulation gate (its text, `(step + 1) % opt.gradient_accumulation_steps == 0`) that every step of the
    misuse's optimizer sits under and the misuse's call does not, on every path it was found on; None otherwise (an
    `unscale_` repeated after a step skipped by another test is not about the window)."""
    steps = model.steps_of(misuse.optimizer.uid)
    if not steps or not misuse.ifs:
        return None
    around = {c for stack in misuse.ifs for c in stack}
    found: str | None = None
    for step in steps:
        gates = [model.conditions.get(c) for stack in step.if_stacks for c in stack]
        window = [g for g in gates if g is not None and g.is_accumulation_gate and g.id not in around]
        if not step.if_stacks or not window or any(not any(g.id in stack for g in window) for stack in step.if_stacks):
            return None
        found = found or code(window[0].test)
    return found


def _on_a_stepping_run(model: TrainingModel, misuse) -> bool:
    """Some path the misuse happened on agrees, on every test it remembers, with a path that reaches a
    step of its optimizer: a flag fixed for the run (`if accelerator.state.deepspeed_plugin is None:`
    around the step) can leave the clip's mark only on runs where that optimizer never steps here."""
    if not misuse.paths:
        return True
    stepping = [dict(state.assumptions) for step in model.steps_of(misuse.optimizer.uid) for state in step.states()]
    for path in misuse.paths:
        known = dict(path)
        if any(all(other.get(cond, value) == value for cond, value in known.items()) for other in stepping):
            return True
    return False


def _written_before(model: TrainingModel, node: ast.AST, later: ast.AST | None) -> bool:
    """`node` comes before `later` in the same function (or at the same module's top level)."""
    if later is None:
        return False
    outer = scope_of(model, node)
    return outer is not None and outer is scope_of(model, later) and model.order(node) < model.order(later)
