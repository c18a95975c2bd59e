"""Which code is analysed, and from what context: the module body, then every function and method
nothing in the file reached, framework hooks once per batch, and nested functions (closures) that
were handed to something the analysis cannot follow."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .definitions import ClassInfo
from .flow import Flow, Frame, Function
from .gradstate import PathState
from .values import OPAQUE, Value

if TYPE_CHECKING:
    from .interpreter import Interpreter


class EntryPoints:
    """Choose the roots of the analysis and run each from a sensible context."""

    def __init__(self, interp: "Interpreter") -> None:
        self.interp = interp
        self._nested: list[tuple[Function, dict[str, Value], Frame]] = []
        self._roots: set[int] = set()

    def run(self) -> None:
        interp = self.interp
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
        while self._nested:
            fn, env, frame = self._nested.pop(0)
            if id(fn) not in inlined and id(fn) not in self._roots and interp.prescan.trains(fn.name):
                self.root(fn, frame.cls if isinstance(frame.cls, ClassInfo) else None, closure=env, outer=frame)

    def defined_here(self, fn: Function, flow: Flow, frame: Frame) -> None:
        """A nested function was defined: remember what it sees, in case nothing calls it here."""
        if frame.function is not None:
            self._nested.append((fn, dict(flow.env), frame))

    def root(self, fn: Function, cls: ClassInfo | None, implicit_loop: bool = False,
             closure: dict[str, Value] | None = None, outer: Frame | None = None) -> None:
        calls = self.interp.calls
        self._roots.add(id(fn))
        saved, calls.call_path = calls.call_path, (id(fn),)  # names of unknown origin are per function
        try:
            self._run_root(fn, cls, implicit_loop, closure, outer)
        finally:
            calls.call_path = saved

    def _run_root(self, fn: Function, cls: ClassInfo | None, implicit_loop: bool,
                  closure: dict[str, Value] | None, outer: Frame | None) -> None:
        interp = self.interp
        objects = interp.objects
        self_value = outer.self_value if outer is not None else (objects.self_value_for(cls) if cls else None)
        env: dict[str, Value] = dict(objects.class_self_env(cls)) if cls and outer is None else {}
        frame = Frame(function=fn, cls=cls, self_value=self_value, depth=1, local_defs={}, active=(id(fn),), closure_env=closure)
        a = fn.args
        for i, p in enumerate([*a.posonlyargs, *a.args, *a.kwonlyargs]):
            if i == 0 and cls is not None and outer is None and p.arg in ("self", "cls"):
                continue
            env[p.arg] = objects.entity_for_unknown_ref(p.arg) or OPAQUE
        flow = Flow(env, frozenset({PathState()}))
        body = fn.body
        if implicit_loop:
            loop = interp.loop_for(fn, None)
            interp.run_loop(flow, frame, loop, lambda f, fr: interp.exec_block(body, f, fr), None)
        else:
            interp.exec_block(body, flow, frame)



