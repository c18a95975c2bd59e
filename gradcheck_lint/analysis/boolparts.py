"""Tests joined by `and` / `or`: what a path learns of each part, and what the parts decide.

A test is remembered by its whole text, so two tests that share parts were two unrelated facts:

    if use_reg and step > 0 and step % accum == 0:   # a regulariser added once per window
        loss_reg.backward()
    if step > 0 and step % accum == 0:               # the step's gate: the same two parts
        optimizer.step()

A path on which the first test held knows each of its parts held, so the second test holds there too:
`loss_reg.backward()` is always followed by the step of its window, it is not a micro-batch of it.
Symmetrically a path on which an `or` test failed knows each part failed. A test joined by `and` is
decided on a path that knows one part false (false) or every part true (true); one joined by `or` on a
path that knows one part true (true) or every part false (false).

Only parts that some other test of the module also reads (as a part or whole) are remembered: the
others would only multiply the paths. A part is remembered under the same assumption key, with the
same polarity, as the interpreter gives that text when it is a test of its own (`x is not None` is the
literal `x is None` false), so a plain `if step > 0:` reads what an `and` test taught the path. A part
is forgotten when a name it reads is assigned, and at the next iteration of a loop that trains when it
changes from one iteration to the next (a window gate, a comparison, as `Condition.volatile`).
"""

from __future__ import annotations

import ast
from collections import Counter
from collections.abc import Callable
from typing import TYPE_CHECKING

from . import pathcond
from .conditions import analyse_test
from .syntax import code
from .walk import iter_tree
from .window_arithmetic import ALL_PHASES

if TYPE_CHECKING:
    from .conditions import Condition
    from .gradstate import PathState

# (is the test an `and`, [(assumption key, the truth of that key when the part holds)], every part is listed)
Parts = tuple[bool, list[tuple[int, bool]], bool]


