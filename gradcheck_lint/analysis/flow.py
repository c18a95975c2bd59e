"""The interpreter's state at a program point: the flow (environment and path states), outcomes of
blocks, and the frame that says where the interpreter is."""

from __future__ import annotations

import ast
import functools
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from .gradstate import PathState, forget_held, merge_states
from .values import Holder, Value, join, maybe_none

MAX_DEPTH = 8
MAX_LOOP_ITERATIONS = 12
WORK_BUDGET = 15_000  # statements interpreted per file; past it the analysis stops where it is (counted, never timed)

Function = ast.FunctionDef | ast.AsyncFunctionDef
_MISSING = object()


class _Transitions:
    """How many path-state transitions (training events, counter updates) ran so far: a callee run on
    one stand-in path checks that it made none (`inlining.Inliner`). What such a run makes paths
    forget of their branch tests (a flag assigned anew) is collected in `forgotten`, for the caller's
    paths to forget too; the optimizers it made anew are collected in `renewed`, for the caller's paths
    to renew too (`Flow.renew`)."""

    count = 0
    forgotten: set[int] | None = None
    renewed: set[int] | None = None


TRANSITIONS = _Transitions()


# Results of keyed gradient transitions (`Flow.map_gradients`) in the file being analysed: event ids and
# holders are the file's own ordinals, so the table is emptied when its analysis starts and ends.
_TRANSITION_RESULTS: dict[tuple[object, ...], tuple[frozenset[Any], frozenset[Any]]] = {}


# assumption key -> how many times paths were made to forget it (a name it tests was assigned): the generation of its
# literals (`arm_facts`); the file's own keys, emptied with the transitions
_GENERATIONS: dict[int, int] = {}


def forget_transitions() -> None:
    _TRANSITION_RESULTS.clear()
    _GENERATIONS.clear()
    forget_held()


def literal_generation(akey: int) -> int:
    """How many times the paths were made to forget their literals of this test (`arm_facts`)."""
    return _GENERATIONS.get(akey, 0)


def literal_generations() -> dict[int, int]:
    """The generation of every test forgotten so far (a copy, kept past the file's analysis)."""
    return dict(_GENERATIONS)


class BudgetExhausted(Exception):
    """The file needs more interpretation than the budget allows; findings so far stand."""


