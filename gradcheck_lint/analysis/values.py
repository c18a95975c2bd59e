"""Abstract values: what an expression may denote (models, optimizers, tensors reaching models)."""

from __future__ import annotations

import ast
import enum
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import NamedTuple

from .provenance import READ, Assumption, Provenance, assumed, weakest


class Kind(str, enum.Enum):
    MODEL = "model"
    PARAM = "parameter"  # a raw leaf tensor trained directly (`W = torch.randn(..., requires_grad=True)`)
    OPTIMIZER = "optimizer"
    SCHEDULER = "scheduler"
    TOOL = "tool"  # a framework object: a GradScaler, an Accelerator, a Fabric, a loss scaler
    LOSS = "loss"  # a loss module (`nn.CrossEntropyLoss()`): calling it computes a tensor of its inputs


@dataclass(frozen=True, slots=True)
class Entity:
    """An object of the training script, identified by where it was made.

    `api` is its type in the catalogue of API models (`torch.optim.Optimizer`, `accelerate.Accelerator`),
    empty when unknown; `provenance` says how the analysis knows what it is: read (built in sight, or
    used as one), modelled (a catalogue row by qualified name), or assumed (its name alone, a class of
    another file, a builder the analysis could not read).
    """

    kind: Kind
    name: str
    uid: int
    api: str = ""
    provenance: Provenance = READ

    @property
    def certain(self) -> bool:
        """What it is was read or modelled, not assumed."""
        return not self.provenance.assumed

    def __repr__(self) -> str:
        return f"{self.kind.value}:{self.name}#{self.uid}"


class Holder(NamedTuple):
    """A set of parameters whose `.grad` accumulate: a (sub)module of a model, or an optimizer's own.

    A named tuple, not a dataclass: path states are sets of these, and a tuple's comparison and hash
    run in C (the analysis compares them hundreds of thousands of times per file)."""

    uid: int
    path: tuple[str, ...] = ()
    pseudo: bool = False  # the parameters of an optimizer whose ownership is unknown

    def overlaps(self, other: Holder) -> bool:
        """One holds the other (the same module, or a submodule of it). A part picked by a test (`[p for n, p in
        m.named_parameters() if "emb" in n]`, a path step in brackets) may hold any submodule's parameters: it
        overlaps every path but another test's pick at the same step."""
        if self.uid != other.uid or self.pseudo != other.pseudo:
            return False
        mine, theirs = self.path, other.path
        if len(mine) <= len(theirs):
            if theirs[:len(mine)] == mine:
                return True
        elif mine[:len(theirs)] == theirs:
            return True
        for a, b in zip(mine, theirs):
            if a != b:
                return (a[:1] == "[") != (b[:1] == "[")
        return True


@dataclass(frozen=True, slots=True)
class Counter:
    """What is known of an integer loop counter."""

    source: str  # `enumerate(loader)`, `range(n)`, `step = 0`
    zero_based: bool
    incremented: bool = False  # incremented in this iteration before the point of use
    start: int | None = None  # the value on the first micro-batch, before any increment, when known
    period: str | None = None  # it restarts at `start` after this many values (`cycle(range(1, N + 1))`: N)
    # Where path states keep its window phases: the loop counter (or a loop counter plus a loop-invariant
    # offset of unknown value, `counters.Aliases`) it was read from, plus `shift`. None: under the name it
    # is bound to. `global_step = start_step + i`, or `i` handed to a helper's `step`, is still that counter.
    key: str | None = None
    shift: int = 0


