"""GL003: several micro-batches accumulate into one step and the loss is not divided by their number."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Iterator

from .. import messages
from ..analysis import TrainingModel
from ..analysis.chunk_counts import chunks_held
from ..analysis.conditions import Condition, code
from ..analysis.conventions import convention
from ..analysis.events import Backward, Loop, Step
from ..analysis.provenance import Assumption, Provenance, assumed
from ..analysis.syntax import arguments, is_int, starts_with_paren
from ..analysis.walk import breadth_first
from ..fixplan import SAFE, UNSAFE, FixPlan, ReplaceNode, is_reference, scope_of, source
from ..registry import Finding, Invalid, Rule, register

# A divisor counting the samples or tokens of the whole window (all micro-batches, all ranks), which
# makes the micro-batch losses add up to the window's mean.
_WINDOW_NORMALISER = convention("window_normaliser")

_PER_SAMPLE = convention("per_sample")
_ACCUM_NAME = convention("accumulation_count")
_COUNTER = convention("counter")
_IDENT = re.compile(r"[A-Za-z_]\w*")
_GENERIC = frozenset({"self", "args", "config", "cfg", "len", "opt", "hparams"})


def _counters_of(gate: Condition | Loop) -> set[str]:
    """The names that count micro-batches in the window: the gate's counters, the inner loop's counter."""
    if isinstance(gate, Loop):
        return {gate.counter} if gate.counter else set()
    return {c.rsplit(".", 1)[-1] for c in gate.counters} | set(gate.counters)


def _given_gradient(backward: Backward) -> list[ast.expr]:
    """The gradient handed to the backward for what it differentiates (`y.backward(dy)`,
    `torch.autograd.backward(ys, grads)`), gradients of ones (`torch.ones_like(loss)`) and `None` left out:
    they leave the loss as it is."""
    call = backward.node
    if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Attribute) or call.func.attr != "backward":
        return []
    receiver = code(call.func.value)
    if backward.loss_text == receiver:  # `y.backward(dy)`
        given = call.args[:1] + [k.value for k in call.keywords if k.arg == "gradient"]
    elif receiver in ("torch.autograd", "autograd") and call.args and backward.loss_text == code(call.args[0]):
        given = call.args[1:2] + [k.value for k in call.keywords if k.arg == "grad_tensors"]
    else:
        return []  # `accelerator.backward(loss)`: the argument is the loss
    return [g for g in given
            if not re.search(r"\bones(?:_like)?\(", code(g)) and not (isinstance(g, ast.Constant) and g.value is None)]


def _seeded_by_the_loss(backward: Backward, given: list[ast.expr]) -> bool:
    """The gradient handed to backward is computed from the loss itself (`loss.backward(loss / N)`): the
    seed multiplies each micro-batch's gradient by its own loss value over N, so the loss is not divided
    by N (it is `(loss ** 2 / 2N)` that is differentiated), whatever the seed's divisors."""
    return any(code(n) == backward.loss_text for g in given for n in breadth_first(g)
               if isinstance(n, (ast.Name, ast.Attribute, ast.Subscript)))


def _names_window(factor: str, window: str | None, counters: set[str]) -> bool:
    """A factor that is the window size itself (`self.accum_iters` for a window `model.accum_iters`), never
    one of the counters (`loss * (i + 1)`) nor a factor merely unknown. Two references name one quantity
    by their last names, not by the object holding them: `params.ctc_loss_scale` (a loss weight) and
    `params.accum_grad` are two fields of one configuration."""
    names = set(_IDENT.findall(factor))
    if counters & names:
        return False
    if window is not None:
        return factor == window or bool(_quantities(factor) & _quantities(window) - _GENERIC)
    return bool(_ACCUM_NAME.search(factor))


def _divides_by(factor: str, window: str | None, counters: set[str]) -> bool:
    """A factor that is a quotient naming the window in its denominator only (`x.size(0) / optim_batch_size`):
    the window divides the loss there, it does not multiply it (`accum_steps / 2` does)."""
    try:
        tree = ast.parse(factor.strip(), mode="eval").body
    except SyntaxError:
        return False
    return (isinstance(tree, ast.BinOp) and isinstance(tree.op, (ast.Div, ast.FloorDiv))
            and not _names_window(code(tree.left), window, counters))