class Flow:
    """The analysis state at one program point: an environment and a set of path states."""

    __slots__ = ("env", "states")

    def __init__(self, env: dict[str, Value], states: frozenset[PathState]) -> None:
        self.env = env
        self.states = states

    def copy(self) -> Flow:
        return Flow(dict(self.env), self.states)

    def map(self, fn: Callable[[PathState], PathState]) -> None:
        """Apply a transition to every path state."""
        TRANSITIONS.count += 1
        self.states = frozenset(fn(s) for s in self.states)

    def forget(self, conds: list[int]) -> None:
        """What the paths assumed at these tests no longer holds (a name they test was assigned)."""
        if TRANSITIONS.forgotten is not None:
            TRANSITIONS.forgotten.update(conds)
        for akey in conds:
            _GENERATIONS[akey] = _GENERATIONS.get(akey, 0) + 1
        self.states = frozenset(s.forget(conds) for s in self.states)

    def renew(self, optimizers: frozenset[int]) -> None:
        """These optimizers were made anew: what paths hold of the ones an earlier run of the same
        constructor made (the same entities: a trainer built on each iteration of a loop) is not theirs.
        A new optimizer has no AMP stage: its first gradients are not the scaled ones an earlier
        instance left, while the settings that decided them (`self.use_amp = use_amp`) are forgotten
        by the assignments of the same constructor."""
        if TRANSITIONS.renewed is not None:
            TRANSITIONS.renewed.update(optimizers)
        if any(mark[0] in optimizers for s in self.states for mark in s.amp):
            self.states = frozenset(s.without_amp_marks(optimizers) for s in self.states)

    def map_quiet(self, fn: Callable[[PathState], PathState]) -> None:
        """Apply a transition that only annotates what the paths already hold (entering a loop, an
        exception handler): it changes nothing on a path that holds no gradient."""
        self.states = frozenset(fn(s) for s in self.states)

    def hand_written(self, fn: Callable[[PathState], PathState], key: tuple[object, ...] | None = None) -> None:
        """`map_gradients` for gradients written, replaced, rescaled or dropped by hand (`p.grad.copy_(...)`,
        `p.grad = g`, `p.grad.mul_(s)`): no parameter's `.grad` is known None after it (`NULL_GRADS`)."""
        forget_null_grads(self.env)
        self.map_gradients(fn, key)

    def map_gradients(self, fn: Callable[[PathState], PathState], key: tuple[object, ...] | None = None) -> None:
        """Apply a training event's transition, which reads only what the gradients hold (grads,
        discards, frozen sets) and changes only grads and discards, once per distinct holding: paths
        that differ only in their branch assumptions, phases or AMP marks share the result.

        `key` names the transition with everything it depends on besides the path (the event, the
        holders): its results are then remembered for the whole file (`forget_transitions`), and a
        loop's fixpoint, which runs its body again over mostly the same paths, computes each once."""
        TRANSITIONS.count += 1
        memo: dict[tuple[object, ...], tuple[frozenset[Any], frozenset[Any]]] = {}
        out = []
        for s in self.states:
            holding = (s.grads, s.discards, s.frozen)
            r = memo.get(holding)
            if r is None:
                if key is None:
                    t = fn(s)
                    r = (t.grads, t.discards)
                else:
                    r = _TRANSITION_RESULTS.get((key, holding))
                    if r is None:
                        t = fn(s)
                        r = _TRANSITION_RESULTS[(key, holding)] = (t.grads, t.discards)
                memo[holding] = r
            out.append(s if s.grads is r[0] and s.discards is r[1] else s._with(grads=r[0], discards=r[1]))
        self.states = frozenset(out)


    @staticmethod
    def join(flows: Sequence[Flow | None]) -> Flow | None:
        live = [f for f in flows if f is not None]
        if not live:
            return None
        if len(live) == 1:
            return live[0].copy()
        states = merge_states(frozenset().union(*(f.states for f in live)))
        if len(live) == 2:  # the common case (two branches, loop head and back edge): one pass
            a, b = live[0].env, live[1].env
            env = {}
            counted = False  # the paths stepped a parameter set a different number of times
            for k, v in a.items():
                w = b.get(k, _MISSING)
                # (a name one path did not bind may be anything there: None too)
                if w is v:
                    env[k] = v
                elif k.startswith(NULL_GRADS):
                    continue  # None on one path only (or missing there): not known None
                elif w is _MISSING:
                    env[k] = maybe_none(_join_key(k, [v]))
                    counted = counted or k.startswith(GENERATION)
                else:
                    env[k] = _join_key(k, [v, w])  # type: ignore[list-item]
                    counted = counted or k.startswith(GENERATION)
            for k, w in b.items():
                if k not in a and not k.startswith(NULL_GRADS):
                    env[k] = maybe_none(w)
                    counted = counted or k.startswith(GENERATION)
            if counted:  # join again what holds graphs, each path's counted against the joined count
                a2, b2 = _aligned_generations([a, b])
                for k in {k for k, v in a2.items() if v is not a[k]} | {k for k, w in b2.items() if w is not b[k]}:
                    vals = [x[k] for x in (a2, b2) if k in x]
                    env[k] = _join_key(k, vals) if len(vals) == 2 else maybe_none(_join_key(k, vals))
            return Flow(env, states)
        envs = _aligned_generations([f.env for f in live])
        env = {}
        keys: list[str] = []
        seen: set[str] = set()
        for e in envs:
            for k in e:
                if k not in seen:
                    seen.add(k)
                    keys.append(k)
        for k in keys:
            vals = [e[k] for e in envs if k in e]
            first = vals[0]
            if k.startswith(NULL_GRADS):
                if len(vals) == len(live) and all(v is first for v in vals):
                    env[k] = first
            elif len(vals) < len(live):
                env[k] = maybe_none(_join_key(k, vals))
            else:
                env[k] = first if all(v is first for v in vals) else _join_key(k, vals)
        return Flow(env, states)


SYNC_OFF = "@nosync:"  # env key prefix: a data-parallel wrapper's gradient sync set off ("True"), on ("False"), unknown (None)
# in a frame's `sync_maybe`: sync may be off for any wrapper (`accelerator.accumulate(model)` of a model of
# unknown origin, a function's parameter: it may be any prepared model)
ANY_WRAPPER = 0
SYNC_SET = "@syncset:"  # env key prefix: how many times the code assigned a wrapper's sync flag so far
UNIT_WINDOW = "@unit:"  # env key prefix: a window size known to be 1 on this flow ("True": `else:` of `if N > 1:`)
GENERATION = "@gen:"  # env key prefix: how many optimizer steps updated a set of parameters so far
# env key prefix: a parameter set's `.grad` is None on every path of this flow (a clear that sets it to None, the
# default of `zero_grad()` since torch 2.0, and no gradient written into it since): a step leaves it unchanged
NULL_GRADS = "@nullgrad:"
NULL_GRADS_VALUE = Value(const="True")