class BoolParts:
    """The shared parts of the module's `and`/`or` tests, and the assumption keys they are kept under."""

    def __init__(self, module: ast.Module, akey: dict[str, int],
                 literal: Callable[[ast.expr], pathcond.Literal | None],
                 modulo_atoms: Callable[[ast.expr], list[tuple[str, str]]],
                 akeys_testing: dict[str, list[int]]) -> None:
        self._akeys = akey  # the interpreter's text -> assumption key table (shared, so keys agree)
        self._literal = literal  # the interpreter's `_literal`: a test as an atom other tests share
        self._modulo_atoms = modulo_atoms
        self._akeys_testing = akeys_testing
        self._parts: dict[int, Parts | None] = {}
        self._volatile: dict[int, frozenset[str]] = {}  # part key -> names it reads, of parts that change per iteration
        self._steady: dict[int, frozenset[str]] = {}  # part key -> names it reads, of the others
        self._counts = _count_parts(module, self._text)
        self._included = {id(module)}

    def include(self, module: ast.Module) -> None:
        """Count the tests of another file whose code runs (a trainer class of the project): a part two of its
        tests share (`... and not self.deepspeed` / `if self.deepspeed:`) is remembered there too."""
        if id(module) not in self._included:
            self._included.add(id(module))
            known = _FOREIGN_COUNTS.get(id(module))
            if known is None or known[0] is not module:  # (counted once per file content, as its tree is kept)
                if len(_FOREIGN_COUNTS) > 1_000:
                    _FOREIGN_COUNTS.clear()
                known = _FOREIGN_COUNTS[id(module)] = (module, _count_parts(module, self._text))
            self._counts.update(known[1])

    # ------------------------------------------------------------------ keys
    def _text(self, part: ast.expr) -> tuple[str, bool]:
        """The key text a part is remembered under and the key's truth when the part holds, as the
        interpreter's `branch` would register the part if it were a test of its own."""
        core, negated, lit = pathcond.reading(part, self._literal, self._modulo_atoms)
        if lit is not None:
            return lit.atom.key, lit.positive != negated
        return code(core), not negated

    def shared(self, test: ast.expr) -> bool:
        """A whole test whose text another test reads as a part (`if d_hnet is not None:` beside `if d_hnet is not
        None and not cfg.frozen:`): a path must remember which way it went there."""
        if isinstance(test, ast.BoolOp):
            return False
        return self._counts[self._text(test)[0]] > 1

    def of(self, cond: Condition) -> Parts | None:
        """The shared parts of the condition's test (None: not an `and`/`or`, or no part shared)."""
        key = cond.id
        if key in self._parts:
            return self._parts[key]
        test = cond.test
        found: Parts | None = None
        if isinstance(test, ast.BoolOp):
            out = []
            for part in test.values:
                text, truth = self._text(part)
                if self._counts[text] < 2:
                    continue
                k = self._akeys.setdefault(text, len(self._akeys) + 1)
                out.append((k, truth))
                probe = analyse_test(id(part), ast.Expr(part), part)
                for name in probe.names:
                    keys = self._akeys_testing.setdefault(name, [])
                    if k not in keys:
                        keys.append(k)
                (self._volatile if probe.volatile else self._steady)[k] = probe.names
            if out:
                found = (isinstance(test.op, ast.And), out, len(out) == len(test.values))
        self._parts[key] = found
        return found

    def deciding_part(self, cond: Condition, of_phase: Callable[[ast.expr], bool]) -> tuple[bool, int, bool] | None:
        """`if distributed and (i + 1) % N != 0:`: the one part that does not read a window counter's phase, when
        every other part does and that one is shared (remembered by the paths). Where the phase parts held (an
        `and`) or failed (an `or`), the test went as that part did: the arm that took the other way knows it (the
        plain `else:` of a DDP script's `no_sync` arm, on a micro-batch that does not step, runs where `distributed`
        is false). (is the test an `and`, the part's assumption key, that key's truth when the part holds)."""
        test = cond.test
        if not isinstance(test, ast.BoolOp):
            return None
        rest = [p for p in test.values if not of_phase(p)]
        if len(rest) != 1 or len(test.values) < 2:
            return None
        text, truth = self._text(rest[0])
        key = self._akeys.get(text)
        if key is None or self._counts[text] < 2:
            return None
        return isinstance(test.op, ast.And), key, truth

    # ------------------------------------------------------------------ paths
    @staticmethod
    def decided_by_a_part(t_s: PathState | None, f_s: PathState | None, truths: dict[str, bool | None],
                           deciding: tuple[bool, int, bool], key: str, window: str,
                           ) -> tuple[PathState | None, PathState | None, tuple[bool, PathState] | None]:
        """`deciding_part`: of the arm the phase parts do not decide (the false arm of an `and`), the phases
        where they held are a path of their own that knows the deciding part went the arm's way. The arms left, and
        that path with its arm (None when there is none, or it contradicts what the path knew)."""
        is_and, part, truth = deciding
        side = f_s if is_and else t_s
        if side is None:
            return t_s, f_s, None
        phases = side.phase(key, window) or ALL_PHASES
        open_ = frozenset(p for p in phases if truths.get(p, None) is None)
        if not open_:
            return t_s, f_s, None
        value = (not truth) if is_and else truth
        known = side.assumption(part)
        narrowed = side.with_phase(key, window, open_) if open_ != phases else side
        moved = narrowed.assume(part, value) if known is None else narrowed if known == value else None
        rest = phases - open_
        kept = side.with_phase(key, window, rest) if rest else None
        t_s, f_s = (t_s, kept) if is_and else (kept, f_s)
        return t_s, f_s, (not is_and, moved) if moved is not None else None

    @staticmethod
    def truth(state: PathState, parts: Parts) -> bool | None:
        """What the path knows of the whole test from what it knows of its parts."""
        is_and, items, complete = parts
        holds = [None if (v := state.assumption(k)) is None else v == t for k, t in items]
        if is_and:
            if False in holds:
                return False
            return True if complete and all(h is True for h in holds) else None
        if True in holds:
            return True
        return False if complete and all(h is False for h in holds) else None

    @staticmethod
    def learn(state: PathState, parts: Parts, held: bool) -> PathState | None:
        """The path after the test went this way (None: it contradicts what the path knew of a part):
        an `and` that held, every part held; an `or` that failed, every part failed."""
        is_and, items, _complete = parts
        if is_and != held:
            return state
        for k, t in items:
            value = t if held else not t
            now = state.assumption(k)
            if now is None:
                state = state.assume(k, value)
            elif now != value:
                return None
        return state

    def forgotten(self, assigned: frozenset[str] | set[str], trains: bool) -> list[int]:
        """Part keys a loop's next iteration no longer knows: volatile ones when it trains, and those
        reading a name the loop assigns."""
        out = [k for k, names in self._volatile.items() if trains or names & assigned]
        out += [k for k, names in self._steady.items() if names & assigned]
        return out


# the counts of other files' tests, by their trees (a project module's tree is read once per content and kept)
_FOREIGN_COUNTS: dict[int, tuple[ast.Module, Counter[str]]] = {}


def _count_parts(module: ast.Module, text: Callable[[ast.expr], tuple[str, bool]]) -> Counter[str]:
    """How many tests of the module read each part (a whole test counts as its own part)."""
    counts: Counter[str] = Counter()
    for node in iter_tree(module):
        test: ast.expr | None = None
        if isinstance(node, (ast.If, ast.While, ast.IfExp)):
            test = node.test
        elif (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
              and isinstance(node.value, ast.BoolOp)):
            test = node.value  # `defer = a and b` ... `if not defer:`: read where the name is tested (`bound_tests`)
        if test is not None:
            for part in test.values if isinstance(test, ast.BoolOp) else [test]:
                counts[text(part)[0]] += 1
            inner = test
            while isinstance(inner, ast.UnaryOp) and isinstance(inner.op, ast.Not):
                inner = inner.operand
            if inner is not test and isinstance(inner, ast.BoolOp):  # `if not (a and b):` reads a and b too
                for part in inner.values:
                    counts[text(part)[0]] += 1
    return counts