@dataclass(frozen=True, slots=True)
class Value:
    """The abstract value of an expression.

    Attributes:
        entities: objects it may be (a model, an optimizer, ...).
        modules: (sub)modules it may be, as holders (calling it reaches them).
        reach: holders whose parameters a tensor value depends on through autograd.
        params: parameter collections it may be (`model.parameters()`).
        opaque: it may depend on things the analysis cannot see.
        vague: the part of `reach` reached only through code the analysis could not read (a library
            method given the model): a backward through it may or may not write there.
        built: the forward passes whose graphs a tensor holds: (the module, the step counts of the
            parameter sets it overlaps when it ran, the forward call's ordinal).
        vague_sites: the forward passes (by ordinal) of `built` whose graphs it holds only through code the analysis
            could not read: a method of a module whose code was not read (`self.model.compute_residuals(x, out)`)
            is taken to hand on the graphs of what it was given. That a graph reached this far that way is an
            assumption (a result made of `.item()` floats holds none).
        kept: names of accumulators across iterations whose contents this value holds (`total_loss`,
            `self.losses`): a backward of it means the graphs were kept on purpose.
        graph: known to hold an autograd graph, whatever built it: `.backward()` was called on it
            (`loss = loss_fn(...)` from an unreadable function, then `loss.backward()`).
        graph_assumed: `graph` rests only on a call taken for a backward by its name: `something.backward(y)` of
            an object the analysis could not make out (a framework's backward of its argument, or a NumPy
            network's own `backward(Y)` handed its labels). No operand's graph was proven otherwise.
        divisors: source text of every divisor applied while computing it.
        divided_twice: divisors applied twice along one chain of computation (`(loss / n) / n`).
        unit_divisors: the divisors among `divisors` whose value was 1 where they divided (`loss / self.accum` of an
            `accum` left at its default 1): the loss is divided by the window as written, and by nothing.
        multipliers: source text of every factor a term reaching parameters was multiplied by
            (`loss_val * self.accum_iters`), reciprocals aside (`loss * (1 / n)` divides).
        unseen_reduction: it holds what a model's forward returned where that forward was not read (a model
            of a class out of sight, a bound method called by another name): if it is the loss, whether it
            was averaged or summed over its samples is not seen. A library call on it decides again
            (`F.cross_entropy(model(x), y)`).
        shares: the divisors that are the denominator of a share the loss was weighted by
            (`loss * (n / total)`, `loss * n / total`): a count the micro-batch takes part of, whatever
            its name, not a per-sample normalisation of this micro-batch's loss.
        items: members of a literal tuple/list/dict, by position or key.
        counter: loop-counter knowledge, for integers.
        const: a small literal it is known to be.
        unread_class: the qualified name of the class it is an object of, when that class was not read
            (`CumulativeAverage()` of monai.metrics): what its methods do with what they are given is unknown.
        present: known to be an object, not None, on every path (arithmetic, a literal, a display, a module's
            forward, a tensor a catalogue call computes): `if x is not None:` on it goes one way.
        objects_only: it is one of `entities` on every path (an object a catalogue class made in sight), never a
            literal, None or a value out of sight: `device == "cuda"` of a `torch.device(...)` goes one way.
    """

    entities: frozenset[Entity] = frozenset()
    modules: frozenset[Holder] = frozenset()
    reach: frozenset[Holder] = frozenset()
    params: frozenset[Holder] = frozenset()
    opaque: bool = False
    vague: frozenset[Holder] = frozenset()
    built: frozenset[tuple[Holder, frozenset[tuple[str, int]], int]] = frozenset()
    vague_sites: frozenset[int] = frozenset()
    kept: frozenset[str] = frozenset()
    graph: bool = False
    graph_assumed: bool = False
    amp: bool = False  # multiplied by a GradScaler's scale (`scaler.scale(loss)`)
    summed: bool = False  # a loss reduced by summing over its samples (`reduction="sum"`), not averaged
    unseen_reduction: bool = False
    # forward passes of data-parallel wrappers it holds: (wrapper uid, "on" | "off" | "maybe" gradient
    # sync when it ran, forward ordinal, how many times the sync flag had been assigned by then)
    sync: frozenset[tuple[int, str, int, int]] = frozenset()
    divisors: frozenset[str] = frozenset()
    divided_twice: frozenset[str] = frozenset()
    unit_divisors: frozenset[str] = frozenset()
    multipliers: frozenset[str] = frozenset()
    # of `multipliers`, factors whose value was not read (`loss * grad_scale` of a `grad_scale` handed in as a
    # parameter, or made out of sight): one may be 1/N, so "not divided by N" rests on that
    unread_factors: frozenset[str] = frozenset()
    shares: frozenset[str] = frozenset()
    items: tuple[tuple[str, Value], ...] = ()
    counter: Counter | None = None
    const: object = None
    flag: str | None = None  # the literal flag (`flags`) it was read from: a parameter holding it tests it
    # the string literals it is one of, as `pathcond` writes them (`'none'`), when nothing else is possible: a
    # literal, or an element of a tuple of literals (`for mode in "none", "model":`); None: anything
    choices: frozenset[str] | None = None
    unread_class: str | None = None
    present: bool = False
    objects_only: bool = False

    def item(self, key: str) -> Value | None:
        for k, v in self.items:
            if k == key:
                return v
        return None

    def spread(self) -> list[Value] | None:
        """The items of a list or tuple built in sight, in order (None when positions are unknown)."""
        if not self.items or [k for k, _ in self.items] != [str(i) for i in range(len(self.items))]:
            return None
        return [v for _, v in self.items]

    @property
    def provenance(self) -> Provenance:
        """How the analysis knows what this value is made of: assumed when every parameter it reaches, it
        reaches only through calls the analysis could not read (`loss = compute_loss(model, batch)` of
        another file: what that call divided it by, or whether it kept a graph, is unseen), or when it is
        an object assumed to be what it is. Data from outside (a batch of a loader) is opaque too, but a
        forward pass read in sight makes what it reaches known."""
        if (self.opaque or self.reach) and not (self.reach - self.vague):
            return assumed(Assumption.OPAQUE)
        return weakest(e.provenance for e in self.entities)

    def of_kind(self, kind: Kind) -> list[Entity]:
        return [e for e in self.in_order() if e.kind is kind]

    def in_order(self) -> list[Entity]:
        """The entities in the order they were made (by uid). Iterating `entities` itself follows hashes, and an
        entity's hash holds `hash(None)` (its provenance's missing assumption), which before Python 3.12 is the
        address of `None`: a choice of the first entity that fits must come from here, or it changes from one
        process to the next."""
        return sorted(self.entities, key=lambda e: e.uid)

    def as_tensor(self) -> Value:
        """Drop object identity: what flows on when the value is used in arithmetic. A container built in
        sight hands on the graphs its items hold (`sum([criterion(g) for g in outs])`, `torch.stack(losses)`),
        with the data-parallel forward passes behind them (`torch.cat([live_feats])` through DDP)."""
        if self.items and not self.built:
            held = [v for _k, v in self.items if v.built or v.graph]
            if held:
                return replace(self, items=(), built=frozenset().union(*(v.built for v in held)),
                               vague_sites=vague_sites(held),
                               sync=self.sync.union(*(v.sync for v in held)),
                               graph=self.graph or any(v.graph for v in held),
                               graph_assumed=_graph_assumed([self, *held])).as_tensor()
        if not (self.reach or self.modules or self.opaque or self.divisors or self.kept or self.graph):
            return EMPTY  # a constant, a name of nothing known: no gradient flows through it
        if self.opaque and not (self.reach or self.modules or self.divisors or self.kept or self.graph):
            return OPAQUE
        reach = self.reach | self.modules if self.modules and not self.reach else self.reach
        # an operation on a trained leaf read in code (`torch.randn(..., requires_grad=True)`, Tangram's mapping
        # matrix given to `Adam([self.M])`) makes a graph as surely as a module's forward does
        graph = self.graph or any(e.kind is Kind.PARAM for e in self.entities)
        return Value(reach=reach, opaque=self.opaque, vague=self.vague, built=self.built, vague_sites=self.vague_sites,
                     kept=self.kept, graph=graph,
                     graph_assumed=self.graph_assumed, amp=self.amp,
                     summed=self.summed, unseen_reduction=self.unseen_reduction, sync=self.sync, divisors=self.divisors,
                     divided_twice=self.divided_twice, multipliers=self.multipliers, shares=self.shares,
                     unread_factors=self.unread_factors)

    def with_divisor(self, text: str) -> Value:
        twice = self.divided_twice | {text} if text in self.divisors else self.divided_twice
        return replace(self, divisors=self.divisors | {text}, divided_twice=twice)

    def with_unit_divisor(self, text: str) -> Value:
        """Divided by `text`, whose value is 1 here: divided by the window as written, by nothing in fact."""
        return replace(self, divisors=self.divisors | {text}, unit_divisors=self.unit_divisors | {text})