def _holder_key(prefix: str, holder: Holder) -> str:
    """An env key of a fact about one parameter set (`@gen:7/encoder.layer`)."""
    return f"{prefix}{holder.uid}/{'.'.join(holder.path)}"


def _key_holder(key: str, prefix: str) -> Holder:
    """The parameter set a `_holder_key` names."""
    uid, _, path = key[len(prefix):].partition("/")
    return Holder(int(uid), tuple(path.split(".")) if path else ())


def generation_key(holder: Holder) -> str:
    return _holder_key(GENERATION, holder)


def null_grads_key(holder: Holder) -> str:
    return _holder_key(NULL_GRADS, holder)


def set_null_grads(env: dict[str, Value], holders: Iterable[Holder]) -> None:
    """A clear set these parameter sets' `.grad` to None (one shared value: merges keep it where every path has it)."""
    for h in holders:
        env[null_grads_key(h)] = NULL_GRADS_VALUE


def null_grads(env: dict[str, Value], holder: Holder) -> bool:
    """The parameter set's `.grad` is None on every path of this flow."""
    return env.get(null_grads_key(holder)) is NULL_GRADS_VALUE


def forget_null_grads(env: dict[str, Value], written: Iterable[Holder] | None = None,
                      parts: Callable[[Holder], Iterable[Holder]] = lambda h: ()) -> None:
    """Gradients were written into `written` (None: into parameters the analysis cannot name): their `.grad` is no
    longer known to be None, nor that of any parameter set overlapping them or holding one of them among its `parts`
    (the modules of an `nn.ModuleList`, entities of their own)."""
    keys = [k for k in env if k.startswith(NULL_GRADS)]
    if not keys:
        return
    hs = None if written is None else list(written)
    for k in keys:
        held = _key_holder(k, NULL_GRADS)
        if hs is None or any(held.overlaps(h) for h in hs) or any(p.overlaps(h) for p in parts(held) for h in hs):
            del env[k]


@functools.lru_cache(maxsize=4096)  # asked for every stepped parameter set at every loop iteration
def holder_of_key(key: str) -> Holder:
    return _key_holder(key, GENERATION)


def step_counts(env: dict[str, Value]) -> list[tuple[str, int, Holder]]:
    """Every stepped parameter set's nonzero step count: (key, count, parameter set)."""
    return [(k, v.const, holder_of_key(k)) for k, v in env.items()
            if k.startswith(GENERATION) and isinstance(v.const, int) and v.const]


def generations(env: dict[str, Value], holder: Holder,
                counts: list[tuple[str, int, Holder]] | None = None) -> frozenset[tuple[str, int]]:
    """The step counts of every stepped parameter set that overlaps `holder` (a module's graph needs them);
    `counts`: `step_counts(env)`, when the caller asks for several holders of one environment."""
    return frozenset((k, c) for k, c, h in (step_counts(env) if counts is None else counts) if h.overlaps(holder))


ITERATED = "@iter:"  # env key prefix: the object a `for` loop walks, read other than by a plain name (`counters`)
STALE_BEFORE = -1  # a step count for a graph a step made stale before the current loop iteration began
# ... held by a name the previous iteration left (`mems`, `hidden`), that code out of sight may have detached
STALE_CARRIED = -2


def rebase_graphs(env: dict[str, Value], counts: dict[str, int], assigned: set[str],
                  direct: Callable[[Holder, int], bool], carried: frozenset[str] = frozenset()) -> None:
    """A loop iteration begins and step counts restart from 0: a graph some step has made stale since
    it was built (`values` of a rollout, backpropagated again in each update epoch) keeps that fact as a
    count of -1 for the parameter set. Only plain variables the loop never assigns (nor clears): one it
    assigns holds this iteration's graph by the time it is used (a path that skips every assignment,
    `if objective == "H": ... elif objective == "B": ...`, is not a real one), and attributes and items
    are rebuilt by code the loop calls (a module's forward storing its activations on `self`). Only
    graphs of a module called as such (`vf(obs)`, `vf.forward(obs)`; `direct` says which forward
    ordinals those are): another method (`model.norm_obs(obs)`) may well build none.
    `carried`: names the loop does assign, but reads first (`syntax.carried_names`): what they hold at
    the top of an iteration the previous one left, graph and all as far as the analysis sees; a
    rebuild out of sight (a model that returns its memory detached, a `repackage_hidden` of another
    file) would leave none, so their staleness is marked `STALE_CARRIED`, an assumption (GL009)."""
    stale = [(key, holder_of_key(key), count) for key, count in counts.items()]
    memo: dict[tuple[object, int], tuple[Holder, frozenset[tuple[str, int]], int]] = {}  # values share their graphs
    for name, value in list(env.items()):
        if value.built or _items_built(value):  # a list of a rollout's tuples holds its graphs in its items
            plain = name.isidentifier() or name.startswith(ITERATED)
            mark = STALE_CARRIED if plain and name in carried else STALE_BEFORE if plain and name not in assigned else 0
            if mark or any(c < 0 for _h, before, _s in value.built for _k, c in before):
                env[name] = _rebased(value, stale, mark, direct, memo)


