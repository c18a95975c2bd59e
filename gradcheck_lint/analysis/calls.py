"""Calls: same-file functions and methods are inlined at their call site; calls of training APIs are
answered by the catalogue of API models (through `effects`); anything else is an opaque call."""

from __future__ import annotations

import ast
import contextlib
import sys
from collections.abc import Iterator
from dataclasses import replace

from . import class_refs, flags, named_tuples, param_groups
from . import names as N
from .apimodels import ArgRef, Effect
from .call_signatures import unknown_keyword
from .callsite import CallSite, literal_bool
from .clipping_bodies import clip_effect
from .conventions import convention
from .deferred import entered, makes_context_only
from .definitions import ClassInfo, is_abstract, raises_only
from .flow import Flow, Frame, Function, forget_appended, last_appended
from .gradstate import PathState
from .inlining import Inliner
from .parts import CallsHost
from .provenance import Assumption, assumed
from .reductions import normaliser_argument, sums_samples
from .saved_tensors import saved_table
from .syntax import Arg, arguments, code, keyword_value, local_names, reads_grad_of
from .values import (
    EMPTY,
    OPAQUE,
    Entity,
    Holder,
    Kind,
    Value,
    appended_to,
    blank,
    criterion_result,
    join,
    maybe_none,
    present,
    union_as_tensor,
)
from .walk import breadth_first


# Built-ins that pass their arguments' objects through (`list(model.parameters())`, `chain(a, b)`).
def _unread_class(qual: str) -> bool:
    """`monai.metrics.CumulativeAverage`: a class (named in CapWords, PEP 8) imported from a package outside the
    standard library (whose `collections.OrderedDict`, `collections.deque` are containers), not read."""
    module, _, last = qual.rpartition(".")
    outside = bool(module) and module.split(".")[0] not in sys.stdlib_module_names
    return outside and last[:1].isupper() and not last.isupper()


_CONTAINERS = frozenset({"chain", "list", "tuple", "filter", "sorted", "iter", "set", "reversed"})
_TENSOR_BUILTINS = frozenset({"sum", "max", "min", "abs"})
# Tensor methods that are no autograd operator of `derivatives.yaml` (conversions, copies to a device, reshaping
# through another op): with its operators (`saved_tensors`), what a tensor's method may be.
_TENSOR_CONVERSIONS = frozenset({
    "to", "cuda", "cpu", "float", "double", "half", "bfloat16", "long", "int", "bool", "type", "type_as",
    "contiguous", "reshape", "reshape_as", "view_as", "expand_as", "flatten", "unflatten", "requires_grad_",
    "narrow", "argmax", "argmin", "detach", "item", "numpy", "tolist", "size", "dim",
    # a custom autograd operator's entry point (`HorovodAllreduce.apply(t)` of a `torch.autograd.Function`): its
    # result is a node of the graph of its inputs
    "apply",
})
_GRAD_METHODS = frozenset({"zero_", "fill_", "mul_", "div_", "add_", "sub_", "clamp_", "clip_", "addcmul_", "addcdiv_",
                           "copy_", "norm"})
_SUMS_IN_PLACE = frozenset({"add_", "sub_"})  # tensor methods that sum their argument into the receiver
# in-place changes of `.grad` other than by a factor: wrong on gradients a GradScaler still scales
_GRAD_MODIFIERS = frozenset({"fill_", "add_", "sub_", "clamp_", "clip_", "addcmul_", "addcdiv_", "copy_"})
_ARG0 = ArgRef(positions=(0,))
# list methods after which the last item is not the one last appended
_REARRANGES = frozenset({"extend", "insert", "pop", "remove", "clear", "sort", "reverse", "__setitem__", "__delitem__"})
# methods that return None, also on a tensor or a list of them
_RETURN_NONE = frozenset({*_REARRANGES, "append", "update", "retain_grad", "record_stream", "backward",
                          "register_buffer", "register_parameter", "add_module", "load_state_dict"})


def _held_values(args: list[Arg]) -> bool:
    """The only argument is a value held in a name or a container slot (`buffer[i]`, `saved`), not a
    computation: what was stored there earlier."""
    return len(args) == 1 and isinstance(args[0].value, (ast.Name, ast.Subscript, ast.Attribute))

# heuristic callees that run a backward pass (`forward_backward_func(...)` of a schedule handed in): applied to a
# callable of unknown value too, as a missed backward would hide every finding of its loop
_BACKPROPAGATES = ("backward", "schedule")



def _rewritten(state: PathState, holders: set[Holder]) -> PathState:
    """The gradients of `holders` written back from themselves: the fresh ones as rescaled in place (the code
    set their scale, as with `div_`), the ones a step already applied left as they are (no decay: what was
    applied is copied back whole)."""
    if not any(c.fresh and any(h.overlaps(x) for x in holders) for h, c in state.grads):
        return state
    return state._with(grads=frozenset(
        (h, c.but(rescaled=True) if c.fresh and any(h.overlaps(x) for x in holders) else c) for h, c in state.grads))


# Methods that read a tensor as it is (a view, a copy, another dtype): `p.grad.detach()` still reads the gradient
_GRAD_VIEWS = frozenset({"detach", "float", "double", "half", "clone", "flatten", "view_as", "cpu", "contiguous"})


