"""Training events found in the code, with what the analysis saw at each of them."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from .gradstate import PathState, in_order
from .provenance import READ, Assumption, Provenance, assumed, weakest
from .values import Entity, Holder, Value


@dataclass(eq=False)
class Loop:
    """A `for`/`while` loop the analysis entered (or an implicit per-batch loop)."""

    id: int
    node: ast.AST
    count: str | None  # source of the number of iterations, when it reads as a window size
    # steps of one sequence (`for t in range(seq_len)`), not micro-batches of one batch
    rollout: bool = False
    # each pass rebuilds the whole window's input with one part live (`cached[:j] + [live] + cached[j + 1:]`):
    # its loss is the window's objective, not a micro-batch's, and the passes' gradients add up to its gradient
    spliced: bool = False
    # the modules its iterations walk over (`for head, y in zip(heads, targets)`): one a pass, a different one
    # each time; a backward reaching them is of one of several losses of a batch, one per part
    parts: frozenset[Holder] = frozenset()
    counter: str | None = None  # the name counting its iterations (`i` of `enumerate`, `k` of `range`)
    implicit: bool = False  # not in the code: a step function assumed to be called once per batch
    # the calls of a framework hook under automatic optimization (Lightning's `training_step`): the framework
    # runs a backward pass and steps after each call, out of sight
    framework: bool = False
    # other methods the framework calls around the hook each batch or step (`on_train_batch_end`): what they
    # reset is reset in every iteration of this loop
    each_batch: tuple[ast.AST, ...] = ()
    # `for j in range(N)` whose body tests `j == N - 1` (`last_iteration`): the window its index counts; an
    # iteration at that window's last position is the loop's last (no iteration follows it)
    last_of: str | None = None
    # the analysis ran its body (`ran`) and some run reached the end of an iteration with a path going round again
    # (`iterates`): a body every path of which leaves (`... total += loss; break`) runs once, whatever it loops over
    ran: bool = False
    iterates: bool = False
    # the run under way walks the items of one sequence built in sight (`for v in values:` of `update([a, b])`,
    # `enumerate(values)`, `values[idx]` by its index): its iterations are within one of the loop around it
    over_items: bool = False


@dataclass(eq=False)
class Backward:
    """A backward pass: `loss.backward()`, `scaler.scale(loss).backward()`, `accelerator.backward(loss)`."""

    id: int
    node: ast.Call
    call_text: str
    loss_text: str
    loss: Value = field(default_factory=Value)
    framework_scaled: bool = False  # the framework divides the loss by its accumulation window
    framework_assumed: bool = False  # scaled by a framework object whose configuration the analysis did not see
    framework_window: str | None = None  # ... named so in the code (`gradient_accumulation_steps=4`)
    windowed: bool = False  # the call runs a whole window of micro-batches itself (`forward_backward_func`)
    retain_graph: bool = False  # `backward(retain_graph=...)`, anything but a literal False: the graph is reused (a rollout, a GAN)
    amp_scaled: bool = False  # the loss was multiplied by a GradScaler's scale
    # forward passes of data-parallel wrappers the loss went through: (uid, "on" | "off" | "maybe" sync, ordinal)
    sync_forwards: set[tuple[int, str, int]] = field(default_factory=set)
    sync_off_late: set[int] = field(default_factory=set)  # wrappers whose sync was switched off only after the forward
    # (module, forward ordinal, id of the step call, its text): the loss's graph went through a
    # forward pass of that module made before that step changed the module's parameters in place
    stale_graphs: set[tuple[Holder, int, int, str]] = field(default_factory=set)
    # ... of those, the ones some path saw stale through a step the analysis followed to this backward, not
    # only through a value the previous loop iteration left (`flow.STALE_CARRIED`: an assumption)
    firm_graphs: set[tuple[Holder, int, int, str]] = field(default_factory=set)
    # ... of those, the ones some path's loss held through code the analysis read, not only through a method it
    # could not read taken to hand on its arguments' graphs (`Value.vague_sites`: an assumption)
    read_graphs: set[tuple[Holder, int, int, str]] = field(default_factory=set)
    loop_stacks: set[tuple[int, ...]] = field(default_factory=set)
    if_stacks: set[tuple[int, ...]] = field(default_factory=set)
    written: set[Holder] = field(default_factory=set)
    # the calls being evaluated when it ran, outermost first (`self.backward_step(loss)` for a backward in a helper)
    callers: set[tuple[ast.Call, ...]] = field(default_factory=set)

    @property
    def via(self) -> tuple[ast.Call, ...]:
        """The calls that ran it, outermost first (the first chain in source order): where a finding at a
        backward of another file is reported in this one."""
        chains = sorted(self.callers, key=lambda ch: (len(ch), [(c.lineno, c.col_offset) for c in ch]))
        return chains[0] if chains else ()

    @property
    def framework(self) -> Provenance:
        """How the analysis knows what the framework does to this loss (divides it by its window or not):
        assumed when the framework object was configured out of sight."""
        return assumed(Assumption.CONFIG) if self.framework_assumed else READ


@dataclass(eq=False)
class Step:
    """An optimizer step: `opt.step()`, `scaler.step(opt)`, `opt.step(closure)`."""

    id: int
    node: ast.Call
    call_text: str
    optimizer: Entity
    incoming: set[PathState] = field(default_factory=set)
    loop_stacks: set[tuple[int, ...]] = field(default_factory=set)
    if_stacks: set[tuple[int, ...]] = field(default_factory=set)
    # the enclosing ifs each path state arrived under (a helper stepping from two call sites: each
    # state is guarded by its own call site's conditions, not by the other's)
    ifs_of: dict[PathState, set[tuple[int, ...]]] = field(default_factory=dict)
    framework_gated: bool = False  # fires on a framework's window boundaries (`accelerator.accumulate(...)`)
    # not a training step (`trials`): undone by restoring the weights, or repeated with no backward between
    trial: bool = False
    # ... of a context the code entered (`with accelerator.accumulate(model):`), configured with this window
    context_window: str | None = None
    # the step may call its closure again after an inner update: "several" (its class does: L-BFGS) or
    # "unknown" (the optimizer's class is not known); None: once
    closure_evaluations: str | None = None
    # how the stepped expression was resolved to `optimizer`: read, or a guess (`Interpreter.assumed_links`)
    link: Provenance = READ
    _ordered: list[PathState] | None = field(default=None, repr=False)

    @property
    def provenance(self) -> Provenance:
        """How the analysis knows the stepping object is an optimizer, and which one."""
        return weakest((self.optimizer.provenance, self.link))

    def states(self) -> list[PathState]:
        """The incoming path states in a fixed order, so that rules choose the same witness on every run."""
        if self._ordered is None or len(self._ordered) != len(self.incoming):
            self._ordered = in_order(self.incoming)
        return self._ordered


@dataclass(eq=False)
class Clear:
    """A gradient clear: `opt.zero_grad()`, `model.zero_grad()`, `p.grad = None`, `p.grad.zero_()`."""

    id: int
    node: ast.AST
    call_text: str
    target_text: str
    holders: set[Holder] = field(default_factory=set)
    everything: bool = False  # the target is unknown: treated as clearing every gradient
    loop_stacks: set[tuple[int, ...]] = field(default_factory=set)
    if_stacks: set[tuple[int, ...]] = field(default_factory=set)
    # the target was not made out (`m.zero_grad()` of a value the analysis cannot name): taken to clear what an
    # optimizer of parameters not known steps, by assumption (it may be a part of them, or none of them)
    target_assumed: bool = False

    @property
    def provenance(self) -> Provenance:
        """Read when what it clears is known; assumed when its target is unknown."""
        return assumed(Assumption.OPAQUE) if self.everything or self.target_assumed else READ


@dataclass(eq=False)
class AmpMisuse:
    """One call that broke the order of scaled backward, unscale, clip and step."""

    kind: str  # clip_before_unscale | unscale_twice | partial | bypass
    node: ast.AST  # where it is reported: the clip, the second unscale_, the earlier clip, the step
    optimizer: Entity
    other: ast.AST | None = None  # the call on the other side (the scaled backward, the first unscale_)
    ifs: set[tuple[int, ...]] = field(default_factory=set)
    paths: set[frozenset] = field(default_factory=set)  # the branch assumptions of the paths it happened on
    # the gradients were scaled only by a scaler that may be off on a run, by the names of its settings: "amp" of
    # `GradScaler(enabled=args.amp)` built in another method, "" for a scaler known only by its name
    switch_settings: set[str] = field(default_factory=set)
    # the scaled backward is a framework's own (`accelerator.backward(loss)` of `Accelerator(mixed_precision="fp16")`):
    # its receiver's text; with the settings that decide whether it scales, when the code does not say
    framework: str | None = None
    framework_unscale: str = ""  # its way to unscale (`clip with accelerator.clip_grad_norm_(...)`), for the help
    framework_settings: set[str] = field(default_factory=set)


@dataclass(eq=False)
class KeepAlive:
    """A statement that stores a tensor with a graph into an accumulator that outlives the iteration."""

    node: ast.AST  # the statement (`total += loss`) or the call (`losses.append(loss)`)
    target: str  # the accumulator's key (`total_loss`, `self.history[loss]`)
    stored: ast.expr  # the stored expression (`loss`)
    loop: int  # the loop whose iterations it spans
    trained: bool = False  # a backward pass of the accumulator ran: the graphs were kept on purpose
    shown: str = ""  # the accumulator as written (`self.history["loss"]`)
    via_item: str = ""  # the stored value is a container holding the graph through this item (`output[loss]`)
    # how the analysis knows the stored value holds a graph: read when a forward pass of a module built
    # in sight made it or a backward ran on it; else as sure as the modules and calls that made it
    provenance: Provenance = READ
    # the stored value holds a graph because a value wholly made of it was backpropagated (`loss =
    # sum(losses)`): whether it is a tensor or a tuple of them is not read, so `.detach()` may not exist
    untyped: bool = False
    # the backward call that runs on the stored value after it was stored (`losses.append(f(x));
    # losses[-1].backward()`): storing it detached would leave that backward nothing to run through
    backpropagated_later: str = ""
    # the loops around `loop`, innermost first, each with whether the accumulator is made afresh within one of
    # its iterations (assigned anew in it or in a loop between, or a local of a function it calls): one tuple
    # per call context. A loop around that steps and does not make it afresh is a step the graphs outlive
    outer: set[tuple[tuple[int, bool], ...]] = field(default_factory=set)
    # the calls being evaluated when it was recorded with `loop`, outermost first: a statement of a helper in another
    # file called both from a training loop and from an evaluation loop is reported where the training loop's run
    # came from, not where the helper was last entered
    via: tuple[ast.Call, ...] = ()
