"""Window arithmetic over branch tests: a test of a micro-batch counter evaluated on concrete counter
values (the first micro-batch, the first window's size, how often it fires), three-valued where the
window size is unknown, and the phase of a counter within its window (first, middle, last micro-batch)
that path states carry to keep a clear's test and a step's test correlated."""

from __future__ import annotations

import ast
from collections.abc import Callable, Sequence

from .last_iteration import FIRST, LAST, MID, index_truth, last_of_strided
from .names import dotted, reads_any
from .syntax import code, is_int
from .walk import walk

__all__ = ["ALL_PHASES", "FIRST", "LAST", "MID", "NEXT_PHASE", "concrete", "counter_names", "fires_on_most",
           "first_window", "first_window_longer", "first_window_size", "grad_existence_test", "kleene", "modulo_atoms",
           "modulo_operations", "phase_truth", "position_phase", "remainder_gate", "residue_offset", "residue_shift",
           "truth_at_zero", "unit_truth", "unit_window"]


def _is_mod(node: ast.AST) -> bool:
    return type(node) is ast.BinOp and type(node.op) is ast.Mod


def kleene(values: Sequence[ast.expr], is_and: bool, truth: Callable[[ast.expr], bool | None]) -> bool | None:
    """Three-valued `and` / `or` of the operands' truths (None: unknown)."""
    unknown = False
    for operand in values:
        v = truth(operand)
        if v is None:
            unknown = True
        elif v is not is_and:  # False in an `and`, True in an `or` decides
            return v
    return None if unknown else is_and


def counter_names(expr: ast.expr) -> list[str]:
    if isinstance(expr, (ast.Name, ast.Attribute)):
        d = dotted(expr)
        return [d] if d else []
    if type(expr) is ast.BinOp and isinstance(expr.op, (ast.Add, ast.Sub)):
        return counter_names(expr.left)
    return []



# -- three-valued evaluation of a test on the first micro-batch ------------------------------

_U = None  # unknown


def truth_at_zero(test: ast.expr, counter: str) -> bool | None:
    """Evaluate `test` with `counter == 0` and every modulus an unknown N >= 2."""
    v = _eval(test, counter)
    if isinstance(v, bool):
        return v
    if isinstance(v, tuple):  # a residue used as a truth value
        return v[1] != 0 if v[0] == "res" and v[1] is not None else None
    return None


def _eval(expr: ast.expr, counter: str):
    kind = type(expr)
    if kind is ast.UnaryOp and type(expr.op) is ast.Not:
        v = _eval(expr.operand, counter)
        if isinstance(v, tuple) and v[0] in ("res", "int"):  # `not (i % N)`, `not i`
            return None if v[1] is None else v[1] == 0
        return (not v) if isinstance(v, bool) else _U
    if kind is ast.BoolOp:
        return kleene(expr.values, type(expr.op) is ast.And, lambda e: _as_bool(_eval(e, counter)))
    if kind in (ast.Name, ast.Attribute) and dotted(expr) == counter:
        return ("int", 0)
    if is_int(expr):
        return ("int", expr.value)
    if kind is ast.BinOp:
        left = _eval(expr.left, counter)
        right = _eval(expr.right, counter)
        op = type(expr.op)
        if op is ast.Mod:
            if isinstance(left, tuple) and left[0] == "int" and left[1] is not None:
                if isinstance(right, tuple) and right[0] == "int" and right[1]:
                    return ("res", left[1] % right[1])
                # unknown modulus N >= 2: 0 % N == 0, 1 % N == 1
                return ("res", left[1] if 0 <= left[1] <= 1 else None)
            return _U
        if op in (ast.Add, ast.Sub):
            if isinstance(left, tuple) and isinstance(right, tuple) and left[1] is not None and right[1] is not None and left[0] == right[0] == "int":
                return ("int", left[1] + right[1] if op is ast.Add else left[1] - right[1])
            # N - 1 with N >= 2 is at least 1
            if op is ast.Sub and isinstance(right, tuple) and right == ("int", 1) and left is _U:
                return ("atleast", 1)
            return _U
        return _U
    if kind is ast.Compare and len(expr.ops) == 1:
        op = type(expr.ops[0])
        left = _eval(expr.left, counter)
        right = _eval(expr.comparators[0], counter)
        lv = _num(left)
        rv = _num(right)
        if op in (ast.Eq, ast.NotEq):
            eq: bool | None = None
            if lv is not None and rv is not None:
                eq = lv == rv
            elif lv is not None and isinstance(right, tuple) and right[0] == "atleast" and lv < right[1]:
                eq = False
            elif rv is not None and isinstance(left, tuple) and left[0] == "atleast" and rv < left[1]:
                eq = False
            if eq is None:
                return _U
            return eq if op is ast.Eq else not eq
        if lv is not None and rv is not None:
            if op is ast.Gt:
                return lv > rv
            if op is ast.GtE:
                return lv >= rv
            if op is ast.Lt:
                return lv < rv
            if op is ast.LtE:
                return lv <= rv
        if isinstance(left, tuple) and left == ("int", 0) and op is ast.Gt:
            return False  # counter > anything non-negative, at zero
        return _U
    return _U