def _by_chunk_count(model: TrainingModel, divisors: frozenset[str], window: str | None) -> bool:
    """A window `len(chunks)` over a list cut into `n` chunks elsewhere in the file (`self.var_L =
    torch.chunk(data, chunks=self.mega_batch_factor)`): a loss divided by `n` is divided by the window, whatever
    `n` is named (`mega_batch_factor` reads like a batch size)."""
    inner = window[4:-1] if window is not None and window.startswith("len(") and window.endswith(")") else None
    count = chunks_held(model.module, inner) if inner else None
    return count is not None and count in divisors


def _chunk_size(gate: Condition | Loop) -> str | None:
    """The stride of a micro-batch loop over chunks of one batch (`for j in range(0, len(im), microbatch):`):
    the size of each chunk, not their number (LaTeX-OCR's `loss * microbatch / batchsize` weights each chunk
    by its share of the batch; read as the window, its factor was "multiplied by the number of micro-batches")."""
    node = gate.node if isinstance(gate, Loop) else None
    if not isinstance(node, (ast.For, ast.AsyncFor)) or not isinstance(node.iter, ast.Call):
        return None
    func, args = node.iter.func, node.iter.args
    if isinstance(func, ast.Name) and func.id == "range" and len(args) == 3 and not node.iter.keywords:
        return code(args[2])
    return None


def _quantities(text: str) -> set[str]:
    """The names of what an expression is made of, holders aside: `params.accum_grad * len(loader)` ->
    {accum_grad, len, loader} (a name or attribute that only holds the attribute read from it is left out)."""
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError:
        return set(_IDENT.findall(text))
    # (`metadata["pos_lambda"]` is the item, as `cfg.pos_lambda` is the attribute: not `metadata`, which holds the
    # window `metadata["batch_split"]` too)
    keyed = {id(n.value): n.slice.value for n in breadth_first(tree)
             if isinstance(n, ast.Subscript) and isinstance(n.slice, ast.Constant) and isinstance(n.slice.value, str)}
    holders = {id(n.value) for n in breadth_first(tree) if isinstance(n, ast.Attribute)} | set(keyed)
    out: set[str] = set(keyed.values())
    for n in breadth_first(tree):
        if id(n) in holders:
            continue
        if isinstance(n, ast.Name):
            out.add(n.id)
        elif isinstance(n, ast.Attribute):
            out.add(n.attr)
    return out


def divides_by_window(divisors: frozenset[str], window: str | None, counters: set[str] | frozenset[str] = frozenset(),
                      shares: frozenset[str] = frozenset()) -> bool:
    """Tell whether one of the divisors applied to a loss can be the accumulation window size (a divisor
    made of the running counter, `loss / (i + 1)`, is not). A divisor in `shares` is the denominator of a
    share the loss was weighted by (`loss * (n / total)`): named like a per-sample count or not, it is a
    count the micro-batches take part of, which may be the window's."""
    for d in divisors:
        if counters & set(_IDENT.findall(d)):
            continue  # it changes from one micro-batch to the next: not the window
        if window is not None:
            if d == window:
                return True
            shared = set(_IDENT.findall(d)) & set(_IDENT.findall(window)) - _GENERIC
            if shared:
                return True
        if _ACCUM_NAME.search(d):
            return True
        if _PER_SAMPLE.search(d) and d not in shares:
            continue  # a per-sample normalisation, not the window
        if d.replace(".", "", 1).isdigit() and window is not None and window.replace(".", "", 1).isdigit():
            if float(d) == float(window):
                return True
            continue
        return True  # an unknown divisor may well be N: stay silent
    return False