EMPTY = Value()
OPAQUE = Value(opaque=True)
PRESENT = Value(present=True)  # a number, a string or a bool with nothing else known of it


_TRUTHLESS = frozenset({Kind.OPTIMIZER, Kind.SCHEDULER, Kind.TOOL, Kind.LOSS})


def truthless(value: Value) -> bool:
    """The value is None or one of the objects the analysis made whose classes define no truth (an optimizer, a
    scheduler, a GradScaler, a loss module): true unless None. (Models are left out: an empty `nn.Sequential` is
    false.)"""
    if not value.entities or value.opaque:
        return False
    return all(e.kind in _TRUTHLESS for e in value.entities) and value.const in (None, "None")


def present(value: Value) -> Value:
    """`value`, known not to be None (the shared `PRESENT` for a plain constant)."""
    if value.present:
        return value
    return PRESENT if value is EMPTY or value == EMPTY else replace(value, present=True)


def maybe_none(value: Value) -> Value:
    """`value`, no longer known not to be None (it may also be None: a path that falls off a function's end)."""
    if not value.present:
        return value
    return EMPTY if value is PRESENT else replace(value, present=False)


def blank(value: Value) -> bool:
    """Nothing is known of it, but perhaps that it is not None."""
    return value is EMPTY or value is PRESENT or value == EMPTY or value == PRESENT