def _exists_guard(expr: ast.expr) -> bool:
    """`x is not None` (or `hasattr(x, "name")`): a test that an object exists."""
    if isinstance(expr, ast.Compare) and len(expr.ops) == 1 and isinstance(expr.ops[0], ast.IsNot):
        right = expr.comparators[0]
        return isinstance(right, ast.Constant) and right.value is None
    return isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) and expr.func.id == "hasattr"


def counter_part(test: ast.expr, counter: str) -> ast.expr:
    """The part of a conjunction that is about the counter: `self.optimizer is not None and (self.step + 1) %
    self.update_every == 0` is the modulo test, for the question of which micro-batches it fires on. A conjunct that
    reads neither the counter nor a window name holds or fails alike on every micro-batch (whether there is an
    optimizer at all): it decides whether the step runs, not when in the window. The test itself unless exactly one
    conjunct is about the counter."""
    if not (isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And)):
        return test
    names = {dotted(m.right) for m in modulo_operations(test)} | _compared_names(test, counter) | {counter}
    names.discard(None)

    kept = [v for v in test.values if reads_any(v, names)]
    return kept[0] if len(kept) == 1 and len(test.values) > 1 else test  # (no new node: `code` caches by node)


def first_window(test: ast.expr, counter: str, first: int) -> bool | None:
    """Does the step test accumulate a first window of exactly N micro-batches?

    `first` is the counter's value on the first micro-batch (0 for `enumerate(loader)`, 1 for
    `enumerate(loader, 1)` or a counter incremented before the test). Every name that is the right
    operand of `%`, or is compared with the counter, stands for the window size N; the test is run for
    N = 2..8 and counter values first, first + 1, ... True: the first window is N for every N; False:
    for none; None: it depends on N, on other names, or the test is not understood.
    """
    literal = _literal_window(test)
    if literal is not None:  # `i % 32 == 0`: N is the number itself, whatever the names stand for
        size = first_window_size(test, counter, first, literal)
        return None if size is None else size == literal
    results = set()
    for n in range(2, 9):
        size = first_window_size(test, counter, first, n)
        if size is None:
            return None
        results.add(size == n)
    return results.pop() if len(results) == 1 else None


def first_window_size(test: ast.expr, counter: str, first: int, n: int) -> int | None:
    """How many micro-batches the first window holds when the window size is `n` (None: unknown)."""
    moduli = {dotted(m.right) for m in modulo_operations(test)} | _compared_names(test, counter)
    env = {name: n for name in moduli if name is not None}
    span = 3 * max(n, _literal_window(test) or 0)  # (a literal window, `i % 32`, is looked for over its own length)
    for k in range(first, first + span):
        env[counter] = k
        v = _concrete(test, env)
        if v is None:
            return None
        if v:
            return k - first + 1
    return span + 1  # not within three windows: longer than any


def first_window_longer(test: ast.expr, counter: str, first: int) -> bool | None:
    """Whether the first window holds more micro-batches than the others (None: unknown): N is the test's
    number (`i % 32`), else 4 for its names."""
    n = _literal_window(test) or 4
    size = first_window_size(test, counter, first, n)
    return None if size is None else size > n