@register
class UnscaledAccumulatedLoss(Rule):
    code = "GL003"
    name = "unscaled-accumulated-loss"
    summary = "Backward passes accumulate into one step and the loss is not divided (exactly once) by the number of micro-batches."

    VALID = (
        """
import torch
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
accum = 4
for i, x in enumerate(torch.randn(16, 4).split(2)):
    loss = model(x).pow(2).mean() / accum
    loss.backward()
    if (i + 1) % accum == 0:
        opt.step()
        opt.zero_grad()
""",
        """
import torch
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for batch in torch.randn(16, 8, 4):
    for micro in batch.chunk(4):
        (model(micro).pow(2).mean() / 4).backward()
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
accum = 4
for i, x in enumerate(torch.randn(16, 4).split(2)):
    loss = model(x).pow(2).mean()
    loss.backward()
    if (i + 1) % accum == 0:
        opt.step()
        opt.zero_grad()
""",
            line=8,
            fixed="""
import torch
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
accum = 4
for i, x in enumerate(torch.randn(16, 4).split(2)):
    loss = model(x).pow(2).mean()
    (loss / accum).backward()
    if (i + 1) % accum == 0:
        opt.step()
        opt.zero_grad()
""",
            fix="safe",
        ),
    )

    @staticmethod
    def _plain_backward_in_context(model: TrainingModel, backward: Backward, step: Step) -> Finding | None:
        window = step.context_window
        if window is None or window.strip() in ("1", "1.0") or backward.framework_assumed or backward.loss.summed:
            return None
        call = backward.node
        if not (isinstance(call.func, ast.Attribute) and call.func.attr == "backward" and backward.loss_text == code(call.func.value)):
            return None  # only `loss.backward()`: another library's backward may divide
        if divides_by_window(backward.loss.divisors, window, shares=backward.loss.shares) or any(_WINDOW_NORMALISER.search(d) for d in backward.loss.divisors):
            return None
        msg, help_ = messages.unscaled_accumulated_loss(backward.call_text, backward.loss_text, step.call_text,
                                                        model.line(step.node), window)
        return Finding(backward.node, msg, help_, _reduction(backward))

    def check(self, model: TrainingModel) -> Iterable[Finding]:
        for hook in model.unnormalised_losses:
            msg, help_ = messages.loss_hook_not_normalised(hook.method, hook.loss_text, hook.hook.normaliser,
                                                           hook.hook.normalised_flags)
            # the framework accumulates only when configured so, out of sight
            yield Finding(hook.returned, msg, help_, (assumed(Assumption.CONFIG),))
        reported: set[int] = set()
        for step in sorted(model.steps.values(), key=lambda s: model.order(s.node)):
            holders = model.optimizer_holders(step.optimizer)
            for state in step.states():
                for held, c in state.held(holders):
                    if not (c.fresh and c.repeated) or c.rescaled or c.backward in reported:
                        continue
                    backward = model.backwards[c.backward]
                    if any(w.overlaps(h) for h in model.table.hooked for w in (held, *backward.written)):
                        continue  # a gradient hook, a communication hook or a gradient-scaling helper may divide them
                    if any(held.overlaps(h) for h in model.table.rescaled_by_optimizer):
                        continue  # the optimizer rescales what it steps (`optimizer.multiply_grads(1 / n)`)
                    if backward.framework_scaled:
                        continue
                    if step.framework_gated:
                        # `with accelerator.accumulate(model):` steps once per window, but only the framework's own
                        # backward divides by it: a plain `loss.backward()` there adds up N undivided losses
                        finding = self._plain_backward_in_context(model, backward, step)
                        if finding is not None:
                            reported.add(c.backward)
                            yield finding
                        continue
                    given = _given_gradient(backward)
                    seeded = _seeded_by_the_loss(backward, given)
                    if given and not seeded:
                        continue  # `y.backward(dy)`: what accumulates is scaled by `dy`, which is no loss to average
                    found = model.accumulation_source(state, backward, step)
                    if found is None:
                        continue
                    window, gate = found
                    if (isinstance(gate, Loop) and any(gate.id in stack for stack in step.loop_stacks)
                            and model.skipped_only_if_not_finite(step, backward.if_stacks)):
                        # the loop the step runs in too, its only window a step skipped on a non-finite gradient:
                        # the broken window is dropped, not accumulated (a micro-batch loop inside it still counts)
                        continue
                    if backward.loss.summed and not backward.loss.divisors:
                        continue  # a sum over samples (`reduction="sum"`): summing micro-batches gives the batch's sum
                    if isinstance(gate, Loop) and model.terms_of_one_objective(gate, backward):
                        # the terms of a rollout are summed over time, terms that share one graph (a loop over
                        # feature extractors on one generator output, `retain_graph=retainGraph`) and the losses of
                        # one batch through a head each are one objective's parts: none is averaged over micro-batches
                        continue
                    if isinstance(gate, Loop) and gate.spliced:
                        continue  # each pass's loss is the whole window's objective, one part live (feature caching)
                    counted = _counters_of(gate)
                    chunk = _chunk_size(gate)
                    scaled_up = sorted(m for m in backward.loss.multipliers
                                       if _names_window(m, window, counted) and not _divides_by(m, window, counted)
                                       and not (chunk is not None and _quantities(m) <= _quantities(chunk)))
                    if scaled_up:
                        reported.add(c.backward)
                        msg, help_ = messages.loss_multiplied_by_window(
                            backward.call_text, backward.loss_text, scaled_up[0], step.call_text, model.line(step.node))
                        chain = [step.provenance, c.provenance, backward.loss.provenance]
                        if isinstance(gate, Condition) and gate.caller is not None:
                            chain.append(assumed(Assumption.NAME))
                        yield Finding(backward.node, msg, help_, tuple(chain))
                        continue
                    twice = sorted(d for d in backward.loss.divided_twice if divides_by_window(frozenset({d}), window))
                    if twice:
                        reported.add(c.backward)
                        msg, help_ = messages.loss_scaled_twice(
                            backward.call_text, backward.loss_text, twice[0], step.call_text, model.line(step.node)
                        )
                        facts = (step.provenance, c.provenance, backward.loss.provenance)
                        yield Finding(backward.node, msg, help_, facts)  # which division to drop is the author's call
                        continue
                    counters = _counters_of(gate)
                    running = sorted(d for d in backward.loss.divisors if counters & set(_IDENT.findall(d)))
                    per_micro = sorted(_counted_per_micro_batch(gate, backward.loss.divisors - frozenset(running)))
                    rest = backward.loss.divisors - frozenset(running) - frozenset(per_micro)
                    inner = _inner_loop_counts(model, backward, step, gate) - {window}
                    # (`config.gen_length` for the helper's `range(gen_length)`: the same quantity by its name only)
                    by_name = any(d not in inner and _last_name(d) in inner for d in rest)
                    rest = frozenset(d for d in rest if d not in inner and _last_name(d) not in inner)
                    if divides_by_window(rest, window, counters, backward.loss.shares) \
                            or _by_chunk_count(model, rest, window):
                        continue  # (a share's denominator the micro-batch's own count is in `per_micro`, not here)
                    if any(_WINDOW_NORMALISER.search(d) for d in rest):
                        continue  # divided by the token count of the whole window (`loss_sum / global_valid_tokens`)
                    if _counted_over_window(model, backward, rest, window, counters):
                        continue
                    if _counted_over_what_is_cut(model, backward, rest, gate, counters):
                        continue  # `loss_sum_chunk / total_valid_tokens`: counted over what the chunks are cut from
                    if rest & _counts_the_step_waits_for(model, step):
                        continue  # `loss / self.batchsize` with the step under `if self.n_backward == self.batchsize:`
                    unit = gate.unit if isinstance(gate, Condition) else None
                    stride = model.micro_batch_stride(gate, backward) if isinstance(gate, Condition) else None
                    if stride is not None and window is not None:
                        # a micro-batch every `stride` counts of the gate's counter: N / stride micro-batches a window
                        window = f"{window} / {stride}"
                    shares = backward.loss.shares
                    if unit is not None and divides_by_window(shares, window, counters, shares):
                        continue  # weighted by its share of a window counted in samples (`loss * (n / total)`)
                    reported.add(c.backward)
                    if unit is not None:  # `if seen >= optim_batch_size:` with `seen += x.size(0)`
                        msg, help_ = messages.unweighted_sample_window(
                            backward.call_text, backward.loss_text, step.call_text, model.line(step.node), window,
                            gate.counters[0] if isinstance(gate, Condition) and gate.counters else "the counter", unit)
                    else:
                        msg, help_ = messages.unscaled_accumulated_loss(
                            backward.call_text, backward.loss_text, step.call_text, model.line(step.node), window,
                            counter_divisor=running[0] if running else None, micro_divisor=per_micro[0] if per_micro and not running else None,
                        )
                    plain = not (running or per_micro or seeded or unit or stride)
                    fix = self._fix(model, backward, window, gate) if plain else None
                    if seeded:
                        msg += (f" The gradient handed to `{backward.call_text}` is computed from `{backward.loss_text}`"
                                f" itself: it scales each micro-batch's gradient by its own loss value, not by 1/N;"
                                f" divide the loss and call backward without it.")
                    chain = [step.provenance, c.provenance, backward.loss.provenance, *_reduction(backward)]
                    if by_name:
                        chain.append(assumed(Assumption.NAME))  # a divisor taken for an inner loop's count by its name
                    if backward.loss.unread_factors:
                        # `(loss * grad_scale).backward()` of a `grad_scale` handed in: it may be `1 / N`
                        # (FabianMenekshi's training function, handed `grad_scale=1.0 / grad_accum_steps` through
                        # `**shared`, lockbox 40)
                        chain.append(assumed(Assumption.FACTOR))
                    if (unit is not None or stride is not None) and rest:
                        # `loss / 4` in a window of 32 samples: right when a micro-batch holds 8, which is not seen
                        chain.append(assumed(Assumption.SAMPLES))
                    if isinstance(gate, Condition) and gate.caller is not None:
                        # the window is a caller's, linked to this method by its name only
                        written = gate.statement.test if isinstance(gate.statement, ast.If) else gate.test
                        msg += (f" (The window is set by the caller's gate `{code(written)}`,"
                                f" handed over at {gate.caller}.)")
                        chain.append(assumed(Assumption.NAME))
                        fix = None
                    # the divisors seen are all there are only if the loss was computed in sight
                    yield Finding(backward.node, msg, help_, tuple(chain), fix=fix)

    @staticmethod
    def _fix(model: TrainingModel, backward: Backward, window: str | None, gate: Condition | Loop) -> FixPlan | None:
        """Divide the loss by the window size where it enters backward: `(loss / N).backward()`."""
        scope = scope_of(model, backward.node)
        if window is None or scope is None or scope is not scope_of(model, gate.node if isinstance(gate, Loop) else gate.statement):
            return None  # unnamed, or named in another function than the backward (not in scope there)
        try:
            n = ast.parse(window.strip(), mode="eval").body
        except Exception:
            return None
        found = _loss_operand(backward)
        if found is None:
            return None
        loss, receiver, grouped = found
        left = f"({source(model, loss)})" if grouped else source(model, loss)
        divided = f"{_parenthesised(left, loss, True, grouped)} / {_parenthesised(window, n, False)}"
        replacement = f"({divided})" if receiver and not grouped else divided
        simple = is_int(n) or is_reference(n)
        partial = isinstance(gate, Condition) and isinstance(gate.test, ast.BoolOp)
        return FixPlan(f"Divide the loss by `{window}`", (ReplaceNode(loss, replacement),), SAFE if simple and not partial else UNSAFE)


