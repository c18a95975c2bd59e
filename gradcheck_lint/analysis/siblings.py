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

from . import names as N
from .definitions import ClassInfo
from .flow import Flow, Frame, Function
from .gradstate import PathState
from .parts import SiblingsHost
from .values import Kind, Value, join
from .walk import iter_tree

# Calls that make a method a training step of its own (it is analysed as such, never run on the side):
# the names of the catalogue's rows that run a backward pass (a schedule's too) or a step.
STEP_EFFECTS = ("backward", "schedule", "step")


@dataclass
class SiblingValues:
    attributes: dict[str, Value] = field(default_factory=dict)  # `self.fake`: the graph `forward()` left there
    returned: dict[str, Value] = field(default_factory=dict)  # `gen_loss`: what `process()` returns under that name


class Siblings:
    def __init__(self, interp: SiblingsHost) -> None:
        self.interp = interp
        self._runs: dict[int, SiblingValues] = {}  # by method: what running it once on the side left
        self._facts: dict[int, tuple[bool, set[str], set[str]]] = {}  # by method: steps itself, assigns, returns
        self._direct: dict[int, tuple[set[str], set[str]]] = {}  # by method: `self` attributes read, receivers stepped

    def _of(self, fn: Function) -> tuple[bool, set[str], set[str]]:
        """What a method's own body says, read once: whether it steps, the `self` attributes it assigns,
        the names it returns (the class is walked for every method analysed on its own)."""
        facts = self._facts.get(id(fn))
        if facts is None:
            steps = self.interp.catalogue.named_by_effect(*STEP_EFFECTS)
            facts = self._facts[id(fn)] = (_steps_itself(fn, steps), _self_assigned(fn), _returned_names(fn))
        return facts

    def left_by_others(self, cls: ClassInfo, fn: Function) -> SiblingValues | None:
        """The graphs the other methods of `cls` leave for `fn`: in the `self` attributes `fn` (or a method it
        calls on `self`) reads and `__init__` does not set, and under the names of `fn`'s parameters. Only
        the methods that set those attributes or return those names run, each once."""
        reads, stepped = self._reads_and_steps(cls, fn)
        if len(stepped) < 2:
            return None  # a graph goes stale between the steps of two optimizers (a GAN's, an actor-critic's)
        base = self.interp.objects.class_self_env(cls)
        if sum(1 for r in stepped if r in base and any(e.kind is Kind.OPTIMIZER for e in base[r].entities)) < 2:
            return None  # two optimizers `__init__` builds (not a trainer's `self.optimizer` and `self.deepspeed`)
        reads -= set(base)
        params = {p.arg for p in [*fn.args.args, *fn.args.kwonlyargs][1:]} if self._of(fn)[0] else set()
        runs = []
        for name, m in cls.methods.items():
            steps, assigns, returns = self._of(m)
            if m is not fn and not name.startswith(("__", "test")) and not steps and (reads & assigns or params & returns) \
                    and not self.interp.calls.without_grad(m):
                runs.append(self._run(cls, m, base))
        if not runs:
            return None
        attributes: dict[str, list[Value]] = {}
        returned: dict[str, list[Value]] = {}
        for run in runs:
            for k, v in run.attributes.items():
                if k in reads:
                    attributes.setdefault(k, []).append(v)
            for k, v in run.returned.items():
                if k in params:
                    returned.setdefault(k, []).append(v)
        return SiblingValues({k: join(v) for k, v in attributes.items()}, {k: join(v) for k, v in returned.items()})

    def _reads_and_steps(self, cls: ClassInfo, fn: Function) -> tuple[set[str], set[str]]:
        """The `self.x` attributes `fn` reads, and the methods it calls on `self` read, transitively; and the
        receivers of the `step()` calls among them (`self.gen_opt`, `self.dis_optimizer`)."""
        reads: set[str] = set()
        stepped: set[str] = set()
        todo, seen = [fn], {id(fn)}
        while todo:
            m = todo.pop()
            direct = self._direct.get(id(m))
            if direct is None:
                direct = self._direct[id(m)] = _direct_reads_and_steps(m)
            reads |= direct[0]
            stepped |= direct[1]
            for attr in direct[0]:
                method = cls.methods.get(attr[5:])
                if method is not None and id(method) not in seen:
                    seen.add(id(method))
                    todo.append(method)
        return reads, stepped

    def _run(self, cls: ClassInfo, fn: Function, base: dict[str, Value]) -> SiblingValues:
        done = self._runs.get(id(fn))
        if done is not None:
            return done
        self._runs[id(fn)] = SiblingValues()  # a method reached again while this runs sees none
        interp = self.interp
        objects = interp.objects
        names = self._of(fn)[2]
        attributes: dict[str, Value] = {}
        returned: dict[str, list[Value]] = {}
        with _recording_dropped(interp):
            env = {**base, **objects.unknown_parameters(fn, True)}
            frame = Frame(function=fn, cls=cls, self_value=objects.self_value_for(cls), depth=1, local_defs={}, active=(id(fn),))
            out = interp.exec_block(fn.body, Flow(env, frozenset({PathState()})), frame)
            final = Flow.join([out.normal, *(f for f, _ in out.returns)])
            for key, value in (final.env.items() if final else ()):
                if key.startswith("self.") and value.built and value is not base.get(key):
                    attributes[key] = value
            for flow, _ in out.returns:
                for n in names:
                    value = flow.env.get(n)
                    if value is not None and value.built:
                        returned.setdefault(n, []).append(value)
        done = self._runs[id(fn)] = SiblingValues(attributes, {k: join(v) for k, v in returned.items()})
        return done


class _recording_dropped:
    """Run code for its values only: the events it records go to fresh collections, dropped afterwards.

    Swapped, not copied back: an event the run reached again would otherwise be the root's own object,
    changed in place (a step's incoming paths, holding a backward that is then dropped). Conditions and
    loops stay shared: they are per statement, and values may refer to them."""

    _SWAPPED = (("recorder", "backwards"), ("recorder", "steps"), ("recorder", "clears"), ("recorder", "last_update"),
                ("keepalives", "events"), ("amp", "misuses"))

    def __init__(self, interp: SiblingsHost) -> None:
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


def _steps_itself(fn: Function, steps: frozenset[str]) -> bool:
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in steps for n in iter_tree(fn))


def _self_assigned(fn: Function) -> set[str]:
    """The `self.x` attributes the function's body assigns."""
    return {f"self.{n.attr}" for n in iter_tree(fn)
            if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Store) and isinstance(n.value, ast.Name) and n.value.id == "self"}


def _direct_reads_and_steps(fn: Function) -> tuple[set[str], set[str]]:
    """The `self.x` attributes a function's body reads, and the receivers of its `step()` calls."""
    reads: set[str] = set()
    stepped: set[str] = set()
    for n in iter_tree(fn):
        if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Load) and isinstance(n.value, ast.Name) and n.value.id == "self":
            reads.add(f"self.{n.attr}")
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "step":
            receiver = ast.unparse(n.func.value) if not n.args else ast.unparse(n.args[0])  # `scaler.step(opt)`: `opt`
            if not N.SCHEDULER_NAME.search(receiver):
                stepped.add(receiver)
    return reads, stepped


def _returned_names(fn: Function) -> set[str]:
    """Plain names the function returns (`return outputs, gen_loss, dis_loss, logs`)."""
    out: set[str] = set()
    for n in iter_tree(fn):
        if isinstance(n, ast.Return) and n.value is not None:
            for e in n.value.elts if isinstance(n.value, ast.Tuple) else [n.value]:
                if isinstance(e, ast.Name):
                    out.add(e.id)
    return out