def _literal_window(test: ast.expr) -> int | None:
    """The window of a test whose only modulus is a number (`i % 32 == 0`): that number; None otherwise."""
    rights = [m.right for m in modulo_operations(test)]
    if len(rights) != 1 or not isinstance(rights[0], ast.Constant) or type(rights[0].value) is not int:
        return None
    return rights[0].value if rights[0].value > 1 else None


def fires_on_most(test: ast.expr, counter: str, first: int) -> bool:
    """Is the test true on all but one of every N micro-batches, for every window size N? (A step in
    the `else` of `if i % N == 0:` then runs N - 1 times per window.)"""
    moduli = {dotted(m.right) for m in modulo_operations(test)} | _compared_names(test, counter)
    for n in range(2, 9):
        env = {name: n for name in moduli if name is not None}
        trues = 0
        for k in range(first, first + n):
            env[counter] = k
            v = _concrete(test, env)
            if v is None:
                return False
            trues += bool(v)
        if trues != n - 1:
            return False
    return True


def modulo_operations(node: ast.AST) -> list[ast.BinOp]:
    """Every `x % y` under `node`, in source order."""
    out: list[ast.BinOp] = []

    class _V:
        def visit_BinOp(self, n: ast.BinOp) -> None:
            if type(n.op) is ast.Mod:
                out.append(n)

    walk(node, _V())
    return out


def _compared_names(test: ast.expr, counter: str) -> set[str]:
    """Names compared with the counter itself (`count == accum`, `step >= n_acc`)."""
    out: set[str] = set()

    class _V:
        def visit_Compare(self, n: ast.Compare) -> None:
            sides = [n.left, *n.comparators]
            if any(dotted(x) == counter for x in sides):
                out.update(d for x in sides if (d := dotted(x)) is not None and d != counter)

    walk(test, _V())
    return out


_ARITHMETIC: dict[type, Callable[[int, int], int | None]] = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.Mod: lambda a, b: a % b if b else None,
    ast.FloorDiv: lambda a, b: a // b if b else None,
}
_COMPARE: dict[type, Callable[[int, int], bool]] = {
    ast.Eq: lambda a, b: a == b,
    ast.NotEq: lambda a, b: a != b,
    ast.Lt: lambda a, b: a < b,
    ast.LtE: lambda a, b: a <= b,
    ast.Gt: lambda a, b: a > b,
    ast.GtE: lambda a, b: a >= b,
}


def _concrete(expr: ast.expr, env: dict[str, int]) -> int | bool | None:
    """Evaluate an integer/boolean test with the names of `env`; None when anything else is needed."""
    kind = type(expr)
    if is_int(expr):
        return expr.value
    if kind in (ast.Name, ast.Attribute):
        name = dotted(expr)
        return env.get(name) if name is not None else None
    if kind is ast.UnaryOp:
        v = _concrete(expr.operand, env)
        if v is None:
            return None
        if type(expr.op) is ast.Not:
            return not v
        if type(expr.op) is ast.USub:
            return -int(v)
        return None
    if kind is ast.BoolOp:
        is_and = type(expr.op) is ast.And
        values = expr.values
        a = _concrete(values[0], env)
        for operand in values[1:]:
            if is_and and a is not None and not a:
                return False
            if not is_and and a:
                return True
            b = _concrete(operand, env)
            a = None if a is None or b is None else bool(b)
        return a if len(values) > 1 or a is None else bool(a)
    if kind is ast.BinOp:
        a, b = _concrete(expr.left, env), _concrete(expr.right, env)
        fn = _ARITHMETIC.get(type(expr.op))
        if a is None or b is None or fn is None:
            return None
        return fn(int(a), int(b))
    if kind is ast.Compare:
        left = _concrete(expr.left, env)
        for op, comparator in zip(expr.ops, expr.comparators):
            right = _concrete(comparator, env)
            test = _COMPARE.get(type(op))
            if left is None or right is None or test is None:
                return None
            if not test(left, right):
                return False
            left = right
        return True
    return None


concrete = _concrete  # what `periods` evaluates a test of a counter with