def _reduction(backward: Backward) -> tuple[Provenance, ...]:
    """The fact the rule rests on that the loss is a mean over its samples (a sum is not to be divided):
    assumed when the loss is what a model's forward out of sight returned (`_, loss, info = model(...)` of a
    model built in another file the project index did not read, or a bound method called by another name),
    read otherwise."""
    return (assumed(Assumption.REDUCTION),) if backward.loss.unseen_reduction else ()


def _counts_the_step_waits_for(model: TrainingModel, step: Step) -> frozenset[str]:
    """What the step's enclosing tests compare a counter with (`self.batchsize` of `if self.n_backward ==
    self.batchsize:`): a loss divided by it is divided by the number of backward passes the step waits for,
    whatever the name says of a per-sample count (pfrl's REINFORCE steps after `batchsize` episodes, each
    backpropagated as its sum divided by `batchsize`)."""
    out: set[str] = set()
    for stack in model.if_stacks_in_order(step.if_stacks):
        for cid in stack:
            cond = model.conditions.get(cid)
            test = cond.test if cond is not None else None
            if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], (ast.Eq, ast.GtE)):
                left, right = test.left, test.comparators[0]
                if isinstance(left, (ast.Name, ast.Attribute)) and _COUNTER.search(code(left).rsplit(".", 1)[-1]):
                    out.add(code(right))
    return frozenset(out)