def join(values: Iterable[Value]) -> Value:
    """Least upper bound: anything any of them may be."""
    vals = [v for v in values]
    if not vals:
        return EMPTY
    if len(vals) == 1:
        return vals[0]
    first = vals[0]
    if all(v is first or v == first for v in vals[1:]):
        return first
    counters = {v.counter for v in vals}
    counter = None
    if len(counters) == 1:
        counter = next(iter(counters))
    elif len(counters) == 2 and None in counters and all(
            v.const is None and not (v.entities or v.modules or v.items) for v in vals if v.counter is None):
        # `step = 0`, then `if resume: step = ckpt["step"]`: a fresh run still counts from 0, and a test of
        # the counter is judged on that run (the resumed start is not known). Its phases are its own: on the
        # other path it is no loop counter under another name (`counter_aliases`)
        counter = replace(next(c for c in counters if c is not None), key=None, shift=0)
    elif None not in counters:
        sources = {c.source for c in counters if c}
        zb = {c.zero_based for c in counters if c}
        if len(zb) == 1:
            starts = {c.start for c in counters if c}
            counter = Counter(source=sorted(sources)[0], zero_based=zb.pop(), incremented=any(c.incremented for c in counters if c),
                              start=starts.pop() if len(starts) == 1 else None)
    consts = {repr(v.const) for v in vals}
    const = first.const if len(consts) == 1 else _joined_instance(vals) or _joined_context(vals)
    items: dict[str, list[Value]] = {}
    for v in vals:
        for k, iv in v.items:
            items.setdefault(k, []).append(iv)
    return Value(
        entities=frozenset().union(*(v.entities for v in vals)),
        modules=frozenset().union(*(v.modules for v in vals)),
        reach=frozenset().union(*(v.reach for v in vals)),
        params=frozenset().union(*(v.params for v in vals)),
        opaque=any(v.opaque for v in vals),
        # a holder one path reaches surely is reached surely on that path: a certain witness of the join
        # (`logits = outputs.logits` beside `logits = model.lm_head(h)`, a call of a part the analysis cannot read)
        vague=frozenset().union(*(v.vague for v in vals)) - frozenset().union(*(v.reach - v.vague for v in vals)),
        built=frozenset().union(*(v.built for v in vals)),
        vague_sites=vague_sites(vals),
        kept=frozenset().union(*(v.kept for v in vals)),
        graph=any(v.graph for v in vals),
        graph_assumed=_graph_assumed(vals),
        amp=any(v.amp for v in vals),
        summed=any(v.summed for v in vals),
        unseen_reduction=any(v.unseen_reduction for v in vals),
        sync=frozenset().union(*(v.sync for v in vals)),
        divisors=frozenset().union(*(v.divisors for v in vals)),
        # twice only when every path divided twice: a join is not a chain
        divided_twice=frozenset.intersection(*(v.divided_twice for v in vals)),
        # a divisor is 1 in the join only where every path that divided by it divided by 1
        unit_divisors=frozenset().union(*(v.unit_divisors for v in vals)) - frozenset().union(
            *(v.divisors - v.unit_divisors for v in vals)),
        multipliers=frozenset().union(*(v.multipliers for v in vals)),
        unread_factors=frozenset().union(*(v.unread_factors for v in vals)),
        shares=frozenset().union(*(v.shares for v in vals)),
        items=tuple((k, join(vs)) for k, vs in items.items()),
        counter=counter,
        const=const,
        flag=vals[0].flag if all(v.flag == vals[0].flag for v in vals) else None,
        choices=_joined_choices(vals),
        unread_class=first.unread_class if all(v.unread_class == first.unread_class for v in vals) else None,
        present=all(v.present for v in vals),  # known only when known on every path
        objects_only=all(v.objects_only for v in vals),
    )