def _num(v) -> int | None:
    if isinstance(v, tuple) and v[0] in ("int", "res") and v[1] is not None:
        return v[1]
    return None


def _as_bool(v) -> bool | None:
    if isinstance(v, bool):
        return v
    if isinstance(v, tuple) and v[0] in ("int", "res") and v[1] is not None:
        return v[1] != 0
    return None


def grad_existence_test(test: ast.expr) -> bool | None:
    """Return the assumed truth of `p.grad is not None` style tests (grads exist), else None."""
    kind = type(test)
    if kind is ast.BoolOp and type(test.op) is ast.And:
        return kleene(test.values, True, grad_existence_test)
    if kind is ast.Compare and len(test.ops) == 1:
        left = test.left
        op = type(test.ops[0])
        right = test.comparators[0]
        if type(left) is ast.Attribute and left.attr == "grad" and type(right) is ast.Constant and right.value is None:
            if op is ast.IsNot:
                return True
            if op is ast.Is:
                return False
    if kind is ast.Attribute and test.attr in ("requires_grad", "grad"):
        return True
    return None


# -- counter phases --------------------------------------------------------------------------
# A zero-based counter `i` checked against a window `N` is, on each micro-batch, at the first
# position of a window (i % N == 0), at the last ((i + 1) % N == 0), or in between. Tracking that
# phase per path keeps `if i % N == 0: zero_grad()` and `if (i + 1) % N == 0: step()` correlated.
ALL_PHASES = frozenset({FIRST, MID, LAST})
NEXT_PHASE = {FIRST: frozenset({MID, LAST}), MID: frozenset({MID, LAST}), LAST: frozenset({FIRST})}


def modulo_atoms(test: ast.expr) -> list[tuple[str, str]]:
    """(counter, modulus) pairs of `counter % N` comparisons the phase domain understands."""
    out: list[tuple[str, str]] = []
    for node in modulo_operations(test):
        names = counter_names(node.left)
        if names:
            pair = (names[0], code(node.right))
            if pair not in out:
                out.append(pair)
    return out


def phase_truth(test: ast.expr, counter: str, modulus: str, phase: str, start: int = 0,
                cycles: bool = False, floor: int | None = None) -> bool | None:
    """Truth of `test` when `counter` is at `phase` of windows of size `modulus` (None: unknown); the
    windows start at the values of `counter` congruent to `start`, their anchor (`anchors`: the counter's first
    value, 0 for `enumerate(loader)` and 1 for `enumerate(loader, 1)`, unless the module's tests are read in
    another). `(counter + a) % N == r` holds at the first position when `r - a == start`, at the last when
    `r - a == start - 1`. A counter that `cycles` restarts at `start` every `modulus` values
    (`cycle(range(1, N + 1))`): its own value tells the phase (`k == 1` first, `k == N` last). A counter that
    never stands below `floor` (a loop's, from its first value up) decides `counter > k` and the like."""
    kind = type(test)
    if kind is ast.UnaryOp and type(test.op) is ast.Not:
        v = phase_truth(test.operand, counter, modulus, phase, start, cycles, floor)
        return None if v is None else not v
    if kind is ast.BoolOp:
        values = test.values
        if type(test.op) is ast.And:
            # a guard that the object exists (`self.optimizer is not None and (self.step + 1) % N == 0`): where it
            # fails, the branch has nothing to step or clear at any phase, so it does not decide where in the window
            # the branch runs. (A flag is no such guard: `if reset and i % N == 0:` with `reset = False` never clears.)
            about = [v for v in values if reads_any(v, {counter, modulus}) or not _exists_guard(v)]
            values = about or values
        return kleene(values, type(test.op) is ast.And,
                       lambda e: phase_truth(e, counter, modulus, phase, start, cycles, floor))
    if cycles and kind is ast.Compare and len(test.ops) == 1:
        at = _cycle_phase(test, counter, modulus, start) if type(test.ops[0]) in (ast.Eq, ast.NotEq) else None
        if at is not None:
            return (phase == at) == (type(test.ops[0]) is ast.Eq)
        # `i + 1 == len(loader)`, `i < len(sampler) - 1`: the index's own value tells the phase
        truth = index_truth(test, counter, modulus, start, phase)
        if truth is not None:
            return truth
    single = _single_window(test, modulus)
    if single is not None:  # `N == 1`: the phases are those of windows of two or more micro-batches
        return single
    if kind is ast.Compare and len(test.ops) == 1 and type(test.ops[0]) in (ast.Lt, ast.LtE, ast.Gt, ast.GtE) \
            and floor is not None:
        return _above_floor(test, counter, floor)
    if _is_mod(test):  # bare `i % N` used as a truth value: true except where the residue is 0
        zero = residue_shift(test, counter, modulus)
        at = position_phase(-zero - start) if zero is not None else None
        return None if at is None else phase != at
    if kind is ast.Compare and len(test.ops) == 1 and type(test.ops[0]) in (ast.Eq, ast.NotEq):
        offset = residue_offset(test, counter, modulus)
        at = position_phase(offset - start) if offset is not None else None
        if at is None:
            return None
        return (phase == at) == (type(test.ops[0]) is ast.Eq)
    return None


