"""Branch conditions: stable keys for path sensitivity, and the shapes accumulation gates take."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import libcst as cst

from .names import dotted
from .walk import walk

_COUNTER_NAME = re.compile(r"(?:^|_)(?:i|it|idx|step|steps|iter|iters|iteration|batch_idx|batch_i|count|counter|n|k|j|micro|accum|num|global_step)(?:_|$)|step|iter|idx|count|accum|micro|batch", re.I)

_module = cst.Module(body=[])


# code() of the nodes of the file being analysed; generating code is costly and the interpreter asks for
# the same nodes' text on every loop iteration. Holding the node keeps its id from being reused.
_CODE: dict[int, tuple[cst.CSTNode, str]] = {}
_CODE_LIMIT = 100_000


def code(node: cst.CSTNode) -> str:
    """Source text of a node, whitespace-normalised."""
    hit = _CODE.get(id(node))
    if hit is not None and hit[0] is node:
        return hit[1]
    simple = _simple_code(node)
    if simple is not None:
        return simple
    if len(_CODE) >= _CODE_LIMIT:
        _CODE.clear()
    text = " ".join(_module.code_for_node(node).split())
    _CODE[id(node)] = (node, text)
    return text


def _simple_code(node: cst.CSTNode) -> str | None:
    """The text of a name, a dotted name or a number written without spaces or parentheses, or None."""
    if isinstance(node, cst.Name):
        return None if node.lpar else node.value
    if isinstance(node, cst.Attribute):
        if node.lpar or not _tight(node.dot):
            return None
        head = _simple_code(node.value)
        return None if head is None else f"{head}.{node.attr.value}"
    if isinstance(node, (cst.Integer, cst.Float)):
        return None if node.lpar else node.value
    return None


def _tight(dot: cst.Dot) -> bool:
    before, after = dot.whitespace_before, dot.whitespace_after
    return isinstance(before, cst.SimpleWhitespace) and not before.value and isinstance(after, cst.SimpleWhitespace) and not after.value


def forget_code() -> None:
    """Drop the cached texts (called when a file's analysis ends, so its tree can be freed)."""
    _CODE.clear()


def strip_parens(expr: cst.BaseExpression) -> cst.BaseExpression:
    if getattr(expr, "lpar", None):
        return expr.with_changes(lpar=[], rpar=[])
    return expr


@dataclass
class Condition:
    """One branch condition met by the analysis (an `if` or `while` test)."""

    id: int
    statement: cst.CSTNode
    test: cst.BaseExpression
    key: str
    names: frozenset[str]
    moduli: tuple[str, ...]          # N of every `x % N` in the test
    counters: tuple[str, ...]        # x of every `x % N`, or the counter of `count == N`
    compared_to: tuple[str, ...]     # N of `count == N` / `count >= N`
    mentions_sync: bool              # accelerate's `sync_gradients`
    early_exit: bool = False          # `if ...: continue` guards what follows it
    akey: int = 0                     # assumption key: the same test text shares one
    # Truth of the test on the first micro-batch when its counter starts at zero (None: unknown).
    first_value: bool | None = None
    counter_sources: dict[str, str] = field(default_factory=dict)
    # The first window is not N micro-batches for any N (`enumerate(loader, 1)` with `(i + 1) % N`).
    short_first_window: bool = False
    long_first_window: bool = False  # ... because it holds more than N (`if i > 0 and i % N == 0:`)
    counter_starts: dict[str, int] = field(default_factory=dict)

    @property
    def is_accumulation_gate(self) -> bool:
        return bool(self.moduli or self.compared_to or self.mentions_sync)

    @property
    def window(self) -> str | None:
        """Source text of the accumulation window size, if the test names one."""
        if self.moduli:
            return self.moduli[0]
        if self.compared_to:
            return self.compared_to[0]
        return None


def names_in(expr: cst.CSTNode) -> frozenset[str]:
    out: set[str] = set()

    class V(cst.CSTVisitor):
        def visit_Name(self, node: cst.Name) -> None:
            out.add(node.value)

        def visit_Attribute(self, node: cst.Attribute) -> None:
            d = dotted(node)
            if d:
                out.add(d)

    walk(expr, V())
    return frozenset(out)


def analyse_test(cid: int, statement: cst.CSTNode, test: cst.BaseExpression, alias: str | None = None) -> Condition:
    moduli: list[str] = []
    counters: list[str] = []
    compared: list[str] = []
    sync = False

    class V(cst.CSTVisitor):
        def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
            if isinstance(node.operator, cst.Modulo):
                moduli.append(code(strip_parens(node.right)))
                for n in _counter_names(node.left):
                    counters.append(n)

        def visit_Comparison(self, node: cst.Comparison) -> None:
            left = strip_parens(node.left)
            if any(isinstance(t.operator, (cst.Equal, cst.GreaterThanEqual, cst.GreaterThan)) for t in node.comparisons):
                if not _has_modulo(node) and isinstance(left, (cst.Name, cst.Attribute)):
                    name = dotted(left) or ""
                    right = strip_parens(node.comparisons[0].comparator)
                    if _COUNTER_NAME.search(name.rsplit(".", 1)[-1]) and not isinstance(right, (cst.Integer,)) or (
                        _COUNTER_NAME.search(name.rsplit(".", 1)[-1]) and isinstance(right, cst.Integer) and int(right.value) > 1
                    ):
                        if not _mentions_len(right):
                            compared.append(code(right))
                            counters.append(name)

        def visit_Attribute(self, node: cst.Attribute) -> None:
            nonlocal sync
            if node.attr.value == "sync_gradients":
                sync = True

    walk(test, V())
    return Condition(
        id=cid,
        statement=statement,
        test=test,
        key=alias or code(test),
        names=names_in(test) | ({alias} if alias else frozenset()),
        moduli=tuple(moduli),
        counters=tuple(counters),
        compared_to=tuple(compared),
        mentions_sync=sync,
        early_exit=_exits_early(statement),
    )


def _exits_early(statement: cst.CSTNode) -> bool:
    """`if ...: continue` (the micro-batch skips the rest of the iteration, e.g. the step)."""
    if not isinstance(statement, cst.If):
        return False
    body = statement.body.body
    last = body[-1] if body else None
    if isinstance(last, cst.SimpleStatementLine) and last.body:
        return isinstance(last.body[-1], cst.Continue)
    return False


def _has_modulo(node: cst.CSTNode) -> bool:
    found = False

    class V(cst.CSTVisitor):
        def visit_BinaryOperation(self, n: cst.BinaryOperation) -> None:
            nonlocal found
            if isinstance(n.operator, cst.Modulo):
                found = True

    walk(node, V())
    return found


def _mentions_len(node: cst.CSTNode) -> bool:
    return "len(" in code(node) or "size" in code(node) or "shape" in code(node)


def _counter_names(expr: cst.BaseExpression) -> list[str]:
    expr = strip_parens(expr)
    if isinstance(expr, (cst.Name, cst.Attribute)):
        d = dotted(expr)
        return [d] if d else []
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, (cst.Add, cst.Subtract)):
        return _counter_names(expr.left)
    return []


