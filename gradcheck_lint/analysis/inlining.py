"""Inlining: a same-file function or method runs at its call site, with the caller's values bound.

A callee that cannot touch gradients (`_inert`) runs on one stand-in path instead of each of the
caller's, and its result is remembered: a trainer's `evaluate()` or `_save()` called from a training
loop that follows 64 paths, once per iteration of the loop's fixpoint, is interpreted once per distinct
input, on one path.
"""

from __future__ import annotations

import ast
import contextlib
from collections.abc import Iterator
from dataclasses import replace

from . import call_signatures, class_refs, handed_containers, stand_ins
from . import names as N
from .context_helpers import entered_context, is_context_manager
from .definitions import ClassInfo
from .flow import MAX_DEPTH, NULL_GRADS, TRANSITIONS, Flow, Frame, Function
from .gradstate import PathState
from .parameter_tests import argument_texts
from .parts import CallsFace, InliningHost
from .syntax import TESTS, Param, parameters
from .values import EMPTY, OPAQUE, Value, display, join, maybe_none
from .walk import child_nodes

_ONE_PATH = frozenset({PathState()})
# what a run of a callee that trains did: env updates, returned value, path states after, transitions, events met
_Run = tuple[dict[str, Value], Value, frozenset[PathState], int, frozenset[int]]


# what an inert callee did: (env updates, returned value, whether it ends, tests it made stale, optimizers it made)
_InertRun = tuple[dict[str, Value], Value, bool, frozenset[int], frozenset[int]]