def _single_window(test: ast.expr, modulus: str) -> bool | None:
    """Truth of `N == 1` (`N != 1`) for the window `N` of the phase domain, whose first position is never
    its last: the window holds two micro-batches or more (`if i % N == 1 or N == 1: zero_grad()`, the
    clear of a 1-based counter on each window's first micro-batch, and of every one when N is 1: at a
    phase, only the modulo test decides). None: another test."""
    if type(test) is not ast.Compare or len(test.ops) != 1 or type(test.ops[0]) not in (ast.Eq, ast.NotEq):
        return None
    left, right = test.left, test.comparators[0]
    if is_int(left, 1):
        left, right = right, left
    if not is_int(right, 1) or code(left).replace(" ", "") != modulus.replace(" ", ""):
        return None
    return type(test.ops[0]) is ast.NotEq


def _cycle_phase(test: ast.Compare, counter: str, modulus: str, start: int) -> str | None:
    """The phase at which a cycling counter equals the other side of `test`: its first value (`start`) is the
    first position, `start + N - 1` (`N` from 1, `N - 1` from 0) the last; None: another value or side."""
    left, right = test.left, test.comparators[0]
    if dotted(right) == counter:
        left, right = right, left
    if dotted(left) != counter:
        return None
    if is_int(right, start):
        return FIRST
    last = modulus if start == 1 else f"{modulus} - 1" if start == 0 else None
    if last is not None and code(right).replace(" ", "") == last.replace(" ", ""):
        return LAST
    if start == 0 and last_of_strided(right, modulus):  # `j == (n // b - 1) * b` of `range(0, n, b)`
        return LAST
    return None


def position_phase(position: int) -> str | None:
    """The phase of a counter `position` micro-batches past its windows' anchor, for every window size N >= 2:
    0 -> first, -1 (N - 1) -> last; any other position is the first, a middle or the last one depending on N."""
    return {0: FIRST, -1: LAST}.get(position)


def residue_shift(expr: ast.expr, counter: str, modulus: str) -> int | None:
    """`a` of `(counter + a) % N` (`counter % N`: 0, `(counter - 1) % N`: -1); None: another expression."""
    if not _is_mod(expr) or code(expr.right) != modulus:
        return None
    left = expr.left
    if isinstance(left, (ast.Name, ast.Attribute)) and dotted(left) == counter:
        return 0
    if type(left) is ast.BinOp and type(left.op) in (ast.Add, ast.Sub) and dotted(left.left) == counter and is_int(left.right):
        return left.right.value if type(left.op) is ast.Add else -left.right.value
    return None


def residue_offset(test: ast.Compare, counter: str, modulus: str) -> int | None:
    """For `(counter + a) % N == r` (either side), the residue of `counter` itself modulo N, as an integer
    that holds for every N: `r - a`; `r` may be a literal or `N - k` (-k). None: another comparison."""
    if len(test.ops) != 1:
        return None
    for mod, other in ((test.left, test.comparators[0]), (test.comparators[0], test.left)):
        shift = residue_shift(mod, counter, modulus)
        if shift is None:
            continue
        if is_int(other):
            return int(other.value) - shift
        if type(other) is ast.BinOp and type(other.op) is ast.Sub and code(other.left) == modulus \
                and is_int(other.right):
            return -int(other.right.value) - shift
        return None
    return None