# -- three-valued evaluation of a test on the first micro-batch ------------------------------

_U = None  # unknown


def truth_at_zero(test: cst.BaseExpression, counter: str) -> bool | None:
    """Evaluate `test` with `counter == 0` and every modulus an unknown N >= 2."""
    v = _eval(test, counter)
    if isinstance(v, bool):
        return v
    if isinstance(v, tuple):  # a residue used as a truth value
        return v[1] != 0 if v[0] == "res" and v[1] is not None else None
    return None


def _eval(expr: cst.BaseExpression, counter: str):  # noqa: C901 - a small interpreter
    expr = strip_parens(expr)
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Not):
        v = _eval(expr.expression, counter)
        if isinstance(v, tuple) and v[0] == "res":
            return None if v[1] is None else v[1] == 0
        return (not v) if isinstance(v, bool) else _U
    if isinstance(expr, cst.BooleanOperation):
        a = _as_bool(_eval(expr.left, counter))
        b = _as_bool(_eval(expr.right, counter))
        if isinstance(expr.operator, cst.And):
            if a is False or b is False:
                return False
            return True if a is True and b is True else _U
        if a is True or b is True:
            return True
        return False if a is False and b is False else _U
    if isinstance(expr, (cst.Name, cst.Attribute)) and dotted(expr) == counter:
        return ("int", 0)
    if isinstance(expr, cst.Integer):
        return ("int", int(expr.value, 0))
    if isinstance(expr, cst.BinaryOperation):
        left = _eval(expr.left, counter)
        right = _eval(expr.right, counter)
        if isinstance(expr.operator, cst.Modulo):
            if isinstance(left, tuple) and left[0] == "int" and left[1] is not None:
                if isinstance(right, tuple) and right[0] == "int" and right[1]:
                    return ("res", left[1] % right[1])
                # unknown modulus N >= 2: 0 % N == 0, 1 % N == 1
                return ("res", left[1] if 0 <= left[1] <= 1 else None)
            return _U
        if isinstance(expr.operator, (cst.Add, cst.Subtract)):
            if isinstance(left, tuple) and isinstance(right, tuple) and left[1] is not None and right[1] is not None and left[0] == right[0] == "int":
                return ("int", left[1] + right[1] if isinstance(expr.operator, cst.Add) else left[1] - right[1])
            # N - 1 with N >= 2 is at least 1
            if isinstance(expr.operator, cst.Subtract) and isinstance(right, tuple) and right == ("int", 1) and left is _U:
                return ("atleast", 1)
            return _U
        return _U
    if isinstance(expr, cst.Comparison) and len(expr.comparisons) == 1:
        op = expr.comparisons[0].operator
        left = _eval(expr.left, counter)
        right = _eval(expr.comparisons[0].comparator, counter)
        lv = _num(left)
        rv = _num(right)
        if isinstance(op, (cst.Equal, cst.NotEqual)):
            eq: bool | None = None
            if lv is not None and rv is not None:
                eq = lv == rv
            elif lv is not None and isinstance(right, tuple) and right[0] == "atleast" and lv < right[1]:
                eq = False
            elif rv is not None and isinstance(left, tuple) and left[0] == "atleast" and rv < left[1]:
                eq = False
            if eq is None:
                return _U
            return eq if isinstance(op, cst.Equal) else not eq
        if lv is not None and rv is not None:
            if isinstance(op, cst.GreaterThan):
                return lv > rv
            if isinstance(op, cst.GreaterThanEqual):
                return lv >= rv
            if isinstance(op, cst.LessThan):
                return lv < rv
            if isinstance(op, cst.LessThanEqual):
                return lv <= rv
        if isinstance(left, tuple) and left == ("int", 0) and isinstance(op, cst.GreaterThan):
            return False  # counter > anything non-negative, at zero
        return _U
    return _U