def appended_to(container: Value, added: Value) -> Value:
    """A list after `container.append(added)`: what any of its members may be. An empty list (or one of objects of a
    class read) grown by an object of that class holds objects of that class (`threads = []`, then
    `threads.append(Worker(model))`): `threads[i].start()` runs its method."""
    out = join([container, added])
    kind = added.const
    if out.const is None and isinstance(kind, tuple) and kind[:1] == ("instance",) \
            and (blank(container) or container.const == kind):
        return replace(out, const=kind)
    return out


def _joined_choices(vals: list[Value]) -> frozenset[str] | None:
    """Every literal any of them may be, when each is one of known literals (else None: anything)."""
    out: frozenset[str] = frozenset()
    for v in vals:
        if v.choices is None:
            return None
        out |= v.choices
    return out


def _joined_instance(vals: list[Value]) -> object:
    """Objects of one class read, and on the other paths nothing known (`agents = []` before the loop that appends
    `DDPGAgent(...)` objects, met again at its exit): an object of that class, whose attributes are its own, never a
    container's members (its methods run; `agents[i].step(obs, explore)` is that class's `step`)."""
    kinds = {v.const for v in vals if not blank(v)}
    if len(kinds) != 1:
        return None
    kind = next(iter(kinds))
    return kind if isinstance(kind, tuple) and kind[:1] == ("instance",) else None


def _joined_context(vals: list[Value]) -> object:
    """Different constants join to None, except a gradient-sync context chosen on some paths only
    (`ctx = nullcontext; if not last: ctx = model.no_sync`): a context whose sync is off on some
    micro-batches (deferred when chosen without being called, see `deferred`)."""
    syncs, deferred = [], False
    for v in vals:
        c = v.const
        if isinstance(c, tuple) and c[:1] == ("deferred",) and c[1][:2] == ("context", "sync"):
            deferred = True
            c = c[1]
        if isinstance(c, tuple) and c[:2] == ("context", "sync"):
            syncs.append(c)
    if not syncs:
        return None
    inner = ("context", "sync", frozenset().union(*(c[2] for c in syncs)), False)
    return ("deferred", inner) if deferred else inner


def holding(value: Value, depth: int = 3) -> Value:
    """`value` with the graphs its items hold (a tuple, list or dict built in sight, `{"loss": loss}`):
    keeping the container keeps them alive."""
    if not value.items or depth == 0:
        return value
    inner = [holding(v, depth - 1) for _, v in value.items]
    built = value.built.union(*(v.built for v in inner))
    graph = value.graph or any(v.graph for v in inner)
    if built == value.built and graph == value.graph:
        return value
    return replace(value, built=built, vague_sites=vague_sites([value, *inner]), graph=graph,
                   graph_assumed=_graph_assumed([value, *inner]))


def vague_sites(vals: Iterable[Value]) -> frozenset[int]:
    """Of values flowing into one (a join, an operation, a container): the forward passes some of them hold only
    through code not read (`Value.vague_sites`), less those another holds as read: a certain witness."""
    vals = [v for v in vals if v.built]
    vague = frozenset().union(*(v.vague_sites for v in vals)) if vals else frozenset()
    if not vague:
        return vague
    return vague - {site for v in vals for _h, _gens, site in v.built if site not in v.vague_sites}


