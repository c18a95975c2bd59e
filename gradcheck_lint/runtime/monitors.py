"""Runtime counterparts of GL006-GL010: what the ledger of contributions does not see.

The probe tells the monitors about each backward pass, the parameters it wrote, clears, unscales and
steps; the monitors also watch a few torch entry points while a probe is active (patched at class or
module level, restored when the last probe closes):

- GL006: `DistributedDataParallel.forward` records whether gradient sync was on for each forward
  (DDP decides at forward time whether the next backward all-reduces). A window of several backward
  passes in which a pass other than the last all-reduced is reported at that backward; when the model's
  sync was off by the time of that backward (`no_sync()` around the backward only, the flag set after
  the forward), as switched off too late, naming the forward's line.
- GL007: `GradScaler.scale` marks its output; a backward of a marked loss leaves the gradients it wrote
  "scaled" until `unscale_` (seen by the probe), a clear or a step. A clip
  (`torch.nn.utils.clip_grad_norm_` / `clip_grad_value_`, told by the probe's clip wrapper, `clips.py`)
  of scaled gradients, a step of an optimizer whose gradients are still scaled (it bypassed
  `scaler.step`), a clip of gradients a backward wrote since their last clear or step followed by
  another backward before any step (it clipped a partial window), and `unscale_` raising "already been
  called" are reported.
- GL008: the root of each backward's graph carries a small sentinel in its metadata; graphs of three or
  more backward passes of one line still alive two steps later are kept by something that outlives the
  loop (a running total, a list of losses). The probe's steady cycle (default mode) tags the first
  `TAG_ALL` of its passes of each line, then every pass of its sampled cycles (`tag_first`), as the
  replay (`replay.py`) does: a loop that keeps graphs is still reported, later; the full path and strict
  mode tag every pass.
- GL009: a backward that raises PyTorch's in-place error, through parameters an optimizer stepped, is
  reported at that backward; the error itself propagates, with the diagnostic added as a note.

GL010 needs no monitor: a loss divided by the accumulation window by hand and again by a framework's
backward (`accelerator.backward`) is the ledger's "divided twice", worded as GL010 (see `wording.py`).
"""

from __future__ import annotations

import sys
import weakref
from collections.abc import Callable
from types import FrameType
from typing import Any

import torch

from .. import messages
from .evidence import Site
from .kept_sites import kept_at
from .loop_callers import Frame, callers, reached_via
from .names import module_name
from .report import Finding
from .returned_keepers import ReturnedWatch, watch_returned
from .sites import _user_frame, user_site
from .stale_forward import stale_forward
from .sync_sites import sync_choice

FindingSink = Callable[[Finding, object, bool], None]  # (finding, step token, may raise)

_KEPT_GRAPHS = 3  # live graphs of one backward line, two steps old, that make GL008
_NEVER = 1 << 62  # a step count no run reaches
_MAX_OWED = 1 << 20  # step ends a replay's lane may pass before telling `Monitors.after_step` (`quiet_steps`)
TAG_ALL = 64  # passes of each backward line the steady cycle tags before it samples (`Monitors.tag_first`)
_INPLACE_ERROR = "modified by an inplace operation"
_UNSCALE_TWICE = "unscale_() has already been called"

_ACTIVE: list[Monitors] = []
_ORIGINALS: dict[tuple[Any, str], Any] = {}


def _finding(code: str, name: str, site: Site, msg_help: tuple[str, str], optimizer: str = "") -> Finding:
    msg, help_ = msg_help
    return Finding(code=code, name=name, path=site.path, line=max(site.line, 1), col=max(site.col, 1),
                   message=msg, help=help_, optimizer=optimizer)


def _other_call(a: Site, b: Site) -> bool:
    """Two backward sites of different calls (another file, line or column)."""
    return (a.path, a.line, a.col) != (b.path, b.line, b.col)