def first_window(test: cst.BaseExpression, counter: str, first: int) -> bool | None:
    """Does the step test accumulate a first window of exactly N micro-batches?

    `first` is the counter's value on the first micro-batch (0 for `enumerate(loader)`, 1 for
    `enumerate(loader, 1)` or a counter incremented before the test). Every name that is the right
    operand of `%`, or is compared with the counter, stands for the window size N; the test is run for
    N = 2..8 and counter values first, first + 1, ... True: the first window is N for every N; False:
    for none; None: it depends on N, on other names, or the test is not understood.
    """
    results = set()
    for n in range(2, 9):
        size = first_window_size(test, counter, first, n)
        if size is None:
            return None
        results.add(size == n)
    return results.pop() if len(results) == 1 else None


def first_window_size(test: cst.BaseExpression, counter: str, first: int, n: int) -> int | None:
    """How many micro-batches the first window holds when the window size is `n` (None: unknown)."""
    moduli = {dotted(strip_parens(m.right)) for m in _modulos(test)} | _compared_names(test, counter)
    env = {name: n for name in moduli if name is not None}
    for k in range(first, first + 3 * n):
        env[counter] = k
        v = _concrete(test, env)
        if v is None:
            return None
        if v:
            return k - first + 1
    return 3 * n + 1  # not within three windows: longer than any


