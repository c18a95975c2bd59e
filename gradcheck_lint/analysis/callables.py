"""Functions handed to a call that calls them, run where they run.

`checkpoint(fn, x)` runs `fn(x)` (its backward runs it again, reentrant or not: the same forward); a
hook registered on a tensor with `register_post_accumulate_grad_hook(fn)` runs `fn(p)` inside each
backward pass that accumulates into `p` (the optimizer-in-backward idiom steps there). What a call does
with a function it is given is a catalogue row (`forward`, `grad_hook`); this module finds the function
of this file an argument names (a `def`, or a `lambda` read as a function of one `return`) and whether
it sees the names of the scope that made it.

`functools.partial(f, *args, **kw)` binds arguments to a callable that runs when the result is called
(`compute = partial(self.diffusion.training_losses, self.model, x)`, then `losses = compute()`): the call
runs there, on the bound arguments and the new ones: a function of this file is run, a module runs its
forward, anything else is a call the analysis cannot read of everything the callable was made from.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from .definitions import ClassInfo
from .flow import Flow, Frame, Function
from .syntax import local_names
from .values import EMPTY, Holder, Value

if TYPE_CHECKING:
    from .parts import CallablesHost


@dataclass(frozen=True, slots=True)
class Given:
    """A same-file function an argument names; `closure`: it reads the names of the scope that made it."""

    function: Function
    closure: bool
    definer: Function | None  # the function whose names it closes over (None: module level)
    cls: ClassInfo | None = None  # a method of `self` (`partial(self.loss_fn, mask)`): its class ...
    self_value: Value | None = None  # ... and the instance it is bound to
    # a lambda handed on (`self._step(x, y, lambda a, b: self.train_w(a, b))`): the values its free names had where it
    # was made, which it still sees when the function it was handed to calls it
    captured: tuple[tuple[str, Value], ...] = ()


HOOKED = -2  # the pseudo optimizer uid of the path marks of registered gradient hooks (`PathState.amp`)


@dataclass(frozen=True, slots=True)
class GradHook:
    """A function a backward pass calls with `target` once it has accumulated into `holders`; `mark`:
    the path mark `(HOOKED, "hook", mark)` of the paths that registered it."""

    given: Given
    holders: frozenset[Holder]
    target: Value
    mark: int = 0


@dataclass(frozen=True, slots=True)
class Bound:
    """`partial(func, *pos, **kw)`: the callable (as written and as valued) and its bound arguments."""

    func: ast.expr
    callee: Value
    given: Given | None
    pos: tuple[Value, ...]
    kw: tuple[tuple[str, Value], ...]


_BOUND = "bound"


class Callables:
    """Resolves function arguments for the interpreter; one per analysed file."""

    def __init__(self, interp: CallablesHost) -> None:
        self.interp = interp
        # one synthetic `def` per lambda, kept so its id (the inliner's recursion guard) stays the same
        self._lambdas: dict[int, tuple[ast.Lambda, ast.FunctionDef]] = {}
        self.grad_hooks: dict[tuple[int, frozenset[Holder]], GradHook] = {}
        self._hook_marks: dict[int, int] = {}  # id of a hook function -> its path mark (in registration order)
        self._bound: dict[int, Bound] = {}  # by the `partial(...)` call that made it

    def bind(self, call: ast.Call, func: ast.expr, callee: Value, pos: list[Value], kw: dict[str, Value],
             frame: Frame, made: Value) -> Value:
        """The value of `partial(func, *pos, **kw)` at `call`: `made` (what it is made from) that calling runs."""
        self._bound[id(call)] = Bound(func, callee, self.given(func, frame), tuple(pos), tuple(kw.items()))
        return replace(made, const=(_BOUND, id(call)))

    def handed_lambda(self, lam: ast.Lambda, flow: Flow, frame: Frame) -> Value:
        """The value of a lambda: a function that calling runs (bound to a name, `make = lambda cr: Loss(cr)`, as
        peal's loss computers are made, or handed to a call whose callee calls it), which still sees the names of the
        scope that made it (`self` of the method that wrote it), as a closure does."""
        given = self.given(lam, frame)
        if given is None:
            return EMPTY
        function = given.function
        bound_here = {a.arg for a in (*function.args.posonlyargs, *function.args.args, *function.args.kwonlyargs)}
        free = sorted({n.id for n in ast.walk(lam.body) if isinstance(n, ast.Name)} - bound_here)
        prefixes = tuple(f"{name}." for name in free)  # (`self.w_opt` is a name of its own in the environment)
        captured = tuple(sorted((k, v) for k, v in flow.env.items() if k in free or k.startswith(prefixes)))
        given = replace(given, captured=captured)
        if "self" in free and isinstance(frame.cls, ClassInfo):  # `self` of a method: its class and instance
            given = replace(given, cls=frame.cls, self_value=frame.self_value)
        self._bound[id(lam)] = Bound(lam, EMPTY, given, (), ())
        return Value(const=(_BOUND, id(lam)), present=True)

    def nested_function(self, name: str, flow: Flow, frame: Frame) -> Value:
        """A nested `def` read as a value (`return closure` of a factory method, `step(closure)` of a name bound to
        what the factory returned): a function that calling runs, which sees the values its free names had here, and
        `self` of the method that defined it (AIJack's `closure = self._setup_closure(...)`, then
        `optimizer.step(closure)`). A name reused for another function later is the latest `def`, as written."""
        function = frame.local_defs[name]
        free = sorted({n.id for n in ast.walk(function) if isinstance(n, ast.Name)} - local_names(function))
        prefixes = tuple(f"{n}." for n in free)
        captured = tuple(sorted((k, v) for k, v in flow.env.items() if k in free or k.startswith(prefixes)))
        given = Given(function, True, frame.function, captured=captured)
        if "self" in free and isinstance(frame.cls, ClassInfo):
            given = replace(given, cls=frame.cls, self_value=frame.self_value)
        self._bound[id(function)] = Bound(ast.Name(id=name, ctx=ast.Load()), EMPTY, given, (), ())
        return Value(const=(_BOUND, id(function)), present=True)

    def method_of_self(self, node: ast.Attribute, frame: Frame) -> Value | None:
        """`self.process_loss` read without a call (`return self.process_loss`, `crit = self.loss_fn`): the method
        bound to `self`, a value that calling runs (plato's `self._loss_criterion = self.get_loss_criterion()`, then
        `self._loss_criterion(outputs, labels)`). None when `node` names no method of the frame's class."""
        given = self.given(node, frame)
        if given is None or given.cls is None:
            return None
        self._bound[id(node)] = Bound(node, EMPTY, given, (), ())
        return Value(const=(_BOUND, id(node)), present=True)

    @staticmethod
    def is_bound(value: Value) -> bool:
        return isinstance(value.const, tuple) and value.const[:1] == (_BOUND,)

    def call_bound(self, value: Value, pos: list[Value], kw: dict[str, Value], flow: Flow,
                   frame: Frame) -> Value | None:
        """Call a value made by `partial` (None: nothing this module can run: read as an unmodelled call)."""
        const = value.const
        bound = self._bound.get(const[1]) if isinstance(const, tuple) and const[:1] == (_BOUND,) else None
        if bound is None:
            return None
        args, keywords = [*bound.pos, *pos], {**dict(bound.kw), **kw}
        if bound.given is not None:
            return self.call(bound.given, args, keywords, flow, frame)
        if bound.callee.modules:
            return self.interp.forward(bound.callee, args, keywords, flow, frame)
        return None

    def bound_name(self, value: Value) -> str | None:
        """The name of the function a value made by `partial` calls (`loss_func` of `partial(loss_func, mask)`)."""
        const = value.const
        bound = self._bound.get(const[1]) if isinstance(const, tuple) and const[:1] == (_BOUND,) else None
        if bound is None:
            return None
        return bound.given.function.name if bound.given is not None else None

    def given(self, node: ast.expr | None, frame: Frame) -> Given | None:
        """The function of this file `node` names (a lambda, a nested or a module-level `def`), or None."""
        if isinstance(node, ast.Lambda):
            return Given(self._as_function(node), True, frame.function)
        if isinstance(node, ast.Name):
            local = frame.local_defs.get(node.id)
            if local is not None:
                return Given(local, True, frame.function)
            fn = self.interp.functions.get(node.id)
            if fn is not None:
                return Given(fn, False, None)
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self"
                and isinstance(frame.cls, ClassInfo)):
            method = self.interp.definitions.find_method(frame.cls, node.attr)
            if method is not None:
                return Given(method, False, None, frame.cls, frame.self_value)
        return None

    def call(self, given: Given, pos: list[Value], kw: dict[str, Value], flow: Flow, frame: Frame) -> Value:
        """Run the function with these arguments at this point of the caller's paths."""
        closure = given.closure and given.definer is frame.function
        captured = dict(given.captured) if given.captured and not closure else None
        return self.interp.calls.inline(given.function, given.cls, given.self_value, pos, kw, flow, frame,
                                        closure=closure, captured=captured)

    def hook(self, given: Given, holders: frozenset[Holder] | set[Holder], target: Value, flow: Flow) -> None:
        """Register a function that each backward pass reaching `holders` calls with `target`, on the
        paths of `flow` (they carry its mark)."""
        if holders:
            held = frozenset(holders)
            mark = self._hook_marks.setdefault(id(given.function), len(self._hook_marks) + 1)
            self.grad_hooks[(id(given.function), held)] = GradHook(given, held, target, mark)
            if (HOOKED, "hook", mark) not in self._marked(flow):
                flow.map_quiet(lambda s: s._with(amp=s.amp | {(HOOKED, "hook", mark)}))

    def run_grad_hooks(self, written: frozenset[Holder] | set[Holder], flow: Flow, frame: Frame) -> None:
        """Run, inside a backward pass that wrote into `written`, the hooks registered on those parameters:
        on the paths that registered them (`if layer_wise: p.register_post_accumulate_grad_hook(step)`
        steps inside backward only on the layer-wise runs), or on every path when none of these remembers
        registering it (registered by code analysed apart, another entry point)."""
        for hook in list(self.grad_hooks.values()):
            if not (any(h.overlaps(w) for h in hook.holders for w in written) and flow.states):
                continue
            mark = (HOOKED, "hook", hook.mark)
            on = frozenset(s for s in flow.states if mark in s.amp)
            if not on or on == flow.states:
                self.call(hook.given, [hook.target], {}, flow, frame)
                continue
            off = flow.states - on
            flow.states = on
            self.call(hook.given, [hook.target], {}, flow, frame)
            flow.states = flow.states | off

    @staticmethod
    def _marked(flow: Flow) -> frozenset[tuple[int, str, int]]:
        """The marks every path of `flow` carries."""
        states = list(flow.states)
        return frozenset.intersection(*(s.amp for s in states)) if states else frozenset()

    def _as_function(self, lam: ast.Lambda) -> ast.FunctionDef:
        known = self._lambdas.get(id(lam))
        if known is not None and known[0] is lam:
            return known[1]
        ret = ast.copy_location(ast.Return(value=lam.body), lam.body)
        fn = ast.FunctionDef(name="<lambda>", args=lam.args, body=[ret], decorator_list=[], returns=None)
        fn = ast.copy_location(fn, lam)
        self._lambdas[id(lam)] = (lam, fn)
        return fn