class Inliner:
    """Runs same-file callees for the call evaluator (`calls.Calls`), which keeps the call path."""

    def __init__(self, interp: InliningHost, calls: CallsFace) -> None:
        self.interp = interp
        self.calls = calls
        # what an inert callee did, by everything it could see: (env updates, returned value, ends, tests it made
        # stale, optimizers it made anew)
        self._inert_runs: dict[tuple[object, ...], _InertRun] = {}
        # what a callee that trains did, by everything it could see, its caller's path states included:
        # (env updates, returned value, path states after, transitions made, events met)
        self._runs: dict[tuple[object, ...], _Run] = {}
        self._locals: dict[int, frozenset[str]] = {}  # each function's own locals (`local_names`), by its id
        self._generators: dict[int, bool] = {}  # whether each function has a `yield` of its own, by its id

    def inline(self, fn: Function, cls: ClassInfo | None, self_value: Value | None, pos: list[Value], kw: dict[str, Value],
               flow: Flow, frame: Frame, instance_key: str | None = None, closure: bool | None = None,
               captured: dict[str, Value] | None = None) -> Value:
        """Run a function or method at its call site, with the caller's values bound; one of another
        file of the project runs with the names of its own module (`gradcheck_lint.project`). `closure`:
        whether it sees the caller's names (by default, when it is a nested `def` of the caller); `captured`: the names
        a lambda saw where it was made (`callables.handed_lambda`), bound before its parameters."""
        project = self.interp.project
        if project is None:
            return self._inline(fn, cls, self_value, pos, kw, flow, frame, instance_key, closure, captured)
        with project.entered(self.interp, fn, self.calls.current_call_node()) as runs:
            if runs:
                return self._inline(fn, cls, self_value, pos, kw, flow, frame, instance_key, closure, captured)
        if project.may_touch_gradients(fn):
            flow.map_quiet(PathState.unread)  # it may have cleared or stepped what the paths hold
        return self.interp.objects.opaque_call(fn.name, pos, kw, flow)

    def _inline(self, fn: Function, cls: ClassInfo | None, self_value: Value | None, pos: list[Value], kw: dict[str, Value],
                flow: Flow, frame: Frame, instance_key: str | None = None, closure: bool | None = None,
                captured: dict[str, Value] | None = None) -> Value:
        if frame.depth >= MAX_DEPTH or id(fn) in frame.active:
            return self.interp.objects.opaque_call(fn.name, pos, kw, flow)
        self.calls.inlined.add(id(fn))
        with self._at_call_site(fn):
            key = (id(fn), id(cls), id(frame.cls), id(frame.function), self.calls.call_path, frame.depth, frame.active, frame.loops,
                   frame.ifs, frame.no_grad, frame.gates, frame.sync_off, frame.sync_maybe, self_value, instance_key,
                   frame.owner, tuple(pos), frozenset(kw.items()), frozenset(flow.env.items()), closure,
                   frozenset(captured.items()) if captured else None)
            if not self._inert(fn):
                return self._run_remembered(key, fn, cls, self_value, pos, kw, flow, frame, instance_key, closure, captured)
            known = self._inert_runs.get(key)
            if known is None:
                before, states, count = dict(flow.env), flow.states, TRANSITIONS.count
                outer, outer_renewed = TRANSITIONS.forgotten, TRANSITIONS.renewed
                TRANSITIONS.forgotten, TRANSITIONS.renewed = set(), set()
                try:
                    ret = self._run_inlined(fn, cls, self_value, pos, kw, flow, frame, instance_key, stand_in=True,
                                            closure=closure, captured=captured)
                    forgotten = frozenset(TRANSITIONS.forgotten)
                    renewed = frozenset(TRANSITIONS.renewed)
                finally:
                    TRANSITIONS.forgotten, TRANSITIONS.renewed = outer, outer_renewed
                if TRANSITIONS.count != count or not (flow.states is states or not flow.states):
                    if outer_renewed is not None:
                        outer_renewed.update(renewed)
                    return ret  # it did change path states: it ran again on the caller's own paths
                # what it did to the caller: its updates of the caller's names, whether it ends, and
                # the tests whose assumptions it made stale
                updated = {k: v for k, v in flow.env.items() if before.get(k) is not v}
                known = (updated, ret, bool(flow.states), forgotten, renewed)
                self._inert_runs[key] = known
                flow.states = states
            updates, ret, ends, forgotten, renewed = known
            flow.env.update(updates)
            if forgotten:
                flow.forget(list(forgotten))
            if renewed:  # the optimizers it made: the caller's paths hold nothing of earlier ones made there
                flow.renew(renewed)
            if not ends:
                flow.states = frozenset()
            return ret

    def _run_remembered(self, key: tuple[object, ...], fn: Function, cls: ClassInfo | None, self_value: Value | None,
                        pos: list[Value], kw: dict[str, Value], flow: Flow, frame: Frame,
                        instance_key: str | None, closure: bool | None = None,
                        captured: dict[str, Value] | None = None) -> Value:
        """Run a callee that may train on the caller's paths, once per distinct input: a loop's fixpoint
        (nested loops: once per iteration of each) calls it again and again with the same values and path
        states, and what it records at its events is recorded on the first run already."""
        interp = self.interp
        key = (*key, flow.states, id(interp.module_env), len(interp.module_env))
        known = self._runs.get(key)
        if known is None:
            before, count, touched = dict(flow.env), TRANSITIONS.count, set(interp.recorder.touched)
            ret = self._run_inlined(fn, cls, self_value, pos, kw, flow, frame, instance_key, closure=closure,
                                    captured=captured)
            known = ({k: v for k, v in flow.env.items() if before.get(k) is not v}, ret, flow.states,
                     TRANSITIONS.count - count, frozenset(interp.recorder.touched - touched))
            if all(k in flow.env for k in before):
                self._runs[key] = known
            return ret
        updates, ret, states, transitions, met = known
        flow.env.update(updates)
        flow.states = states
        TRANSITIONS.count += transitions
        interp.recorder.touched |= met
        return ret

    def _class_attributes(self, cls: ClassInfo, self_value: Value | None) -> dict[str, Value]:
        """The `self.*` attributes `__init__` leaves on the class's stand-in `self`, moved onto the instances of the
        class (or of a subclass) that `self_value` holds: their children, not the stand-in's (`stand_ins`)."""
        objects = self.interp.objects
        env = objects.class_self_env(cls)
        if not cls.is_module or self_value is None or not self_value.modules or not env:
            return env
        stand_in = min(objects.self_value_for(cls).modules).uid
        kinds = self.calls.instance_class
        roots = frozenset(h for h in self_value.modules if not h.path and h.uid != stand_in and h.uid in kinds
                          and self._descends(kinds[h.uid], cls))
        return stand_ins.moved(env, stand_in, roots)

    def _descends(self, info: ClassInfo, cls: ClassInfo) -> bool:
        return info is cls or any(a is cls or a.name == cls.name for a in self.interp.definitions.ancestors(info))

    def _inert(self, fn: Function) -> bool:
        """A callee that cannot touch gradients (nothing it calls, transitively, is a training event or
        may be one) and sets no counter of an accumulation window: it changes no path state, so it
        runs on one empty path instead of each of the caller's. Its values and how it ends still count."""
        interp = self.interp
        if not interp.prescan.surely_inert(fn.name):
            return False
        stored = interp.stored_in(fn)
        return not any(counter.rsplit(".", 1)[-1] in stored for counter in interp.windows)

    @contextlib.contextmanager
    def _module_globals(self, frame: Frame, module_globals: dict[str, Value]) -> Iterator[None]:
        interp = self.interp
        saved = interp.module_env
        if frame.function is None and module_globals:
            interp.module_env = {**saved, **module_globals}
        try:
            yield
        finally:
            interp.module_env = saved

    def _called_in_sight(self, fn: Function) -> bool:
        """The call being run names `fn` itself, so its arguments are all in sight (`train(model, loader)`,
        `self.forward(x)`, `model(x)` of a `forward`, `Trainer(cfg)` of an `__init__`), not a function handed
        to another that calls it with arguments the analysis cannot see (`fire.Fire(main)`)."""
        call = self.calls.current_call_node()
        if not isinstance(call, ast.Call):
            return False
        func = call.func
        name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
        return name == fn.name or fn.name in ("forward", "__init__", "__call__") and not any(
            isinstance(a, ast.Starred) for a in call.args) and not any(k.arg is None for k in call.keywords)

    def _handed_tests(self, params: list, kwonly: list) -> dict[str, ast.expr]:
        """Parameters the call binds to a test: written as its argument (a comparison, `and`/`or`, `not`),
        or a name bound to one (`apply_update = (i + 1) % N == 0` ... `f(loss, update_grad=apply_update)`),
        or the caller's own parameter standing for one (handed on)."""
        call = self.calls.current_call_node()
        if call is None:
            return {}
        out: dict[str, ast.expr] = {}
        positional = [a for a in call.args if not isinstance(a, ast.Starred)]
        if len(positional) == len(call.args):
            for p, arg in zip(params, positional):
                test = self._test_of(arg)
                if test is not None:
                    out[p.name] = test
        names = {p.name for p in [*params, *kwonly]}
        for k in call.keywords:
            if k.arg is not None and k.arg in names and (test := self._test_of(k.value)) is not None:
                out[k.arg] = test
        return out

    def _test_of(self, arg: ast.expr) -> ast.expr | None:
        if isinstance(arg, TESTS):
            return arg
        if isinstance(arg, ast.Name):
            interp = self.interp
            handed = interp.param_tests.get(arg.id)
            if handed is None and (handed := interp.cond_aliases.get(arg.id)) is not None:
                interp.handed_names[id(handed)] = arg.id
            return handed
        return None

    @contextlib.contextmanager
    def _at_call_site(self, fn: Function) -> Iterator[None]:
        """Entities made inside the callee belong to this call site (`mlp(...)` twice: two models)."""
        calls = self.calls
        outer = calls.call_path
        calls.call_path = outer + (calls._calls[-1] if calls._calls else id(fn),)
        try:
            yield
        finally:
            calls.call_path = outer

    def _run_inlined(
        self, fn: Function, cls: ClassInfo | None, self_value: Value | None, pos: list[Value],
        kw: dict[str, Value], flow: Flow, frame: Frame, instance_key: str | None, stand_in: bool = False,
        closure: bool | None = None, captured: dict[str, Value] | None = None,
    ) -> Value:
        interp = self.interp
        objects = interp.objects
        local_instance = self_value is not None and self.calls._is_instance(self_value)
        env: dict[str, Value] = dict(captured) if captured else {}
        if cls is not None and frame.cls is cls and any(k.startswith("self.") for k in flow.env):
            # `self.update_D()` from another method: the same `self`, as the caller has left it so far
            env.update({k: v for k, v in flow.env.items() if k.startswith("self.")})
        elif self_value is not None and self_value.items and (local_instance or self_value.modules):
            # a local instance (`trainer.fit()`), or a part of a module whose parts were read (`model.encoder.embed(x)`)
            env.update({f"self.{k}": v for k, v in self_value.items})
        elif cls is not None and not any(k.startswith("self.") for k in env):
            # (`__init__` read once for the class, from module level: it sees the module's globals as they are here,
            # `accelerator.prepare(...)` of the module's `accelerator = Accelerator(...)`)
            early = interp.project is None or interp.project.module_of(fn) is None
            seen = {k: v for k, v in flow.env.items() if "." not in k} if frame.function is None and early else {}
            with self._module_globals(frame, seen):
                env.update(self._class_attributes(cls, self_value))
        call = self.calls.current_call_node()
        if (call is not None and fn.name != "__init__" and self._called_in_sight(fn)
                and call_signatures.rejects(fn, call)):
            # `f(x, misspelt=1)` of a function with no such parameter: TypeError before the body runs
            flow.states = frozenset()
            return EMPTY
        params, kwonly, stars = parameters(fn)
        bound_method = cls is not None and bool(params) and params[0].name in ("self", "cls") and not _is_static(fn)
        if (call is not None and len(call.args) == len(pos) and self._called_in_sight(fn)
                and call_signatures.missing(fn, call, 1 if bound_method else 0)):
            # `Trainer(model=model)` of an `__init__(self, model, epoch_str)`: TypeError before the body runs
            flow.states = frozenset()
            return EMPTY
        # what the call hands each parameter, for the tests of them its paths remember (`parameter_tests`)
        handed_texts = argument_texts(fn, call if self._called_in_sight(fn) else None, bound_method, len(pos))
        interp.handed_values.bind(fn, handed_texts, flow)
        if cls is not None and params and params[0].name in ("self", "cls") and not _is_static(fn):
            if self_value is not None and class_refs.local_named(self_value) is not None:  # a classmethod's `cls`
                env[params[0].name] = self_value
            params = params[1:]
        for p, v in zip(params, pos):
            if not v.entities and not v.modules and v.const is None:
                # an argument of unknown origin, used in the callee like a model or an optimizer; one read in
                # code (an instance of a class of the project, a literal) is what it is: tape's `runner.train()`
                # on a `BackwardRunner` calls that class's method, it makes no model of the runner
                v = objects.entity_for_unknown_ref(p.name) or v
            env[p.name] = v
        in_sight = self._called_in_sight(fn)
        for p in [*params[len(pos):], *kwonly]:
            if p.name in kw:
                env[p.name] = kw[p.name]
            elif p.default is not None:
                default = interp.eval(p.default, flow.copy(), frame)
                # a flag the call in sight leaves at its default is its default (`self.forward(x, optimizer_idx=1)`
                # of `forward(self, x, optimizer_idx=None, log_image=False)` never returns the images); one of a
                # function run with arguments out of sight (`fire.Fire(main)`, `mp.spawn(train, ...)`) stays open
                if not in_sight and (default.const in ("True", "False", "None") or default.choices is not None):
                    default = replace(default, const=None, choices=None)
                env[p.name] = default
            else:
                env[p.name] = objects.entity_for_unknown_ref(p.name) or OPAQUE
        for star in stars:
            env[star] = OPAQUE
        if fn.args.vararg is not None and call is not None and len(call.args) == len(pos) \
                and not any(isinstance(a, ast.Starred) for a in call.args):
            # `def chain(*its)` called `chain(a.parameters(), b.parameters())`: `its` is the tuple of the arguments
            # beyond the named ones (a call spreading `*xs` hands a tuple out of sight: it stays opaque)
            env[fn.args.vararg.arg] = display([(str(i), v) for i, v in enumerate(pos[len(params):])])
        # an object the caller names, handed in (`self._hook_on_batch_forward(ctx)`): its attributes are the
        # callee's under its parameter's name, both ways (see `_handed_names`)
        handed_names = self._handed_names(params, kwonly, pos, kw)
        env.update({k: v for k, v in flow.env.items() if k.startswith("@")})  # step counts go in and out
        # Globals stay visible through the caller's environment when called from module level, and a
        # nested function (a closure) sees the variables of the function that defines it.
        if closure is None:
            closure = frame.local_defs.get(fn.name) is fn
        # (a function of another file sees its own module's globals, not the caller's)
        foreign = interp.project is not None and interp.project.module_of(fn) is not None
        outer_globals = {k: v for k, v in flow.env.items() if "." not in k and k not in env} if (frame.function is None and not foreign) or closure else {}
        # a name the function assigns (without `global`/`nonlocal`) is its own local: the caller's variable of that
        # name is read through it until then, but never rebound by it (ch17's `d_proba_fake` of `g_train`)
        shadowed = self._locals.get(id(fn))
        if shadowed is None:
            shadowed = self._locals[id(fn)] = local_names(fn)
        for p_name, a_text in handed_names.items():
            if p_name in shadowed:
                continue  # rebound in the callee (`model = DDP(model)`): the caller's `model.*` would outlive it there
            prefix = a_text + "."
            env.update({p_name + k[len(a_text):]: v for k, v in flow.env.items() if k.startswith(prefix)})
        env.update(outer_globals)
        # containers the callee grows in place (`lst.append(opt)` of a parameter handed `a2a`): see `handed_containers`
        call = self.calls.current_call_node()
        grows = handed_containers.grown(fn, frozenset(p.name for p in (*params, *kwonly)))
        displays = handed_containers.display_refs(call, [p.name for p in params], [p.name for p in kwonly]) \
            if grows.items and call is not None else {}
        entry = {p: env[p] for p in grows.direct if p in env}
        callee = Frame(function=fn, cls=cls, self_value=self_value, depth=frame.depth + 1, local_defs={}, loops=frame.loops,
                       ifs=frame.ifs, no_grad=frame.no_grad or self.calls.without_grad(fn), gates=frame.gates, sync_off=frame.sync_off,
                       sync_maybe=frame.sync_maybe, active=frame.active + (id(fn),),
                       arguments=(*pos, *kw.values()), owner=_owner(instance_key, local_instance, frame),
                       grad_on=frame.grad_on and not self.calls.without_grad(fn))
        if cls is not None and cls.is_module and (self_value is None or not self_value.modules):
            callee.self_value = objects.self_value_for(cls)
        # What the callee calls in turn reads the module's globals as they are at this call: a `main()` run
        # from module level calls `train(loader)`, which steps the optimizer the module built above it.
        handed = self._handed_tests(params, kwonly)
        saved_tests = interp.param_tests
        interp.param_tests = handed
        # the module's globals as functions it calls see them: every name bound at module level, the callee's
        # parameters of the same names aside only in the callee's own body (`finetune(G, D, miner)` whose
        # helper `backward_G` reads the global `miner`)
        at_module_level = frame.function is None and not foreign
        module_globals = {k: v for k, v in flow.env.items() if "." not in k} if at_module_level else {}
        generator = self._is_generator(fn)
        helper = generator and is_context_manager(fn)
        if generator:
            interp.yield_contexts.start(fn, callee)
        with self._module_globals(frame, module_globals), _restored(interp, saved_tests):
            out = None
            if stand_in:
                # One empty path stands for all of the caller's; if the callee changes a path state after
                # all (a new leaf tensor clears its `.grad`), it runs again on the caller's paths.
                count = TRANSITIONS.count
                out = interp.exec_block(fn.body, Flow(dict(env), _ONE_PATH), callee)
                if TRANSITIONS.count != count:
                    out = None
            if out is None:
                out = interp.exec_block(fn.body, Flow(env, flow.states), callee)
                final = Flow.join([out.normal, *(f for f, _ in out.returns)])
            else:
                final = Flow.join([out.normal, *(f for f, _ in out.returns)])
                if final is not None:
                    final.states = flow.states
        ret = join([v for _, v in out.returns]) if out.returns else EMPTY
        interp.handed_values.link(fn, handed_texts)
        if out.normal is not None:  # a path that falls off the end returns None
            ret = maybe_none(ret)
        run = interp.yield_contexts.finish(fn) if generator else None
        # `@contextmanager def ddp_sync(...)`: what a `with` of it enters; another generator: what it yields
        # (`context_helpers`)
        context = entered_context(run) if helper else (run.yielded() if run is not None else None)
        ret = context or ret
        if final is None and generator:
            # `def cycle(dl): while True: yield from dl`: calling a generator runs nothing yet, and
            # the caller goes on however its body would end.
            return ret if out.returns or context else interp.objects.opaque_call(fn.name, pos, kw, flow)
        if final is None:
            flow.states = frozenset()
            return ret
        flow.states = final.states
        for k, v in final.env.items():
            if k.startswith("self.") and self_value is not None and not local_instance or k.startswith("self.") and cls is not None and frame.cls is cls or k in outer_globals and v is not outer_globals[k] and k not in shadowed or k.startswith("@"):
                flow.env[k] = v
        for k in [k for k in flow.env if k.startswith(NULL_GRADS) and k not in final.env]:
            del flow.env[k]  # gradients the call wrote: no longer known None
        if grows.direct or displays:
            handed_containers.write_back(flow.env, final.env, entry, handed_names, displays, grows, shadowed)
        for p_name, a_text in handed_names.items():
            if p_name in shadowed:
                continue  # the callee rebinds the parameter: its attributes may be of another object
            prefix = p_name + "."
            flow.env.update({a_text + k[len(p_name):]: v for k, v in final.env.items() if k.startswith(prefix)})
        if instance_key is not None and local_instance and self_value is not None:
            items = dict(self_value.items)
            items.update({k[5:]: v for k, v in final.env.items() if k.startswith("self.")})
            flow.env[instance_key] = replace(self_value, items=tuple(items.items()))
        return ret


    def _is_generator(self, fn: Function) -> bool:
        known = self._generators.get(id(fn))
        if known is None:
            known = self._generators[id(fn)] = _is_generator(fn)
        return known

    def _handed_names(self, params: list[Param], kwonly: list[Param], pos: list[Value],
                      kw: dict[str, Value]) -> dict[str, str]:
        """The callee's parameters the call hands a name or an attribute of the caller (`ctx`,
        `self.ctx`), by parameter: the object is the caller's, so what the caller stored on it
        (`ctx.batch = batch`) is there in the callee, and what the callee stores on it (FederatedScope's
        `ctx.loss_task = criterion(pred, y) / ctx.grad_accum` in one hook, divided again and
        backpropagated in the next, each called directly) is there in the caller after the call. Only a call
        whose arguments are the values given (no `*args`; `self` is the caller's own `self.*`)."""
        call = self.calls.current_call_node()
        if call is None or len(call.args) != len(pos) or any(isinstance(a, ast.Starred) for a in call.args):
            return {}
        out: dict[str, str] = {}
        for p, arg in zip(params, call.args):
            text = N.ref_text(arg)
            if text is not None and _plain_ref(text):
                out[p.name] = text
        names = {p.name for p in [*params[len(call.args):], *kwonly]}
        for keyword in call.keywords:
            if keyword.arg is not None and keyword.arg in kw and keyword.arg in names:
                text = N.ref_text(keyword.value)
                if text is not None and _plain_ref(text):
                    out[keyword.arg] = text
        return out