class Monitors:
    """Per-probe state of the GL006-GL009 monitors."""

    def __init__(self, sink: FindingSink, names: Callable[[torch.Tensor], str]) -> None:
        reported = self.reported = [0]  # findings sent (a replayed cycle is one that reported nothing)

        def counted(finding: Finding, step: object, may_raise: bool) -> None:
            reported[0] += 1
            sink(finding, step, may_raise)

        self.sink = counted
        self.owner_name = names  # the model's name of a parameter, as the probe knows it
        self.opt_names: dict[int, str] = {}  # optimizer id -> its name at its last step call
        self.opt_params: dict[int, frozenset[int]] = {}
        self.last_step: dict[int, Site] = {}
        self._step_order: dict[int, int] = {}  # optimizer id -> the count of steps at its last step
        self.steps = 0
        # GL007
        self.scaled_outputs: dict[int, weakref.ReferenceType[torch.Tensor]] = {}
        self.scaled: set[int] = set()  # parameter ids whose .grad is still multiplied by a scaler's scale
        self.scaled_by: Site | None = None
        self.pass_scaled = False
        self.collect = False  # the probe tells `wrote` which parameters this backward pass wrote
        self.clip: tuple[Site, set[int]] | None = None  # the last clip, until a step or a clear
        # GL006
        # (sync on, model, the forward's line for a synced one) since the last backward
        self.ddp_forwards: list[tuple[bool, _ModelRef, int]] = []
        # told when a GradScaler's output or a DDP forward is recorded (the probe's replay leaves its lane then)
        self.pending: Callable[[], None] | None = None
        # backward passes since the last step: (site, synced, model, the synced forward's line when the
        # model's sync was off by the backward: switched off too late, after the forward that decided, the
        # user frames running a synced one: `loop_callers`)
        self.window: list[tuple[Site, bool, _ModelRef, int | None, tuple[Frame, ...]]] = []
        # GL008
        self.graphs: list[tuple[weakref.ReferenceType[Any], Site, int]] = []  # in order of their epochs
        # the step count from which the third oldest graph tagged (live or not) is two steps old: `after_step`
        # calls `_check_graphs` from then on, which can report nothing before (it prunes the dead ones then)
        self._graphs_due = _NEVER
        self.kept_reported: set[Site] = set()
        self.tag_counts: dict[Site, int] = {}  # the steady cycle's passes of each backward line (`tag_first`)
        self.returned: list[ReturnedWatch] = []  # a caller keeping what a function returns (`returned_keepers.py`)
        # the replay whose lane passed step ends without calling `after_step` (`Replay.owed`, within the room
        # `quiet_steps` gave): every method here first tells them (`_catch_up`), so none reads a stale count
        self.owed_by: Any = None

    # -- lifecycle
    def open(self) -> None:
        if not _ACTIVE:
            _patch()
        _ACTIVE.append(self)

    def close(self) -> None:
        if self in _ACTIVE:
            _ACTIVE.remove(self)
            if not _ACTIVE:
                _unpatch()

    # -- from the probe
    def before_backward(self, site: Site, tensors: Any, grad_fn: Any = None) -> None:
        """`grad_fn`: the graph's root, when `tensors` is one tensor (read once by the caller)."""
        if self.owed_by is not None:
            self._catch_up()
        if self.scaled_outputs:
            ref = self.scaled_outputs.get(id(tensors))
            self.pass_scaled = ref is not None and ref() is tensors
            if self.pass_scaled:
                self.scaled_by = site
        else:
            self.pass_scaled = False
        self.collect = self.pass_scaled or self.clip is not None
        if self.ddp_forwards:
            synced = next(((m, line) for on, m, line in self.ddp_forwards if on), None)
            model = synced[0] if synced is not None else self.ddp_forwards[-1][1]
            late = None
            if synced is not None:
                module = model.ref()
                if module is not None and not getattr(module, "require_backward_grad_sync", True):
                    late = synced[1]
            self.window.append((site, synced is not None, model, late, callers() if synced is not None else ()))
            self.ddp_forwards.clear()
        if grad_fn is not None:
            self.tag(site, grad_fn)

    def tag(self, site: Site, grad_fn: Any) -> None:
        """GL008's tag on a pass's graph (its root `grad_fn`): a sentinel that lives as long as the graph.
        A tag reads the step count alone: with step ends owed (`quiet_steps`), the count `_catch_up` would
        make, without telling them, so the replay's lane keeps passing step ends while no graph is due (before
        2026-12-01 each tag told them, and the next step end called `after_step` and `quiet_steps`)."""
        if self.kept_reported and site in self.kept_reported:
            return
        sentinel = _Sentinel()
        try:
            grad_fn.metadata["gradcheck_lint"] = sentinel
        except (AttributeError, RuntimeError, TypeError):
            return
        owed_by = self.owed_by
        steps = self.steps if owed_by is None else self.steps + owed_by.owed
        graphs = self.graphs
        if len(graphs) == _KEPT_GRAPHS - 1 and (graphs[0][0]() is None or graphs[1][0]() is None):
            # the graphs are due (`_graphs_due`) once three are tagged: dead ones are not counted, so that a
            # loop whose last loss is the only one alive never makes them due (`_check_graphs` drops them too;
            # before 2026-12-01 they counted here, and three tags made the next steps call `after_step`)
            graphs = self.graphs = [g for g in graphs if g[0]() is not None]
        graphs.append((weakref.ref(sentinel), site, steps))
        if len(graphs) == _KEPT_GRAPHS:
            due = self._graphs_due = graphs[_KEPT_GRAPHS - 1][2] + 2
            if owed_by is not None:  # the step end at which the graphs are due calls `after_step` (`quiet_steps`)
                owed_by.room = max(0, min(owed_by.room, due - steps - 1))

    def tag_first(self, site: Site) -> bool | None:
        """Whether a pass of the probe's steady cycle (`cycle.py`) or replay (`replay.py`) gets GL008's tag
        (`before_backward` with its graph's root; without it, none): True for the first `TAG_ALL` passes
        of each line (counted), False for a line already reported, None past its first passes: then the
        passes of the sampled cycles are tagged (`cycle.py`: the verified ones, the first 8 and then one in
        8 chosen pseudo-randomly, one draw per cycle for the tags, the `.grad` reads and the loss factors
        alike; `replay.py`: its verified cycles and one in `TAG_EVERY` drawn apart, which its lane tags with
        `tag`; pseudo-random, as a fixed rotation would never meet a loop that keeps every k-th loss at another
        offset). Sampling
        only delays a report: a graph not tagged is not counted, so a loop that keeps every loss's graph
        is reported once three tagged ones are two steps old (for one pass per cycle, on average about 3 x
        8 passes after it starts keeping them, once past the first `TAG_ALL`), one that keeps every k-th
        loss about k times later; nothing is reported that every tag would not report."""
        if self.kept_reported and site in self.kept_reported:
            return False
        counts = self.tag_counts
        n = counts.get(site, 0)
        if n < TAG_ALL:
            counts[site] = n + 1
            return True
        return None

    def wrote(self, site: Site, keys: list[int]) -> None:
        """Parameters this backward pass accumulated into (told only when `collect` is set)."""
        if self.owed_by is not None:
            self._catch_up()
        if self.pass_scaled:
            self.scaled.update(keys)
        if self.clip is not None and self.clip[1].intersection(keys):
            # clipped, then more gradients into the same parameters before any step (a step inside
            # this backward, from a parameter hook, cleared `clip`): the clip saw a partial window
            clip_site, clipped = self.clip
            self.clip = None
            opt = next((o for o, ps in self.opt_params.items() if ps & clipped), None)
            name = self.opt_names.get(opt, "optimizer") if opt is not None else "optimizer"
            self._report("GL007", clip_site, messages.amp_scaled_gradients("partial", clip_site.text or "clip_grad_norm_(...)",
                                                                           name, site.text or None, site.line,
                                                                           self.pass_scaled), name)

    def backward_failed(self, site: Site, tensors: Any, err: BaseException, frame: FrameType | None = None) -> None:
        """GL009: PyTorch's in-place error, through parameters an optimizer stepped since the forward.
        `frame`: where the backward was called from (the forward is looked up in its source)."""
        if self.owed_by is not None:
            self._catch_up()
        if not isinstance(err, RuntimeError) or _INPLACE_ERROR not in str(err) or not self.last_step:
            return
        leaves = _leaf_ids(tensors)
        stepped = [(o, s) for o, s in self.last_step.items() if self.opt_params.get(o, set()) & leaves]
        if not stepped:
            return
        opt, step = max(stepped, key=lambda item: self._step_order.get(item[0], 0))
        param = next((p for p in leaf_tensors(tensors) if id(p) in self.opt_params[opt]), None)
        model = self.owner_name(param) if param is not None else ""
        forward = stale_forward(_user_frame(frame), param, step, site, tensors)
        finding = _finding("GL009", "backward-after-step", site, messages.backward_after_step(
            site.text or "backward()", model, forward[0] if forward else None, forward[1] if forward else None,
            step.text or "step()", step.line), self.opt_names.get(opt, ""))
        err.add_note(f"gradcheck_lint: {finding.path}:{finding.line}:{finding.col}: GL009 {finding.message}")
        self.sink(finding, None, False)

    def cleared(self, key: int) -> None:
        if self.owed_by is not None:
            self._catch_up()
        self.scaled.discard(key)
        if self.clip is not None and key in self.clip[1]:
            self.clip = None

    def cleared_many(self, keys: frozenset[int]) -> None:
        """`cleared` for every parameter of one clearing call."""
        if self.owed_by is not None:
            self._catch_up()
        if self.scaled:
            self.scaled -= keys
        if self.clip is not None and not self.clip[1].isdisjoint(keys):
            self.clip = None

    def unscaled(self, keys: set[int]) -> None:
        if self.owed_by is not None:
            self._catch_up()
        self.scaled -= keys

    def before_step(self, opt_id: int, site: Site, name: str, keys: frozenset[int]) -> None:
        """`keys`: the ids of the optimizer's parameters."""
        if self.owed_by is not None:
            self._catch_up()
        self.opt_names[opt_id] = name
        self.opt_params[opt_id] = keys
        if self.scaled and not self.scaled.isdisjoint(keys):  # GL007: applied while still multiplied by the scale
            by = self.scaled_by
            self._report("GL007", site, messages.amp_scaled_gradients("bypass", site.text or "step()", name,
                                                                      by.text if by else None, by.line if by else None), name)
            self.scaled -= keys

    def after_step(self, opt_id: int, site: Site, keys: frozenset[int]) -> None:
        """`keys`: the ids of the optimizer's parameters."""
        if self.owed_by is not None:
            self._catch_up()
        steps = self.steps = self.steps + 1
        self.last_step[opt_id] = site
        self._step_order[opt_id] = steps
        if self.scaled:
            self.scaled -= keys
        if self.clip is not None and self.clip[1] & keys:
            self.clip = None
        if self.window:
            self._check_window(site)
        if steps >= self._graphs_due:  # GL008 needs three graphs two steps old (`_graphs_due`)
            self._check_graphs()
        if self.returned:
            self._check_returned()

    # -- GL006
    def quiet_steps(self) -> int:
        """How many step ends from now on `after_step` would only count (the step count, and each optimizer's
        last step and its place in the order): none while a GradScaler's scale, a clip, a DDP window or a kept
        total is pending, nor from the step at which GL008's graphs are due. A replay's lane passes that many
        without calling it (`Replay.owed`), and `_catch_up` tells them before anything here reads the count (but
        `tag`, which adds them to the count it reads, and cuts the room when it makes the graphs due)."""
        if self.scaled or self.clip is not None or self.window or self.returned:
            return 0
        return max(0, min(self._graphs_due - self.steps - 1, _MAX_OWED))

    def _catch_up(self) -> None:
        """The step ends the replay's lane passed without `after_step` (`quiet_steps`), told as `after_step`
        would have told them: the count, and for each optimizer its last step and that step's count (the
        owed ones are the latest step ends passed, in the replay's cycle: `Replay.ends`)."""
        replay, self.owed_by = self.owed_by, None
        owed, replay.owed, replay.room = replay.owed, 0, 0
        if not owed:
            return
        steps = self.steps = self.steps + owed
        period, ends = replay.period, replay.ends
        i = replay.next_i
        seen: set[int] = set()
        k = 0  # step ends back from the latest
        for _ in range(period):
            i = (i - 1) % period
            end = ends[i]
            if end is None:
                continue
            if end[0] not in seen:
                seen.add(end[0])
                self.last_step[end[0]] = end[1]
                self._step_order[end[0]] = steps - k
            k += 1
            if k >= owed:
                break

    def ddp_forward(self, sync: bool, model: Any, line: int = 0) -> None:
        """A DDP forward pass; `line`: where the user's code ran it (0: not looked up, or sync off)."""
        if self.owed_by is not None:
            self._catch_up()
        self.ddp_forwards.append((sync, _ModelRef(model), line))
        if self.pending is not None:
            self.pending()

    def _check_window(self, step: Site) -> None:
        if not self.window:
            return
        window, self.window = self.window, []
        for site, _synced, model, late, _chain in window[:-1]:
            if late is not None:
                # sync switched off after the forward that decided it (`with model.no_sync():` around the
                # backward only, the flag set after the forward): as the static side words it
                self._report("GL006", site, messages.ddp_accumulation_without_no_sync(
                    site.text or "backward()", model.name(), step.text or "step()", step.line, late=True,
                    forward_line=late or None))
                return
        last, last_synced, last_model, _late, _chain = window[-1]
        if not last_synced and any(entry[1] for entry in window[:-1]):
            # the wrong way round: the micro-batch that steps keeps its gradients on each rank; the
            # finding anchors at the choice of `no_sync()` around its backward, as the static side's
            # the anchor's words are the static side's when the choice is a conditional expression
            anchor, choice = sync_choice(last)
            if choice is not None:
                words = messages.ddp_no_sync_chosen_on_stepping_micro_batch(
                    choice.off_text, last_model.name(), choice.test, choice.off_when, step.text or "step()", step.line,
                    last.text or "backward()", last.line)
            elif anchor != last and _other_call(first := next(entry[0] for entry in window[:-1] if entry[1]), last):
                # a `with model.no_sync():` of the backward's own function chosen by an `if` statement, the other
                # micro-batches running another backward call (`if last: with model.no_sync(): ...backward()`,
                # `else: ...backward()`): the static side reads no choice there and anchors at the first
                # micro-batch's backward that all-reduces for nothing; so does this, in words that give the
                # stepping micro-batch's line and say the replicas diverge
                anchor = first
                words = messages.ddp_last_micro_batch_unsynced(last.text or "backward()", last_model.name(),
                                                               step.text or "step()", step.line, last.line)
            else:  # one backward under a context chosen by statements (at the choice), or one a caller entered
                words = messages.ddp_last_micro_batch_unsynced(last.text or "backward()", last_model.name(),
                                                               step.text or "step()", step.line)
            self._report("GL006", anchor, words)
            return
        for site, synced, model, _late, chain in window[:-1]:
            if synced:
                # a backward in a helper: the call that runs it from the window's loop, as statically
                self._report("GL006", site, messages.ddp_accumulation_without_no_sync(
                    site.text or "backward()", model.name(), step.text or "step()", step.line,
                    via=reached_via(chain, callers())))
                return

    # -- GL007
    def clipped(self, site: Site, params: Any, window: bool = True) -> None:
        """A clip of `params` (told by the probe's clip wrapper, `clips.before`); `window`: whether their
        gradients hold a backward pass no step applied. A clip of gradients just cleared or stepped
        limits no window: the next micro-batch's gradients are not added to a clip."""
        if self.owed_by is not None:
            self._catch_up()
        keys = {id(p) for p in _as_tensors(params)}
        if window:
            self.clip = (site, keys)
        stale = self.scaled & keys
        if stale:
            opt = next((o for o, ps in self.opt_params.items() if ps & stale), None)
            name = self.opt_names.get(opt, "optimizer") if opt is not None else "optimizer"
            by = self.scaled_by
            self._report("GL007", site, messages.amp_scaled_gradients("clip_before_unscale", site.text or "clip_grad_norm_(...)",
                                                                      name, by.text if by else None, by.line if by else None), name)

    def unscale_failed(self, site: Site, err: BaseException) -> None:
        if self.owed_by is not None:
            self._catch_up()
        finding = _finding("GL007", "amp-scaled-gradients", site,
                           messages.amp_scaled_gradients("unscale_twice", site.text or "scaler.unscale_(optimizer)",
                                                         site.first_arg or "optimizer", None, None))
        err.add_note(f"gradcheck_lint: {finding.path}:{finding.line}:{finding.col}: GL007 {finding.message}")
        self.sink(finding, None, False)

    # -- GL008
    def _check_graphs(self) -> None:
        if not self.graphs:
            return
        old = self.steps - 2
        live = [g for g in self.graphs if g[0]() is not None]
        if live and live[0][2] <= old:  # appended in order of their epochs: the oldest first
            counts: dict[Site, int] = {}
            for _ref, site, epoch in live:
                if epoch <= old:
                    counts[site] = counts.get(site, 0) + 1
            for site, n in counts.items():
                if n >= _KEPT_GRAPHS and site not in self.kept_reported:
                    self.kept_reported.add(site)
                    kept = kept_at(site)  # the statement keeping them, where the static side anchors
                    if kept is not None:
                        words = messages.loss_graph_kept_alive(kept.site.text, kept.target, kept.stored, kept.loop_line,
                                                               kept.via_item, freed_by=kept.freed_by)
                        self._report("GL008", kept.site, words)
                        watch = watch_returned(kept, [g[0] for g in live if g[1] == site], _is_tensor)
                        if watch is not None:
                            self.returned.append(watch)
                    else:
                        self._report("GL008", site, messages.loss_graph_kept_alive_at_run(site.text or "backward()", n))
        graphs = self.graphs = [g for g in live if g[1] not in self.kept_reported] if self.kept_reported else live
        self._graphs_due = graphs[_KEPT_GRAPHS - 1][2] + 2 if len(graphs) >= _KEPT_GRAPHS else _NEVER

    def _check_returned(self) -> None:
        """GL008 at the caller's statement keeping what a function returned, once its total has died and the
        graphs it held are still alive two steps later (`returned_keepers.py`)."""
        keep: list[ReturnedWatch] = []
        for watch in self.returned:
            due = watch.due(self.steps, _KEPT_GRAPHS)
            if due is False:
                keep.append(watch)
            elif due:
                kept = watch.returned.kept
                words = messages.loss_graph_kept_alive(kept.site.text, kept.target, kept.stored, kept.loop_line,
                                                       kept.via_item)
                self._report("GL008", kept.site, words)
        self.returned = keep

    def _report(self, code: str, site: Site, msg_help: tuple[str, str], optimizer: str = "") -> None:
        if self.owed_by is not None:
            self._catch_up()
        name = {"GL006": "ddp-accumulation-without-no-sync", "GL007": "amp-scaled-gradients",
                "GL008": "loss-graph-kept-alive"}[code]
        self.sink(_finding(code, name, site, msg_help, optimizer), ("step", self.steps), True)