class Calls:
    """Resolve and interpret calls."""

    def __init__(self, interp: CallsHost) -> None:
        self.interp = interp
        self.table = interp.table
        self.catalogue = interp.catalogue
        self.call_path: tuple[int, ...] = ()  # call sites being inlined: entities made inside differ per site
        self._calls: list[int] = []
        self._call_nodes: list[ast.Call] = []
        self.inlined: set[int] = set()
        self.instance_class: dict[int, ClassInfo] = {}  # model entity made from a local nn.Module class
        self._clips: dict[int, Effect | None] = {}  # what each function called so far clips (`clipping_bodies`)
        self.inline = Inliner(interp, self).inline

    def current_call(self) -> object:
        """A key of the call being evaluated (the innermost one)."""
        return self._call_nodes[-1] if self._call_nodes else None

    def current_call_node(self) -> ast.Call | None:
        return self._call_nodes[-1] if self._call_nodes else None

    def enclosing_calls(self) -> tuple[ast.Call, ...]:
        """The calls being evaluated around the innermost one, outermost first."""
        return tuple(self._call_nodes[:-1])

    def calls_around(self, node: ast.AST) -> tuple[ast.Call, ...]:
        """The calls being evaluated around `node` (a statement, or a call being evaluated itself), outermost
        first."""
        calls = self._call_nodes
        return tuple(calls[:-1] if calls and calls[-1] is node else calls)

    def args_of(self, call: ast.Call, flow: Flow, frame: Frame) -> tuple[list[Value], dict[str, Value]]:
        pos: list[Value] = []
        kw: dict[str, Value] = {}
        for a in arguments(call):
            v = self.interp.eval(a.value, flow, frame)
            if a.keyword is not None:
                kw[a.keyword] = v
            elif a.star:
                # `f(*parts)`: one value for unknown positions; a list built in sight keeps its items, which
                # an effect over every positional argument reads as the arguments (`accelerator.prepare(*parts)`)
                pos.append(v if v.spread() is not None else replace(v, items=()))
            else:
                pos.append(v)
        return pos, kw

    def eval_call(self, call: ast.Call, flow: Flow, frame: Frame) -> Value:
        self._calls.append(id(call))
        self._call_nodes.append(call)
        try:
            if isinstance(call.func, ast.Attribute):
                if isinstance(call.func.value, ast.Name) and call.func.value.id in self.interp.prescan.presence_tested:
                    flags.raises_on_none(flow, call.func.value.id, frame.function or self.interp.module,
                                         self.interp.touches_gradients)
                out = self.method_call(call, call.func, flow, frame)
            else:
                out = self.function_call(call, flow, frame)
            if out.reach and sums_samples(call):  # `F.cross_entropy(logits, y, reduction="sum")`
                out = replace(out, summed=True)
            if out.unseen_reduction and self._reduces(call, flow, frame):
                out = replace(out, unseen_reduction=False)
            if out.reach:  # (a call given no loss, `torch.zeros(n, dtype=accumulator_dtype)`, divides none)
                normaliser = normaliser_argument(call)
                if normaliser is not None:  # `masked_mean(loss, mask, None, loss_denominator)`
                    out = replace(out, divisors=out.divisors | {normaliser})
            return out
        finally:
            self._calls.pop()
            self._call_nodes.pop()

    def _reduces(self, call: ast.Call, flow: Flow, frame: Frame) -> bool:
        """A call that reduces what a model out of sight returned, in sight: a library function
        (`F.cross_entropy(model(x), y)`, `torch.mean(out)`), a loss object of the catalogue
        (`criterion(model(x), y)` of `criterion = nn.CrossEntropyLoss()`) or a tensor's `.mean()` / `.sum()`."""
        func = call.func
        if isinstance(func, ast.Attribute) and func.attr in ("mean", "sum") and not call.keywords:
            return True
        ref = N.ref_text(func)
        bound = self.interp.lookup(ref, flow, frame) if ref is not None else None
        if bound is not None and bound.of_kind(Kind.LOSS) and not bound.provenance.assumed:
            return True
        qual = self.interp.imports.qualify(func)
        return qual is not None and self.catalogue.is_package(qual.split(".", 1)[0])

    # ------------------------------------------------------------------ functions
    def function_call(self, call: ast.Call, flow: Flow, frame: Frame) -> Value:
        interp = self.interp
        func = call.func
        if isinstance(func, ast.IfExp):
            # `with (model.no_sync if i % N != 0 else nullcontext)():` as its named form `ctx = ...; with ctx():`
            context = entered(interp.eval(func, flow, frame))
            if context is not None:
                self.args_of(call, flow, frame)
                return context
        if isinstance(func, ast.Name):
            name = func.id
            bound = interp.lookup(name, flow, frame)
            context = entered(bound)
            if context is not None:  # `with ctx():` of `ctx = model.no_sync if ... else nullcontext`
                self.args_of(call, flow, frame)
                return context
            factory = class_refs.referenced(bound)
            if factory is not None:  # `opt_func(params, lr)` of `opt_func=optim.SGD`: that class built
                return self.qualified_call(call, factory, flow, frame)
            made = self._class_named(class_refs.local_named(bound))
            if made is not None:  # `cls(d_in)` in a classmethod
                return self.construct_local(call, made, flow, frame)
            if bound is not None and interp.callables.is_bound(bound):  # `compute()` of `partial(f, model, x)`
                pos, kw = self.args_of(call, flow, frame)
                out = interp.callables.call_bound(bound, pos, kw, flow, frame)
                return out if out is not None else interp.objects.opaque_call(name, [bound, *pos], kw, flow)
            if bound is not None and (bound.modules or bound.entities):
                return self.call_object(call, bound, func, flow, frame)
            if bound is not None:
                called = self.call_instance(call, bound, flow, frame)
                if called is not None:  # `criterion(pred, y)` of `criterion = DualLoss(cfg)`
                    return called
            fields = interp.definitions.named_tuples.get(name)
            shadowed = frame.function is not None and name in local_names(frame.function)
            if fields is not None and name not in interp.imports.aliases and not shadowed:
                # `LossTuple(*losses)` of the module's `LossTuple = namedtuple(...)`: a tuple whose fields are its items
                pos, kw = self.args_of(call, flow, frame)
                return named_tuples.construct(fields, arguments(call), self._argument_values(call, pos, kw))
            local = frame.local_defs.get(name) or (interp.functions.get(name) if bound is None else None)
            if local is not None:
                pos, kw = self.args_of(call, flow, frame)
                with self._own_clip(call, local, False, pos, kw, flow, frame):
                    return self.inline(local, None, None, pos, kw, flow, frame)
            if name in interp.classes and name not in interp.imports.aliases:
                return self.construct_local(call, interp.classes[name], flow, frame)
            if bound is not None and name not in interp.imports.aliases:
                # a callable the analysis cannot read (`compute = partial(diffusion.losses, model, x)`) returns what
                # may depend on what it was made from as well as on its arguments ...
                pos, kw = self.args_of(call, flow, frame)
                heuristic = self.catalogue.callee_heuristic(name)
                if heuristic is not None and any(e.kind in _BACKPROPAGATES for e in heuristic.effects):
                    # ... unless its name says it backpropagates (a schedule handed in: `forward_backward_func`)
                    site = CallSite(call, None, None, pos, kw, None, False)
                    return interp.effects.apply(heuristic.effects, site, flow, frame)
                return interp.objects.opaque_call(name, [bound, *pos], kw, flow)
        if isinstance(func, ast.Lambda):  # `(lambda t: block(t))(x)`: its body runs on the arguments
            given = interp.callables.given(func, frame)
            pos, kw = self.args_of(call, flow, frame)
            if given is not None:
                return interp.callables.call(given, pos, kw, flow, frame)
        qual = interp.imports.qualify(func) if isinstance(func, ast.Name) else None
        if qual is None:
            callee = interp.eval(func, flow, frame)
            factory = class_refs.referenced(callee)
            if factory is not None:  # `getattr(torch.optim, name)(params, lr=lr)`: that class built
                return self.qualified_call(call, factory, flow, frame)
            pos, kw = self.args_of(call, flow, frame)
            if callee.modules:
                return interp.forward(callee, pos, kw, flow, frame)
            return interp.objects.opaque_call("", pos, kw, flow)
        return self.qualified_call(call, qual, flow, frame)

    def call_object(self, call: ast.Call, bound: Value, func: ast.expr, flow: Flow, frame: Frame) -> Value:
        """Calling an object held in a name: a module's forward, or its type's `__call__` model."""
        for owner in sorted(bound.entities, key=lambda e: e.uid):
            row = self.catalogue.method(owner.api, "__call__") if owner.api else None
            if row is not None and not (bound.modules and any(e.kind == "forward" for e in row.effects)):
                pos, kw = self.args_of(call, flow, frame)
                site = CallSite(call, bound, func, pos, kw, owner, owner.certain, "__call__")
                return self.interp.effects.apply(row.effects, site, flow, frame)
        pos, kw = self.args_of(call, flow, frame)
        if bound.modules:
            return self.interp.forward(bound, pos, kw, flow, frame)
        if any(e.kind is Kind.LOSS for e in bound.entities):
            return criterion_result([*pos, *kw.values()])
        return self.interp.objects.opaque_call(code(func), pos, kw, flow)

    def qualified_call(self, call: ast.Call, qual: str, flow: Flow, frame: Frame) -> Value:
        """A call of a function or class by its qualified name: the catalogue, then name heuristics."""
        interp = self.interp
        if interp.project is not None:
            held = interp.project.global_value(interp, qual)
            if held is not None:  # `config.criterion(out, y)` of `criterion = nn.MSELoss()` in config.py: that object
                return self.call_object(call, held, call.func, flow, frame)
            found = interp.project.target(qual)
            # functions, static methods and classes: a module, an optimizer, or a plain object (a delegate
            # holding a model and its optimizer, `self.base = Base(...)`) runs its `__init__`; an attribute
            # that leaves unreadable is still read from how it is used (`expressions.eval_attribute`). A class
            # extending an unknown class of an installed package may be a module: read from its use, as before.
            if found is not None and (found[0] is not None or found[1] is not None and (
                    found[1].is_module or bool(found[1].api) or interp.definitions.plain(found[1])
                    or self._returning_base(found[1]) is not None)):
                return self.project_call(call, found[0], found[1], flow, frame)
        last = qual.rsplit(".", 1)[-1]
        if qual == "getattr" and len(call.args) == 2 and not isinstance(call.args[1], ast.Constant):
            module = N.dotted(call.args[0])
            picked = class_refs.chosen(module, interp.imports, self.catalogue) if module is not None else None
            if picked is not None:  # `getattr(torch.optim, cfg.optimizer)`: some optimizer class, built when called
                self.args_of(call, flow, frame)
                return picked
        pos, kw = self.args_of(call, flow, frame)
        if last == "backward":  # any library's backward of what was accumulated: kept to be trained on
            for v in pos:
                interp.keepalives.consumed(v)
        if self._requires_grad_leaf(call, qual):  # `torch.randn(3, requires_grad=True)`: a trained leaf
            leaf = interp.model_value(interp.mint(Kind.PARAM, code(call.func), interp.objects.leaf_key(call), api="torch.Tensor"))
            interp.effects.fresh(leaf, flow)  # a new tensor each time the call runs: no gradient yet
            return leaf
        if last in _CONTAINERS:
            vals = pos[1:] if last == "filter" else pos
            j = join(vals) if vals else EMPTY
            return Value(entities=j.entities, modules=j.modules, params=j.params, reach=j.reach, opaque=j.opaque, vague=j.vague,
                         items=j.items if len(vals) == 1 else ())
        if last in _TENSOR_BUILTINS and "." not in qual:
            return union_as_tensor([*pos, *kw.values()])
        if qual in ("range", "enumerate", "itertools.cycle"):
            counted = interp.counters.iterable(call, qual, pos, flow, frame)
            if counted is not None:
                return counted
        row = self.catalogue.call(qual)
        if row is None or not self._makes_optimizer(row.effects):
            used = self._constructs_used_optimizer(call, last, pos, kw)
            if used is not None:
                return used
        if row is not None and "*" in row.name and all(e.kind == "inert" for e in row.effects) and any(
                v.reach or v.graph or v.divisors for v in [*pos, *kw.values()]):
            # a family said to compute nothing of gradients (`torch.cuda.*.*`: memory, streams, nvtx) handed a
            # loss under a name the catalogue does not list (`torch.cuda.amp.scale_loss`, apex's misspelt):
            # the family's guess does not cover it; what it returns is not known
            row = None
        effects: tuple[Effect, ...] | None = row.effects if row is not None else None
        certain = True
        if row is None or row.name.endswith("**"):
            heuristic = self.catalogue.callee_heuristic(last)
            if heuristic is not None and self._heuristic_applies(heuristic.effects, pos, kw):
                effects, certain = heuristic.effects, False
        site = CallSite(call, None, None, pos, kw, None, certain)
        if effects is not None and any(site.happens(e) for e in effects):
            return interp.effects.apply(effects, site, flow, frame)
        # (a row none of whose effects happen, `instantiate(cfg)` without `params=`: as no row)
        optimizer = self._built_from_parameters(call, pos, kw, flow, frame)
        if optimizer is not None:
            return optimizer
        model = self._constructs_model(call, last, pos, kw, flow)
        if model is not None:
            return model
        out = interp.objects.opaque_call(last, pos, kw, flow)
        return replace(out, unread_class=qual) if _unread_class(qual) else out

    def project_call(self, call: ast.Call, fn: Function | None, info: ClassInfo | None, flow: Flow, frame: Frame) -> Value:
        """A function, class or static method of another file of the project, run like one of this file."""
        if fn is None and info is not None:
            return self.construct_local(call, info, flow, frame)
        pos, kw = self.args_of(call, flow, frame)
        if fn is None or is_abstract(fn):
            return self.interp.objects.opaque_call(code(call.func), pos, kw, flow)
        with self._own_clip(call, fn, False, pos, kw, flow, frame):
            return self.inline(fn, info, None, pos, kw, flow, frame)

    @contextlib.contextmanager
    def _own_clip(self, call: ast.Call, fn: Function, bound: bool, pos: list[Value], kw: dict[str, Value], flow: Flow,
                  frame: Frame) -> Iterator[None]:
        """A function of the project whose body clips the gradients of an argument (`clipping_bodies`) clips them
        at its call, as the catalogue's clips do, and its body's norm and rescale are that clip's, not misuses of
        their own; `bound`: called as a method, its first parameter is the receiver."""
        effect = clip_effect(fn, bound, self._clips)
        if effect is None:
            yield
            return
        amp = self.interp.amp
        self.interp.effects.apply((effect,), CallSite(call, None, None, pos, kw, None, True), flow, frame)
        amp.clipping += 1
        try:
            yield
        finally:
            amp.clipping -= 1

    def _constructs_model(self, call: ast.Call, last: str, pos: list[Value], kw: dict[str, Value], flow: Flow) -> Value | None:
        """`model = ToyModel()`, a class of another file, given no model, assigned to a name used as a
        model here: a new model each time the call runs (one per call site, with no gradient yet), not
        the one object a name of unknown origin stands for in the whole function."""
        target = self._assigned_name(call)
        if target is None or not last[:1].isupper() or target not in self.interp.model_refs:
            return None
        if any(v.modules or v.entities or v.params for v in [*pos, *kw.values()]):
            return None  # `Wrapper(backbone)`: what it is made of is known, the opaque value keeps it
        ent = self.interp.mint(Kind.MODEL, code(call.func), ("ctor", id(call)), api="torch.nn.Module",
                               provenance=assumed(Assumption.OTHER_FILE))
        value = self.interp.model_value(ent)
        self.interp.effects.fresh(value, flow)
        return value

    @staticmethod
    def _requires_grad_leaf(call: ast.Call, qual: str) -> bool:
        return qual.startswith("torch.") and literal_bool(keyword_value(call, "requires_grad")) is True

    def _makes_optimizer(self, effects: tuple[Effect, ...]) -> bool:
        return self.catalogue.constructs(effects, "optimizer")

    @staticmethod
    def _heuristic_applies(effects: tuple[Effect, ...], pos: list[Value], kw: dict[str, Value]) -> bool:
        """A name alone decides nothing about objects that contradict it (a freeze helper given no model)."""
        if any(e.kind == "freeze" for e in effects):
            return any(v.modules or v.params for v in [*pos, *kw.values()])
        return True

    def _built_from_parameters(self, call: ast.Call, pos: list[Value], kw: dict[str, Value], flow: Flow, frame: Frame) -> Value | None:
        """A class of unknown name built from parameters and then used as an optimizer is one (by use)."""
        params = next((v for v in [*pos[:1], kw.get("params")] if v is not None and v.params and not v.modules), None)
        if params is None:
            return None
        target = self._assigned_name(call)
        if target is None or target not in self.interp.prescan.stepped:
            return None
        if _AVERAGE.search(code(call.func).rsplit(".", 1)[-1]):
            return None  # `ExponentialMovingAverage(model.parameters())`: its `step()` averages weights, not gradients
        ent = self.interp.mint(Kind.OPTIMIZER, code(call.func), ("ctor", id(call)), api="torch.optim.Optimizer")
        self.table.unmodelled_class.add(ent.uid)
        self.interp.own(ent, params, None)
        return Value(entities=frozenset({ent}))

    def _assigned_name(self, call: ast.Call) -> str | None:
        return self.interp.prescan.assigned_calls.get(id(call))

    # ------------------------------------------------------------------ methods
    def method_call(self, call: ast.Call, func: ast.Attribute, flow: Flow, frame: Frame) -> Value:
        interp = self.interp
        attr = func.attr
        recv_node = func.value
        bound_key = N.ref_text(func)
        bound = interp.lookup(bound_key, flow, frame) if bound_key else None
        factory = class_refs.referenced(bound)
        if factory is not None:  # `self.opt_func(self.parameters(), lr)` of `self.opt_func = optim.SGD`
            return self.qualified_call(call, factory, flow, frame)
        if bound is not None and (bound.modules or bound.entities):  # `self.netD(x)`, `self.loss_scaler(...)`
            return self.call_object(call, bound, func, flow, frame)
        if bound is not None:
            called = self.call_instance(call, bound, flow, frame)
            if called is not None:  # `self.loss_fn(pred, y)` of `self.loss_fn = DualLoss(cfg)`: its `__call__`
                return called
        cls = frame.cls if isinstance(frame.cls, ClassInfo) else None
        based = self._base_method(call, recv_node, attr, cls, frame) if cls is not None else None
        if cls is not None and based is not None:
            # `super().__init__(lr)`, `SACLearner.__init__(self, lr)`: the base class's method runs on this
            # `self`, and what it stores there is this instance's (a subclass's methods use the networks
            # and optimizers its base's `__init__` built)
            base_fn, explicit_self = based
            pos, kw = self.args_of(call, flow, frame)
            pos = pos[1:] if explicit_self else pos
            project = interp.project
            if is_abstract(base_fn) or (project is not None and not project.follows(interp, base_fn)):
                return interp.objects.opaque_call(attr, pos, kw, flow)
            return self.inline(base_fn, cls, frame.self_value, pos, kw, flow, frame)
        qual = interp.imports.qualify(func)
        # Module-level functions reached through an import alias: `torch.optim.Adam(...)`, `F.mse_loss(...)`.
        dotted = N.dotted(recv_node)
        if qual is not None and dotted is not None:
            head = dotted.split(".", 1)[0]
            if head in interp.imports.aliases:
                # a fallback bound where the import failed (`except ImportError: amp = None`) is no object
                shadow = interp.lookup(head, flow, frame)
                if shadow is None or not (shadow.entities or shadow.modules or shadow.items):
                    return self.qualified_call(call, qual, flow, frame)
            elif self.catalogue.is_package(head) and interp.lookup(head, flow, frame) is None:
                # `torch.tensor(...)` with `torch` from a star import (`from network import *`): the package
                return self.qualified_call(call, qual, flow, frame)
        cls = frame.cls if isinstance(frame.cls, ClassInfo) else None
        # Methods of the class being analysed: `self.train_step(batch)`.
        if isinstance(recv_node, ast.Name) and recv_node.id == "self" and cls is not None:
            method = interp.definitions.find_method(cls, attr)
            unset = interp.lookup(f"self.{attr}", flow, frame) is None
            if unset and interp.definitions.find_property(cls, attr) is not None:
                # `self.model(x)` of a property `model`: the object its getter returns is called
                return self.call_object(call, interp.eval(func, flow, frame), func, flow, frame)
            if method is not None and interp.lookup(f"self.{attr}", flow, frame) is None:
                pos, kw = self.args_of(call, flow, frame)
                if is_abstract(method):  # a stub a subclass overrides: what it does is not known here
                    return interp.objects.opaque_call(attr, pos, kw, flow)
                with self._own_clip(call, method, True, pos, kw, flow, frame):
                    return self.inline(method, cls, frame.self_value, pos, kw, flow, frame)
            stored_fns = interp.definitions.stored_functions(cls, attr) if method is None else []
            if stored_fns and all(interp.prescan.surely_inert(fn.name) for fn in stored_fns):
                # `self.disc_loss(real, fake)` of `self.disc_loss = hinge_d_loss`: one of those functions runs
                # (they touch no gradient, so each is read on the same paths and their results joined)
                pos, kw = self.args_of(call, flow, frame)
                return join([self.inline(fn, None, None, pos, kw, flow, frame) for fn in stored_fns])
        held_method = interp.lookup(key, flow, frame) if (key := N.ref_text(func)) is not None else None
        if held_method is not None and interp.callables.is_bound(held_method):
            # `self._loss_criterion(outputs, labels)` of `self._loss_criterion = self.process_loss`: that method runs
            pos, kw = self.args_of(call, flow, frame)
            out = interp.callables.call_bound(held_method, pos, kw, flow, frame)
            return out if out is not None else interp.objects.opaque_call(attr, [held_method, *pos], kw, flow)
        through_class = self._through_class(recv_node, attr, flow, frame)
        if through_class is not None:  # `MLP.get_model(stage, opt)`: a static or class method of a class read
            klass, method = through_class
            pos, kw = self.args_of(call, flow, frame)
            static = any(N.last_name(d) == "staticmethod" for d in method.decorator_list)
            return self.inline(method, klass, None if static else class_refs.local(klass.name), pos, kw, flow, frame)
        recv = interp.eval(recv_node, flow, frame)
        # Methods of local classes called on an instance: `trainer.fit()`, `model.train_step(x)`.
        info = self.class_of_instance(recv)
        if info is not None and interp.definitions.find_property(info, attr) is not None:
            held = interp.expressions.property_value(func, recv, flow, frame)
            return self.call_object(call, held if held is not None else OPAQUE, func, flow, frame)
        stored = info is not None and isinstance(recv.const, tuple) and recv.item(attr) is not None
        held = interp.eval(func, flow, frame) if stored else None
        if held is not None and (held.modules or held.entities):
            # `self.base.model(x)`: a model its `__init__` stored on a delegate object (an instance attribute
            # comes before a method of the class)
            return self.call_object(call, held, func, flow, frame)
        if held is not None:
            called = self.call_instance(call, held, flow, frame)
            if called is not None:  # `self.loss_fn(pred, y)` of `self.loss_fn = DualLoss(cfg)`: its `__call__`
                return called
        child = self._submodule(recv, attr, info, func, flow, frame)
        if child is not None:  # `self.critic.Q2(s)`: that head's forward, not the whole critic's
            return self.call_object(call, child, func, flow, frame)
        if info is not None:
            method = interp.definitions.find_method(info, attr)
            # (a method of another file past the reading budget: the object is read from its use, as unread)
            followed = method is not None and (interp.project is None or interp.project.follows(interp, method))
            stub = method is not None and (is_abstract(method) or raises_only(method)
                                           and any(e.uid in self.table.declared for e in recv.entities))
            if method is not None and not stub and followed:
                pos, kw = self.args_of(call, flow, frame)
                with self._own_clip(call, method, True, pos, kw, flow, frame):
                    return self.inline(method, info, recv, pos, kw, flow, frame, instance_key=N.ref_text(recv_node))
        if attr in _GRAD_METHODS and self._grad_receiver(recv_node) is not None:
            return self.grad_method(call, attr, recv_node, flow, frame)
        pos, kw = self.args_of(call, flow, frame)
        used = self._used_as_optimizer(attr, call, recv, recv_node, pos, kw, flow, frame)
        if used is not None:
            return used
        # The catalogue: the receiver's API type (and its bases) models the method.
        for owner, api in self._receiver_types(recv, recv_node, flow, attr):
            row = self.catalogue.method(api, attr)
            if row is not None and row.accepts is not None and unknown_keyword(call, row.accepts):
                flow.states = frozenset()  # a keyword the method does not take: TypeError, it never runs
                return EMPTY
            if row is not None:
                site = CallSite(call, recv, recv_node, pos, kw, owner, owner.certain if owner else True, attr)
                return interp.effects.apply(row.effects, site, flow, frame)
            delegated = self._delegate(owner, attr, call, recv, recv_node, pos, kw, flow, frame)
            if delegated is not None:
                return delegated
        if attr == "zero_grad" and not (recv.entities or recv.modules or recv.reach or recv.params):
            # `m.zero_grad()` of an object the analysis could not make out (`m = torch.load(path)`, a model a
            # call out of sight built): a module's or an optimizer's clear, of parameters not known. It clears
            # what an optimizer of parameters not known steps (`Adam(m.parameters())`), as a module's clear
            # does (`effects.clear`); not the gradients of parameters the analysis knows (`config["lr"]`)
            unknown = {Holder(o.uid, (), pseudo=True) for o in interp.recorder.all_optimizers()
                       if self.table.ownership_unknown(o.uid)}
            if unknown:
                text = code(recv_node)
                interp.recorder.clear(call, f"{text}.zero_grad()", text, unknown, flow, frame, target_assumed=True)
                return EMPTY
        return self.unmodelled_method(call, attr, recv, recv_node, pos, kw, flow, frame)

    def _base_method(self, call: ast.Call, recv_node: ast.expr, attr: str, cls: ClassInfo,
                     frame: Frame) -> tuple[Function, bool] | None:
        """The method of a base class a call runs on `self`, and whether `self` is passed explicitly:
        `super().__init__(lr)` and `super(Sub, self).step()` (the method of the first base, in any file,
        after the class defining the running method, or the class named), `SACLearner.__init__(self, lr)`
        (a base of the class, by name). None for any other call."""
        defs = self.interp.definitions
        family = (cls, *defs.ancestors(cls))
        if isinstance(recv_node, ast.Call) and isinstance(recv_node.func, ast.Name) and recv_node.func.id == "super":
            if recv_node.args:
                named = N.dotted(recv_node.args[0]) or ""
                owner = next((c for c in family if c.name == named.rsplit(".", 1)[-1]), None)
            else:
                owner = next((c for c in family if any(m is frame.function for m in c.methods.values())), None)
            for parent in defs.ancestors(owner) if owner is not None else ():
                if attr in parent.methods:
                    return parent.methods[attr], False
            return None
        if call.args and isinstance(call.args[0], ast.Name) and call.args[0].id == "self":
            dotted = N.dotted(recv_node)
            base = next((c for c in family[1:] if c.name == dotted.rsplit(".", 1)[-1]), None) if dotted else None
            method = defs.find_method(base, attr) if base is not None else None
            return (method, True) if method is not None else None
        return None

    def makes_context(self, recv: Value, recv_node: ast.expr, attr: str, flow: Flow) -> bool:
        """The receiver's method `attr` only makes a context (`model.no_sync`, `accelerator.no_sync`)."""
        for _owner, api in self._receiver_types(recv, recv_node, flow, attr):
            row = self.catalogue.method(api, attr)
            if row is not None and makes_context_only(row.effects):
                return True
        return False

    def call_instance(self, call: ast.Call, held: Value, flow: Flow, frame: Frame) -> Value | None:
        """Calling an instance of a plain class of this project (a loss object, `DualLoss(cfg)`) runs its
        `__call__`; None when it is no such instance or its class defines none."""
        info = self.class_of_instance(held)
        if info is None or info.is_module:
            return None
        method = self.interp.definitions.find_method(info, "__call__")
        project = self.interp.project
        if method is None or is_abstract(method) or (project is not None and not project.follows(self.interp, method)):
            return None
        pos, kw = self.args_of(call, flow, frame)
        return self.inline(method, info, held, pos, kw, flow, frame, instance_key=N.ref_text(call.func))

    def _submodule(self, recv: Value, attr: str, info: ClassInfo | None, func: ast.Attribute, flow: Flow,
                   frame: Frame) -> Value | None:
        """The submodule `recv.attr` names, when the analysis saw it stored there: a module of a class read (in
        this file or the project) whose `__init__` set `self.attr` to a module, and that defines no method of
        that name (`self.critic.Q1` of `self.Q1 = nn.Linear(...)`). Calling it runs that child's forward,
        which reaches its parameters alone, not its siblings'. None for anything else (a method, an attribute
        of a class out of sight, which may be a method, unless an optimizer was built over its parameters)."""
        unnamed = info is None or self.interp.definitions.find_method(info, attr) is None
        if unnamed and self._optimized_part(recv, attr):
            # `ac.critic(obs)` of a model built out of sight (or of a part built so), whose `ac.critic.parameters()`
            # an optimizer holds:
            # a module (a method has no parameters), so calling it runs that part's forward
            child = self.interp.eval(func, flow, frame)
            return child if child.modules and not child.entities else None
        if info is None or not info.is_module or not recv.modules or self.interp.definitions.find_method(info, attr) is not None:
            return None
        stored = recv.item(attr)
        if (stored is None or not stored.modules) and not (stored is None and self.interp.objects.holds_module(info, attr)):
            # (a part of a part, `model.encoder.embedding(x)`: the part's value is a path of the root's holder,
            # whose class and stored modules are the ones its class's `__init__` keeps)
            return None
        child = self.interp.eval(func, flow, frame)
        return child if child.modules and not child.entities else None

    def _optimized_part(self, recv: Value, attr: str) -> bool:
        """Some optimizer holds the parameters of `recv.attr`, a part of the one model `recv` is."""
        roots = {h for h in recv.modules if not h.pseudo}
        if len(roots) != 1 or recv.entities and any(e.kind is not Kind.MODEL for e in recv.entities):
            return False
        root = next(iter(roots))
        part = root.path + (attr,)
        return any(h.uid == root.uid and h.path[: len(part)] == part
                   for own in self.table.ownership.values() for h in own.holders)

    def _class_named(self, name: str | None) -> ClassInfo | None:
        """The class of this file, or of another file of the project, of that name."""
        if name is None:
            return None
        found = self.interp.classes.get(name)
        if found is None and self.interp.project is not None:
            found = self.interp.project.class_named(name)
        return found

    def _through_class(self, recv_node: ast.expr, attr: str, flow: Flow, frame: Frame) -> tuple[ClassInfo, Function] | None:
        """A static or class method called through the name of a class of this file (`MLP.get_model(...)`,
        `cls.make(...)` in a classmethod), readable and not abstract; None for any other call."""
        if not isinstance(recv_node, ast.Name):
            return None
        interp = self.interp
        bound = interp.lookup(recv_node.id, flow, frame)
        if bound is None:
            plain = recv_node.id not in interp.imports.aliases and not (
                frame.function is not None and recv_node.id in local_names(frame.function))
            info = interp.classes.get(recv_node.id) if plain else None
        else:
            info = self._class_named(class_refs.local_named(bound))
        method = interp.definitions.find_method(info, attr) if info is not None else None
        if info is None or method is None or is_abstract(method):
            return None
        if not any(N.last_name(d) in ("staticmethod", "classmethod") for d in method.decorator_list):
            return None
        project = interp.project
        return (info, method) if project is None or project.follows(interp, method) else None

    def run_own_method(self, recv: Value, recv_node: ast.expr | None, name: str, flow: Flow,
                       frame: Frame) -> Value | None:
        """The method `name` of the class read of `recv`, run on it with no arguments (`run` of a `threading.Thread`
        subclass its `start()` runs); None when there is no such class or method, or it is not followed."""
        info = self.class_of_instance(recv)
        method = self.interp.definitions.find_method(info, name) if info is not None else None
        if info is None or method is None or is_abstract(method):
            return None
        if self.interp.project is not None and not self.interp.project.follows(self.interp, method):
            return None
        key = N.ref_text(recv_node) if recv_node is not None else None
        return self.inline(method, info, recv, [], {}, flow, frame, instance_key=key)

    def class_of_instance(self, recv: Value) -> ClassInfo | None:
        """The class read (of this file or of the project) `recv` is an object of."""
        if isinstance(recv.const, tuple) and recv.const[:1] == ("instance",):
            return self._class_named(str(recv.const[1]))  # (of this file, or of another file of the project)
        for e in recv.in_order():  # the first made, never the first a set's hash order gives
            if e.uid in self.instance_class:
                return self.instance_class[e.uid]
        if recv.modules and not recv.entities and all(m.path for m in recv.modules):
            # a submodule stored on a module of a class read (`model.encoder` of `self.encoder = Enc()`)
            return self.interp.objects.class_of_module(recv)
        return None

    def _receiver_types(self, recv: Value, recv_node: ast.expr, flow: Flow,
                        attr: str) -> list[tuple[Entity | None, str]]:
        """API types the receiver may have: its entities' types, a module's, a tensor's, or by its name when
        that type has the method `attr` called: a `scaler` whose `inverse_transform` is called is a data
        normaliser, not a GradScaler (MTGNN's `self.scaler.inverse_transform(output)`: taken for one, its
        output was read as a tool's number, without the model's graph)."""
        out: list[tuple[Entity | None, str]] = [(e, e.api) for e in sorted(recv.entities, key=lambda e: e.uid) if e.api]
        info = self.class_of_instance(recv) if not out and not recv.modules else None
        if info is not None and info.api and not info.is_module:
            # an object of a class read that extends a catalogue type (`class Worker(threading.Thread)`): what the
            # class does not define, the type does (`worker.start()`)
            return [(None, info.api)]
        # a model whose sync the code switches is a data-parallel wrapper of it (see `prescan.synced`):
        # its `no_sync()` is DDP's
        out += [(e, "torch.nn.parallel.DistributedDataParallel") for e in sorted(recv.entities, key=lambda e: e.uid) if e.uid in self.table.sync_capable and e.kind is Kind.MODEL and e.api != "torch.nn.parallel.DistributedDataParallel"]
        if recv.modules and not any(e.kind in (Kind.MODEL, Kind.PARAM) for e in recv.entities):
            out.append((None, "torch.nn.Module"))
        if out:
            return out
        text = code(recv_node)
        api = self.catalogue.receiver_type(text)
        if api is not None and not recv.reach and self.catalogue.method(api, attr) is not None:
            # Known only by its name (`accelerator`, `scaler`, `optimizer`): one object per name, less certain.
            kind = {"optimizer": Kind.OPTIMIZER, "model": Kind.MODEL, "scheduler": Kind.SCHEDULER}.get(self.catalogue.kind(api) or "", Kind.TOOL)
            scope = ("self",) if text.startswith("self.") else self.call_path
            ent = self.interp.mint(kind, text, ("ref", text, scope), api=api, provenance=assumed(Assumption.NAME))
            self.table.name_after(ent.uid, text)
            key = N.ref_text(recv_node)
            value = self.interp.model_value(ent) if kind is Kind.MODEL else Value(entities=frozenset({ent}))
            if key is not None:
                flow.env[key] = value
            return [(ent, api)]
        if recv.reach or recv.opaque or recv.params or recv.graph or blank(recv):
            return [(None, "torch.Tensor")]  # a tensor, or a parameter (`for p in model.parameters(): p.register_hook(...)`)
        return []

    def _constructs_used_optimizer(self, call: ast.Call, last: str, pos: list[Value], kw: dict[str, Value]) -> Value | None:
        """`scheduler = LRScheduler(optimizer, ...)` (a class of another file) whose result the code both
        steps and clears: a wrapper used as the optimizer, of the parameters of the optimizers it is given."""
        target = self._assigned_name(call)
        prescan = self.interp.prescan
        if target is None or target not in prescan.stepped or target not in prescan.zeroed or target in prescan.models | prescan.saved:
            return None
        if not last[:1].isupper():
            return None  # a factory function: `build_optimizer(...)` is handled as any call
        inner = [o for v in [*pos, *kw.values()] for o in v.of_kind(Kind.OPTIMIZER)]
        ent = self.interp.mint(Kind.OPTIMIZER, code(call.func), ("ctor", id(call)), api="torch.optim.Optimizer",
                               provenance=assumed(Assumption.OTHER_FILE))  # a class no row describes
        if inner:
            self.table.wraps[ent.uid] = frozenset(o.uid for o in inner)
            self.interp.own(ent, Value(params=frozenset().union(*(self.table.optimizer_holders(o) for o in inner))), None)
        return Value(entities=frozenset({ent}))

    def _used_as_optimizer(self, attr: str, call: ast.Call, recv: Value, recv_node: ast.expr, pos: list[Value],
                           kw: dict[str, Value], flow: Flow, frame: Frame) -> Value | None:
        """`scheduler.step()` and `scheduler.zero_grad()` on an object that is both stepped and cleared here,
        and is no optimizer the analysis knows (a wrapper of an optimizer built out of sight): an optimizer
        by its use, whatever its name or type say."""
        if attr not in ("step", "zero_grad") or recv.of_kind(Kind.OPTIMIZER) or recv.modules or recv.reach:
            return None
        text = code(recv_node)
        prescan = self.interp.prescan
        if text not in prescan.stepped or text not in prescan.zeroed or text in prescan.models | prescan.saved:
            return None
        for e in recv.in_order():
            if e.uid in self.table.wraps:
                return self._delegate(e, attr, call, recv, recv_node, pos, kw, flow, frame)
        scope = ("self",) if text.startswith("self.") else self.call_path
        ent = self.interp.mint(Kind.OPTIMIZER, text, ("ref", text, scope), api="torch.optim.Optimizer",
                               provenance=assumed(Assumption.ATTRIBUTE if text.startswith("self.") else Assumption.PARAMETER))
        self.table.name_after(ent.uid, text)
        key = N.ref_text(recv_node)
        if key is not None:
            flow.env[key] = Value(entities=frozenset({ent}))
        row = self.catalogue.method("torch.optim.Optimizer", attr)
        if row is None:
            return None
        site = CallSite(call, Value(entities=frozenset({ent})), recv_node, pos, kw, ent, False, attr)
        return self.interp.effects.apply(row.effects, site, flow, frame)

    def _delegate(self, owner: Entity | None, attr: str, call: ast.Call, recv: Value, recv_node: ast.expr,
                  pos: list[Value], kw: dict[str, Value], flow: Flow, frame: Frame) -> Value | None:
        """`scheduler.step()` / `.zero_grad()` on an object built from optimizers and used as one: a wrapper."""
        if owner is None or attr not in ("step", "zero_grad") or owner.uid not in self.table.wraps:
            return None
        if code(recv_node) not in self.interp.prescan.zeroed:
            return None  # a real scheduler: its step() is not the optimizer's
        wrapped = Value(entities=frozenset(e for uid in self.table.wraps[owner.uid] if (e := self.table.entities.get(uid)) is not None))
        row = self.catalogue.method("torch.optim.Optimizer", attr)
        if row is None:
            return None
        site = CallSite(call, wrapped, recv_node, pos, kw, None, owner.certain, attr)
        return self.interp.effects.apply(row.effects, site, flow, frame)

    def unmodelled_method(self, call: ast.Call, attr: str, recv: Value, recv_node: ast.expr, pos: list[Value],
                          kw: dict[str, Value], flow: Flow, frame: Frame) -> Value:
        """A method no API model describes: a model's own method, a container's, or something opaque."""
        interp = self.interp
        if attr == "backward":
            for v in pos:
                interp.keepalives.consumed(v)
        heuristic = self.catalogue.callee_heuristic(attr)
        if heuristic is not None and attr != "backward" and any(e.kind == "number" for e in heuristic.effects):
            return Value()  # `model.floating_point_ops(inputs)`, `task.batch_size(batch)`: a count, no graph
        if heuristic is not None and any(e.kind in ("hook_grads", "restore_grads", *_BACKPROPAGATES)
                                         for e in heuristic.effects):
            site = CallSite(call, recv, recv_node, pos, kw, None, False, attr)  # `self._grad_scaler(params, 1 / n)`
            return interp.effects.apply(heuristic.effects, site, flow, frame) or EMPTY
        if heuristic is not None and self._makes_optimizer(heuristic.effects) \
                and any(v.params for v in [*pos, *kw.values()]):
            # a factory kept on an object (Hydra's partial `self.hparams.optimizer(groups)`): built from the parameters
            site = CallSite(call, None, None, pos, kw, None, False)
            return interp.effects.apply(heuristic.effects, site, flow, frame) or EMPTY
        if attr == "backward" and pos:
            # `something.backward(loss)` of an unknown object: a framework's backward of its argument
            site = CallSite(call, recv, recv_node, pos, kw, None, False, attr)
            return interp.effects.apply((Effect("backward", (("loss", _ARG0),)),), site, flow, frame)
        if attr in _REARRANGES and (changed := N.ref_text(recv_node)) is not None:
            forget_appended(flow, changed)  # `losses.pop()`: `losses[-1]` is another item now
        if attr in ("append", "extend", "insert") and pos and recv.unread_class is not None:
            # `run_loss.append(loss)` of `run_loss = CumulativeAverage()`: a method of a class the analysis did not
            # read, not a list's: it may keep the value, a number made of it (monai's detaches), or nothing
            return interp.objects.opaque_call(attr, [recv, *pos], kw, flow)
        key = N.ref_text(recv_node)
        summed = len(pos) == 1 and (pos[0].built or pos[0].graph)
        if attr in _SUMS_IN_PLACE and summed and not recv.modules and key is not None:
            # `running.add_(loss * n)`: a tensor sums the value in place, as `running += loss * n` does
            stored = arguments(call)[0].value
            new = union_as_tensor([recv, pos[0]])
            flow.env[key] = interp.keepalives.note(call, key, stored, new, frame, code(recv_node), added=pos[0])
            return flow.env[key]
        grown = param_groups.groups_of(recv) if attr in param_groups.GROWS and pos else ()
        if grown:  # `opt.param_groups[1]["params"].append(p)`: the optimizer updates `p` too
            interp.objects.add_owned_by(grown, pos[-1])
            return EMPTY
        if attr in ("append", "insert", "clear") and isinstance(recv_node, ast.Name) \
                and recv_node.id in flags.emptiness_flags(frame.function or interp.module, interp.touches_gradients):
            flags.assign(flow, recv_node.id, attr != "clear")  # `grads.append(g)`: not empty on this path
        if attr in ("append", "extend", "insert") and pos:
            # a list (or an `nn.ModuleList`) grows: not a forward pass, also when it holds modules
            slot = recv_node if key is None and isinstance(recv_node, ast.Subscript) else None
            base = N.ref_text(slot.value) if slot is not None else None
            if slot is not None and base is not None:
                # `self._metrics[name].append(v)` of a dict of lists under a key not known here: one of its lists
                key = f"{base}[{code(slot.slice)}]"
            if key is not None:
                stored = [a.value for a in arguments(call) if a.keyword is None][-1]
                new = appended_to(recv, pos[-1]) if attr == "append" else join([recv, pos[-1]])
                flow.env[key] = interp.keepalives.note(call, key, stored, new, frame, code(recv_node),
                                                       item=pos[-1] if attr == "append" else None, added=pos[-1])
                if attr == "append":  # `losses[-1]` is this value until the list changes again
                    last_appended(flow, key, pos[-1])
            return EMPTY
        if recv.modules and not call.args and not call.keywords and _QUERY.match(attr):
            return Value()  # `model.scheduler.get_current_seq()`: a query without inputs, not a forward pass
        if recv.modules:
            made = [e for e in heuristic.effects if e.kind == "construct"] if heuristic is not None else []
            if made and all(self.catalogue.kind(str(e.value("type") or "")) == "optimizer" for e in made):
                ent = interp.mint(Kind.OPTIMIZER, code(call.func), ("ctor", id(call)), api="torch.optim.Optimizer",
                                  provenance=assumed(Assumption.NAME))
                interp.own(ent, None, recv)  # nanoGPT's `model.configure_optimizers(...)`
                return Value(entities=frozenset({ent}))
            if made:  # `model.from_pretrained(path)`: a model of that type, made afresh (not an optimizer of it)
                site = CallSite(call, recv, recv_node, pos, kw, None, False, attr)
                return interp.effects.apply(tuple(made), site, flow, frame) or EMPTY
            if N.callee_suggests_grad_effect(attr) and attr != "forward":
                interp.objects.opaque_call(attr, [recv, *pos], kw, flow)
                return EMPTY
            return interp.forward(recv, pos, kw, flow, frame, vague=True)
        if attr in ("items", "values", "keys") and recv.items:
            return recv
        if attr in ("get", "pop") and recv.items and arguments(call):
            k = N.literal_key(arguments(call)[0].value)
            item = recv.item(k) if k is not None else None
            if item is not None:
                return item
            whichever = join([v for _, v in recv.items])
            return maybe_none(whichever) if attr == "get" else whichever  # (`.get` of a key not there: None)
        if recv.entities and not recv.reach:
            return EMPTY  # a method of an optimizer, scheduler or tool no model describes
        if isinstance(recv_node, ast.Name) and recv_node.id in interp.imports.aliases and not recv.reach:
            return interp.objects.opaque_call(attr, pos, kw, flow)  # a function of an unknown imported module
        if isinstance(recv_node, ast.Name) and blank(recv) and (
                recv_node.id in interp.classes or class_refs.local_named(recv) is not None):
            # `MLP.build(cfg)`, `Registry.make(name)`: a method of a class of this file not read here (inherited
            # from a base out of sight, or a plain method called through the class): what it returns is unknown,
            # not nothing (a model built there and cleared by `m.zero_grad()` is still the optimizer's)
            return interp.objects.opaque_call(attr, pos, kw, flow)
        args = [*pos, *kw.values()]
        out = union_as_tensor([recv, *args])
        if out.built and not (recv.reach or recv.built or recv.graph) and not _tensor_method(attr):
            # a method of an object the analysis knows nothing of, and no tensor operation (`env.step(action)`,
            # `self.meter.compute(loss)`): that what it returns holds its arguments' graphs is assumed
            # (`Value.vague_sites`). HuGProject's `done = terminated or truncated` of `env.step(action)`, booleans
            # stored into a NumPy buffer, was a certain GL008 (lockbox 38, kind 3).
            out = replace(out, vague_sites=out.vague_sites | {site for _h, _gens, site in out.built})
        if out.graph and _no_graph_beyond_a_leaf(recv, attr, args):
            out = replace(out, graph=False)  # (the forward passes the receiver holds stay: `built`)
        if recv.present and (recv.reach or recv.built or recv.graph) and not recv.entities and attr not in _RETURN_NONE:
            return present(out)  # `model(x).mean()`: a method of a tensor made in sight makes a tensor
        return out

    # -- `.grad` written through a method
    @staticmethod
    def _grad_receiver(node: ast.expr) -> ast.expr | None:
        """For `p.grad` (or `p.grad.data`), the parameter expression `p`."""
        if isinstance(node, ast.Attribute) and node.attr == "data":
            node = node.value
        if isinstance(node, ast.Attribute) and node.attr == "grad":
            return node.value
        return None

    def grad_method(self, call: ast.Call, attr: str, recv_node: ast.expr, flow: Flow, frame: Frame) -> Value:
        """`p.grad.zero_()` clears, `p.grad.div_(n)` / `.mul_(x)` rescale, `p.grad.fill_(c)` replaces."""
        interp = self.interp
        owner_node = self._grad_receiver(recv_node)
        assert owner_node is not None
        self.args_of(call, flow, frame)
        holders = interp.grad_holders(interp.eval(owner_node, flow.copy(), frame))
        if not holders:
            return EMPTY
        args = arguments(call)
        is_zero = attr == "zero_" or (attr == "fill_" and bool(args) and code(args[0].value) in ("0", "0.0", "0."))
        if attr == "norm":  # `p.grad.norm()`: a read, logged or compared
            interp.amp.touched(call, holders, "norm_before_unscale", flow, frame.ifs)
        elif is_zero and interp.expressions.selective(call, owner_node):
            # `for k, p in enumerate(model.parameters()): if k < 15 and p.dim() == 1: p.grad.fill_(0)` zeroes
            # the gradients of some parameters on purpose (a per-parameter freeze): not a clear of the step's
            flow.hand_written(lambda s: s.clear(0, holders, record_discards=False))
        elif is_zero:
            interp.recorder.clear(call, code(call), code(owner_node), holders, flow, frame)
        elif attr in ("mul_", "div_"):
            flow.hand_written(lambda s: s.rescale(holders))
        elif attr in ("add_", "sub_", "addcmul_", "addcdiv_", "clamp_", "clip_"):  # noise added, values clamped: changed in place
            interp.amp.touched(call, holders, "modify_before_unscale", flow, frame.ifs)
            if attr == "add_" and _held_values(args):  # `p.grad.add_(buffer[i])`: gradients saved earlier, put back
                flow.hand_written(lambda s: s.refill(holders))
        else:  # `p.grad.fill_(0.01)` replaces the gradient outright
            if attr in _GRAD_MODIFIERS:
                interp.amp.touched(call, holders, "modify_before_unscale", flow, frame.ifs)
            if attr == "copy_" and len(args) == 1 and reads_grad_of(args[0].value, owner_node):
                # `p.grad.copy_(p.grad / n)`, `p.grad.copy_(reduce(p.grad))`: the same gradients written back,
                # changed in place as `div_` changes the fresh ones: still the backward's, so a clear after the
                # copy discards them as it would without it
                flow.hand_written(lambda s: _rewritten(s, holders))
                return EMPTY
            flow.hand_written(lambda s: s.clear(0, holders, record_discards=False))
            if attr == "copy_" and _held_values(args):
                # `p.grad.copy_(buffer[i])`: gradients written back by hand (a backup restored after a clear
                # made room for another computation): what the step applies is what the code put there
                flow.hand_written(lambda s: s.refill(holders))
        return EMPTY

    def grads_listed(self, node: ast.expr, flow: Flow, frame: Frame) -> set:
        """Whose `.grad` an expression lists: `[p.grad for p in model.parameters()]` (the comprehension's
        iterable), `(a.grad, b.grad)`, `p.grad`."""
        interp = self.interp
        if isinstance(node, (ast.ListComp, ast.GeneratorExp, ast.SetComp)) and len(node.generators) == 1:
            gen = node.generators[0]
            bound = {n.id for n in breadth_first(gen.target) if isinstance(n, ast.Name)}
            for sub in breadth_first(node.elt):
                owner = self._grad_receiver(sub) if isinstance(sub, ast.Attribute) else None
                if isinstance(owner, ast.Name) and owner.id in bound:
                    return interp.grad_holders(interp.eval(gen.iter, flow.copy(), frame))
            return set()
        if isinstance(node, (ast.List, ast.Tuple)):
            out: set = set()
            for elt in node.elts:
                out |= self.grads_listed(elt, flow, frame)
            return out
        while (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _GRAD_VIEWS
               and not node.args and not node.keywords):
            node = node.func.value  # `p.grad.detach()`, `p.grad.float()`: the same gradient, read
        owner = self._grad_receiver(node)
        return interp.grad_holders(interp.eval(owner, flow.copy(), frame)) if owner is not None else set()

    # ------------------------------------------------------------------ local definitions
    def construct_local(self, call: ast.Call, info: ClassInfo, flow: Flow, frame: Frame) -> Value:
        """`Net()` of a local class: a model for an nn.Module (whose methods stay callable), else an instance."""
        interp = self.interp
        pos, kw = self.args_of(call, flow, frame)
        fields = named_tuples.class_fields(info.node, info.bases)
        if fields is not None:  # `class Losses(NamedTuple)`, of this file or another of the project
            return named_tuples.construct(fields, arguments(call), self._argument_values(call, pos, kw))
        wrapper = self._returning_base(info)
        if wrapper is not None:
            # `class DataParallelWithCallback(DataParallel)` with no `forward` of its own: constructed, it is
            # what its base makes of its arguments (the catalogue: `DataParallel(module)` is the module)
            found = CallSite(call, None, None, pos, kw, None, True).arg(wrapper.ref("value"))
            if found:
                return found[0]
        if info.api and self.catalogue.kind(info.api) == "optimizer":
            # `class Muon(torch.optim.Optimizer)`: an optimizer of the parameters it is given (its own
            # `step()` is the update rule, not training code to follow)
            ent = interp.mint(Kind.OPTIMIZER, info.name, ("ctor", id(call)), api=info.api)
            self.table.unmodelled_class.add(ent.uid)
            params = pos[0] if pos else kw.get("params")
            inner = [o for v in [*pos, *kw.values()] for o in v.of_kind(Kind.OPTIMIZER)]
            if inner and (params is None or not params.params):  # `Lookahead(base_optimizer)`: the same parameters
                self.table.wraps[ent.uid] = frozenset(o.uid for o in inner)
                params = Value(params=frozenset().union(*(self.table.optimizer_holders(o) for o in inner)))
            interp.own(ent, params, None)
            return Value(entities=frozenset({ent}), present=True, objects_only=True)
        if info.is_module:
            ent = interp.mint(Kind.MODEL, info.name, ("ctor", id(call)), api=info.api or "torch.nn.Module")
            self.instance_class[ent.uid] = info
            # (a new object, never None: `if net is not None:` of a freeze helper handed it goes one way)
            value = replace(interp.model_value(ent), present=True, objects_only=True)
            flow.hand_written(lambda s: s.clear(0, set(value.modules), record_discards=False))  # fresh parameters
            return self.instantiate(info, pos, kw, flow, frame, value)
        return self.instantiate(info, pos, kw, flow, frame)

    @staticmethod
    def _argument_values(call: ast.Call, pos: list[Value], kw: dict[str, Value]) -> list[Value]:
        """The values of `arguments(call)`, in their order, from what `args_of` evaluated."""
        out: list[Value] = []
        positional = iter(pos)
        for a in arguments(call):
            out.append(kw.get(a.keyword, EMPTY) if a.keyword is not None else next(positional, EMPTY))
        return out

    def _returning_base(self, info: ClassInfo) -> Effect | None:
        """The catalogue's `returns` effect of a base class that hands back one of its arguments (an
        identity wrapper: `torch.nn.DataParallel`), when the class and its project bases define no
        `forward` of their own; None otherwise."""
        if self.interp.definitions.find_method(info, "forward") is not None:
            return None
        for base in info.bases:
            row = self.catalogue.call(base)
            for effect in row.effects if row is not None else ():
                if effect.kind == "returns" and effect.ref("value") is not None and not effect.value("unwraps"):
                    return effect
        return None

    def instantiate(self, info: ClassInfo, pos: list[Value], kw: dict[str, Value], flow: Flow, frame: Frame,
                    instance: Value | None = None) -> Value:
        """Run `__init__` on a new instance; its `self.*` attributes become the instance's items."""
        instance = instance if instance is not None else Value(const=("instance", info.name))
        init = self.interp.definitions.find_method(info, "__init__")
        if init is None:
            return instance
        scratch = Flow(dict(flow.env), flow.states)
        key = f"__instance_{info.name}"
        self.inline(init, info, instance, pos, kw, scratch, frame, instance_key=key)
        flow.states = scratch.states
        made = scratch.env.get(key, instance)
        if made.modules:  # `Model(backbone)`: calling the model runs the backbone it was given
            own = {m.uid for m in made.modules}
            given = frozenset(h for _, item in made.items for h in item.modules if h.uid not in own)
            made = replace(made, modules=made.modules | given)
        return made

    def run_closure(self, closure: ast.expr, flow: Flow, frame: Frame) -> Value | None:
        """`optimizer.step(closure)` evaluates the closure (forward, backward) before updating, and returns what it
        returned (the loss, graph and all, when the closure returns the tensor). None when the argument is no
        function the analysis can read (`optimizer.step(config, timers)` of a wrapper)."""
        enabled = replace(frame, no_grad=False, grad_on=True)  # the optimizer runs it under `torch.enable_grad()`
        if isinstance(closure, ast.Name):
            fn = frame.local_defs.get(closure.id) or self.interp.functions.get(closure.id)
            if fn is not None:
                cls = frame.cls if isinstance(frame.cls, ClassInfo) else None
                return self.inline(fn, cls, frame.self_value, [], {}, flow, enabled)
            made = self.interp.lookup(closure.id, flow, frame)
            if made is not None and self.interp.callables.is_bound(made):
                # `closure = self._setup_closure(opt, x)`: the nested function a factory returned
                return self.interp.callables.call_bound(made, [], {}, flow, enabled)
        elif isinstance(closure, ast.Lambda):
            return self.interp.eval(closure.body, flow, enabled)
        return None

    def invoke(self, name: str, flow: Flow, frame: Frame) -> None:
        """`fire.Fire(main)`, `mp.spawn(train, ...)`: the function runs, with arguments we cannot see."""
        fn = frame.local_defs.get(name) or self.interp.functions.get(name)
        if fn is not None:
            self.inline(fn, None, None, [], {}, flow, frame)

    # -- optimizers a framework made from a method of the model class
    def configured_optimizers(self, frame: Frame, flow: Flow, method_name: str) -> Value:
        """What `self.optimizers()` returns in a method of a framework's model class (Lightning's): the
        optimizers `method_name` (`configure_optimizers`) of the class returns, first or under the
        key `optimizer` of its result (a list, a tuple of lists, a dict); else one optimizer of the
        class, its parameters unknown."""
        cls = frame.cls if isinstance(frame.cls, ClassInfo) else None
        if cls is None:
            return OPAQUE
        method = self.interp.definitions.find_method(cls, method_name) if method_name else None
        if method is not None:
            scratch = flow.copy()
            result = self.inline(method, cls, frame.self_value, [], {}, scratch, frame)
            opts: Value | None = result
            first = result.item("0")
            inner = first.item("0") if first is not None else None
            listed = inner is not None and inner.of_kind(Kind.OPTIMIZER)
            if first is not None and first.items and (not first.of_kind(Kind.OPTIMIZER) or listed):
                # `return [opt_g, opt_d], [sched_g, sched_d]`: the first list holds the optimizers (a list's
                # value holds its items' objects too, so the pair as a whole looks like optimizers)
                opts = first
            elif result.item("optimizer") is not None:
                opts = result.item("optimizer")
            if opts is not None and opts.of_kind(Kind.OPTIMIZER):
                return opts
        ent = self.interp.mint(Kind.OPTIMIZER, "self.optimizers()", ("configured", cls.name), api="torch.optim.Optimizer")
        return Value(entities=frozenset({ent}))

    def toggle(self, on: bool, value: Value, flow: Flow, frame: Frame) -> None:
        """Lightning's `toggle_optimizer(opt)`: every other optimizer's parameters are frozen until untoggled."""
        if frame.self_value is None:
            return
        owned: set[Holder] = set()
        for o in value.of_kind(Kind.OPTIMIZER):
            own = self.table.ownership.get(o.uid)
            if own is None or own.unknown:
                return
            owned |= set(own.holders)
        others = {h for o in self.interp.recorder.all_optimizers() for h in self.table.optimizer_holders(o) if h not in owned and not h.pseudo}
        flow.map(lambda s: s.freeze(others, on))

    def without_grad(self, fn: Function) -> bool:
        """`@torch.no_grad()` / `@torch.inference_mode()` on the function: its body builds no graph."""
        for decorator in fn.decorator_list:
            target = decorator.func if isinstance(decorator, ast.Call) else decorator
            qual = self.interp.imports.qualify(target)
            row = self.catalogue.call(qual) if qual else None
            if row is not None and any(e.kind == "no_grad" and e.ref("flag") is None for e in row.effects):
                return True
        return False

    def _is_instance(self, value: Value) -> bool:
        """An object made from a local class here: a plain instance, or a local nn.Module's model value."""
        return isinstance(value.const, tuple) and value.const[:1] == ("instance",) or any(e.uid in self.instance_class for e in value.entities)


