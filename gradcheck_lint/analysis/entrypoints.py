"""Which code is analysed, and from what context: the module body, then every function and method
nothing in the file reached, framework hooks once per batch, and nested functions (closures) that
were handed to something the analysis cannot follow."""

from __future__ import annotations

import ast
import contextlib
import functools
from collections.abc import Callable, Iterator
from dataclasses import replace

from . import flags, periods
from .definitions import ClassInfo
from .flow import BudgetExhausted, Flow, Frame, Function, Outcome
from .gradstate import PathState
from .handed import Handed, handed_functions
from .inherited_loops import inherited_loops
from .names import last_name, ref_text
from .parts import EntryPointsHost
from .siblings import Siblings
from .syntax import binding_targets, rebound_by
from .values import Counter, Value
from .walk import breadth_first, child_nodes, iter_tree


def _qualname(fn: Function, cls: ClassInfo | None) -> str:
    return f"{cls.name}.{fn.name}" if cls is not None else fn.name


class EntryPoints:
    """Choose the roots of the analysis and run each from a sensible context."""

    def __init__(self, interp: EntryPointsHost) -> None:
        self.interp = interp
        self._nested: list[tuple[Function, dict[str, Value], Frame]] = []
        self._roots: set[int] = set()
        self._clears_anywhere: bool | None = None  # whether the module clears gradients anywhere
        self._reached: dict[tuple[int, int, bool], list[Function]] = {}  # `_reached_once`
        self.siblings = Siblings(interp)
        self._cut_in: tuple[Function, ClassInfo | None] | None = None  # the root the work budget stopped in
        self._handed: dict[int, Handed] = {}  # functions a framework calls once per batch (`Engine(step)`)
        self._once_calls: dict[int, list[ast.Call]] = {}  # `_calls_once`, by function

    def run(self) -> None:
        """Analyse the roots in order; when the work budget stops it, say what was left out."""
        try:
            self._run()
        except BudgetExhausted:
            self.interp.cut_short = self._left_out()
            raise

    def _left_out(self) -> str:
        """The notice of a cut analysis: where it stopped (its findings there are dropped) and which
        functions that train were never analysed."""
        interp = self.interp
        where = "in the module's top-level code, whose findings are left out"
        if self._cut_in is not None:
            fn, cls = self._cut_in
            where = f"in `{_qualname(fn, cls)}` (line {fn.lineno}), whose findings are left out"
        inlined = interp.calls.inlined
        left = [(fn, None) for fn in interp.functions.values()] + [
            (fn, info) for info in interp.classes.values() for fn in info.methods.values()]
        missed = [f"`{_qualname(fn, cls)}` (line {fn.lineno})" for fn, cls in left
                  if id(fn) not in self._roots and id(fn) not in inlined and interp.prescan.calls_events(fn, "backward")]
        shown = ", ".join(missed[:5]) + (f" and {len(missed) - 5} more" if len(missed) > 5 else "")
        rest = f"; not analysed: {shown}" if missed else ""
        return f"the analysis stopped at its work budget ({interp.work_budget:,} interpretation steps) {where}{rest}"

    def _run(self) -> None:
        interp = self.interp
        if interp.catalogue.another_framework(interp.imports.aliases.values()):
            return  # MXNet, TensorFlow, JAX...: their `backward` and `step` follow other rules
        top = Frame(function=None, cls=None, self_value=None, depth=0, local_defs={})
        with self._dropped_if_cut() as completed:
            interp.top_statement = completed  # a cut leaves the findings of the statements run before it
            try:
                out = interp.exec_block(interp.module.body, Flow({}, frozenset({PathState()})), top)
            finally:
                interp.top_statement = None
        final = Flow.join([out.normal, *(f for f, _ in out.returns)])
        interp.module_env = dict(final.env) if final else {}
        called_names, called_attrs = interp.called_names, interp.called_attrs
        # Functions handed to a framework that calls them once per batch (Ignite's `Engine(train_step)`):
        # the calls are the iterations of a loop, the hook's counter counting them. One defined inside
        # another function is run from there, seeing what it closes over (`_nested`).
        self._handed = handed_functions(interp.module, interp.catalogue, interp.imports, interp.functions,
                                        interp.classes)
        outer = {id(f) for f in interp.functions.values()}
        outer |= {id(f) for i in interp.classes.values() for f in i.methods.values()}
        for handed in self._handed.values():
            if id(handed.function) in outer:
                self.root(handed.function, handed.cls, implicit_loop=True, assumed=handed.assumed)
        # First what nothing in the file calls (the callers), then what was called but never reached
        # (handed to `fire.Fire`, `mp.spawn`, a framework), each from its own definition.
        for name, fn in interp.functions.items():
            if id(fn) in self._handed:
                continue
            if name not in called_names and not self._reruns_main(fn):
                self.root(fn, None)
        for info in interp.classes.values():
            for mname, fn in info.methods.items():
                if (mname.startswith("__") and mname != "__call__") or id(fn) in self._handed:
                    continue
                hook = interp.catalogue.hook(info.api, mname) if info.api else None
                if hook is not None:
                    # called once per batch by the framework's loop; under automatic optimization the
                    # framework backpropagates, steps and clears between the calls (`Loop.framework`)
                    manual = hook.optimization == "manual" or info.manual_optimization
                    self.root(fn, info, implicit_loop=manual, framework=not manual)
                elif mname not in called_attrs and id(fn) not in interp.calls.inlined:
                    # not called as `self.m()` and never reached through a known instance: the
                    # caller is elsewhere (`trainer.train_step(...)` on an object of unknown type)
                    self.root(fn, info)
        inlined = interp.calls.inlined
        for fn in interp.functions.values():
            if id(fn) not in inlined and id(fn) not in self._roots and interp.prescan.trains(fn.name):
                self.root(fn, None)
        for info in interp.classes.values():
            for mname, fn in info.methods.items():
                if id(fn) not in inlined and id(fn) not in self._roots and not mname.startswith("__") and interp.prescan.trains(mname):
                    self.root(fn, info)
        # A step function nothing here calls (a trainer's `train_step`, a module's `step()`) runs once
        # per batch from elsewhere: when nothing in the file could clear between two calls, its
        # backward and step are checked across calls too, and a finding there is only possible.
        for fn, info in self._step_functions():
            if id(fn) not in inlined:
                self.root(fn, info, implicit_loop=True, assumed=True)
        while self._nested:
            fn, env, frame = self._nested.pop(0)
            if id(fn) in inlined or id(fn) in self._roots:
                continue
            cls = frame.cls if isinstance(frame.cls, ClassInfo) else None
            handed = self._handed.get(id(fn))
            if handed is not None:  # `def train_step(engine, batch): ...` in `main()`, then `Engine(train_step)`
                self.root(fn, cls, implicit_loop=True, assumed=handed.assumed, closure=env, outer=frame)
            elif self._step_function(fn, cls):  # `def make_train(model, opt): def train(x): ...; return train`
                self.root(fn, cls, implicit_loop=True, assumed=True, closure=env, outer=frame)
            elif interp.prescan.trains(fn.name):
                self.root(fn, cls, closure=env, outer=frame)
        # A base class's loop that calls hooks a class here overrides: run again with that class as `self`
        for info in list(interp.classes.values()):
            for fn in inherited_loops(info, interp.definitions, functools.partial(self._reached_everywhere, cls=info)):
                self._root_inherited(fn, info)

    def _reached_everywhere(self, fn: Function, cls: ClassInfo) -> list[Function]:
        """`fn` and what a call of it runs, in its loops too (`_reached_once`)."""
        return self._reached_once(fn, cls, once=False)

    def _root_inherited(self, fn: Function, info: ClassInfo) -> None:
        """Run `fn`, a method `info` inherits (of this file or another), with `info` as `self` (`inherited_loops`)."""
        project = self.interp.project
        if project is None or project.module_of(fn) is None:
            self.root(fn, info)
            return
        # (entered from the class statement: what the run finds in the base's code is reported there, at the
        # subclass that made it happen, naming the base's lines; the base's own file never sees this subclass)
        with project.entered(self.interp, fn, info.node) as runs:
            if runs:
                self.root(fn, info)

    def _reruns_main(self, fn: Function) -> bool:
        """A function whose whole body calls, with no arguments, a function of this file that the module's
        top-level code already ran (HF's `def _mp_fn(index): main()` for xla_spawn): as a root it would
        run that function again on the same globals and a fresh path, so it is not run twice."""
        body = [s for s in fn.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
        if len(body) != 1 or not isinstance(body[0], ast.Expr):
            return False
        call = body[0].value
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and not call.args and not call.keywords):
            return False
        target = self.interp.functions.get(call.func.id)
        if target is None or target is fn or id(target) not in self.interp.calls.inlined:
            return False
        self._roots.add(id(fn))
        return True

    def _each_batch(self, fn: Function, cls: ClassInfo | None) -> tuple[ast.AST, ...]:
        """The methods of the class (or of its bases in sight) that the framework calls around the hook `fn`
        once per batch or step (`each_batch` of its catalogue row)."""
        hook = self.interp.catalogue.hook(cls.api, fn.name) if cls is not None and cls.api else None
        if hook is None or cls is None or not hook.each_batch:
            return ()
        family = (cls, *self.interp.definitions.ancestors(cls))
        found: list[ast.AST] = []
        for name in hook.each_batch:
            method = next((info.methods[name] for info in family if name in info.methods), None)
            if method is not None:
                found.append(method)
        return tuple(found)

    def _hook_counter(self, fn: Function, cls: ClassInfo | None) -> tuple[str, int] | None:
        """What a framework hook reads its batch counter by, and the counter's value on the first call
        (`batch_idx` of `training_step`, from 0; `engine.state.iteration` of Ignite's process function, from 1)."""
        handed = self._handed.get(id(fn))
        if handed is not None:
            return handed.counter()
        hook = self.interp.catalogue.hook(cls.api, fn.name) if cls is not None and cls.api else None
        if hook is None or hook.counter is None:
            return None
        params = [p.arg for p in [*fn.args.posonlyargs, *fn.args.args]][1:]
        name = next((params[p] for p in hook.counter.positions if p < len(params)), None)
        name = name or next((k for k in hook.counter.keywords if k in params), None)
        if name is None:
            return None
        return (f"{name}.{hook.counter_path}" if hook.counter_path else name), hook.counter_start

    def defined_here(self, fn: Function, flow: Flow, frame: Frame) -> None:
        """A nested function was defined: remember what it sees, in case nothing calls it here."""
        if frame.function is not None:
            self._nested.append((fn, dict(flow.env), frame))

    def _step_functions(self) -> list[tuple[Function, ClassInfo | None]]:
        """Functions and methods whose own body (no loop) holds a backward pass and a step, in a file
        that clears gradients nowhere, or that clear some gradients themselves (a GAN's `step()` that
        clears the generator: the caller leaves clearing to it)."""
        interp = self.interp
        out: list[tuple[Function, ClassInfo | None]] = [(fn, None) for fn in interp.functions.values() if self._step_function(fn)]
        for info in interp.classes.values():
            out += [(fn, info) for name, fn in info.methods.items()
                    if not name.startswith("__") and self._step_function(fn, info)
                    and interp.catalogue.hook(info.api, name) is None]
        return [(fn, info) for fn, info in out if id(fn) not in self._handed]

    def _step_function(self, fn: Function, cls: ClassInfo | None = None) -> bool:
        """Its body (no loop) runs a backward pass and a step, in a file that clears gradients nowhere, or
        it clears some itself: in its own statements or through the methods and functions it calls that
        the analysis reads (`self.backward(loss); self.update_params()` of ParlAI's `train_step`, see
        `_reached_once`). A test (`test_backward`) runs once, on objects its fixture builds afresh."""
        interp = self.interp
        if fn.name.startswith("test"):
            return False
        reached = self._reached_once(fn, cls)
        if not _steps_once(reached, interp.prescan.event_attrs, self._calls_once):
            return False
        if self._clears_anywhere is None:  # walked for the first candidate only
            self._clears_anywhere = _clears_somewhere(interp.module)
        return not self._clears_anywhere or any(_clears_somewhere(f) for f in reached)

    def _calls_once(self, fn: Function) -> list[ast.Call]:
        """`_calls_outside_loops` of `fn`, found once (every candidate step function that reaches `fn` asks)."""
        found = self._once_calls.get(id(fn))
        if found is None:
            found = self._once_calls[id(fn)] = _calls_outside_loops(fn, self.interp.counters.steps_members)
        return found

    def _reached_once(self, fn: Function, cls: ClassInfo | None, once: bool = True) -> list[Function]:
        """`fn` and what one call of it runs outside any loop of its own: the methods of its class (`self.m(...)`,
        resolved as the instance's class resolves them, also in a base class of another file) and the
        module's functions (`f(...)`) it calls, transitively, each outside its own loops (`once`; else
        in its loops too)."""
        key = (id(fn), id(cls), once)
        found = self._reached.get(key)
        if found is not None:
            return found
        interp = self.interp
        out: list[Function] = []
        seen: set[int] = set()
        todo = [fn]
        while todo and len(out) < _REACH_LIMIT:
            current = todo.pop()
            if id(current) in seen:
                continue
            seen.add(id(current))
            out.append(current)
            calls = self._calls_once(current) if once else [n for n in breadth_first(current) if isinstance(n, ast.Call)]
            for call in calls:
                func = call.func
                callee: Function | None = None
                if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self":
                    callee = interp.definitions.find_method(cls, func.attr) if cls is not None else None
                elif isinstance(func, ast.Name):
                    callee = interp.functions.get(func.id)
                if callee is not None and id(callee) not in seen:
                    todo.append(callee)
        self._reached[key] = out
        return out

    def root(self, fn: Function, cls: ClassInfo | None, implicit_loop: bool = False,
             closure: dict[str, Value] | None = None, outer: Frame | None = None, assumed: bool = False,
             framework: bool = False) -> None:
        calls = self.interp.calls
        self._roots.add(id(fn))
        saved, calls.call_path = calls.call_path, (id(fn),)  # names of unknown origin are per function
        try:
            with self._dropped_if_cut():
                self._run_root(fn, cls, implicit_loop, closure, outer, assumed, framework)
        except BudgetExhausted:
            self._cut_in = self._cut_in or (fn, cls)
            raise
        finally:
            calls.call_path = saved

    @contextlib.contextmanager
    def _dropped_if_cut(self) -> Iterator[Callable[[], None]]:
        """Run a root (a function, or the module's top-level code); when the budget runs out in it, part-way through a
        loop's iterations, what it recorded may stand on paths the loop's later iterations would have joined
        (PrefixTuning's 3,600-line `train()` gave GL001 and GL006 on a step a completed pass clears; a 1,300-line
        script cut in its top-level loop, GL008 on a dict its model's forward makes afresh at each call). Findings at
        the events it met are dropped; those of the roots that completed stand, and so do those of the statements of
        the module's top-level code that completed before the cut (the function it yields marks each start)."""
        interp = self.interp
        recorder = interp.recorder
        since: list[tuple[set[int], set[tuple[str, int]]]] = []

        def completed() -> None:  # what was recorded so far stands: watch only what follows
            recorder.touched = set()
            since[:] = [(set(interp.keepalives.events), set(interp.amp.misuses))]

        completed()
        try:
            yield completed
        except BudgetExhausted:
            kept, misused = since[0]
            interp.unreliable |= recorder.touched
            interp.unreliable |= {k for k in interp.keepalives.events if k not in kept}
            interp.unreliable |= {id(m.node) for k, m in interp.amp.misuses.items() if k not in misused}
            raise

    def _run_root(self, fn: Function, cls: ClassInfo | None, implicit_loop: bool,
                  closure: dict[str, Value] | None, outer: Frame | None, assumed: bool = False,
                  framework: bool = False) -> None:
        worlds = self.interp.objects.class_worlds(cls) if cls and outer is None else []
        if not worlds:
            base = self.interp.objects.class_self_env(cls) if cls and outer is None else {}
            self._run_in(fn, cls, implicit_loop, closure, outer, assumed, base, framework)
            return
        family = (cls, *self.interp.definitions.ancestors(cls)) if cls else ()
        for world in worlds:  # settings `__init__` fixed (`worlds`): each world on its own
            with self.interp.worlds.entered(family, world.literals, world.atoms, world.implied):
                self._run_in(fn, cls, implicit_loop, closure, outer, assumed, world.env, framework)

    def _run_in(self, fn: Function, cls: ClassInfo | None, implicit_loop: bool, closure: dict[str, Value] | None,
                outer: Frame | None, assumed: bool, base: dict[str, Value], framework: bool = False) -> None:
        interp = self.interp
        objects = interp.objects
        self_value = outer.self_value if outer is not None else (objects.self_value_for(cls) if cls else None)
        env: dict[str, Value] = dict(base)
        siblings = self.siblings.left_by_others(cls, fn) if cls and outer is None else None
        if siblings is not None:
            for key, graph in siblings.attributes.items():
                held = env.get(key)
                if held is None or not (held.modules or held.entities):
                    env[key] = graph
        frame = Frame(function=fn, cls=cls, self_value=self_value, depth=1, local_defs={}, active=(id(fn),), closure_env=closure,
                      no_grad=interp.calls.without_grad(fn))
        seeded: dict[str, Value] = {}
        for p, value in objects.unknown_parameters(fn, cls is not None and outer is None).items():
            env[p] = value
            if siblings is not None and p in siblings.returned:
                env[p] = seeded[p] = siblings.returned[p]  # `backward(self, gen_loss)`: what `process()` returns
        if assumed and interp.project is not None:
            self._flags_from_callers(fn, cls, env)
        start = PathState()
        if cls is not None and outer is None:
            start = self._as_built(fn, cls, env, start)
        flow = Flow(env, frozenset({start}))
        body = fn.body
        if framework:
            # the framework's own loop calls the hook: the calls are the iterations of a loop whose
            # backward, step and clear run out of sight between them, so no gradient state is carried from
            # one call to the next (one pass over the body); what the body stores on its object outlives them
            loop = interp.loop_for(fn, None)
            loop.framework = True
            loop.each_batch = self._each_batch(fn, cls)
            interp.exec_block(body, flow, replace(frame, loops=frame.loops + (loop.id,)))
        elif implicit_loop:
            loop = interp.loop_for(fn, None)
            loop.implicit = assumed
            loop.each_batch = self._each_batch(fn, cls)
            counted = self._hook_counter(fn, cls)
            if counted is not None:  # Lightning's `batch_idx`: 0 on the first call; Ignite's iteration: 1
                counter, first = counted
                handed = self._handed.get(id(fn))  # named by the call that hands it over: `Engine(update)`
                source = f"{handed.hook.type.rsplit('.', 1)[-1]}({fn.name})" if handed is not None else counter
                env[counter] = Value(counter=Counter(source, zero_based=first == 0, start=first))
                loop.counter = counter

            def each_call(f: Flow, fr: Frame) -> Outcome:
                f.env.update(seeded)  # each call is handed new losses: not the graphs of the call before
                interp.handed_values.called_again(fn, f)  # and new arguments: tests of them are decided anew
                if interp.flag_gates:
                    f.map_quiet(flags.forget_calls)  # and new flags (`apply_gradient`)
                return interp.exec_block(body, f, fr)

            interp.run_loop(flow, frame, loop, each_call, None,
                            counted, calls=True)
        else:
            interp.exec_block(body, flow, frame)


    def _as_built(self, fn: Function, cls: ClassInfo, env: dict[str, Value], state: PathState) -> PathState:
        """A method analysed from its definition (the first call of one run once per batch) sees the object
        as `__init__` left it: a counter it set to an int (`self._number_grad_accum = 0`) stands at that
        value (`periods`), when nothing but the code this method runs assigns it afterwards (no other
        method, which a caller might run before or between calls, resets or advances it)."""
        interp = self.interp
        counters = [c for c in interp.period_counters if c.startswith("self.") and c.count(".") == 1]
        if not counters:
            return state
        family = (cls, *interp.definitions.ancestors(cls))
        reached = {id(f) for f in self._reached_once(fn, cls, once=False)}
        for counter in counters:
            value = env.get(counter)
            if value is None or type(value.const) is not int:
                continue
            others = [m for info in family for name, m in info.methods.items()
                      if name != "__init__" and id(m) not in reached and _assigns(m, counter)]
            if not others:
                state = periods.reset(state, periods.key(0, counter), value.const)
        return state

    def _flags_from_callers(self, fn: Function, cls: ClassInfo | None, env: dict[str, Value]) -> None:
        """A step function's parameter tested bare before a step (`if apply_gradient:`) that the loops of
        other project files hand a flag set under their accumulation gate: the gate stands for it there
        (`flags`, `project.caller_gates`)."""
        interp = self.interp
        project = interp.project
        if project is None:
            return
        params = [p.arg for p in [*fn.args.posonlyargs, *fn.args.args]]
        if cls is not None and params and params[0] in ("self", "cls"):
            params = params[1:]
        tested = _stepping_flags(fn, interp.touches_gradients)
        for position, name in enumerate(params):
            if name not in tested or name not in env:
                continue
            gates = project.caller_gates(fn.name, position, name)
            if not gates:
                continue
            gate = gates[0]
            where = f"{project.shown(gate.path)}:{gate.line}"
            cond = interp.caller_condition(gate.statement, gate.test, where, gate.reset)
            key = flags.caller_flag(name)
            env[name] = replace(env[name], flag=key)
            interp.flag_gates[key] = (cond.id,)


