"""What a class's other methods leave for a method analysed on its own.

A model class keeps its forward pass's outputs on `self` (DRIT's `forward()` stores
`self.fake_A_random`, split from `self.gen.forward_a(...)`) and backpropagates them in a method a script
elsewhere calls (`update_EG()`); or it returns its losses from one method (edge-connect's `process()`
returns `outputs, gen_loss, dis_loss, logs`) and takes them back in another (`backward(self, gen_loss,
dis_loss)`), the script in between. A method analysed on its own starts with those attributes, and with
those parameters, holding the graphs the other methods built, before anything it does: a step of its
own, then a backward through them, goes through weights the step changed (GL009).

Each other method that issues no backward and no step of its own, builds graphs (no `no_grad`), and
either sets `self` attributes or returns names the analysed methods take as parameters, runs once, from
`__init__`'s attributes. What it records (clears, conditions, loops, kept graphs, AMP misuses) is
dropped: only the values are kept.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .definitions import ClassInfo
from .flow import Flow, Frame, Function
from .gradstate import PathState
from .values import OPAQUE, Value, join
from .walk import iter_tree

if TYPE_CHECKING:
    from .interpreter import Interpreter

# Calls that make a method a training step of its own: it is analysed as such, never run on the side.
_STEPS = frozenset({"backward", "manual_backward", "step", "optimizer_step", "update_params"})


@dataclass
class SiblingValues:
    attributes: dict[str, Value] = field(default_factory=dict)  # `self.fake`: the graph `forward()` left there
    returned: dict[str, Value] = field(default_factory=dict)  # `gen_loss`: what `process()` returns under that name


class Siblings:
    def __init__(self, interp: Interpreter) -> None:
        self.interp = interp
        self._cache: dict[str, SiblingValues] = {}

    def left_by_others(self, cls: ClassInfo, fn: Function) -> SiblingValues:
        """The graphs the other methods of `cls` leave for `fn` (the same for every method of the class,
        `fn` aside: a method's own attributes and returns are not its inputs)."""
        values = self._cache.get(cls.name)
        if values is None:
            self._cache[cls.name] = SiblingValues()  # a method reached again while this runs sees none
            values = self._cache[cls.name] = self._run_others(cls)
        own = _returned_names(fn)
        return SiblingValues(values.attributes, {k: v for k, v in values.returned.items() if k not in own})

    def _run_others(self, cls: ClassInfo) -> SiblingValues:
        interp = self.interp
        objects = interp.objects
        base = objects.class_self_env(cls)
        wanted = {p.arg for fn in cls.methods.values() if _steps_itself(fn) for p in [*fn.args.args, *fn.args.kwonlyargs][1:]}
        attributes: dict[str, list[Value]] = {}
        returned: dict[str, list[Value]] = {}
        with _recording_dropped(interp):
            for name, fn in cls.methods.items():
                names = _returned_names(fn) & wanted
                if name.startswith(("__", "test")) or _steps_itself(fn) or interp.calls.without_grad(fn) or not (names or _assigns_self(fn)):
                    continue
                env = dict(base)
                for p in [*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs][1:]:
                    env[p.arg] = objects.entity_for_unknown_ref(p.arg) or OPAQUE
                frame = Frame(function=fn, cls=cls, self_value=objects.self_value_for(cls), depth=1, local_defs={}, active=(id(fn),))
                out = interp.exec_block(fn.body, Flow(env, frozenset({PathState()})), frame)
                final = Flow.join([out.normal, *(f for f, _ in out.returns)])
                for key, value in (final.env.items() if final else ()):
                    if key.startswith("self.") and value.built and value is not base.get(key):
                        attributes.setdefault(key, []).append(value)
                for flow, _ in out.returns:
                    for n in names:
                        value = flow.env.get(n)
                        if value is not None and value.built:
                            returned.setdefault(n, []).append(value)
        return SiblingValues({k: join(v) for k, v in attributes.items()}, {k: join(v) for k, v in returned.items()})


class _recording_dropped:
    """Run code for its values only: the events it records go to fresh collections, dropped afterwards.

    Swapped, not copied back: an event the run reached again would otherwise be the root's own object,
    changed in place (a step's incoming paths, holding a backward that is then dropped). Conditions and
    loops stay shared: they are per statement, and values may refer to them."""

    _SWAPPED = (("recorder", "backwards"), ("recorder", "steps"), ("recorder", "clears"), ("recorder", "last_update"),
                ("keepalives", "events"), ("amp", "misuses"))

    def __init__(self, interp: Interpreter) -> None:
        self.interp = interp

    def __enter__(self) -> None:
        interp = self.interp
        self.saved = []
        for part, name in self._SWAPPED:
            owner = getattr(interp, part)
            self.saved.append((owner, name, getattr(owner, name)))
            setattr(owner, name, {})
        self.inlined = set(interp.calls.inlined)
        self.call_path, interp.calls.call_path = interp.calls.call_path, ()

    def __exit__(self, *exc: object) -> None:
        interp = self.interp
        for owner, name, value in self.saved:
            setattr(owner, name, value)
        interp.calls.inlined.intersection_update(self.inlined)
        interp.calls.call_path = self.call_path


def _steps_itself(fn: Function) -> bool:
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in _STEPS for n in iter_tree(fn))


def _assigns_self(fn: Function) -> bool:
    """Whether the function's own body assigns a `self.x` attribute."""
    return any(isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Store) and isinstance(n.value, ast.Name) and n.value.id == "self"
               for n in iter_tree(fn))


def _returned_names(fn: Function) -> set[str]:
    """Plain names the function returns (`return outputs, gen_loss, dis_loss, logs`)."""
    out: set[str] = set()
    for n in iter_tree(fn):
        if isinstance(n, ast.Return) and n.value is not None:
            for e in n.value.elts if isinstance(n.value, ast.Tuple) else [n.value]:
                if isinstance(e, ast.Name):
                    out.add(e.id)
    return out