def _items_built(value: Value, depth: int = 2) -> bool:
    """Items of a list or tuple (by position, not a dict's by key: a batch handed in anew) hold graphs."""
    return depth > 0 and any(k.isdigit() and (v.built or _items_built(v, depth - 1)) for k, v in value.items)


def _rebased(value: Value, stale: list[tuple[str, Holder, int]], mark: int, direct: Callable[[Holder, int], bool],
             memo: dict[tuple[object, int], tuple[Holder, frozenset[tuple[str, int]], int]]) -> Value:
    """`mark` (non-zero): the loop does not rebuild the value before reading it, so a step since it was
    built marks it stale with that mark; 0: marks an inner loop gave it are dropped (this loop's
    iteration builds it anew). `memo`: graphs already rebased in this call (by graph and mark). A value
    with nothing changed is returned as is."""
    built = set()
    for graph in value.built:
        done = memo.get((graph, mark))
        if done is None:
            holder, before, site = graph
            seen = {k: c for k, c in before if c >= 0 or mark}
            if mark and direct(holder, site):
                for key, h, count in stale:
                    now = seen.get(key, 0)
                    if h.overlaps(holder) and (count > now if now >= 0 else mark > now):
                        seen[key] = mark  # STALE_BEFORE outranks STALE_CARRIED
            done = memo[(graph, mark)] = (holder, frozenset(seen.items()), site)
        built.add(done)
    items = tuple((k, _rebased(v, stale, mark, direct, memo) if v.built or _items_built(v) else v)
                  for k, v in value.items)
    new_built = frozenset(built)
    if new_built == value.built and all(a is b for (_, a), (_, b) in zip(items, value.items)):
        return value
    return replace(value, built=new_built, items=items)


def generation(env: dict[str, Value], key: str) -> int:
    value = env.get(key)
    return value.const if value is not None and isinstance(value.const, int) else 0


def _aligned_generations(envs: list[dict[str, Value]]) -> list[dict[str, Value]]:
    """The environments of paths that meet, their graphs' step counts re-expressed against the joined count.

    A join takes the largest step count of a parameter set (some path stepped), but a graph a path built
    after its own last step is fresh on that path: `loss_sum` rebuilt on the paths that did not step while
    the path that stepped reset it to 0.0 holds no graph of before the step. So each environment whose
    count is lower than the joined one has its graphs' counts raised by the difference: a graph keeps how
    many steps ago it was built on its own path. A graph the paths share (built before the branch) is
    raised on the path that did not step only; the path that did still holds it stale."""
    counts = [{k: v.const for k, v in env.items() if k.startswith(GENERATION) and isinstance(v.const, int) and v.const}
              for env in envs]
    if all(c == counts[0] for c in counts[1:]):
        return envs
    joined: dict[str, int] = {}
    for c in counts:
        for k, n in c.items():
            joined[k] = max(joined.get(k, 0), n)
    out = []
    for env, c in zip(envs, counts):
        shift = [(k, holder_of_key(k), n - c.get(k, 0), n) for k, n in joined.items() if n > c.get(k, 0)]
        if not shift:
            out.append(env)
            continue
        memo: dict[Graph, Graph] = {}
        out.append({name: _shifted(v, shift, memo) if v.built or _items_built(v) else v for name, v in env.items()})
    return out


Graph = tuple[Holder, frozenset[tuple[str, int]], int]  # a graph a value holds: parameters, counts at its build, site


def _shifted(value: Value, shift: list[tuple[str, Holder, int, int]], memo: dict[Graph, Graph]) -> Value:
    """`value` with the step counts its graphs were built at raised by `shift` (key, parameter set, amount, joined
    count) for the parameter sets they overlap, never past the joined count (a graph counted past its path's
    count, carried from an iteration whose steps the loop's restart forgot, is fresh: no more); marks of
    staleness (negative counts) stay."""
    built = set()
    for graph in value.built:
        done = memo.get(graph)
        if done is None:
            holder, before, site = graph
            seen = dict(before)
            for key, h, amount, joined in shift:
                now = seen.get(key, 0)
                if now >= 0 and h.overlaps(holder):
                    seen[key] = min(now + amount, max(now, joined))
            done = memo[graph] = (holder, frozenset(seen.items()), site)
        built.add(done)
    items = tuple((k, _shifted(v, shift, memo) if v.built or _items_built(v) else v) for k, v in value.items)
    return replace(value, built=frozenset(built), items=items)