def _stepping_flags(fn: Function, touches: Callable[[str], bool]) -> set[str]:
    """Names `fn` tests bare (`if flag:`, `if not flag:`) in an `if` whose arms call something that can touch
    gradients (a step, a clear)."""
    out: set[str] = set()
    for node in breadth_first(fn):
        if not isinstance(node, ast.If):
            continue
        negated = isinstance(node.test, ast.UnaryOp) and isinstance(node.test.op, ast.Not)
        test = node.test.operand if isinstance(node.test, ast.UnaryOp) and negated else node.test
        if isinstance(test, ast.Name) and any(isinstance(n, ast.Call) and touches(last_name(n.func) or "")
                                              for part in (*node.body, *node.orelse) for n in breadth_first(part)):
            out.add(test.id)
    return out


_CLEARS = frozenset({"zero_grad", "zero_", "update_params", "toggle_optimizer"})


def _clears_somewhere(module: ast.AST) -> bool:
    """Anything in the file that could clear gradients: `zero_grad()`, `p.grad = None`, `.grad.zero_()`..."""
    for node in iter_tree(module):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _CLEARS:
            return True
        if isinstance(node, ast.Attribute) and node.attr == "grad" and isinstance(node.ctx, ast.Store):
            return True
        if isinstance(node, ast.Name) and node.id in _CLEARS:
            return True
    return False