def _counted_over_window(model: TrainingModel, backward: Backward, divisors: frozenset[str], window: str | None,
                         counters: set[str]) -> bool:
    """A divisor named in the backward's function and assigned there from what the window is counted over
    (`total = count_tokens(micro_batches)` where the window is `len(micro_batches)`; `n = accum * bsz` where
    it is `accum`): the micro-batch losses are weighted by their share of the whole window, so they add up
    to its mean (`loss * micro_tokens / total`). A divisor assigned from the micro-batch alone is not."""
    if window is None:
        return False
    window_names = set(_IDENT.findall(window)) - _GENERIC - counters
    scope = scope_of(model, backward.node)
    if not window_names or scope is None:
        return False
    names = _divisor_names(divisors, counters)
    if not names:
        return False
    for _node, assigned, value in _assignments(scope):
        used = {n.id for n in breadth_first(value) if isinstance(n, ast.Name)}
        if assigned & names and window_names & used:
            return True
        if assigned & window_names and _numerator_names(value) & names:
            # `num_accumulation_rounds = batch_gpu_total // batch_gpu`: the window is the divisor's count
            # split into micro-batches, so the divisor counts the whole window (EDM's training loop)
            return True
    return False


def _counted_over_what_is_cut(model: TrainingModel, backward: Backward, divisors: frozenset[str],
                              gate: Condition | Loop, counters: set[str]) -> bool:
    """A divisor assigned in the backward's function from data the micro-batch loop cuts into its micro-batches
    (`total_valid_tokens = y_mask.sum()` before `for b in range(0, B, chunk):` slices `y_mask[:, b:b + chunk]`,
    snntorch's TinyStories loop): it counts over all of the window's micro-batches, so each micro-batch's
    (summed) loss divided by it is its share of the window's mean."""
    loop = gate.node if isinstance(gate, Loop) else None
    scope = scope_of(model, backward.node)
    if not isinstance(loop, (ast.For, ast.AsyncFor)) or scope is None:
        return False
    names = _divisor_names(divisors, counters)
    if not names:
        return False
    moving = {n.id for n in breadth_first(loop.target) if isinstance(n, ast.Name)}
    for node in breadth_first(loop):  # `b_end = min(b_start + chunk, B)`: what the counter moves moves too
        if isinstance(node, ast.Assign) and {n.id for n in breadth_first(node.value) if isinstance(n, ast.Name)} & moving:
            moving |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    cut = {code(node.value) for node in breadth_first(loop) if isinstance(node, ast.Subscript) and _sliced_by(node, moving)}
    if not cut:
        return False
    in_loop = {id(n) for n in breadth_first(loop)}
    for node, assigned, value in _assignments(scope):
        if isinstance(node, ast.Assign) and id(node) not in in_loop and assigned & names:
            if {code(n) for n in breadth_first(value) if isinstance(n, (ast.Name, ast.Attribute))} & cut:
                return True
    return False


