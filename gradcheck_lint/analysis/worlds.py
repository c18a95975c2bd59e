"""Worlds: settings a run fixes once, in `__init__`, before any training.

A trainer's `__init__` often builds different objects for different settings, and its methods test the
same setting again:

    self.master_params = self.model_params
    if self.use_fp16:                                  # improved-diffusion's TrainLoop
        self._setup_fp16()                             # a new fp32 master copy of the parameters
    self.opt = AdamW(self.master_params, lr=lr)
    ...
    def run_step(self, batch):
        self.forward_backward(batch)                   # clears `self.model_params`
        if self.use_fp16: self.optimize_fp16()         # copies the model's gradients to the master copy
        else: self.optimize_normal()                   # steps the model's own parameters

Nothing assigns `self.use_fp16` after `__init__`: a run is one *world*, in which every test of it goes
the same way. Joined into one value, the worlds mix: an optimizer that owns the master copy and the
model's parameters, stepped on the fp32 path where the master copy does not exist. So `__init__` runs
once per world (two settings at most: four worlds), each deciding its tests by the world's literals, and
a method analysed on its own runs once per world whose objects differ, every test of those settings in
its class decided the same way. A world's objects are its own (minted per world), so what one world's
optimizer owns says nothing of another's.

A setting is a literal of a `pathcond` atom over `self.<name>` tested in `__init__`'s own body, or in a
setup method `__init__` calls (`self.init_main()`: the test is where the call is), where `__init__` assigns
the attribute at most once, before the test, and no other method of the class or its bases assigns it.

A test of anything else in `__init__` (`if config.shared or hasattr(net, "trunk"):`) is a setting too when
one of its arms alone makes an attribute that a method asks for by `hasattr(self, "name")`: that method's
test is the same fact as the arm `__init__` took (`presence_settings`), and mixing the arms makes paths
no run has (the shared optimizer's alias stepped on the arm of separate optimizers).
"""

from __future__ import annotations

import ast
import itertools
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from . import names as N
from .conventions import convention
from .pathcond import HASATTR, TRUTHY, Atom, implies, sets_on_every_path
from .syntax import assignment_targets
from .values import Value
from .walk import iter_tree

__all__ = ["MAX_SETTINGS", "World", "Worlds", "implied_presence", "presence_settings", "settings_of"]

_MULTI_PROCESS_FLAG = convention("multi_process_flag")
MAX_SETTINGS = 2  # settings split into worlds per class (2**2 worlds); more are joined as before


@dataclass(frozen=True, slots=True)
class World:
    """One assignment of truths to the settings (assumption key -> the atom's truth), the atom of each
    key, and the `self.*` attributes `__init__` leaves in it."""

    literals: tuple[tuple[int, bool], ...]
    atoms: dict[int, Atom]
    env: dict[str, Value]
    implied: tuple[tuple[Atom, bool], ...] = ()  # `hasattr(self, "name")` of the arms the literals took


class Worlds:
    """The world the interpreter is in: the literals that decide tests in methods of one class."""

    def __init__(self) -> None:
        self._literals: dict[int, bool] = {}
        self._family: tuple[object, ...] = ()  # the class and its bases
        self._atoms: tuple[tuple[Atom, bool], ...] = ()
        self.key: tuple[tuple[int, bool], ...] = ()  # part of the key objects are minted by

    @property
    def active(self) -> bool:
        return bool(self._literals)

    def multi_process_off(self) -> str | None:
        """The setting of this world that says, by its name, that the script runs on one process: a flag for a
        multi-process run (`self.ddp`, `self.multigpu`) that `__init__` found off (None: no such setting)."""
        for atom, truth in self._atoms:
            if atom.kind == TRUTHY and not truth and _MULTI_PROCESS_FLAG.fullmatch(atom.subject.rsplit(".", 1)[-1]):
                return atom.subject
        return None

    def decide(self, akey: int, polarity: bool, cls: object | None, atom: Atom | None = None) -> bool | None:
        """The truth of a test of a setting, in a method of the world's class or its bases (None: not
        decided here); another atom of the setting's subject (`x is None` of a world where `x` is true)
        is decided where the world's literal implies it."""
        if not self._literals or not any(cls is c for c in self._family):
            return None
        truth = self._literals.get(akey)
        if truth is None and atom is not None:
            for known, value in self._atoms:
                implied = implies(known, value, atom)
                if implied is not None:
                    return implied == polarity
        return None if truth is None else truth == polarity

    @contextmanager
    def entered(self, family: tuple[object, ...], literals: Sequence[tuple[int, bool]],
                atoms: dict[int, Atom], implied: Sequence[tuple[Atom, bool]] = ()) -> Iterator[None]:
        """In the world of these literals (assumption key -> truth; `atoms`: the atom of each key; `implied`:
        other atoms the literals decide), for the methods of a class and its bases (`family`)."""
        saved = self._literals, self._family, self.key, self._atoms
        self._literals, self._family, self.key = dict(literals), family, tuple(literals)
        self._atoms = tuple((atoms[k], v) for k, v in literals if k in atoms) + tuple(implied)
        try:
            yield
        finally:
            self._literals, self._family, self.key, self._atoms = saved