def _graph_assumed(vals: Iterable[Value]) -> bool:
    """Of values flowing into one (a join, an operation, a container): some hold a graph, and every one that does
    holds it only by a backward taken by its name (`Value.graph_assumed`)."""
    graphs = [v.graph_assumed for v in vals if v.graph]
    return bool(graphs) and all(graphs)


def display(items: Sequence[tuple[str, Value]]) -> Value:
    """A tuple, list or dict built in sight from these items (by position or key): what any of them holds, as a
    whole, and each of them at its place."""
    j = join([v for _, v in items]) if items else EMPTY
    return Value(entities=j.entities, modules=j.modules, params=j.params, reach=j.reach, opaque=j.opaque, vague=j.vague,
                 divisors=j.divisors, divided_twice=j.divided_twice, unit_divisors=j.unit_divisors,
                 multipliers=j.multipliers, shares=j.shares,
                 items=tuple(items), present=True)


def union_as_tensor(values: Iterable[Value]) -> Value:
    """What an operation on these operands produces as a tensor."""
    tensors = [v.as_tensor() for v in values]
    live = [t for t in tensors if t is not EMPTY]
    if not live:
        return EMPTY
    out = join(live)
    if out.vague and len(live) > 1:
        # every operand flows into the result: a module one operand surely reaches is surely reached, however
        # vaguely another reaches it (`disc_factor * g_loss`, `disc_factor` from an unreadable method of the model)
        sure = frozenset().union(*(t.reach - t.vague for t in live))
        if out.vague & sure:
            out = replace(out, vague=out.vague - sure)
    terms = [t for t in live if t.reach or t.graph or t.built]
    if terms:
        # operands are terms or factors of one value, not paths: one carrying gradient divided twice stays so,
        # whatever the others were divided by (`mse / n + w * (lpips / n) / n`: that term counts 1/n² against 1/n)
        twice = frozenset().union(*(t.divided_twice for t in terms))
        return replace(out, divided_twice=twice) if twice != out.divided_twice else out
    if len(live) == len(tensors):
        return out
    # A constant operand adds nothing, but the result is no chain divided twice on every operand.
    return replace(out, divided_twice=frozenset()) if out.divided_twice else out


def criterion_result(operands: list[Value]) -> Value:
    """What a loss object (`nn.MSELoss()`) makes of its operands: a target scaled by a statistic (`loss_fn(pred, (y -
    means) / stds)`) does not scale the loss, so only what the operands carrying gradient were divided or multiplied
    by comes out of it (SFNO's normalised target, lockbox 29: its divisor was taken for the window's)."""
    if any(v.reach or v.graph or v.built for v in operands):
        none = frozenset[str]()
        operands = [v if v.reach or v.graph or v.built
                    else replace(v, divisors=none, multipliers=none, shares=none, divided_twice=none) for v in operands]
    return union_as_tensor(operands)


@dataclass
class Ownership:
    """Which parameters an optimizer updates."""

    holders: frozenset[Holder] = frozenset()
    unknown: bool = True
    names: tuple[str, ...] = ()  # display names of what it owns: `G`, `model.encoder`

    def holder_set(self, opt: Entity) -> frozenset[Holder]:
        if self.unknown:
            return self.holders | {Holder(opt.uid, (), pseudo=True)}
        return self.holders