def _modulos(node: cst.CSTNode) -> list[cst.BinaryOperation]:
    out: list[cst.BinaryOperation] = []

    class _V(cst.CSTVisitor):
        def visit_BinaryOperation(self, n: cst.BinaryOperation) -> None:
            if isinstance(n.operator, cst.Modulo):
                out.append(n)

    walk(node, _V())
    return out


def _compared_names(test: cst.BaseExpression, counter: str) -> set[str]:
    """Names compared with the counter itself (`count == accum`, `step >= n_acc`)."""
    out: set[str] = set()

    class _V(cst.CSTVisitor):
        def visit_Comparison(self, n: cst.Comparison) -> None:
            sides = [strip_parens(n.left)] + [strip_parens(c.comparator) for c in n.comparisons]
            if any(dotted(x) == counter for x in sides):
                out.update(d for x in sides if (d := dotted(x)) is not None and d != counter)

    walk(test, _V())
    return out


def _concrete(expr: cst.BaseExpression, env: dict[str, int]) -> int | bool | None:  # noqa: C901 - a small evaluator
    """Evaluate an integer/boolean test with the names of `env`; None when anything else is needed."""
    expr = strip_parens(expr)
    if isinstance(expr, cst.Integer):
        return int(expr.value, 0)
    if isinstance(expr, (cst.Name, cst.Attribute)):
        name = dotted(expr)
        return env.get(name) if name is not None else None
    if isinstance(expr, cst.UnaryOperation):
        v = _concrete(expr.expression, env)
        if v is None:
            return None
        if isinstance(expr.operator, cst.Not):
            return not v
        if isinstance(expr.operator, cst.Minus):
            return -int(v)
        return None
    if isinstance(expr, cst.BooleanOperation):
        a = _concrete(expr.left, env)
        if isinstance(expr.operator, cst.And):
            if a is not None and not a:
                return False
            b = _concrete(expr.right, env)
            return None if a is None or b is None else bool(b)
        if a:
            return True
        b = _concrete(expr.right, env)
        return None if a is None or b is None else bool(b)
    if isinstance(expr, cst.BinaryOperation):
        a, b = _concrete(expr.left, env), _concrete(expr.right, env)
        if a is None or b is None:
            return None
        a, b = int(a), int(b)
        op = expr.operator
        if isinstance(op, cst.Add):
            return a + b
        if isinstance(op, cst.Subtract):
            return a - b
        if isinstance(op, cst.Multiply):
            return a * b
        if isinstance(op, cst.Modulo):
            return a % b if b else None
        if isinstance(op, cst.FloorDivide):
            return a // b if b else None
        return None
    if isinstance(expr, cst.Comparison):
        left = _concrete(expr.left, env)
        for comp in expr.comparisons:
            right = _concrete(comp.comparator, env)
            if left is None or right is None:
                return None
            op = comp.operator
            if isinstance(op, cst.Equal):
                ok = left == right
            elif isinstance(op, cst.NotEqual):
                ok = left != right
            elif isinstance(op, cst.LessThan):
                ok = left < right
            elif isinstance(op, cst.LessThanEqual):
                ok = left <= right
            elif isinstance(op, cst.GreaterThan):
                ok = left > right
            elif isinstance(op, cst.GreaterThanEqual):
                ok = left >= right
            else:
                return None
            if not ok:
                return False
            left = right
        return True
    return None


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


def grad_existence_test(test: cst.BaseExpression) -> bool | None:
    """Return the assumed truth of `p.grad is not None` style tests (grads exist), else None."""
    test = strip_parens(test)
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
        left = grad_existence_test(test.left)
        right = grad_existence_test(test.right)
        if left is not None and right is not None:
            return left and right
        if left is False or right is False:
            return False
        return None
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        left = strip_parens(test.left)
        comp = test.comparisons[0]
        if isinstance(left, cst.Attribute) and left.attr.value == "grad" and isinstance(comp.comparator, cst.Name) and comp.comparator.value == "None":
            if isinstance(comp.operator, cst.IsNot):
                return True
            if isinstance(comp.operator, cst.Is):
                return False
    if isinstance(test, cst.Attribute) and test.attr.value in ("requires_grad", "grad"):
        return True
    return None