def _above_floor(test: ast.Compare, counter: str, floor: int) -> bool | None:
    """`counter > k` (`>=`, `<`, `<=`; either side) of a counter that never stands below `floor`: decided when
    every value from `floor` up gives the same answer (Ignite's `iteration > 0`, from 1)."""
    left, right, op = test.left, test.comparators[0], type(test.ops[0])
    if dotted(right) == counter and is_int(left):
        left, right, op = right, left, {ast.Lt: ast.Gt, ast.LtE: ast.GtE, ast.Gt: ast.Lt, ast.GtE: ast.LtE}[op]
    if dotted(left) != counter or not is_int(right):
        return None
    k = int(right.value)
    if op is ast.Gt:
        return True if floor > k else None
    if op is ast.GtE:
        return True if floor >= k else None
    if op is ast.Lt:
        return False if floor >= k else None
    return False if floor > k else None


def remainder_gate(test: ast.expr) -> tuple[str, str] | None:
    """`x % N == r` with a literal r >= 1 and an N that is not a literal: (the test, N). With N = 1 the
    remainder is always 0, so the test is never true."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)):
        return None
    for mod, rest in ((test.left, test.comparators[0]), (test.comparators[0], test.left)):
        if _is_mod(mod) and not is_int(mod.right) and is_int(rest) and rest.value >= 1:
            return code(test), code(mod.right)
    return None


# `W > 1` is false, `W == 1` true...: the arm of a test of a window size `W` where it is 1, by operator
# (the window on the left; a window of 0 or less would divide by zero, so it is taken to be 1).
_UNIT_ARM = {ast.Gt: (1, False), ast.GtE: (2, False), ast.NotEq: (1, False), ast.Eq: (1, True), ast.LtE: (1, True), ast.Lt: (2, True)}
_MIRRORED = {ast.Gt: ast.Lt, ast.GtE: ast.LtE, ast.Lt: ast.Gt, ast.LtE: ast.GtE, ast.Eq: ast.Eq, ast.NotEq: ast.NotEq}


def unit_window(test: ast.expr) -> tuple[str, bool] | None:
    """A test of a window size against 1 (`if config.ACCUMULATION_STEPS > 1:`): (the size's text, the
    truth of the test in the arm where the size is 1), else None."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
        return None
    op, left, right = type(test.ops[0]), test.left, test.comparators[0]
    if is_int(left) and not is_int(right):
        op, left, right = _MIRRORED.get(op), right, left  # type: ignore[assignment]
    arm = _UNIT_ARM.get(op)
    if arm is None or not is_int(right) or right.value != arm[0] or dotted(left) is None:
        return None
    return code(left), arm[1]


def unit_truth(test: ast.expr, window: str) -> bool | None:
    """The truth of `test` when the window size `window` is 1: every `x % window` is 0 (None: unknown)."""
    kind = type(test)
    if kind is ast.UnaryOp and type(test.op) is ast.Not:
        v = unit_truth(test.operand, window)
        return None if v is None else not v
    if kind is ast.BoolOp:
        return kleene(test.values, type(test.op) is ast.And, lambda e: unit_truth(e, window))
    if _is_mod(test) and code(test.right) == window:
        return False  # `if i % N:`
    if kind is ast.Compare and len(test.ops) == 1:
        sides = (test.left, test.comparators[0])
        for mod, other, flipped in ((sides[0], sides[1], False), (sides[1], sides[0], True)):
            if _is_mod(mod) and code(mod.right) == window and is_int(other):
                a, b = (other.value, 0) if flipped else (0, other.value)
                return _compare(type(test.ops[0]), a, b)
    return None


def _compare(op: type, a: int, b: int) -> bool | None:
    return {ast.Eq: a == b, ast.NotEq: a != b, ast.Lt: a < b, ast.LtE: a <= b, ast.Gt: a > b, ast.GtE: a >= b}.get(op)