@dataclass
class EntityTable:
    """All entities met while analysing one file, with optimizer ownership and display names."""

    entities: dict[int, Entity] = field(default_factory=dict)
    ownership: dict[int, Ownership] = field(default_factory=dict)
    module_names: dict[int, str] = field(default_factory=dict)
    labels: dict[int, str] = field(default_factory=dict)  # the name the user's code gave it first
    # uid -> id of the constructor call that made it (one call site made afresh on each call of a helper: one uid per
    # call path, the same site)
    made_at: dict[int, int] = field(default_factory=dict)
    # The accumulation window a framework object was configured with (source text), None when it was
    # built without one; a uid not here was built where the analysis could not see.
    windows: dict[int, str | None] = field(default_factory=dict)
    # framework objects built to scale the loss in their own backward (`Accelerator(mixed_precision="fp16")`): None
    # when surely, else the name of the setting that decides (`mixed_precision` of the launch configuration)
    loss_scalers: dict[int, str | None] = field(default_factory=dict)
    # optimizer uid -> uids of the framework objects that prepared it (its steps follow their gates): one name may
    # hold either of two (`self.accelerator = preinit_acc` or `Accelerator()`), on each path the one it enters
    prepared: dict[int, frozenset[int]] = field(default_factory=dict)
    # optimizer uid -> the only attributes the wrapper a framework returned it as has (`optimizer_attributes` of the
    # catalogue: accelerate's AcceleratedOptimizer), on every path that prepared it
    closed_attributes: dict[int, frozenset[str]] = field(default_factory=dict)
    # model uid -> the framework call that may have wrapped it for data parallelism (`accelerator.prepare`),
    # and that framework's sync context (a template with `{model}` to fill in)
    parallelised_by: dict[int, tuple[str, str]] = field(default_factory=dict)
    # model uid -> the literals of each path it became a data-parallel wrapper on, built as one (`DDP(model)`) or
    # prepared by a framework (`arm_facts`): no DDP around it on a path that took none of them (`if accelerator is
    # not None: model = accelerator.prepare(model)`)
    wrapped_under: dict[int, set[frozenset[tuple[int, bool, int]]]] = field(default_factory=dict)
    # model uid -> the setting (`self.ddp`) of the world it was prepared in that says, by its name, the script then
    # runs on one process (`worlds.multi_process_off`): several processes there are an assumption; None when it was
    # prepared in another world too, where no setting says so
    one_process_by_setting: dict[int, str | None] = field(default_factory=dict)
    # the code starts processes of its own (`torch.multiprocessing.spawn(main)`, `notebook_launcher(train)`)
    launches_processes: bool = False
    # uid of an object built from optimizers (a scheduler or a wrapper) -> those optimizers' uids
    wraps: dict[int, frozenset[int]] = field(default_factory=dict)
    # framework objects whose accumulation context was entered: their sync state now gates their
    # prepared optimizers' steps and clears, inside the context or after it
    accumulating: set[int] = field(default_factory=set)
    # parameters whose gradients a hook rescales as they are computed or reduced (`register_comm_hook`)
    hooked: set[Holder] = field(default_factory=set)
    # parameters an optimizer's own method rescaled in place (`optimizer.multiply_grads(1 / n)`): those it steps only
    rescaled_by_optimizer: set[Holder] = field(default_factory=set)
    # parameters with a hook run once each backward has accumulated into them
    # (`register_post_accumulate_grad_hook`): an optimizer may step there, inside the backward
    hooked_after_accumulation: set[Holder] = field(default_factory=set)
    # models a framework's sync context was given (`fabric.no_backward_sync(model)`): wrapped for data
    # parallelism by that framework, whatever their type says
    sync_capable: set[int] = field(default_factory=set)
    # data-parallel wrapper uid -> the modules whose parameters its forward passes ran (DDP(model): model's)
    sync_modules: dict[int, set[Holder]] = field(default_factory=dict)
    # models some accumulation context was given (`accelerator.accumulate(discriminator)`): trained in windows of their own
    gated_models: set[int] = field(default_factory=set)
    # objects made out of sight, known only by how the code uses a name (`model` handed in, `self.model`)
    unknown_origin: set[int] = field(default_factory=set)
    # modules known only by the class a parameter is annotated with (`model: MamlModel`): of that class or a subclass
    declared: set[int] = field(default_factory=set)
    # forward sites (`Value.built`'s third item) of modules of a class of the project whose `forward` was not
    # read there (another file's, past the reading budget): what it returned, a graph or `.item()` numbers, is unknown
    unread_forwards: set[int] = field(default_factory=set)
    # forward sites of modules no `forward` is known of (read, or modelled by the catalogue): how the parts of
    # what it returned hold its graph (`outputs[1]`, a `.detach()`ed per-example loss) is unknown
    results_unread: set[int] = field(default_factory=set)
    # optimizers built in sight from a class no catalogue row describes (named like one, used as one, or
    # defined in this file): what their `zero_grad()` does is not known (PULSE's SphericalOptimizer
    # never calls `Optimizer.__init__`, so its inherited `zero_grad()` raises)
    unmodelled_class: set[int] = field(default_factory=set)
    # uid -> the qualified name of the class an object was constructed from in sight (`torch.nn.Linear`)
    classes: dict[int, str] = field(default_factory=dict)
    # uid of an object built switched on or off by a setting (`GradScaler(enabled=use_amp)`) -> that argument's syntax
    # and the constructor call (`switches`)
    switches: dict[int, tuple[ast.expr, ast.AST]] = field(default_factory=dict)
    # module uid -> the objects of other constructor calls it was seen to hold, by their whole holders (`self.blocks =
    # nn.ModuleList([Block(cfg) for _ in range(n)])`): a backward through the whole module writes into them too
    parts: dict[int, set[Holder]] = field(default_factory=dict)
    # modules built in sight by a call the catalogue models as making one without parameters (`nn.ZeroPad2d(2)`)
    parameter_free: set[int] = field(default_factory=set)
    # copy uid -> the modules it copies (`fast = deepcopy(self.model)`): of their class, with fresh parameters
    copies: dict[int, frozenset[Entity]] = field(default_factory=dict)

    def wrapped_on_paths(self, uid: int, paths: set[frozenset[tuple[int, bool, int]]]) -> None:
        """This model became a data-parallel wrapper on these paths (`arm_facts.literals_of`), unless it was seen
        used as one already, whatever way the paths went."""
        if uid not in self.sync_capable or uid in self.wrapped_under:
            self.wrapped_under.setdefault(uid, set()).update(paths)

    def wrapped_everywhere(self, uids: Iterable[int]) -> None:
        """These models are data-parallel wrappers whatever way the paths went (seen used as one)."""
        for uid in uids:
            self.sync_capable.add(uid)
            if uid in self.wrapped_under:
                self.wrapped_under[uid].add(frozenset())

    def name_after(self, uid: int, label: str) -> None:
        """Name an entity after the first variable or attribute it is assigned to."""
        if uid in self.labels:
            return
        self.labels[uid] = label
        if uid in self.module_names:
            self.module_names[uid] = label

    def name_part(self, uid: int, label: str, wholes: set[str]) -> None:
        """Name a child of a container as the code refers to it (`self.critics[0]`), when it has no name of
        its own yet, or only the container's (every module of `self.critics = nn.ModuleList([...])`)."""
        if uid not in self.labels or self.labels[uid] in wholes:
            self.labels[uid] = label
            if uid in self.module_names:
                self.module_names[uid] = label

    def ownership_unknown(self, uid: int) -> bool:
        """Which parameters the optimizer updates is not known (made out of sight, or of groups not read)."""
        return self.ownership.get(uid, Ownership()).unknown

    def label(self, uid: int) -> str:
        ent = self.entities.get(uid)
        return self.labels.get(uid, ent.name if ent else "?")

    def add(self, entity: Entity) -> Entity:
        self.entities.setdefault(entity.uid, entity)
        if entity.kind in (Kind.MODEL, Kind.PARAM):
            self.module_names.setdefault(entity.uid, entity.name)
        return self.entities[entity.uid]

    def holder_name(self, holder: Holder) -> str:
        if holder.pseudo:
            opt = self.entities.get(holder.uid)
            return f"the parameters of `{self.label(holder.uid)}`" if opt else "its parameters"
        base = self.module_names.get(holder.uid, "?")
        # (a part picked by a test, `[p for n, p in m.named_parameters() if "emb" in n]`, is named by its module)
        return ".".join((base, *(p for p in holder.path if not p.startswith("["))))


    def optimizer_holders(self, opt: Entity) -> frozenset[Holder]:
        own = self.ownership.get(opt.uid)
        if own is None:
            return frozenset({Holder(opt.uid, (), pseudo=True)})
        return own.holder_set(opt)