def _plain_ref(text: str) -> bool:
    """A name or a chain of attributes of one (`ctx`, `self.ctx`), not `self` itself, nor an item."""
    return text != "self" and all(part.isidentifier() for part in text.split("."))


def local_names(fn: Function) -> frozenset[str]:
    """The plain names a function's own body binds (assignments, loop and `with` targets, imports, nested
    definitions), less those it declares `global` or `nonlocal`: its locals, which no assignment of it makes
    visible to its caller."""
    bound: set[str] = set()
    declared: set[str] = set()
    todo: list[ast.AST] = list(fn.body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.Global, ast.Nonlocal)):
            declared.update(node.names)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
            continue  # its body is a scope of its own
        elif isinstance(node, ast.Lambda):
            continue
        elif isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            bound.add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
        todo.extend(child_nodes(node))
    return frozenset(bound - declared)


def _owner(instance_key: str | None, local_instance: bool, frame: Frame) -> str | None:
    """The caller's name for the callee's `self` (`Frame.owner`): the receiver of a method called on a
    local instance (`progress.next_step()`), or, for `self.m()` in such a method, its own owner."""
    if instance_key == "self":
        return frame.owner
    if instance_key is None or not local_instance or instance_key.startswith("__") or not instance_key.isidentifier():
        return None
    return instance_key


def _is_generator(fn: Function) -> bool:
    """Whether `fn` has a `yield` of its own (not one of a nested function's)."""
    todo: list[ast.AST] = list(fn.body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.Yield, ast.YieldFrom)):
            return True
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            todo.extend(child_nodes(node))
    return False


def _is_static(fn: Function) -> bool:
    return any(N.last_name(d) == "staticmethod" for d in fn.decorator_list)


@contextlib.contextmanager
def _restored(interp: InliningHost, tests: dict[str, ast.expr]) -> Iterator[None]:
    """Put back the caller's handed tests when the callee's body is done."""
    try:
        yield
    finally:
        interp.param_tests = tests