def _join_key(key: str, vals: list[Value]) -> Value:
    """Join one name's values; a module's step generation joins to the largest (some path stepped)."""
    if key.startswith(GENERATION) or key.startswith(SYNC_SET):
        return Value(const=max(v.const if isinstance(v.const, int) else 0 for v in vals))
    return join(vals)


@dataclass
class Outcome:
    """How a block ends: normally, by break, by continue, or by return (with the returned value)."""

    normal: Flow | None
    breaks: list[Flow] = field(default_factory=list)
    continues: list[Flow] = field(default_factory=list)
    returns: list[tuple[Flow, Value]] = field(default_factory=list)

    @staticmethod
    def merge(outs: list[Outcome]) -> Outcome:
        return Outcome(
            normal=Flow.join([o.normal for o in outs]),
            breaks=[b for o in outs for b in o.breaks],
            continues=[c for o in outs for c in o.continues],
            returns=[r for o in outs for r in o.returns],
        )

    def then(self, after: Outcome) -> Outcome:
        """This outcome followed by `after`, which ran from its normal end."""
        return Outcome(after.normal, self.breaks + after.breaks, self.continues + after.continues, self.returns + after.returns)


@dataclass
class Frame:
    """Where the interpreter is: which function, class, loops, branches and contexts enclose it.

    `gates`: framework objects whose accumulation context (`accelerator.accumulate(model)`) is open;
    steps and clears of the optimizers they prepared fire on window boundaries only.
    """

    function: Function | None
    cls: object | None  # a definitions.ClassInfo
    self_value: Value | None
    depth: int
    local_defs: dict[str, Function]
    loops: tuple[int, ...] = ()
    ifs: tuple[int, ...] = ()
    no_grad: bool = False
    gates: tuple[int, ...] = ()
    # data-parallel wrappers (uids) whose gradient sync a context turned off here (`with model.no_sync():`),
    # and those it may have turned off (`with (nullcontext() if last else model.no_sync()):`)
    sync_off: frozenset[int] = frozenset()
    sync_maybe: frozenset[int] = frozenset()
    active: tuple[int, ...] = ()  # functions being inlined, for recursion
    closure_env: dict[str, Value] | None = None  # what a nested function sees of its definer
    arguments: tuple[Value, ...] = ()  # the values the call passed in (for `__init__`: modules it is given)
    # the caller's name for `self` in a method run on a local instance (`progress` of `progress.next_step()`):
    # what the method assigns as `self.global_step` is the caller's `progress.global_step`
    owner: str | None = None
    # autograd is on whatever the code around says: a closure `optimizer.step(closure)` runs (every torch optimizer
    # runs it under `torch.enable_grad()`), so `torch.is_grad_enabled()` holds in it
    grad_on: bool = False
    # `no_grad` holds because every path reaching here ran `torch.set_grad_enabled(False)` (`grad_mode`), not
    # because of a `with` or a decorator around: it goes when a path that did not (or turned it on again) joins
    by_mode: bool = False


_LAST = "%last:"  # env key of the value last appended to a list, read as `x[-1]`
_LAST_OF = "%last-of:"  # ... and of the list object it was appended to (it still is, while the name holds it)


def last_appended(flow: Flow, key: str, value: Value) -> None:
    """`x.append(value)` left `x` bound to `flow.env[key]`: `x[-1]` is `value` while `x` is that object."""
    flow.env[f"{_LAST_OF}{key}"] = flow.env[key]
    flow.env[f"{_LAST}{key}"] = value


def forget_appended(flow: Flow, key: str) -> None:
    """`x.pop()`, `x.extend(...)`, `x.sort()`: what `x[-1]` is, is no longer known."""
    flow.env.pop(f"{_LAST_OF}{key}", None)
    flow.env.pop(f"{_LAST}{key}", None)


def appended_last(flow: Flow, key: str, container: Value) -> Value | None:
    """`x[-1]` of the list `container` bound to `key`: the value last appended to it, when known."""
    if flow.env.get(f"{_LAST_OF}{key}") is not container:
        return None
    return flow.env.get(f"{_LAST}{key}")