def _inner_loop_counts(model: TrainingModel, backward: Backward, step: Step, gate: Condition | Loop) -> frozenset[str]:
    """The counts of the loops the backward runs in inside the window (`for t in range(gen_length):` of a
    helper each micro-batch calls): a loss divided by one of them is averaged over that loop's passes, one
    micro-batch's terms, and the window around them still adds up its micro-batches undivided."""
    outer = {i for stack in model.stacks_in_order(step.loop_stacks) for i in stack}
    counts: set[str] = set()
    for stack in model.stacks_in_order(backward.loop_stacks):
        inside = stack[stack.index(gate.id) + 1:] if isinstance(gate, Loop) and gate.id in stack else \
            tuple(i for i in stack if i not in outer)
        counts.update(c for i in inside if (c := model.loops[i].count) is not None)
    return frozenset(counts)


def _last_name(text: str) -> str | None:
    """`config.gen_length` -> `gen_length`: a reference's last name (None for anything but a reference), the name a
    helper it is handed to knows it by (`def token_loss(model, ids, gen_length)`)."""
    last = text.rsplit(".", 1)[-1]
    return last if all(part.isidentifier() for part in text.split(".")) else None


def _sliced_by(node: ast.Subscript, moving: set[str]) -> bool:
    """`y_mask[:, b_start:b_end]`: a slice whose bounds move with the loop."""
    parts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
    return any(isinstance(part, ast.Slice) and {n.id for n in breadth_first(part) if isinstance(n, ast.Name)} & moving
               for part in parts)