class _ModelRef:
    """A DDP model seen in a forward pass, held weakly; named as the user's code names it when reported."""

    __slots__ = ("ref", "kind")

    def __init__(self, model: Any) -> None:
        self.ref = weakref.ref(model)
        self.kind = type(getattr(model, "module", model)).__name__

    def name(self) -> str:
        model = self.ref()
        return (module_name(model) if model is not None else None) or self.kind


def _is_tensor(value: Any) -> bool:
    return isinstance(value, torch.Tensor)


class _Sentinel:
    """Lives exactly as long as the autograd node whose metadata holds it."""

    __slots__ = ("__weakref__",)


def _as_tensors(params: Any) -> list[torch.Tensor]:
    if isinstance(params, torch.Tensor):
        return [params]
    try:
        return [p for p in params if isinstance(p, torch.Tensor)]
    except TypeError:
        return []


def leaf_tensors(tensors: Any) -> list[torch.Tensor]:
    """The leaf tensors (parameters) a loss's autograd graph reaches."""
    roots = [tensors] if isinstance(tensors, torch.Tensor) else list(tensors or [])
    stack = [t.grad_fn for t in roots if isinstance(t, torch.Tensor) and t.grad_fn is not None]
    seen: set[int] = set()
    out: list[torch.Tensor] = []
    while stack:
        fn = stack.pop()
        if fn is None or id(fn) in seen:
            continue
        seen.add(id(fn))
        variable = getattr(fn, "variable", None)
        if isinstance(variable, torch.Tensor):
            out.append(variable)
        stack.extend(nf for nf, _ in fn.next_functions)
    return out