_REACH_LIMIT = 64  # functions `_reached_once` follows from one candidate
_NOT_ONCE = (ast.For, ast.AsyncFor, ast.While, ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def _calls_outside_loops(fn: Function, members: Callable[[ast.For | ast.AsyncFor], bool]) -> list[ast.Call]:
    """The calls of the function's own body that run once per call of it: outside its loops and nested definitions,
    or in a loop that steps (clears, unscales) each member of a collection once (`members`: `for opt in opts:`)."""
    out: list[ast.Call] = []
    todo: list[ast.AST] = list(fn.body)
    while todo:
        node = todo.pop()
        if isinstance(node, _NOT_ONCE) and not (isinstance(node, (ast.For, ast.AsyncFor)) and members(node)):
            continue
        if isinstance(node, ast.Call):
            out.append(node)
        todo.extend(child_nodes(node))
    return out


def _assigns(fn: Function, text: str) -> bool:
    """The function binds `text` (`self.n = ...`, `self.n += 1`)."""
    for node in breadth_first(fn):
        for target in binding_targets(node):
            if any(ref_text(sub) == text for sub in rebound_by(target)):
                return True
    return False


def _steps_once(functions: list[Function], events: frozenset[str], calls_once: Callable[[Function], list[ast.Call]]) -> bool:
    """A backward pass and a step among the calls these functions make once per call (`calls_once`: outside
    their loops)."""
    found: set[str] = set()
    for fn in functions:
        for node in calls_once(fn):
            if isinstance(node.func, ast.Attribute) and node.func.attr in events:
                attr = node.func.attr
                found.add("step" if "step" in attr else "backward" if "backward" in attr else "")
    return {"step", "backward"} <= found
