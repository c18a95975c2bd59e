"""The objects of a training script: models, optimizers and framework objects, what parameters each
optimizer owns, and what a call the analysis cannot read may do with them."""

from __future__ import annotations

import ast
import contextlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace

from . import call_signatures, class_refs, declared_types
from . import names as N
from .conventions import convention
from .definitions import ClassInfo, is_abstract
from .flow import (
    ANY_WRAPPER,
    MAX_DEPTH,
    SYNC_OFF,
    SYNC_SET,
    Flow,
    Frame,
    Function,
    forget_null_grads,
    generations,
    step_counts,
)
from .gradstate import PathState, frozen_on_every_path
from .graph_cuts import may_cut_graphs, returns_copies
from .module_classes import ModuleClasses
from .parameter_free import holds_no_parameters
from .parts import ObjectsHost
from .provenance import READ, Assumption, Provenance, assumed
from .reductions import returns_summed
from .syntax import arguments, assignment_targets, code, parameters
from .values import EMPTY, OPAQUE, Entity, Holder, Kind, Ownership, Value, join, union_as_tensor
from .walk import iter_tree
from .worlds import MAX_SETTINGS, World, assignments, implied_presence, presence_settings, settings_of

_DIVISOR_NAME = convention("divisor")

_GRAD_SCALER = "torch.amp.GradScaler"  # the catalogue type of every GradScaler (`torch_amp.toml`)