def _leaf_ids(tensors: Any) -> set[int]:
    return {id(t) for t in leaf_tensors(tensors)}


# -- entry points watched while a monitor is active ------------------------------------------------
def _scale(self: Any, outputs: Any) -> Any:
    result = _ORIGINALS[(torch.amp.GradScaler, "scale")](self, outputs)
    if isinstance(result, torch.Tensor) and self.is_enabled():
        for m in _ACTIVE:
            m.scaled_outputs = {k: r for k, r in m.scaled_outputs.items() if r() is not None}
            m.scaled_outputs[id(result)] = weakref.ref(result)
            if m.pending is not None:
                m.pending()
    return result


def _unscale(self: Any, optimizer: Any) -> Any:
    try:
        return _ORIGINALS[(torch.amp.GradScaler, "unscale_")](self, optimizer)
    except RuntimeError as err:
        if _UNSCALE_TWICE in str(err) and _ACTIVE:
            site = user_site(2, ("unscale_",))
            for m in _ACTIVE:
                m.unscale_failed(site, err)
        raise


def _ddp_forward(self: Any, *args: Any, **kwargs: Any) -> Any:
    if _ACTIVE:
        sync = bool(torch.is_grad_enabled() and getattr(self, "require_backward_grad_sync", True))
        frame = _user_frame(sys._getframe(1)) if sync else None  # the line a late switch's message names
        line = frame.f_lineno or 0 if frame is not None else 0
        for m in _ACTIVE:
            m.ddp_forward(sync, self, line)
    return _ORIGINALS[(torch.nn.parallel.DistributedDataParallel, "forward")](self, *args, **kwargs)


def _targets() -> list[tuple[Any, str, Any]]:
    out: list[tuple[Any, str, Any]] = [(torch.amp.GradScaler, "scale", _scale), (torch.amp.GradScaler, "unscale_", _unscale)]
    if torch.distributed.is_available():
        out.append((torch.nn.parallel.DistributedDataParallel, "forward", _ddp_forward))
    return out


def _patch() -> None:
    for owner, name, replacement in _targets():
        _ORIGINALS[(owner, name)] = owner.__dict__.get(name, getattr(owner, name))
        setattr(owner, name, replacement)


def _unpatch() -> None:
    for (owner, name), original in list(_ORIGINALS.items()):
        setattr(owner, name, original)
    _ORIGINALS.clear()