def _no_graph_beyond_a_leaf(recv: Value, attr: str, args: list[Value]) -> bool:
    """The graph a method's result was given comes only from a trained leaf (`torch.randn(..., requires_grad=True)`),
    no operand holding one of its own, and the call makes none worth keeping: a copy of the leaf whose op saves no
    tensor for backward (`latents.clone()`, `view`, `to`: the saved-tensor table; it keeps only the leaf, which lives
    on anyway), or a method of an object nothing is known of, handed the leaf (`model.langevin_dynamics(z)`: what it
    returns is not read, and cdvae's is `@torch.no_grad()`)."""
    if recv.graph or any(v.graph for v in args):
        return False
    if not any(e.kind is Kind.PARAM for e in recv.entities):
        return True
    return saved_table().op_saves(attr) == frozenset() and not any(v.built for v in args)


# A class keeping an average of weights (EMA, SWA, Polyak): built from parameters and stepped, yet no optimizer.
_AVERAGE = convention("weight_average_class")

_QUERY = convention("query")


def _tensor_method(name: str) -> bool:
    """Whether a method of this name may be a tensor's: an operator of PyTorch's autograd table, a composite of it,
    or a conversion (`_TENSOR_CONVERSIONS`)."""
    table = saved_table()
    base = name[:-1] if name.endswith("_") and not name.endswith("__") else name  # `add_`, `mul_`: in place
    return base in table.ops or base in table.composites or name in _TENSOR_CONVERSIONS