def _divisor_names(divisors: frozenset[str], counters: set[str]) -> set[str]:
    """The names a loss's divisors are written with, other than counters and generic words."""
    return {n for d in divisors for n in _IDENT.findall(d)} - _GENERIC - counters


def _assignments(scope: ast.AST) -> Iterator[tuple[ast.stmt, set[str], ast.expr]]:
    """Each assignment in `scope` with a value: the statement, the plain names it binds, the value."""
    for node in breadth_first(scope):
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            yield node, {t.id for t in targets if isinstance(t, ast.Name)}, node.value


def _numerator_names(expr: ast.expr) -> set[str]:
    """The names on the left of a division (`total // per_micro`, `int(total / per_micro)`)."""
    out: set[str] = set()
    for node in breadth_first(expr):
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Div, ast.FloorDiv)):
            out |= {n.id for n in breadth_first(node.left) if isinstance(n, ast.Name)}
    return out


def _counted_per_micro_batch(gate: Condition | Loop, divisors: frozenset[str]) -> set[str]:
    """Divisors assigned in the micro-batch loop from that micro-batch's own data alone
    (`micro_tokens = (labels != -100).sum()` in `for tokens, labels in micro_batches:`): each loss is the
    micro-batch's own mean, whatever the divisor is called, and the window's means still add up."""
    loop = gate.node if isinstance(gate, Loop) else None
    if not isinstance(loop, (ast.For, ast.AsyncFor)):
        return set()
    targets = {n.id for n in breadth_first(loop.target) if isinstance(n, ast.Name)}
    per_micro: set[str] = set()
    for node in breadth_first(loop):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name = node.targets[0].id
            if name in divisors:
                used = {n.id for n in breadth_first(node.value) if isinstance(n, ast.Name)} - _BUILTINS
                if used and used <= targets | per_micro:
                    per_micro.add(name)
    for d in divisors - per_micro:  # `loss / micro.numel()`, `loss / len(micro)`: the divisor is written in place
        try:
            used = {n.id for n in breadth_first(ast.parse(d.strip(), mode="eval")) if isinstance(n, ast.Name)} - _BUILTINS
        except SyntaxError:
            continue
        if used and used <= targets | per_micro:
            per_micro.add(d)
    return per_micro


_BUILTINS = frozenset({"int", "float", "len", "sum", "max", "min", "torch"})


_ATOMS = (ast.Name, ast.Attribute, ast.Call, ast.Subscript, ast.Constant)
# `a * b / N` is `(a * b) / N`: these operators may stay unparenthesised on the left of `/`.
_LEFT_OPS = (ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.MatMult, ast.Pow)


def _parenthesised(text: str, node: ast.expr, left: bool, grouped: bool = False) -> str:
    """Return `text` as an operand of `/` (on its left or right), in parentheses unless it binds tighter."""
    if grouped or isinstance(node, _ATOMS):
        return text
    if isinstance(node, ast.BinOp):
        tight = isinstance(node.op, _LEFT_OPS if left else (ast.Pow,))
        return text if tight else f"({text})"
    if left and (isinstance(node, ast.Await) or isinstance(node, ast.UnaryOp) and not isinstance(node.op, ast.Not)):
        return text
    return f"({text})"


def _loss_operand(backward: Backward) -> tuple[ast.expr, bool, bool] | None:
    """The loss expression inside the backward call, whether it is the receiver of `.backward()`, and
    whether the source puts it in parentheses (`(loss / n).backward()`)."""
    call = backward.node
    if isinstance(call.func, ast.Attribute):
        receiver = call.func.value
        grouped = starts_with_paren(call.func, receiver)
        if isinstance(receiver, ast.Call) and isinstance(receiver.func, ast.Attribute) and receiver.func.attr == "scale":
            args = [a for a in arguments(receiver) if a.keyword is None]
            if len(args) == 1 and code(args[0].value) == backward.loss_text:
                return args[0].value, False, False  # `scaler.scale(loss).backward()`
            return None
        if code(receiver) == backward.loss_text:
            return receiver, True, grouped  # `loss.backward()`
    args = [a for a in arguments(call) if a.keyword is None]
    if args and code(args[0].value) == backward.loss_text:
        return args[0].value, False, False  # `torch.autograd.backward(loss)`, `self.manual_backward(loss)`
    return None
