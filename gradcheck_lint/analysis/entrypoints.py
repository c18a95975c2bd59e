"""Which code is analysed, and from what context: the module body, then every function and method
nothing in the file reached, framework hooks once per batch, and nested functions (closures) that
were handed to something the analysis cannot follow."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Iterable

from .definitions import ClassInfo
from .flow import Flow, Frame, Function
from .gradstate import PathState
from .prescan import EVENT_ATTRS
from .values import OPAQUE, Counter, Value, join
from .walk import iter_tree

if TYPE_CHECKING:
    from .interpreter import Interpreter


class EntryPoints:
    """Choose the roots of the analysis and run each from a sensible context."""

    def __init__(self, interp: "Interpreter") -> None:
        self.interp = interp
        self._nested: list[tuple[Function, dict[str, Value], Frame]] = []
        self._roots: set[int] = set()
        self._attribute_graphs: dict[str, dict[str, Value]] = {}

    def run(self) -> None:
        interp = self.interp
        if _another_framework(interp.imports.aliases.values()):
            return  # MXNet, TensorFlow, JAX...: their `backward` and `step` follow other rules
        top = Frame(function=None, cls=None, self_value=None, depth=0, local_defs={})
        out = interp.exec_block(interp.module.body, Flow({}, frozenset({PathState()})), top)
        final = Flow.join([out.normal, *(f for f, _ in out.returns)])
        interp.module_env = dict(final.env) if final else {}
        called_names, called_attrs = interp.called_names, interp.called_attrs
        # First what nothing in the file calls (the callers), then what was called but never reached
        # (handed to `fire.Fire`, `mp.spawn`, a framework), each from its own definition.
        for name, fn in interp.functions.items():
            if name not in called_names:
                self.root(fn, None)
        for info in interp.classes.values():
            for mname, fn in info.methods.items():
                if mname.startswith("__") and mname != "__call__":
                    continue
                hook = interp.catalogue.hook(info.api, mname) if info.api else None
                if hook is not None:
                    self.root(fn, info, implicit_loop=hook.optimization == "manual" or info.manual_optimization)
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
            if id(fn) not in inlined and id(fn) not in self._roots and interp.prescan.trains(fn.name):
                self.root(fn, frame.cls if isinstance(frame.cls, ClassInfo) else None, closure=env, outer=frame)

    def _hook_counter(self, fn: Function, cls: ClassInfo | None) -> str | None:
        """The parameter of a framework hook that counts batches (`batch_idx` of `training_step`)."""
        hook = self.interp.catalogue.hook(cls.api, fn.name) if cls is not None and cls.api else None
        if hook is None or hook.counter is None:
            return None
        params = [p.arg for p in [*fn.args.posonlyargs, *fn.args.args]][1:]
        for position in hook.counter.positions:
            if position < len(params):
                return params[position]
        return next((k for k in hook.counter.keywords if k in params), None)

    def defined_here(self, fn: Function, flow: Flow, frame: Frame) -> None:
        """A nested function was defined: remember what it sees, in case nothing calls it here."""
        if frame.function is not None:
            self._nested.append((fn, dict(flow.env), frame))

    def _step_functions(self) -> list[tuple[Function, ClassInfo | None]]:
        """Functions and methods whose own body (no loop) holds a backward pass and a step, in a file
        that clears gradients nowhere, or that clear some gradients themselves (a GAN's `step()` that
        clears the generator: the caller leaves clearing to it)."""
        interp = self.interp
        anywhere: list[bool] = []  # whether the module clears anywhere: walked for the first candidate only

        def clears_anywhere() -> bool:
            if not anywhere:
                anywhere.append(_clears_somewhere(interp.module))
            return anywhere[0]

        def candidate(fn: Function) -> bool:
            # a test (`test_backward`) runs once, on objects its fixture builds afresh
            return (not fn.name.startswith("test") and interp.prescan.calls_events(fn, "step", "backward") and _steps_once(fn)
                    and (not clears_anywhere() or _clears_somewhere(fn)))

        out: list[tuple[Function, ClassInfo | None]] = [(fn, None) for fn in interp.functions.values() if candidate(fn)]
        for info in interp.classes.values():
            out += [(fn, info) for name, fn in info.methods.items() if not name.startswith("__") and candidate(fn)
                    and interp.catalogue.hook(info.api, name) is None]
        return out

    def root(self, fn: Function, cls: ClassInfo | None, implicit_loop: bool = False,
             closure: dict[str, Value] | None = None, outer: Frame | None = None, assumed: bool = False) -> None:
        calls = self.interp.calls
        self._roots.add(id(fn))
        saved, calls.call_path = calls.call_path, (id(fn),)  # names of unknown origin are per function
        try:
            self._run_root(fn, cls, implicit_loop, closure, outer, assumed)
        finally:
            calls.call_path = saved

    def _run_root(self, fn: Function, cls: ClassInfo | None, implicit_loop: bool,
                  closure: dict[str, Value] | None, outer: Frame | None, assumed: bool = False) -> None:
        interp = self.interp
        objects = interp.objects
        self_value = outer.self_value if outer is not None else (objects.self_value_for(cls) if cls else None)
        env: dict[str, Value] = dict(objects.class_self_env(cls)) if cls and outer is None else {}
        if cls and outer is None:
            for key, graph in self.attribute_graphs(cls).items():
                held = env.get(key)
                if held is None or not (held.modules or held.entities):
                    env[key] = graph
        frame = Frame(function=fn, cls=cls, self_value=self_value, depth=1, local_defs={}, active=(id(fn),), closure_env=closure,
                      no_grad=interp.calls.without_grad(fn))
        a = fn.args
        for i, p in enumerate([*a.posonlyargs, *a.args, *a.kwonlyargs]):
            if i == 0 and cls is not None and outer is None and p.arg in ("self", "cls"):
                continue
            env[p.arg] = objects.entity_for_unknown_ref(p.arg) or OPAQUE
        flow = Flow(env, frozenset({PathState()}))
        body = fn.body
        if implicit_loop:
            loop = interp.loop_for(fn, None)
            loop.implicit = assumed
            counter = self._hook_counter(fn, cls)
            if counter is not None:  # Lightning's `batch_idx`: 0 on the first batch, one more per call
                env[counter] = Value(counter=Counter(counter, zero_based=True, start=0))
                loop.counter = counter
            interp.run_loop(flow, frame, loop, lambda f, fr: interp.exec_block(body, f, fr), None,
                            (counter, 0) if counter is not None else None, calls=True)
        else:
            interp.exec_block(body, flow, frame)

    def attribute_graphs(self, cls: ClassInfo) -> dict[str, Value]:
        """Graphs the class's other methods leave in `self` attributes, for a method analysed on its own.

        A model class keeps its forward pass's outputs on `self` (`self.fake_A_random`, split from
        `self.gen.forward_a(...)` in `forward()`) and backpropagates them in a method a script elsewhere
        calls (DRIT's `update_EG()`). That method starts with the attributes holding graphs built before
        it began: a step of its own, then a backward through them, goes through updated weights. Each
        method that touches no gradient and builds graphs (no `no_grad`) runs once, from `__init__`'s
        attributes; what it records is dropped (only the attributes' values are kept)."""
        cached = self._attribute_graphs.get(cls.name)
        if cached is not None:
            return cached
        self._attribute_graphs[cls.name] = {}
        interp = self.interp
        objects = interp.objects
        base = objects.class_self_env(cls)
        found: dict[str, list[Value]] = {}
        keepalives, misuses, inlined = dict(interp.keepalives.events), dict(interp.amp.misuses), set(interp.calls.inlined)
        saved_path, interp.calls.call_path = interp.calls.call_path, (id(cls),)
        try:
            for name, fn in cls.methods.items():
                if name.startswith(("__", "test")) or not interp.prescan.surely_inert(name) or interp.calls.without_grad(fn) or not _assigns_self(fn):
                    continue
                env = dict(base)
                for p in [*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs][1:]:
                    env[p.arg] = objects.entity_for_unknown_ref(p.arg) or OPAQUE
                frame = Frame(function=fn, cls=cls, self_value=objects.self_value_for(cls), depth=1, local_defs={}, active=(id(fn),))
                out = interp.exec_block(fn.body, Flow(env, frozenset({PathState()})), frame)
                final = Flow.join([out.normal, *(f for f, _ in out.returns)])
                for key, value in (final.env.items() if final else ()):
                    if key.startswith("self.") and value.built and value is not base.get(key):
                        found.setdefault(key, []).append(value)
        finally:
            interp.calls.call_path = saved_path
            interp.keepalives.events.clear()
            interp.keepalives.events.update(keepalives)
            interp.amp.misuses.clear()
            interp.amp.misuses.update(misuses)
            interp.calls.inlined.intersection_update(inlined)
        graphs = {key: join(values) for key, values in found.items()}
        self._attribute_graphs[cls.name] = graphs
        return graphs


def _assigns_self(fn: Function) -> bool:
    """Whether the function's own body assigns a `self.x` attribute."""
    for node in iter_tree(fn):
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) and isinstance(node.value, ast.Name) and node.value.id == "self":
            return True
    return False


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


def _steps_once(fn: Function) -> bool:
    """A backward pass and a step in the function's own body, outside any loop."""
    found: set[str] = set()
    todo: list[ast.AST] = list(fn.body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.For, ast.AsyncFor, ast.While, ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in EVENT_ATTRS:
            found.add("step" if "step" in node.func.attr else "backward" if "backward" in node.func.attr else "")
        todo.extend(ast.iter_child_nodes(node))
    return {"step", "backward"} <= found


# Deep-learning frameworks other than PyTorch: a file that imports one of them and nothing of PyTorch's
# world is not analysed (DeepLearningExamples keeps MXNet and TensorFlow trainers next to PyTorch ones).
_OTHER_FRAMEWORKS = frozenset({"mxnet", "tensorflow", "jax", "flax", "paddle", "mindspore", "oneflow", "chainer", "keras", "tf_keras", "theano"})
_PYTORCH_WORLD = frozenset({"torch", "lightning", "pytorch_lightning", "lightning_fabric", "accelerate", "deepspeed", "timm",
                            "transformers", "apex", "torch_xla", "mmengine", "torchvision", "torchaudio"})


def _another_framework(qualified: "Iterable[str]") -> bool:
    roots = {q.split(".", 1)[0] for q in qualified}
    return bool(roots & _OTHER_FRAMEWORKS) and not roots & _PYTORCH_WORLD