def settings_of(init: ast.FunctionDef | ast.AsyncFunctionDef, tests: Sequence[tuple[int, int, str]],
                assigned_elsewhere: frozenset[str]) -> list[int]:
    """The assumption keys of the settings among `__init__`'s tests: (the line of the `if`, or of the call in
    `__init__` of the setup method it is in; its key; the subject of its atom), in order, at most `MAX_SETTINGS`."""
    assigned: dict[str, list[int]] = {}
    for node in iter_tree(init):
        for target in assignment_targets(node):
            text = N.ref_text(target)
            if text is not None and text.startswith("self."):
                assigned.setdefault(text, []).append(getattr(node, "lineno", 0))
    out: list[int] = []
    for at, akey, subject in tests:
        if not subject.startswith("self.") or subject.count(".") != 1 or subject in assigned_elsewhere:
            continue
        lines = assigned.get(subject, [])
        if len(lines) > 1 or any(line >= at for line in lines):
            continue
        if akey not in out:
            out.append(akey)
        if len(out) == MAX_SETTINGS:
            break
    return out


def presence_settings(init: ast.FunctionDef | ast.AsyncFunctionDef, tests: Sequence[tuple[ast.If, int, bool]],
                      asked: frozenset[str], assigned_elsewhere: frozenset[str]) -> dict[int, dict[str, bool]]:
    """The tests of `__init__`'s own body, outside loops ((the `if`, its assumption key, whether its arms are
    the other way round)), one of whose arms alone assigns a `self.<name>` that a method asks for by
    `hasattr(self, "<name>")` (`asked`: the names) and that nothing else assigns: by key, each such name and
    the truth of the key's literal on which it exists."""
    in_loops = {id(n) for loop in iter_tree(init) if isinstance(loop, (ast.For, ast.AsyncFor, ast.While))
                for n in iter_tree(loop) if n is not loop}
    out: dict[int, dict[str, bool]] = {}
    for node, akey, swapped in tests:
        if id(node) in in_loops:
            continue
        body, orelse = _stores(node.body), _stores(node.orelse)
        rest = _stores(init.body, skip=node)
        found = {}
        for arm, stmts, mine, other in ((True, node.body, body, orelse), (False, node.orelse, orelse, body)):
            for text in mine - other - rest - assigned_elsewhere:
                name = text.removeprefix("self.")
                if name in asked and "." not in name and sets_on_every_path(stmts, text):
                    found[name] = arm != swapped
        if found:
            out[akey] = found
    return out


def _stores(stmts: Sequence[ast.AST], skip: ast.AST | None = None) -> frozenset[str]:
    """The `self.x` texts these statements assign (not inside `skip`)."""
    skipped = {id(n) for n in iter_tree(skip)} if skip is not None else set()
    texts = (N.ref_text(t) for stmt in stmts for node in iter_tree(stmt) if id(node) not in skipped
             for t in assignment_targets(node))
    return frozenset(t for t in texts if t is not None and t.startswith("self."))


def implied_presence(literals: Sequence[tuple[int, bool]], presence: dict[int, dict[str, bool]]
                     ) -> tuple[tuple[Atom, bool], ...]:
    """`hasattr(self, "name")` of every name the world's literals make or leave out (`presence_settings`)."""
    return tuple((Atom(HASATTR, "self", name), truth == arm) for key, truth in literals
                 for name, arm in presence.get(key, {}).items())


def assignments(settings: Sequence[int]) -> list[tuple[tuple[int, bool], ...]]:
    """Every assignment of truths to the settings."""
    return [tuple(zip(settings, truths)) for truths in itertools.product((True, False), repeat=len(settings))]
