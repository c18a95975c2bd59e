"""What mixed precision does to an optimizer's gradients between two of its steps, per path.

A GradScaler multiplies the loss by its scale (65536 at first), so the gradients a scaled backward
writes are scaled too, until `scaler.unscale_(optimizer)` or `scaler.step(optimizer)` divides them
back. Stages, kept per optimizer in each path state: `scaled` (scaled gradients, not unscaled yet),
`unscaled` (`unscale_` ran since the last step), `clipped` (a clip ran since the last step). Breaking
the order is recorded here and reported as GL007 (amp-scaled-gradients):

- `clip_before_unscale`: gradients clipped while still scaled;
- `norm_before_unscale`, `modify_before_unscale`: their norm read, or noise added or values clamped, while
  still scaled (a factor, `mul_`/`div_`, commutes with the unscaling and is fine);
- `unscale_twice`: a second `unscale_` before the step (`unscale_` on every micro-batch: PyTorch raises);
  the scaler keeps its own record of an `unscale_` (a `pending` mark) until a step, which a clear does
  not drop: after a step skipped on a large norm (`if norm <= limit: scaler.step(opt); scaler.update()`,
  then `optimizer.zero_grad()` either way), the next window's `unscale_` raises too (LVSM);
- `partial`: a backward adds to gradients already unscaled or clipped (the clip of a partial window);
- `bypass`: `optimizer.step()` on scaled gradients, not through `scaler.step(optimizer)`;
- `clip_before_scaler_step`: gradients whose backward is out of sight (`Updater.step(grad_scaler=...)`),
  clipped, then handed to `scaler.step(optimizer)` with no `unscale_` in between: what a scaler steps on
  is scaled, so they were clipped scaled. The clip leaves an `unseen` mark when no gradient of this
  path was written in sight; any backward drops it.

Whether a loss is scaled is a fact of the path, not only of the value: a name assigned in one arm
(`if self.scaler is not None: loss = self.scaler.scale(loss)`) holds the join of both arms after the
`if`, so the value says only "may be scaled". Each path on which a `scaler.scale(...)` ran carries a
`made` mark (`scaled_here`, dropped when a loop starts its next iteration); a backward of a
may-be-scaled loss scales the gradients on those paths alone, and the path that took `scaler is None`
steps unscaled gradients, as it does at runtime.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable

from .events import AmpMisuse
from .flow import Flow
from .gradstate import UNSCALE_PENDING, PathState
from .parts import AmpHost
from .syntax import code
from .values import Entity, Holder

MADE = -1  # the pseudo optimizer uid of the `made` mark: a `scaler.scale(...)` ran on this path
# the `made` mark's node: 0, a scaler on as far as the analysis can tell; k > 0, one that may be off on a run, by the
# name of its setting (`Amp.settings[k - 1]`: "amp" of `GradScaler(enabled=args.amp)` built in another method; "" for
# a scaler known only by its name)
ON = 0
PENDING = UNSCALE_PENDING  # the stage of an optimizer whose `unscale_` the scaler recorded, until a step
PARTIAL = "partial@"  # + the clip's ordinal: a backward (the mark's node) added to gradients a clip or unscale saw


class Amp:
    """Apply the AMP transitions to a flow and record each misuse once per call site."""

    def __init__(self, interp: AmpHost) -> None:
        self.interp = interp
        self.misuses: dict[tuple[str, int], AmpMisuse] = {}
        # backward passes (by ordinal) scaled on some path only by a scaler that may be off, with its settings' names;
        # those scaled on some path by a scaler on
        self.undecided: dict[int, set[str]] = {}
        self._decided: set[int] = set()
        # (clip, backward) ordinals of a `PARTIAL` mark: the tests around the backward, the paths it ran on
        self._partial: dict[tuple[int, int], tuple[set[tuple[int, ...]], set[frozenset]]] = {}
        self.settings: list[str] = []
        # backward passes (by ordinal) a framework scaled itself (`accelerator.backward`): its prepared optimizers'
        # `step()` unscales first; the value: the setting that decides whether it scales, None when the code says so
        self._by_framework: dict[int, str | None] = {}
        self._unscale_with: dict[int, str] = {}
        self._nodes: dict[int, ast.AST] = {}
        # > 0 while the body of a call read as a clip runs (`clipping_bodies`): its norm and rescale are the clip's
        self.clipping = 0
        # id of a clip -> the optimizers (uid, and the step call) whose step followed it on some path with no backward
        # between: the clip saw the whole of what they applied
        self.complete_for: dict[int, set[tuple[int, ast.Call]]] = {}

    def node(self, ordinal: int) -> ast.AST | None:
        return self._nodes.get(ordinal)

    def _ordinal(self, node: ast.AST) -> int:
        ordinal = self.interp.recorder.ordinal(node)
        self._nodes[ordinal] = node
        return ordinal

    def _record(self, kind: str, node: ast.AST, opt: Entity, other: ast.AST | None, ifs: tuple[int, ...],
                state: PathState | None = None) -> None:
        misuse = self.misuses.get((kind, id(node)))
        if misuse is None:
            misuse = self.misuses[(kind, id(node))] = AmpMisuse(kind, node, opt, other)
        misuse.ifs.add(ifs)
        ordinal = self.interp.recorder.ordinal(other) if other is not None else None
        if ordinal is not None and ordinal in self.undecided and ordinal not in self._decided:
            misuse.switch_settings |= self.undecided[ordinal]
        if ordinal is not None and ordinal in self._by_framework and isinstance(other, ast.Call) \
                and isinstance(other.func, ast.Attribute):
            misuse.framework = code(other.func.value)
            misuse.framework_unscale = self._unscale_with.get(ordinal, "")
            setting = self._by_framework[ordinal]
            if setting is not None:
                misuse.framework_settings.add(setting)
        if state is not None:
            misuse.paths.add(state.assumptions)

    def _each(self, flow: Flow, fn: Callable[[PathState], PathState]) -> None:
        flow.map(fn)

    def owners(self, holders: Iterable[Holder], flow: Flow) -> list[Entity]:
        """The optimizers the code here can name that update any of these parameters."""
        hs = [h for h in holders]
        table = self.interp.table
        in_scope = self.interp.recorder.optimizers_in_scope(flow)
        found = [o for o in in_scope if any(h.overlaps(x) for h in hs for x in table.optimizer_holders(o))]
        named = not hs or any(not h.pseudo for h in hs)
        if not found and named and self.interp.recorder.one_optimizer(in_scope, flow):
            # the one optimizer here, of parameters the analysis cannot name (`train_one_epoch(model,
            # optimizer, scaler)`, or a builder's `SGD(groups)` or `AdamW(groups)` of groups it could not
            # read): it updates this model (or these parameters of unknown origin, `self.model.parameters()`),
            # as a backward through them assumes too
            if all((own := table.ownership.get(o.uid)) is not None and own.unknown for o in in_scope):
                return list(in_scope)
        if not found and named and not in_scope:
            # a helper that names no optimizer, reached from code that built one over these very parameters
            # (`loss.backward()` in `sft_microbatch_train_step(...)` of a loop whose optimizer owns the model): that
            # optimizer, whose holders the analysis knows, is the owner wherever the helper runs
            owning = [o for o in self.interp.recorder.all_optimizers()
                      if any(h.overlaps(x) for h in hs if not h.pseudo for x in table.optimizer_holders(o))]
            if owning:
                return owning
            # a helper that names no optimizer (`get_total_grad_norm(model.parameters())` of a utils module): the
            # optimizer whose gradients every path here holds scaled, when it updates these parameters or its
            # own are not known (the one such optimizer: of several, which one is not known)
            scaled = [o for o in self.interp.recorder.all_optimizers() if flow.states and all(
                any(stage == "scaled" for stage, _ in s.amp_marks(o.uid)) for s in flow.states)]
            owning = [o for o in scaled if any(h.overlaps(x) for h in hs for x in table.optimizer_holders(o))
                      or ((own := table.ownership.get(o.uid)) is not None and own.unknown)]
            if len(owning) == 1:
                return owning
        return found

    # -- transitions (a path keeps, per optimizer, ("scaled" | "unscaled" | "clipped", node) marks)
    def scaled_here(self, flow: Flow, setting: str | None = None) -> None:
        """A `scaler.scale(...)` ran on every path of `flow`: a loss scaled since may be scaled on them.
        `setting`: by a scaler that may be off on a run, by the name of its setting (`Effects.undecided_setting`):
        that it scales on a path is assumed."""
        if setting is None:
            mark = ON
        else:
            if setting not in self.settings:
                self.settings.append(setting)
            mark = self.settings.index(setting) + 1

        def apply(s: PathState) -> PathState:
            if (MADE, "made", ON) in s.amp or (MADE, "made", mark) in s.amp:
                return s
            return s.without_amp_mark(MADE).with_amp_mark(MADE, "made", mark)

        flow.map_quiet(apply)

    def scaled_by_framework(self, call: ast.Call, flow: Flow, setting: str | None, how: str) -> None:
        """A framework's own backward (`accelerator.backward(loss)` with fp16 mixed precision) scales the loss with a
        GradScaler of its own; `setting`: the one that decides whether it does, when the code does not say; `how`: the
        framework's way to unscale, for messages."""
        here = self._ordinal(call)
        self._by_framework[here] = setting if self._by_framework.get(here, "") is not None else None
        self._unscale_with[here] = how
        self.scaled_here(flow)

    def new_iteration(self, flow: Flow) -> None:
        """A loop starts its next iteration: the loss of this one is not scaled until a `scaler.scale` runs
        again (a trainer run once with a scaler and once without shares no scaled loss)."""
        flow.map_quiet(lambda s: s.without_amp_mark(MADE) if s.amp_marks(MADE) else s)

    def backward(self, call: ast.Call, written: Iterable[Holder], scaled: bool, flow: Flow, ifs: tuple[int, ...]) -> None:
        opts = self.owners(written, flow)
        if not opts:
            return
        here = self._ordinal(call)

        def apply(s: PathState) -> PathState:
            for o in opts:
                for stage, node in s.amp_marks(o.uid):
                    earlier = self.node(node)
                    if stage in ("unscaled", "clipped") and earlier is not None:
                        # the clip (or unscale) saw part of a window only if the step applies what this backward
                        # adds: a clear between drops them (an architecture's optimizer clearing at the start of its
                        # own step, Auto-NBA, lockbox 33), so the misuse is recorded at the step (`step`)
                        s = s.with_amp_mark(o.uid, f"{PARTIAL}{node}", here)
                        self._partial.setdefault((node, here), (set(), set()))[0].add(ifs)
                        self._partial[(node, here)][1].add(s.assumptions)
                    if stage == "unseen":
                        s = s.without_amp_mark(o.uid, "unseen")
                made = s.amp_marks(MADE)
                if scaled and made:  # no `scaler.scale` ran on this path: not scaled here
                    if ("made", ON) in made:
                        self._decided.add(here)
                    else:
                        self.undecided.setdefault(here, set()).update(self.settings[k - 1] for _stage, k in made)
                    s = s.with_amp_mark(o.uid, "scaled", here)
            return s

        self._each(flow, apply)

    def unscale(self, call: ast.Call, opts: list[Entity], flow: Flow, ifs: tuple[int, ...]) -> None:
        here = self._ordinal(call)
        # the scale is on gradients, not optimizers: `unscale_(optimizer_w)` of `SGD(model.parameters())` unscales the
        # gradient of every parameter it holds, also those another optimizer steps (`Adam([model.alphas])`)
        covered = self._wholly_held(opts)

        def apply(s: PathState) -> PathState:
            for o in opts:
                marks = s.amp_marks(o.uid)
                scaled_since = any(stage == "scaled" for stage, _node in marks)  # a scaled backward since the first
                for stage, node in marks:
                    if stage in ("unscaled", PENDING) and scaled_since:
                        self._record("unscale_twice", call, o, self.node(node) if node != here else None, ifs)
                        break
                s = s.without_amp_mark(o.uid, "scaled").with_amp_mark(o.uid, "unscaled", here)
                s = s.with_amp_mark(o.uid, PENDING, here)
            for o in covered:
                if any(stage == "scaled" for stage, _node in s.amp_marks(o.uid)):
                    s = s.without_amp_mark(o.uid, "scaled").with_amp_mark(o.uid, "unscaled", here)
            return s

        self._each(flow, apply)

    def _wholly_held(self, opts: list[Entity]) -> list[Entity]:
        """The other optimizers every parameter of which these optimizers hold (known parameters only)."""
        table = self.interp.table
        given = {o.uid for o in opts}
        mine = [h for o in opts for h in table.optimizer_holders(o) if not h.pseudo]
        out: list[Entity] = []
        for other in self.interp.recorder.all_optimizers():
            own = table.ownership.get(other.uid)
            theirs = table.optimizer_holders(other)
            if other.uid in given or not theirs or own is None or own.unknown:
                continue
            if all(not x.pseudo and any(_holds(h, x) for h in mine) for x in theirs):
                out.append(other)
        return out

    def clip(self, call: ast.Call, opts: list[Entity], unscales: bool, flow: Flow, ifs: tuple[int, ...]) -> None:
        here = self._ordinal(call)
        table = self.interp.table
        # optimizers a backward read here wrote into: their gradients are not out of sight
        in_sight = {o.uid for o in opts if self.interp.recorder.wrote_into(table.optimizer_holders(o))}

        def apply(s: PathState) -> PathState:
            for o in opts:
                marks = s.amp_marks(o.uid)
                if not marks and o.uid in in_sight and not any(h.overlaps(x) for h, _c in s.grads
                                                               for x in table.optimizer_holders(o)):
                    # nothing to clip on this path: a clear emptied the gradients after the step (Accelerate's
                    # `if accelerator.sync_gradients: clip` after `step(); zero_grad()`), or no backward ran
                    # yet. It clips no partial window and mixes nothing: the micro-batches after it add to none
                    continue
                scaled = [node for stage, node in marks if stage == "scaled"]
                if scaled and not unscales:
                    self._record("clip_before_unscale", call, o, self.node(scaled[0]), ifs)
                if unscales:
                    s = s.without_amp_mark(o.uid, "scaled").with_amp_mark(o.uid, "unscaled", here)
                elif not marks and not s.grads:  # gradients of a backward out of sight
                    s = s.with_amp_mark(o.uid, "unseen", here)
                s = s.with_amp_mark(o.uid, "clipped", here)
            return s

        self._each(flow, apply)

    def touched(self, call: ast.AST, holders: Iterable[Holder], kind: str, flow: Flow, ifs: tuple[int, ...]) -> None:
        """Gradients read (`norm_before_unscale`: a norm logged or compared) or changed other than by a
        factor (`modify_before_unscale`: noise added, values clamped) while still scaled; a factor
        (`p.grad.mul_(x)`) commutes with the unscaling and is no misuse; in a clip's own body, the clip is."""
        opts = self.owners(holders, flow) if not self.clipping else []
        if not opts:
            return

        def apply(s: PathState) -> PathState:
            for o in opts:
                scaled = [node for stage, node in s.amp_marks(o.uid) if stage == "scaled"]
                if scaled:
                    self._record(kind, call, o, self.node(scaled[0]), ifs, s)
            return s

        self._each(flow, apply)

    def step(self, call: ast.Call, opt: Entity, unscales: bool, flow: Flow, ifs: tuple[int, ...]) -> None:
        def apply(s: PathState) -> PathState:
            marks = s.amp_marks(opt.uid)
            # (the framework's prepared optimizer steps through the framework's scaler)
            scaled = [node for stage, node in marks if stage == "scaled" and node not in self._by_framework]
            if scaled and not unscales:
                self._record("bypass", call, opt, self.node(scaled[0]), ifs)
            cut = {int(stage[len(PARTIAL):]) for stage, _node in marks if stage.startswith(PARTIAL)}
            for stage, node in marks:
                if stage == "clipped" and node not in cut and (whole := self.node(node)) is not None:
                    # the clip bounded all this optimizer's step applies (no backward between): it is this step's
                    self.complete_for.setdefault(id(whole), set()).add((opt.uid, call))
                if stage.startswith(PARTIAL):
                    clip, backward = int(stage[len(PARTIAL):]), node
                    earlier, later = self.node(clip), self.node(backward)
                    if earlier is not None:
                        ifs_at, paths = self._partial[(clip, backward)]
                        for at in ifs_at:
                            self._record("partial", earlier, opt, later, at)
                        self.misuses[("partial", id(earlier))].paths.update(paths)
            if unscales and not any(stage in ("scaled", "unscaled") for stage, _node in marks):
                for stage, node in marks:
                    earlier = self.node(node)
                    if stage == "unseen" and earlier is not None:
                        self._record("clip_before_scaler_step", earlier, opt, call, ifs, s)
            return s.without_amp_mark(opt.uid) if marks else s

        self._each(flow, apply)

    def updated(self, flow: Flow) -> None:
        """`scaler.update()`: the scaler forgets the `unscale_` calls it recorded, for every optimizer."""
        def apply(s: PathState) -> PathState:
            for uid, stage, _node in list(s.amp):
                if stage == PENDING:
                    s = s.without_amp_mark(uid, PENDING)
            return s

        self._each(flow, apply)

    def cleared(self, holders: Iterable[Holder], flow: Flow) -> None:
        """A clear drops whatever the scaler did to those gradients."""
        opts = self.owners(holders, flow)
        if opts:
            self._each(flow, lambda s: _without(s, opts))


def _holds(whole: Holder, part: Holder) -> bool:
    """`whole` holds every parameter of `part` (the same module or an ancestor of it; no part picked by a test)."""
    return (whole.uid == part.uid and len(whole.path) <= len(part.path) and part.path[:len(whole.path)] == whole.path
            and not any(step[:1] == "[" for step in whole.path))


def _without(s: PathState, opts: list[Entity]) -> PathState:
    """A clear drops what the gradients went through, not the scaler's own record of an `unscale_`."""
    for o in opts:
        marks = s.amp_marks(o.uid)
        for stage, _node in marks:
            if stage != PENDING:
                s = s.without_amp_mark(o.uid, stage)
    return s