# -- counter phases --------------------------------------------------------------------------
# A zero-based counter `i` checked against a window `N` is, on each micro-batch, at the first
# position of a window (i % N == 0), at the last ((i + 1) % N == 0), or in between. Tracking that
# phase per path keeps `if i % N == 0: zero_grad()` and `if (i + 1) % N == 0: step()` correlated.
FIRST, MID, LAST = "first", "mid", "last"
ALL_PHASES = frozenset({FIRST, MID, LAST})
NEXT_PHASE = {FIRST: frozenset({MID, LAST}), MID: frozenset({MID, LAST}), LAST: frozenset({FIRST})}


def modulo_atoms(test: cst.BaseExpression) -> list[tuple[str, str]]:
    """(counter, modulus) pairs of `counter % N` comparisons the phase domain understands."""
    out: list[tuple[str, str]] = []

    class V(cst.CSTVisitor):
        def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
            if isinstance(node.operator, cst.Modulo):
                names = _counter_names(node.left)
                if names:
                    pair = (names[0], code(strip_parens(node.right)))
                    if pair not in out:
                        out.append(pair)

    walk(test, V())
    return out


def phase_truth(test: cst.BaseExpression, counter: str, modulus: str, phase: str) -> bool | None:
    """Truth of `test` when `counter` is at `phase` of windows of size `modulus` (None: unknown)."""
    test = strip_parens(test)
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        v = phase_truth(test.expression, counter, modulus, phase)
        return None if v is None else not v
    if isinstance(test, cst.BooleanOperation):
        a = phase_truth(test.left, counter, modulus, phase)
        b = phase_truth(test.right, counter, modulus, phase)
        if isinstance(test.operator, cst.And):
            if a is False or b is False:
                return False
            return True if a is True and b is True else None
        if a is True or b is True:
            return True
        return False if a is False and b is False else None
    residue = _residue_phase(test, counter, modulus)
    if residue is not None:  # bare `i % N` used as a truth value: true unless at the first position
        return phase != residue if residue == FIRST else None
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        comp = test.comparisons[0]
        left, right = strip_parens(test.left), strip_parens(comp.comparator)
        target = _residue_phase(left, counter, modulus)
        other = right
        if target is None:
            target = _residue_phase(right, counter, modulus)
            other = left
        if target is None:
            return None
        at = _phase_of_value(target, other, modulus)
        if at is None:
            return None
        if isinstance(comp.operator, cst.Equal):
            return phase == at
        if isinstance(comp.operator, cst.NotEqual):
            return phase != at
    return None


def _residue_phase(expr: cst.BaseExpression, counter: str, modulus: str) -> str | None:
    """For `(counter + a) % N`, the phase at which it is zero: a=0 -> first, a=1 -> last."""
    expr = strip_parens(expr)
    if not (isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Modulo)):
        return None
    if code(strip_parens(expr.right)) != modulus:
        return None
    left = strip_parens(expr.left)
    if isinstance(left, (cst.Name, cst.Attribute)) and dotted(left) == counter:
        return FIRST
    if (
        isinstance(left, cst.BinaryOperation)
        and isinstance(left.operator, cst.Add)
        and dotted(strip_parens(left.left)) == counter
        and isinstance(left.right, cst.Integer)
        and left.right.value == "1"
    ):
        return LAST
    return None


def _phase_of_value(zero_phase: str, value: cst.BaseExpression, modulus: str) -> str | None:
    """Phase at which `(counter + a) % N == value` holds, given the phase where the residue is 0."""
    value = strip_parens(value)
    if isinstance(value, cst.Integer) and value.value == "0":
        return zero_phase
    if zero_phase == FIRST and code(value).replace(" ", "") == f"{modulus}-1".replace(" ", ""):
        return LAST
    return None