class Objects:
    """Entities by where they were made, optimizer ownership, module values and `self`."""

    def __init__(self, interp: ObjectsHost) -> None:
        self.interp = interp
        self.table = interp.table
        self._minted: dict[object, Entity] = {}
        # leaf tensors (`Variable(x, requires_grad=True)`) by the call that makes them, whatever the call path
        self._leaves_made_at: dict[object, set[Holder]] = {}
        self._leaf_site: dict[int, object] = {}
        self._uid = 0
        self._class_self_env: dict[str, dict[str, Value]] = {}
        self._class_worlds: dict[str, list[World]] = {}
        self._cuts: dict[int, bool] = {}  # id of a local `forward` -> whether it may cut graphs
        self._sums: dict[int, bool] = {}  # id of a local `forward` -> whether it returns a sum-reduced loss
        self._parameter_free_classes: dict[int, bool] = {}  # id of a class read -> its objects hold no parameter
        self._tuples: dict[tuple[int, int], bool] = {}  # ids of a local `forward` and its class -> returns a tuple in sight
        self._objects: dict[int, bool] = {}  # id of a local `forward` -> whether it returns an object it made
        self._dicts: dict[tuple[int, int], bool] = {}  # ids of a local `forward` and its class -> returns a dict
        self._wrapped: dict[int, bool] = {}  # id of a `forward` -> it returns what an unread call makes of a container
        # forward ordinals that called a module itself, whatever its name (`self.qf_1(x)` of a base class's `qf_1`)
        self.called_whole: set[int] = set()
        self.module_classes = ModuleClasses()  # the class of a submodule stored on a module (`self.loss = VQLoss()`)
        # id of a module's classes dict -> (that dict, the attributes its methods other than `__init__` assign)
        self._mutable: dict[int, tuple[object, frozenset[str]]] = {}
        # the `self.x` attributes each method assigns, by the method's id (with it, for identity)
        self._stores: dict[int, tuple[ast.AST, frozenset[str]]] = {}

    # -- entities
    def mint(self, kind: Kind, name: str, key: object, api: str = "", provenance: Provenance = READ) -> Entity:
        """The entity made at `key` (a call site, inlined at the current call path, or a reference)."""
        site = key  # without the call path
        per_call_path = isinstance(key, tuple) and bool(key) and key[0] in ("ctor", "param")
        if per_call_path:
            key = (*key, self.interp.calls.call_path)  # `actor = mlp(...)`, `critic = mlp(...)`: two models
            if self.interp.worlds.key:
                key = (*key, self.interp.worlds.key)  # each world's objects are its own (`worlds`)
        elif self.interp.worlds.key and isinstance(key, tuple) and key[:1] == ("ref",):
            key = (*key, self.interp.worlds.key)  # (an object handed in, or made out of sight, too)
        ent = self._minted.get(key)
        if ent is None:
            self._uid += 1
            ent = Entity(kind, name, self._uid, api, provenance)
            self._minted[key] = ent
            if isinstance(site, tuple) and site[:1] == ("ref",):
                self.table.unknown_origin.add(ent.uid)
            elif isinstance(site, tuple) and site[:1] == ("ctor",) and kind is Kind.MODEL:
                qualified = self._qualified_class(name)
                if qualified is not None:
                    self.table.classes[ent.uid] = qualified
            if isinstance(site, tuple) and site[:1] == ("ctor",) and len(site) > 1 and isinstance(site[1], int):
                self.table.made_at[ent.uid] = site[1]
            if kind is Kind.PARAM and per_call_path:
                self._leaves_made_at.setdefault(site, set()).add(Holder(ent.uid))
                self._leaf_site[ent.uid] = site
            self.table.add(ent)
            if kind is Kind.OPTIMIZER:
                self.table.ownership.setdefault(ent.uid, Ownership())
        return ent

    def _qualified_class(self, text: str) -> str | None:
        """`nn.Linear` -> `torch.nn.Linear`, by the module's imports (None when not a dotted name)."""
        try:
            expr = ast.parse(text, mode="eval").body
        except SyntaxError:
            return None
        return self.interp.imports.qualify(expr)

    def leaf_key(self, call: ast.Call) -> tuple[object, ...]:
        """Where a leaf tensor (`Variable(x, requires_grad=True)`) is made, for `mint`: its call, or, when
        the result is assigned to a name, that name in its function. `if use_cuda: v = Variable(x.cuda(),
        requires_grad=True) else: v = Variable(x, requires_grad=True)` makes one `v`, not two tensors
        both of which the paths after the `if` (where `v` names either) would hold gradients in."""
        target = self.interp.prescan.assigned_calls.get(id(call))
        if target is None:
            return ("param", id(call))
        node: ast.AST | None = call
        while node is not None and not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Module)):
            node = self.interp.parent(node)
        return ("param", "name", id(node), target)

    def leaves_made_alike(self, holders: set[Holder]) -> set[Holder]:
        """The leaf tensors made by the same calls as these, reached through other call paths: a helper
        that makes the input to optimise (`preprocess(image)`), called from both arms of an `if`."""
        out: set[Holder] = set()
        for h in holders:
            site = self._leaf_site.get(h.uid)
            if site is not None:
                out |= self._leaves_made_at[site]
        return out

    def model_value(self, ent: Entity) -> Value:
        holder = Holder(ent.uid)
        if ent.kind is Kind.PARAM:
            return Value(entities=frozenset({ent}), params=frozenset({holder}), reach=frozenset({holder}))
        return Value(entities=frozenset({ent}), modules=frozenset({holder}))

    def unknown_parameters(self, fn: ast.FunctionDef | ast.AsyncFunctionDef, method: bool) -> dict[str, Value]:
        """The values of `fn`'s parameters where no caller in sight hands them in (a method's `self` left
        out): an object its name says it is, a library class its default names (`opt_func=optim.SGD`,
        `class_refs`), or anything."""
        positional, keyword_only, _stars = parameters(fn)
        declared = {a.arg: a.annotation for a in [*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs]}
        out: dict[str, Value] = {}
        for i, (name, default) in enumerate([*positional, *keyword_only]):
            if i == 0 and method and name in ("self", "cls"):
                continue
            written = N.dotted(default) if default is not None else None
            factory = class_refs.reference(written, self.interp.imports, self.interp.catalogue) if written else None
            out[name] = (factory or self._of_declared_class(name, declared.get(name))
                         or self.entity_for_unknown_ref(name) or OPAQUE)
        return out

    def _of_declared_class(self, name: str, annotation: ast.expr | None) -> Value | None:
        """A parameter annotated with a class of the project (`model: Seq2Seq`): an object of that class, made out
        of sight (`declared_types`). A module is one per activation, as a parameter known by its name is; an optimizer
        class is left to the name-based reading."""
        info = declared_types.declared_class(annotation, self.interp)
        if info is None or info.api and self.interp.catalogue.kind(info.api) == "optimizer":
            return None
        if info.is_module:
            ent = self.mint(Kind.MODEL, name, ("ref", name, self.interp.calls.call_path),
                            api=info.api or "torch.nn.Module")
            self.table.name_after(ent.uid, name)
            self.interp.calls.instance_class[ent.uid] = info
            self.table.declared.add(ent.uid)
            return self.model_value(ent)
        if self.interp.definitions.plain(info):
            return Value(const=("instance", info.name))
        return None

    def entity_for_unknown_ref(self, text: str, module_global: bool = False,
                               member_of: str | None = None, made: bool = False) -> Value | None:
        """Give a name with no known value an entity, when how it is used says what it is.

        A bare name is one object per function activation, or one per module when the function does not
        bind it (a global of a star import: `from config import *`); `self.x` one per class, unless it
        was `made` by the statement binding it (`self.backbone = build_backbone(cfg)`): a new object each
        time that statement runs, so one per call path, as a constructor's (two `Brain(cfg)` instances
        hold two backbones). With `member_of`, the name is a loop's variable over that collection made out
        of sight (`for opt in optimizers:`): it stands for the members of that collection, one object for
        every loop over it and another for a loop over another collection. An object used as an optimizer
        (`x.step()` and `x.zero_grad()`) is sure; one named like an optimizer and stepped, less so.
        """
        interp = self.interp
        if made:
            scope: tuple[object, ...] = ("self", "made", interp.calls.call_path, interp.worlds.key)
        else:
            scope = ("self",) if text.startswith("self.") else ("module",) if module_global else interp.calls.call_path
        ref: tuple[object, ...] = ("ref", text, scope)
        if member_of is not None:
            # the members of one collection, however the code names them (`for opt in opts:`, `opts[i]`): one
            # object, scoped as the collection is
            home = ("self",) if member_of.startswith("self.") else ("module",) if module_global else interp.calls.call_path
            ref = ("ref", "member of", member_of, home)
        if text in interp.optimizer_refs:
            used = text in interp.prescan.stepped and text in interp.prescan.zeroed
            # used as one in sight: what it is was read; stepped only and named like one: its name says so
            ent = self.mint(Kind.OPTIMIZER, text, ref, api="torch.optim.Optimizer",
                            provenance=READ if used else assumed(Assumption.NAME))
            self.table.name_after(ent.uid, text)  # named as the code refers to it, not after a later alias
            return Value(entities=frozenset({ent}))
        if text in interp.model_refs:
            ent = self.mint(Kind.MODEL, text, ref, api="torch.nn.Module")
            self.table.name_after(ent.uid, text)
            if text in interp.prescan.synced:  # `self.model.no_sync()`: a DDP/FSDP wrapper built out of sight
                self.table.wrapped_everywhere([ent.uid])
            return self.model_value(ent)
        return None

    def own(self, ent: Entity, params: Value | None, model: Value | None, *more: Value) -> None:
        """Record the parameters an optimizer updates: its params argument, or else a model it was built for."""
        own = self.table.ownership.setdefault(ent.uid, Ownership())
        holders: frozenset[Holder] = frozenset()
        unknown = True
        for candidate in (params, *more):
            if candidate is None:
                continue
            # (`[{"params": model.parameters()}, {"params": [mtl.log_sigma]}]`: a model's parameters and a
            # parameter a module registered, a path of that module)
            holders = frozenset(h for h in candidate.params | candidate.modules if not h.pseudo)
            if holders:
                unknown = False
                break
        if not holders and model is not None and model.modules:
            holders, unknown = frozenset(model.modules), False
        own.holders = own.holders | holders
        own.unknown = own.unknown and unknown if own.holders else unknown
        own.names = tuple(sorted({self.table.holder_name(h) for h in own.holders}))

    def add_owned(self, opt: Entity, params: Value) -> None:
        """Parameters added to an optimizer after it was built (`opt.add_param_group({"params": [p]})`,
        `opt.param_groups[1]["params"].append(p)`): it updates them too, and its `zero_grad()` clears them.
        Parameters the analysis cannot name add nothing it could check: what it knew the optimizer owns, and
        whether it owns more it does not know, stay as they were (an optimizer built out of sight still owns
        parameters unknown besides these)."""
        holders = frozenset(h for h in params.params | params.modules if not h.pseudo)
        if not holders:
            return
        own = self.table.ownership.setdefault(opt.uid, Ownership())
        own.holders = own.holders | holders
        own.names = tuple(sorted({self.table.holder_name(h) for h in own.holders}))

    def add_owned_by(self, uids: Iterable[int], params: Value) -> None:
        """`add_owned` for the optimizers of these uids (those whose parameter groups a list is)."""
        for uid in uids:
            opt = self.table.entities.get(uid)
            if opt is not None:
                self.add_owned(opt, params)

    # -- values
    def forward(self, module: Value, pos: list[Value], kw: dict[str, Value], flow: Flow, frame: Frame, vague: bool = False) -> Value:
        """Calling a module: the result depends on its parameters and on its inputs, and holds the
        graph of this forward pass (unless autograd is off)."""
        if not vague and self._rejects_call(module):
            flow.states = frozenset()  # `self.vae(img, apply_grad_penalty=...)` of a forward with no such parameter
            return EMPTY
        touching = None if vague else self._forward_touching_gradients(module, frame)
        if touching is not None:
            # a `forward` of a class read that clears, steps or backpropagates (lstm-crf's `self.zero_grad()` before
            # computing its loss): it runs on the caller's paths, as any method called would
            info, fn = touching
            return self.interp.calls.inline(fn, info, module, pos, kw, flow, frame)
        args, reached, parts, unseen_parts = self._through_local_forward(module, pos, kw, flow, frame,
                                                                          union_as_tensor([*pos, *kw.values()]))
        own = module.modules - self._parameter_free_holders(module)
        self._note_parts(module)
        unseen: frozenset[Holder] = frozenset()
        if reached is not None and not reached and parts is None and not unseen_parts and not args.reach \
                and not args.built and self._forward_returns_copies(module):
            # its `forward`, read, returns only what a call that cuts graphs made (`return
            # torch.tensor(self.crf.decode(feats))`): no graph of this pass comes with the result either
            own = frozenset()
        if reached is not None:
            mine = {e.uid for e in module.entities}
            if any(h.overlaps(r) for h in own for r in reached if h.uid not in mine):
                # its `forward` ran and its result was seen to depend on a module it holds: of the modules
                # it holds, those the result depends on
                own = frozenset(h for h in own if h.uid in mine or any(h.overlaps(r) for r in reached))
            else:  # ... seen to depend on none of them: that it depends on each is an assumption
                unseen = frozenset(h for h in own if h.uid not in mine)
            children = frozenset(r for r in reached if r.uid in mine and r.path and not r.pseudo)
            if children and not any(r.uid in mine and not r.path for r in reached):
                # seen to depend on some of its own children only (a GAN module's `forward` on the discriminator's
                # turn runs the generator under `detach()`): those children, not the whole module
                own = frozenset(h for h in own if h.uid not in mine) | children
        built = args.built
        sync = args.sync
        forward_unread = False
        if not frame.no_grad:
            site = self.interp.recorder.ordinal(self.interp.calls.current_call())
            self.interp.forward_sites[site] = self.interp.calls.current_call_node()
            if not vague:  # the module itself was called (`self.qf_1(x)`), not another method of it
                self.called_whole.add(site)
            counts = step_counts(flow.env)
            built = built | {(h, generations(flow.env, h, counts), site) for h in own if not h.pseudo}
            # (a part stored from a value handed in, of no class known: `_part_handed_in`)
            forward_unread = not vague and (not module.entities and any(self._part_handed_in(h) for h in module.modules)
                                            or self._made_out_of_sight(module))
            if not vague and (unseen_parts or any(not self._forward_known(e) for e in module.entities
                                                  if e.uid in self.interp.calls.instance_class) or forward_unread):
                # (a `forward` returning a tuple whose parts were not seen, its return read past the reading depth
                # or budget: which part holds the graph is not read either)
                self.table.unread_forwards.add(site)
            if not vague and (not any(self._result_read(e) for e in module.entities)
                              or self._returns_unread_container(module)):
                self.table.results_unread.add(site)
            wrappers = self.sync_wrappers(module)
            sync = sync | {(uid, self.sync_state(uid, flow, frame), site, _count(flow, uid)) for uid in wrappers}
            for uid in wrappers:
                self.table.sync_modules.setdefault(uid, set()).update(h for h in module.modules if not h.pseudo)
        summed = any(self._forward_sums(e.uid) for e in module.entities)
        # (the module itself called returns what its forward does, an object; another method of it may return None)
        # (the module called reaches its own parameters surely, however vaguely its inputs were said to reach them)
        assumed_reach = args.vague | own if vague else (args.vague - own) | unseen
        # (another method of it, not read: that its result still holds the graphs it was given is assumed; the graph of
        # its own it is taken to build rests on its name, `netD.netG_adv_loss(fake)`, as before)
        # (the forward of an object of no class known, not read at all: that the graphs it was given come back in its
        # result, and in which part of it, is assumed too: FairDARTS' loss of one of two classes returns `.item()`
        # numbers beside its loss)
        handed_on = args.vague_sites | {s for _h, _g, s in args.built} if vague or forward_unread else args.vague_sites
        # autograd records a parameter in the graph when the forward runs: one frozen on every path here is written by
        # no backward of this result, whether or not it is unfrozen before the backward (VQFR's generator pass runs
        # its discriminator frozen under `if current_iter > start:`; the pass's loss, joined with the arm without it,
        # still reached the discriminator on paths where it was trainable)
        frozen = frozen_on_every_path(flow.states, own)
        own_reach = own - frozen
        out = Value(reach=args.reach | own_reach, opaque=args.opaque, vague=assumed_reach - frozen,
                    built=built, vague_sites=handed_on,
                    summed=summed,
                    unseen_reduction=not summed and not any(self._forward_known(e) for e in module.entities), sync=sync,
                    present=not vague)
        if parts is None or frame.no_grad or vague:
            return out
        if len(parts) == 1 and _by_field(parts[0]):
            # `return r` of `r = Output(); r.loss = ...; r.loss_value += err.item()`: that object; a dict built in
            # sight, by key. A field holding a tensor holds this forward's graph, as the result does; a number (what
            # `.item()` made) holds none
            return _fields_as(parts[0], out, args.opaque)
        # `q1, q2 = self.critic(s, a)` of a `forward` returning `self.Q1(x), self.Q2(x)`: each part holds the graph
        # of this forward pass through the children it was seen to reach, not through its siblings (a part that
        # reached parameters other than the arguments' and the module's own children keeps the whole module).
        # What the arguments hold stays with every part, as with any forward (a memory handed in and returned)
        counts = step_counts(flow.env)
        items = []
        for i, part in enumerate(parts):
            if _graphless(part):
                # a part seen to hold no tensor with a graph (`return loss, (loss.item(), loss_seg.item())`: numbers
                # `.item()` made, DI-drive's criterion): neither this pass's graph nor the arguments' are in it
                items.append((str(i), part))
                continue
            extra = part.reach - args.reach
            children = own if any(r.pseudo or not _within(r, own) for r in extra) else extra
            built = args.built | {(h, generations(flow.env, h, counts), site) for h in children}
            # a part only a call not read made of the module (`return criterion(self, batch, log)`, a criterion
            # handed in): that it holds this pass's graph, or the graphs of what it was given, is an assumption
            # (DSKD's criterion returns its log of `.item()` numbers beside the loss)
            unread = part.opaque and part.reach and part.reach <= part.vague and not part.built and not part.graph
            held = replace(out, reach=args.reach | (children - frozen), vague=args.vague | (out.vague & children),
                           built=built, present=part.present,
                           vague_sites=out.vague_sites | {s for _h, _g, s in built} if unread else out.vague_sites)
            # a dict or object built in sight beside the loss (`return loss, {"hard": hard.item(), "kd": kd}`): by
            # key, as a result that is one (SVDD2024's criterion)
            items.append((str(i), _fields_as(part, held, args.opaque) if _by_field(part) else held))
        return replace(out, items=tuple(items))

    def _note_parts(self, module: Value) -> None:
        """Record the objects of other constructor calls the module called holds as its parts (`EntityTable.parts`):
        one object called, whole, whose modules include other objects' whole holders."""
        if len(module.entities) != 1 or module.opaque:
            return
        (ent,) = module.entities
        held = [h for h in module.modules if h.uid != ent.uid and not h.path and not h.pseudo]
        if held:
            self.table.parts.setdefault(ent.uid, set()).update(held)

    def _made_out_of_sight(self, module: Value) -> bool:
        """Every object the module called is known as was made out of sight, of no class known or modelled
        (`loss_fn = instantiate_from_config(cfg.lossconfig)`, LDM_CT's loss, which runs its discriminator on detached
        inputs on the discriminator's turn): whether its result holds the graphs it was given is not read."""
        calls, table = self.interp.calls, self.table
        return bool(module.entities) and all(
            e.uid in table.unknown_origin and e.uid not in calls.instance_class and e.api in ("", "torch.nn.Module")
            and e.uid not in table.copies for e in module.entities)

    def _parameter_free_holders(self, module: Value) -> frozenset[Holder]:
        """The holders of the module called that stand for an object holding no parameter: those of a class read
        that provably holds none (`_parameter_free`), and a part stored from a value handed in (`self._criterion =
        criterion`, `_part_handed_in`) when every object the value is known as here, by its own holders, is such
        (FairDARTS' loss, of one of two parameter-free classes, stored on the model: its part is not a module of the
        model's whose gradients a clear could drop)."""
        free = frozenset(h for h in module.modules if self._parameter_free(h))
        roots = [h for h in module.modules if not h.path and not h.pseudo]
        if roots and all(h in free for h in roots) and not module.opaque:
            free |= {h for h in module.modules if h.path and self._part_handed_in(h)}
        return free

    def _parameter_free(self, holder: Holder) -> bool:
        """The module of `holder` is an object of a class read that provably holds no parameter (`parameter_free`):
        calling it runs none, so its result holds its inputs' graphs only. A part (`model._criterion`) is judged by
        the class stored there, never by its owner's."""
        if holder.pseudo:
            return False
        if not holder.path and holder.uid in self.table.parameter_free:
            return True  # a library module the catalogue models as holding none (`nn.ZeroPad2d(2)`)
        calls = self.interp.calls
        info = self.module_classes.of(holder, calls.instance_class, self.interp.definitions.ancestors) \
            if holder.path else calls.instance_class.get(holder.uid)
        if info is None:
            return False
        forward = self.interp.definitions.find_method(info, "forward")
        project = self.interp.project
        if forward is None or project is not None and not project.follows(self.interp, forward):
            return False  # a class of another file past the reading budgets: not read, nothing proven
        found = self._parameter_free_classes.get(id(info.node))
        if found is None:
            found = self._parameter_free_classes[id(info.node)] = holds_no_parameters(self.interp.definitions, info)
        return found

    def _rejects_call(self, module: Value) -> bool:
        """The module's `forward`, read, cannot take the arguments of the call being run (`call_signatures`)."""
        call = self.interp.calls.current_call_node()
        if call is None or not module.modules:
            return False
        info = self.class_of_module(module)
        if info is None or self.interp.definitions.find_method(info, "__call__") is not None:
            return False  # (a class of its own `__call__` does not hand the call to `forward`)
        fn = self.interp.definitions.find_method(info, "forward")
        return fn is not None and call_signatures.rejects(fn, call, bound=1)

    def _forward_known(self, entity: Entity) -> bool:
        """What the module's forward returns is read (its class's `forward`, in this file or the project's) or
        modelled (a library module of the catalogue: `nn.CrossEntropyLoss` averages unless told otherwise);
        a module assumed to be one (built by a call out of sight, `model = build_model(cfg)`) is neither."""
        info = self.interp.calls.instance_class.get(entity.uid)
        if info is not None:
            # (a `forward` of another file past the reading budget is not read: what it returns is unknown)
            fn = self.interp.definitions.find_method(info, "forward")
            project = self.interp.project
            # (an abstract `forward`, `@abstractmethod ... pass`, says nothing of what the subclass run returns)
            return fn is not None and not is_abstract(fn) and (project is None or project.follows(self.interp, fn))
        originals = self.table.copies.get(entity.uid)
        if originals is not None:
            # a copy (`deepcopy(self.model)`) is called as a module of no class read: its `forward` is known where the
            # original's is modelled (a library module's), not where it is the project's (not followed through the
            # copy) or unknown (a model made out of sight)
            return bool(originals) and all(e.uid not in self.interp.calls.instance_class and self._forward_known(e)
                                           and e.uid not in self.table.unknown_origin for e in originals)
        return not entity.provenance.assumed

    def _result_read(self, entity: Entity) -> bool:
        """What each part of the module's result holds is read or modelled: its `forward` is known and its class
        is (a model handed in as a parameter is surely a module, but of a class nothing says)."""
        return self._forward_known(entity) and (entity.uid in self.interp.calls.instance_class
                                                or entity.api not in ("", "torch.nn.Module")
                                                or entity.uid in self.table.classes)

    def _through_local_forward(self, module: Value, pos: list[Value], kw: dict[str, Value], flow: Flow, frame: Frame,
                               args: Value) -> tuple[Value, frozenset[Holder] | None, list[Value] | None, bool]:
        """`args` as far as the result of a module of this file still holds them, when its `forward` may
        cut graphs on some calls (a VQGAN loss detaches the reconstruction on the discriminator's turn,
        `loss_fn(x, xrec, optimizer_idx=1)`): that `forward` runs on a copy of the caller's paths with
        these arguments, and the graphs and parameters of the arguments its result does not hold are
        dropped. Any other module, or a `forward` that may touch gradients: `args` unchanged.

        Also what the result of that `forward` reaches (None: it did not run, or its result is opaque).
        A module that holds other models to train them apart (first-order-model's `DiscriminatorFullModel`
        holds the generator and keypoint detector, yet feeds the discriminator their detached outputs)
        makes a result that depends on the modules its `forward` calls, not on every module it holds.

        Also the parts of that result when it is a tuple built in sight (`return self.Q1(x), self.Q2(x)`),
        each as far as it was seen (else None): a `forward` returning a tuple runs for them whatever its
        arguments hold. Last, whether it returns a tuple whose parts were not seen (a method it returns the
        result of was past the reading depth)."""
        if frame.no_grad:
            return args, None, None, False
        calls = self.interp.calls
        info = self.class_of_module(module)
        fn = self.interp.definitions.find_method(info, "forward") if info is not None else None
        if fn is None or id(fn) in frame.active:
            return args, None, None, False
        # (a forward that may cut graphs runs also on arguments without one: what its result reaches may be
        # fewer of the modules it holds, a GAN module detaching its own generator's output on the
        # discriminator's turn, `model(x, optimizer_idx=1)`)
        cuts = self._may_cut_graphs(fn)
        tuple_made = self._returns_tuple(fn, info)
        if not cuts and not tuple_made and not self._returns_object(fn) and not self._returns_dict(fn, info):
            return args, None, None, False
        project = self.interp.project
        prescan = (project.prescan_of(fn) if project is not None else None) or self.interp.prescan
        if not prescan.function_inert(fn):
            return args, None, None, False
        whole = calls.inline(fn, info, module, pos, kw, flow.copy(), frame)
        out = union_as_tensor([whole])
        reached = None if out.opaque else out.reach
        spread = whole.spread()
        # (data handed in is opaque, and so is what is computed from it: not a part the analysis could not read)
        apart = spread is not None and len(spread) > 1
        # a part the analysis could not read (computed by a call not read, `model.causal_sparsity_loss()` past the
        # reading depth) is taken to be the whole result, as an unsplit tuple is; the parts beside it keep what they
        # were seen to hold (Power-Fault-Detection's criterion returns its loss beside a dict of `.item()` numbers)
        parts = [whole if p.opaque and not args.opaque else p for p in spread] if apart and spread is not None else None
        if parts is None and isinstance(whole.const, tuple) and whole.const[:1] == ("instance",) and whole.items:
            parts = [whole]  # an object of a class read, with its fields (`forward` sees them out below)
        if parts is None and whole.items and not any(k.isdigit() for k, _ in whole.items) and self._returns_dict(fn, info):
            parts = [whole]  # a dict built in sight (`return {"loss": loss, "accuracy": acc.item()}`), by key
        unseen = tuple_made and parts is None and not whole.items
        if not cuts or args.reach <= out.reach and args.built <= out.built:
            return args, reached, parts, unseen
        return replace(args, reach=args.reach & out.reach, built=args.built & out.built), reached, parts, unseen

    def _forward_touching_gradients(self, module: Value, frame: Frame
                                    ) -> tuple[ClassInfo, ast.FunctionDef | ast.AsyncFunctionDef] | None:
        """The class and `forward` of a module whose `forward`, read, may clear, step or backpropagate."""
        if frame.no_grad:
            return None
        info = self.class_of_module(module)
        fn = self.interp.definitions.find_method(info, "forward") if info is not None else None
        if fn is None or id(fn) in frame.active:
            return None
        project = self.interp.project
        prescan = (project.prescan_of(fn) if project is not None else None) or self.interp.prescan
        if project is not None and not project.follows(self.interp, fn):
            return None
        return (info, fn) if info is not None and prescan.function_touches(fn) else None

    def class_of_module(self, module: Value) -> ClassInfo | None:
        """The class of the project one module value is an instance of: its entity's (a class's stand-in `self`
        in a method read on its own too), or for a submodule stored on another (`self.loss` of
        `self.loss = VQLPIPSWithDiscriminator()`), the class stored there."""
        kinds = self.interp.calls.instance_class
        ancestors = self.interp.definitions.ancestors
        if len(module.entities) == 1:
            info = self.module_classes.of(Holder(next(iter(module.entities)).uid), kinds, ancestors)
            if info is not None:
                return info
        if module.modules:
            # the one module a wrapper runs, or a model that may be wrapped (`if world_size > 1: model = DDP(model)`:
            # DDP's forward runs the module's, so either object's forward is that class's); one object known by two
            # holders (a loss module made in `main`, and the part `_criterion` of the model it was stored on) of one
            # class is an instance of it
            found = [self.module_classes.of(h, kinds, ancestors) for h in module.modules]
            return found[0] if found[0] is not None and all(f is found[0] for f in found) else None
        if module.entities and not any(e.kind is Kind.MODEL for e in module.entities):
            # an engine (DeepSpeed's, of `deepspeed.initialize(model=distiller)`) over a module of a class read whose
            # submodules are objects of their own (`self.student_model = AutoModel.from_pretrained(...)`): the one
            # instance of a class read among its modules is the module whose forward the engine runs
            roots = {h.uid for h in module.modules if not h.path and not h.pseudo and h.uid in kinds}
            if len(roots) == 1:
                return self.module_classes.of(Holder(roots.pop()), kinds, ancestors)
        return None

    def _part_handed_in(self, holder: Holder) -> bool:
        """A part of a module of a class read, stored from a value handed to it (`self._criterion = criterion` in its
        `__init__`: FairDARTS' separate loss, which returns `loss1.item()` beside its loss), of no class the analysis
        follows (`module_classes`): what its forward returns is not read. A part the class builds
        (`self.proj = nn.Linear(...)`) is not handed in."""
        if len(holder.path) != 1 or holder.pseudo:
            return False
        kinds, ancestors = self.interp.calls.instance_class, self.interp.definitions.ancestors
        info = kinds.get(holder.uid)
        if info is None or self.module_classes.of(holder, kinds, ancestors) is not None:
            return False
        attr = holder.path[0]
        return any(isinstance(node, ast.Assign) and not isinstance(node.value, ast.Call)
                   and any(isinstance(t, ast.Attribute) and t.attr == attr and isinstance(t.value, ast.Name)
                           and t.value.id == "self" for t in node.targets)
                   for cls in (info, *ancestors(info)) for node in iter_tree(cls.node))

    def holds_module(self, owner: ClassInfo, attr: str) -> bool:
        """Whether a method of `owner` or of a base stored a module at `self.attr` (`self.encoder = Enc()`)."""
        return self.module_classes.holds_module(owner, attr, self.interp.definitions.ancestors)

    def _returns_tuple(self, fn: ast.FunctionDef | ast.AsyncFunctionDef, info: ClassInfo | None = None,
                       depth: int = 0) -> bool:
        """Whether `forward` returns a tuple built in sight (`return self.Q1(x), self.Q2(x)`), itself or through
        another method of its class it returns the result of (icefall's HuBERT: `return self.compute_loss(...)`,
        which returns `loss, sample_size, logging_output`)."""
        key = (id(fn), id(info.node) if info is not None else 0)
        found = self._tuples.get(key)
        if found is None:
            self._tuples[key] = False  # a method returning its own result, through others: no tuple seen
            returns = [n.value for n in iter_tree(fn) if isinstance(n, ast.Return) and n.value is not None]
            found = any(isinstance(v, ast.Tuple) for v in returns)
            if not found and info is not None and depth < MAX_DEPTH:
                found = any(self._returns_tuple(m, info, depth + 1) for v in returns
                            if (m := self._own_method(info, v)) is not None)
            self._tuples[key] = found
        return found

    def _returns_dict(self, fn: ast.FunctionDef | ast.AsyncFunctionDef, info: ClassInfo | None, depth: int = 0) -> bool:
        """Whether `forward` returns a dict built in sight: `return {"loss": loss, "accuracy": acc}`, a name it bound
        to such a display (`out = {"logits": x}; out["acc"] = accuracy(x, y); return out`), or the result of another
        method of its class that does (`return self.classify_encoded(emb, labels)`)."""
        key = (id(fn), id(info.node) if info is not None else 0)
        found = self._dicts.get(key)
        if found is None:
            self._dicts[key] = False  # a method returning its own result, through others: no dict seen
            returned, bound = _returned_and_bound(fn)
            found = any(isinstance(v, ast.Dict) for v in (*returned, *bound)) or (
                info is not None and depth < MAX_DEPTH
                and any(self._returns_dict(m, info, depth + 1) for v in returned
                        if (m := self._own_method(info, v)) is not None))
            self._dicts[key] = found
        return found

    def _own_method(self, info: ClassInfo, value: ast.expr) -> Function | None:
        """The method of `info` a returned expression calls on `self` (`self.compute_loss(...)`), if any."""
        func = value.func if isinstance(value, ast.Call) else None
        if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self"):
            return None
        return self.interp.definitions.find_method(info, func.attr)

    def _returns_object(self, fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
        """Whether `forward` returns a local it made as an object of a plain class read (`r = Output(...)`, then
        `return r`): the caller reads that object's fields (`out.loss_value`), which may be numbers."""
        found = self._objects.get(id(fn))
        if found is None:
            found = self._objects[id(fn)] = any(self._plain_class_call(v) for v in _returned_and_bound(fn)[1])
        return found

    def _plain_class_call(self, value: ast.expr) -> bool:
        if not isinstance(value, ast.Call) or not isinstance(value.func, ast.Name):
            return False
        info = declared_types.declared_class(value.func, self.interp)  # the class of the project the name names
        return info is not None and not info.is_module and self.interp.definitions.plain(info)

    def _returns_unread_container(self, module: Value) -> bool:
        """The module's `forward`, read, returns only what a call neither read nor modelled makes of a container it
        is given (`return TensorDict({"loss": loss, "metrics": {"loss": loss.detach()}}, batch_size=())`): which item
        of that object holds which graph is not read."""
        info = self.class_of_module(module)
        fn = self.interp.definitions.find_method(info, "forward") if info is not None else None
        if fn is None:
            return False
        found = self._wrapped.get(id(fn))
        if found is None:
            qualify = self._home_imports(fn).qualify
            returned, bound = _returned_and_bound(fn)
            made = [v for v in (*returned, *bound) if not isinstance(v, ast.Name)]
            found = self._wrapped[id(fn)] = bool(made) and all(self._unread_wrapper(v, qualify) for v in made)
        return found

    def _unread_wrapper(self, value: ast.expr, qualify: Callable[[ast.AST], str | None]) -> bool:
        """A call of a class or function no catalogue row models and the project does not define, given a dict,
        list or tuple display (or keywords holding one)."""
        if not isinstance(value, ast.Call):
            return False
        qualified = qualify(value.func)
        if qualified is None or self.interp.catalogue.call(qualified) is not None:
            return False
        project = self.interp.project
        head = qualified.split(".", 1)[0]
        if head in self.interp.definitions.functions or head in self.interp.definitions.classes \
                or project is not None and project.target(qualified) is not None:
            return False
        given = [*value.args, *(k.value for k in value.keywords)]
        return any(isinstance(a, (ast.Dict, ast.List, ast.Tuple)) for a in given)

    def _forward_returns_copies(self, module: Value) -> bool:
        """The module's `forward` is of a class read and each of its `return`s returns what a call that cuts graphs
        made (`graph_cuts.returns_copies`, read with the imports of its own file)."""
        info = self.class_of_module(module)
        fn = self.interp.definitions.find_method(info, "forward") if info is not None else None
        if fn is None:
            return False
        return returns_copies(fn, self._home_imports(fn).qualify, self.interp.catalogue)

    def _home_imports(self, fn: Function) -> N.ImportMap:
        """The imports of the file that defines `fn` (another file of the project's, or this one's)."""
        project = self.interp.project
        foreign = project.module_of(fn) if project is not None else None
        return getattr(foreign, "imports", None) or self.interp.imports

    def _may_cut_graphs(self, fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
        """Whether the function may cut graphs (`graph_cuts`), read with the imports of its own file."""
        cut = self._cuts.get(id(fn))
        if cut is None:
            project = self.interp.project
            foreign = project.cuts_graphs(fn) if project is not None else None
            cut = self._cuts[id(fn)] = foreign if foreign is not None else may_cut_graphs(
                fn, self.interp.imports.qualify, self.interp.catalogue)
        return cut

    def _forward_sums(self, uid: int) -> bool:
        """A local module whose `forward` returns a loss reduced by a sum (`reduction="sum"`)."""
        info = self.interp.calls.instance_class.get(uid)
        forward = self.interp.definitions.find_method(info, "forward") if info is not None else None
        if forward is None:
            return False
        found = self._sums.get(id(forward))
        if found is None:  # read from the syntax once per `forward`, not at every call of the module
            found = self._sums[id(forward)] = returns_summed(forward, self._callee)
        return found

    def _callee(self, call: ast.Call, within: ast.AST) -> Function | None:
        """The function of this file or of the project a call in function `within` runs, when it names one
        (`LF.contrastive_loss(...)` of `import cirtorch.layers.functional as LF`)."""
        interp = self.interp
        project = interp.project
        foreign = project.module_of(within) if project is not None else None
        imports = getattr(foreign, "imports", None) or interp.imports
        functions = getattr(foreign, "functions", None) if foreign is not None else interp.functions
        if isinstance(call.func, ast.Name) and functions and call.func.id in functions:
            return functions[call.func.id]
        qual = imports.qualify(call.func)
        found = project.target(qual) if project is not None and qual else None
        return found[0] if found is not None and found[1] is None else None

    def sync_wrappers(self, value: Value) -> list[int]:
        """Uids of the data-parallel wrappers (DDP, FSDP) a value may be: those whose gradient sync can be switched."""
        cat = self.interp.catalogue
        return sorted(e.uid for e in value.entities if e.uid in self.table.sync_capable
                      or e.api and cat.switches_sync(e.api))

    @staticmethod
    def sync_state(uid: int, flow: Flow, frame: Frame) -> str:
        """Whether the wrapper all-reduces gradients in a backward through a forward pass run here."""
        if uid in frame.sync_off:
            return "off"
        flag = flow.env.get(f"{SYNC_OFF}{uid}")
        if flag is not None:
            return {"True": "off", "False": "on"}.get(str(flag.const), "maybe")
        return "maybe" if uid in frame.sync_maybe or ANY_WRAPPER in frame.sync_maybe else "on"

    def holders_of_modules(self, vals: Iterable[Value]) -> set[Holder]:
        out: set[Holder] = set()
        for v in vals:
            out |= {m for m in v.modules if not m.pseudo}
            out |= set(v.params)
            for _, item in v.items:
                out |= self.holders_of_modules([item])
        return out

    def holders_of_params(self, v: Value) -> set[Holder]:
        entities = self.table.entities
        return set(v.params) | set(v.modules) | {r for r in v.reach if r.uid in entities and entities[r.uid].kind is Kind.PARAM}

    def grad_holders(self, v: Value) -> set[Holder]:
        """Whose `.grad` a write through these parameters reaches (`p.grad = None`, `p.grad /= n`): theirs,
        and, as for `model.zero_grad()`, whatever an optimizer of unknown parameters owns."""
        holders = self.holders_of_params(v)
        if any(not h.pseudo for h in holders):
            holders |= {Holder(o.uid, (), pseudo=True) for o in self.interp.recorder.all_optimizers()
                        if self.table.ownership_unknown(o.uid)}
        return holders

    def opaque_call(self, name: str, pos: list[Value], kw: dict[str, Value], flow: Flow) -> Value:
        """A call the analysis cannot follow: it may run models it is given, and may touch gradients."""
        forget_null_grads(flow.env)  # (it may write gradients anywhere)
        vals = [*pos, *kw.values()]
        if any(e.api == _GRAD_SCALER for v in vals for e in v.entities):
            self.interp.amp.updated(flow)  # `finish_step(scaler)`: it may call `scaler.update()`
        opts = [o for v in vals for o in v.of_kind(Kind.OPTIMIZER)]
        models = [v for v in vals if v.modules]
        suggests = N.callee_suggests_grad_effect(name)
        # `zero_grad(self.model_params)`: a helper given a parameter collection
        param_lists = [v for v in vals if v.params and not v.modules] if suggests else []
        if (opts and not N.callee_is_passive(name)) or ((models or param_lists) and suggests):
            holders: set[Holder] = set()
            for o in opts:
                holders |= self.table.optimizer_holders(o)
            holders |= self.holders_of_modules(models)
            for v in param_lists:
                holders |= self.grad_holders(v)
            if models:
                holders |= {Holder(o.uid, (), pseudo=True) for o in self.interp.recorder.all_optimizers()}
            flow.hand_written(lambda s: s.clear(0, holders, record_discards=False), ("clear", 0, frozenset(holders)))
        reach = frozenset().union(*(v.reach | v.modules for v in vals)) if vals else frozenset()
        vague = frozenset().union(*(v.vague | v.modules for v in vals)) if vals else frozenset()
        params = frozenset().union(*(v.params for v in vals)) if vals else frozenset()
        # what an unreadable function makes of a divided loss (`amp.scale_loss(loss / n, opt)`) keeps the division
        divisors = frozenset().union(*(v.divisors for v in vals if v.reach)) if vals else frozenset()
        if reach:
            divisors |= self._divisor_arguments()
        # and what it makes of a model's output (`compute_loss(pred, targets)`) holds the forward passes that
        # made it, with the gradient sync they ran with, as arithmetic on it does (`union_as_tensor`)
        sync = frozenset().union(*(v.sync for v in vals)) if vals else frozenset()
        # how what it returns is reduced over the samples (a mean, or YOLO's `ComputeLoss`'s mean times the batch
        # size, a sum) is not seen: a rule that needs it to be a mean rests on an assumption
        return Value(reach=reach, params=params, opaque=True, vague=vague, divisors=divisors, sync=sync,
                     unseen_reduction=bool(reach))

    def _divisor_arguments(self) -> frozenset[str]:
        """An unreadable function handed a loss and a divisor by name (mmf's `extract_loss(report, loss_divisor)`,
        `normalize(loss, normalizer=n)`) returns the loss divided by it."""
        call = self.interp.calls.current_call_node()
        if call is None:
            return frozenset()
        return frozenset(code(a.value) for a in arguments(call)
                         if _DIVISOR_NAME.search(a.keyword or "") or type(a.value) in (ast.Name, ast.Attribute) and _DIVISOR_NAME.search(code(a.value)))

    # -- self
    def self_value_for(self, cls: ClassInfo) -> Value:
        if cls.is_module:
            ent = self.mint(Kind.MODEL, "self", ("self", cls.name), api=cls.api)
            self.module_classes.note_stand_in(ent.uid, cls)
            return self.model_value(ent)
        return Value(const=("instance", cls.name))

    def stored_on_self(self, key: str, value: Value, frame: Frame) -> Value:
        """Submodules assigned in an nn.Module's methods belong to `self` (`self.encoder = Encoder()`)."""
        cls = frame.cls
        if not key.startswith("self.") or not isinstance(cls, ClassInfo) or not cls.is_module or frame.self_value is None or not value.modules:
            return value
        if not frame.self_value.modules:
            return value
        base = min(frame.self_value.modules)  # (one, but a set: never its first by hash order)
        path = tuple(key.split(".")[1:])
        if len(path) == 1:
            kinds = self.interp.calls.instance_class
            made = [kinds.get(e.uid) for e in value.entities if e.kind is Kind.MODEL] or [None]
            self.module_classes.note_stored(cls, path[0], made)
        if all(m.uid != base.uid for m in value.modules):
            # made here (`self.fc = nn.Linear(...)`) or given (`self.encoder = encoder`): either way a
            # part of `self` now, and still the object the caller may hold and train on its own
            # (a module of unknown origin, a parameter of a method read on its own, was handed in too)
            given = frozenset(m for m in value.modules
                              if m.uid in self.given_modules(frame) or m.uid in self.table.unknown_origin)
            made_here = frozenset(m.uid for m in value.modules) - frozenset(m.uid for m in given)
            # its own parts go with it: `self.encoder.embedding` is `Holder(self, ("encoder", "embedding"))`, the
            # holder the encoder's methods reach when called through it (`model.encoder.embed(ids)`)
            items = tuple((k, _rerooted(v, made_here, Holder(base.uid, path))) for k, v in value.items)
            self._owned_through(made_here, Holder(base.uid, path))
            return replace(value, modules=frozenset({Holder(base.uid, path)}) | given, entities=frozenset(), items=items)
        return value

    def _owned_through(self, uids: frozenset[int], root: Holder) -> None:
        """Modules `uids` just became `root`, a part of another module: an optimizer built over their parameters
        before (`self.optimizer = Adam(self.parameters())` in the part's own `__init__`, synthcity's
        `TimeSeriesModel`) updates `root`'s, the holders a forward through the parent fills and its clear reaches."""
        for own in self.table.ownership.values():
            extra = frozenset(Holder(root.uid, root.path + h.path) for h in own.holders
                              if h.uid in uids and not h.pseudo)
            if not extra <= own.holders:
                own.holders = own.holders | extra

    def given_modules(self, frame: Frame) -> frozenset[int]:
        """Uids of modules that existed before the method running in `frame` was called (its arguments)."""
        return frozenset(m.uid for v in frame.arguments for m in v.modules) if frame.arguments else frozenset()

    def class_self_env(self, cls: ClassInfo) -> dict[str, Value]:
        """`self.*` attributes as `__init__` leaves them (every world joined), for methods analysed on their own."""
        cached = self._class_self_env.get(cls.name)
        if cached is not None:
            return cached
        self._class_self_env[cls.name] = {}
        env = self._init_env(cls)
        self._class_self_env[cls.name] = env
        return env

    def class_worlds(self, cls: ClassInfo) -> list[World]:
        """The worlds of a class whose `__init__` builds other objects for other settings (see `worlds`);
        empty when it has one world, or when its settings change nothing `__init__` leaves."""
        cached = self._class_worlds.get(cls.name)
        if cached is not None:
            return cached
        self._class_worlds[cls.name] = []
        joined = self.class_self_env(cls)
        interp = self.interp
        init = interp.definitions.find_method(cls, "__init__")
        if init is None or not joined:
            return []
        # the tests of `__init__`, then those of the setup methods it calls (`self.init_main()`), each at its call
        ifs = [(node.lineno, node) for node in iter_tree(init) if isinstance(node, ast.If)]
        own = {id(node) for _line, node in ifs}
        for line, helper in self._setup_helpers(cls, init):
            ifs += [(line, node) for node in iter_tree(helper) if isinstance(node, ast.If)]
        read = [(line, node, *interp.setting_condition(node)) for line, node in ifs]
        conds = [(line, cond) for line, _node, cond, _swapped in read]
        atoms = {cond.akey: cond.atom for _, cond in conds if cond.atom is not None}
        tests = [(line, cond.akey, cond.atom.subject) for line, cond in conds if cond.atom is not None]
        elsewhere = self.mutable_attributes | self.assigned_by_ancestors(cls)
        settings = settings_of(init, tests, elsewhere)
        family = (cls, *interp.definitions.ancestors(cls))
        # `if hasattr(self, "optimizer"):` in a method: the arm of `__init__` that alone makes it
        presence = presence_settings(init, [(node, cond.akey, swapped) for _line, node, cond, swapped in read
                                            if id(node) in own],
                                     self._asked_by_hasattr(family), elsewhere)
        settings += [key for key in presence if key not in settings][:max(0, MAX_SETTINGS - len(settings))]
        if not settings:
            return []
        worlds: list[World] = []
        marks = dict(self.table.one_process_by_setting)
        for literals in assignments(settings):
            implied = implied_presence(literals, presence)
            with interp.worlds.entered(family, literals, atoms, implied):
                env = self._init_env(cls)
            if env:
                worlds.append(World(literals, atoms, env, implied))
        shapes = {self._shape(w.env) for w in worlds}
        found = worlds if len(worlds) > 1 and len(shapes) > 1 else []
        if not found:  # one world after all: what a world's run marked of its objects says nothing of the joined run
            self.table.one_process_by_setting = marks
        self._class_worlds[cls.name] = found
        return found

    def _asked_by_hasattr(self, family: tuple[ClassInfo, ...]) -> frozenset[str]:
        """The names the methods of a class and its bases (not `__init__`) ask for by `hasattr(self, "<name>")`."""
        return frozenset(n.args[1].value for info in family for name, fn in info.methods.items() if name != "__init__"
                         for n in iter_tree(fn)
                         if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "hasattr"
                         and len(n.args) == 2 and isinstance(n.args[0], ast.Name) and n.args[0].id == "self"
                         and isinstance(n.args[1], ast.Constant) and isinstance(n.args[1].value, str))

    def _setup_helpers(self, cls: ClassInfo, init: ast.FunctionDef | ast.AsyncFunctionDef
                       ) -> list[tuple[int, ast.FunctionDef | ast.AsyncFunctionDef]]:
        """The methods of the class (or a base) that `__init__`'s own statements call on `self` (`self.init_main()`),
        with the line of the call: setup split into helpers, which run once, at that line, before any training."""
        out: list[tuple[int, ast.FunctionDef | ast.AsyncFunctionDef]] = []
        for node in iter_tree(init):
            call = node.value if isinstance(node, ast.Expr) else None
            if (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
                    and isinstance(call.func.value, ast.Name) and call.func.value.id == "self"):
                helper = self.interp.definitions.find_method(cls, call.func.attr)
                if helper is not None and helper is not init and all(helper is not h for _, h in out):
                    out.append((call.lineno, helper))
        return out

    def _shape(self, env: dict[str, Value]) -> frozenset[object]:
        """What a world's training objects are, whatever their identities: the models, optimizers (and what
        they own) and parameter collections its attributes hold. Worlds that differ in nothing else (a
        logger, a flag) are one: splitting them would only multiply the work."""
        table = self.table
        out: set[object] = set()
        for key, v in env.items():
            trained = [e for e in v.entities if e.kind in (Kind.MODEL, Kind.OPTIMIZER)]
            if not (trained or v.modules or v.params):
                continue
            owned = frozenset(table.holder_name(h) for e in trained if e.kind is Kind.OPTIMIZER
                              for h in table.ownership.get(e.uid, Ownership()).holders)
            out.add((key, frozenset((e.kind, e.name, e.api) for e in trained),
                     frozenset(table.holder_name(h) for h in v.modules | v.params), owned))
        return frozenset(out)

    def _init_env(self, cls: ClassInfo) -> dict[str, Value]:
        """Run `__init__` (in the world the interpreter is in): the `self.*` attributes it leaves."""
        env: dict[str, Value] = {}
        interp = self.interp
        init = interp.definitions.find_method(cls, "__init__")
        if init is not None:
            frame = Frame(function=init, cls=cls, self_value=self.self_value_for(cls), depth=1, local_defs={}, active=(id(init),))
            fenv = self.unknown_parameters(init, True)
            flow = Flow(fenv, frozenset({PathState()}))
            with self._in_module_of(init) as runs:
                # (an `__init__` of a base class in another file reads that file's names: its `DDP`, its helpers)
                out = interp.exec_block(init.body, flow, frame) if runs else None
            final = Flow.join([out.normal, *(f for f, _ in out.returns)]) if out is not None else None
            if final:
                # `self.optimizer = None` filled in by another method (`create_optimizer()`): a placeholder,
                # not what the attribute holds when the other methods run
                mutable = self.mutable_attributes | self.assigned_by_ancestors(cls)
                env = {k: v for k, v in final.env.items() if k.startswith("self.") and not (v.const == "None" and k in mutable)}
                placeholders = [k for k, v in final.env.items() if k.startswith("self.") and v.const == "None"]
                for key in (k for k in placeholders if k in mutable):
                    tool = self._tool_built_later(cls, key)
                    if tool is not None:  # `self.loss_scaler = None`, `NativeScaler()` in `_init_distributed()`
                        env[key] = join([final.env[key], tool])
        return env

    def _tool_built_later(self, cls: ClassInfo, key: str) -> Value | None:
        """A framework tool (a loss scaler, an accelerator: a catalogue type of kind `tool`) that the one method of
        the class (or of a base) other than `__init__` assigning `key` builds there, with a call the catalogue models
        (`self.loss_scaler = NativeScaler()` in a setup method, the `__init__` leaving None): what the attribute holds
        once that method ran, or still None. None when another method assigns anything else there, or several do."""
        interp = self.interp
        found: list[tuple[ast.FunctionDef | ast.AsyncFunctionDef, ast.Call]] = []
        for info in (cls, *interp.definitions.ancestors(cls)):
            for name, fn in info.methods.items():
                if name == "__init__":
                    continue
                for node in iter_tree(fn):
                    if any(N.ref_text(t) == key for t in assignment_targets(node)):
                        value = getattr(node, "value", None)
                        if not isinstance(value, ast.Call) or len(found) > 0:
                            return None
                        found.append((fn, value))
        if not found:
            return None
        fn, call = found[0]
        with self._in_module_of(fn) as runs:
            qual = interp.imports.qualify(call.func) if runs else None
            row = interp.catalogue.call(qual) if qual is not None else None
            made = [e for e in row.effects if e.kind == "construct"] if row is not None else []
            made_type = interp.catalogue.canonical(str(made[0].value("type"))) if len(made) == 1 else ""
            if interp.catalogue.kind(made_type) != "tool":
                return None
            frame = Frame(function=fn, cls=cls, self_value=self.self_value_for(cls), depth=1, local_defs={},
                          active=(id(fn),))
            built = interp.eval(call, Flow(self.unknown_parameters(fn, True), frozenset({PathState()})), frame)
        return built if built.entities else None

    @contextlib.contextmanager
    def _in_module_of(self, fn: ast.FunctionDef | ast.AsyncFunctionDef) -> Iterator[bool]:
        """Run code of `fn` with the names of the module that defines it; yield False when it may not run."""
        project = self.interp.project
        if project is None:
            yield True
            return
        with project.entered(self.interp, fn, None) as runs:
            yield runs

    @property
    def mutable_attributes(self) -> frozenset[str]:
        """`self.x` attributes some method other than `__init__` assigns: they change between calls. (Of the
        classes of the module whose code runs: another file's while a call into it runs, so kept per module.)"""
        classes = self.interp.classes
        found = self._mutable.get(id(classes))
        if found is None or found[0] is not classes:
            found = self._mutable[id(classes)] = (classes, self._assigned_outside_init(classes.values()))
        return found[1]

    def assigned_by_ancestors(self, cls: ClassInfo) -> frozenset[str]:
        """`self.x` attributes a method of a base class assigns, wherever it is defined: `self.model = None`
        in a `BaseTrainer.__init__` of another file, built by its `_setup()` there."""
        return self._assigned_outside_init(self.interp.definitions.ancestors(cls))

    def assigned_outside_init(self, cls: ClassInfo) -> frozenset[str]:
        """`self.x` attributes a method of the class itself or of a base assigns, or any class of the running
        module does: what `__init__` left there may change between calls."""
        return self._assigned_outside_init([cls]) | self.assigned_by_ancestors(cls) | self.mutable_attributes

    def _assigned_outside_init(self, classes: Iterable[ClassInfo]) -> frozenset[str]:
        """The `self.x` attributes the methods of these classes other than `__init__` assign."""
        out: set[str] = set()
        for info in classes:
            for name, fn in info.methods.items():
                if name != "__init__":
                    out |= self._self_stores(fn)
        return frozenset(out)

    def _self_stores(self, fn: ast.AST) -> frozenset[str]:
        """The `self.x` attributes `fn` assigns (nested functions included), read once per method: a class's
        methods are asked again at every setting test and world of the class (accelerate's `Accelerator`:
        a million assignment-target reads otherwise)."""
        kept = self._stores.get(id(fn))
        if kept is None or kept[0] is not fn:
            texts = (N.ref_text(t) for node in iter_tree(fn) for t in assignment_targets(node))
            kept = self._stores[id(fn)] = (fn, frozenset(t for t in texts if t is not None and t.startswith("self.")))
        return kept[1]


def _count(flow: Flow, uid: int) -> int:
    value = flow.env.get(f"{SYNC_SET}{uid}")
    return value.const if value is not None and isinstance(value.const, int) else 0


def _within(holder: Holder, holders: frozenset[Holder]) -> bool:
    """The parameters of `holder` all belong to one of `holders` (it is one of them, or a child of one)."""
    return any(holder.uid == h.uid and holder.path[:len(h.path)] == h.path for h in holders)


def _rerooted(value: Value, uids: frozenset[int], root: Holder) -> Value:
    """`value` with the holders of the modules `uids` (a module just stored on another) moved under `root`."""
    if not uids:
        return value

    def move(hs: frozenset[Holder]) -> frozenset[Holder]:
        return frozenset(Holder(root.uid, root.path + h.path) if h.uid in uids and not h.pseudo else h for h in hs)

    return replace(value, modules=move(value.modules), params=move(value.params), reach=move(value.reach),
                   items=tuple((k, _rerooted(v, uids, root)) for k, v in value.items))


def _returned_and_bound(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[list[ast.expr], list[ast.expr]]:
    """What a function returns, and the values its assignments bind to the names it returns (`r = Output(...)`, then
    `return r`)."""
    returned = [n.value for n in iter_tree(fn) if isinstance(n, ast.Return) and n.value is not None]
    names = {v.id for v in returned if isinstance(v, ast.Name)}
    bound = [a.value for a in iter_tree(fn) if isinstance(a, ast.Assign)
             for t in a.targets if isinstance(t, ast.Name) and t.id in names] if names else []
    return returned, bound


def _by_field(part: Value) -> bool:
    """A part of a result read field by field: an object of a class read (`("instance", ...)`), a tuple constant, or
    a dict built in sight (items, no constant)."""
    return isinstance(part.const, tuple) or bool(part.items) and part.const is None


def _fields_as(part: Value, held: Value, handed_opaque: bool) -> Value:
    """`part` read by field: a field that may hold a tensor holds what `held` says the result holds (this forward's
    graph); a number (what `.item()` made) holds none. A field only opaque, as what was handed in is (data, and what
    is computed from it alone: `feature_loss` where no term reached a parameter), is not a part the analysis could
    not read (as for the parts of a tuple, `_through_local_forward`)."""
    fields = tuple((k, held if v.reach or v.built or v.graph or v.opaque and not handed_opaque or v.modules
                    or v.entities else v) for k, v in part.items)
    return replace(held, const=part.const, items=fields)


def _graphless(value: Value) -> bool:
    """The value, a part of a result built in sight, holds no graph, nor does any item of it: a number, a string, a
    tuple of numbers that `.item()` made, a size read off a tensor (`x.shape[0]`), an object of a class read whose
    fields are such (AlphaSAGE's token builders) -- not a value of a call not read, a module, or a tensor."""
    literal = value.const is None or not isinstance(value.const, tuple) or value.const[:1] == ("instance",)
    return not (value.reach or value.built or value.graph or value.opaque or value.modules or value.entities
                or value.vague or value.kept or not literal) \
        and all(_graphless(v) for _k, v in value.items)
