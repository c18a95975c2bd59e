"""Branch conditions: stable keys for path sensitivity, and the shapes accumulation gates take."""

from __future__ import annotations

import ast
from collections.abc import Mapping
from dataclasses import dataclass, field

from .conventions import convention
from .names import NON_FINITE, dotted
from .pathcond import Atom
from .resets import ResetWindow
from .syntax import code, forget_code, is_int
from .walk import breadth_first, walk
from .window_arithmetic import counter_names, modulo_operations

__all__ = ["Condition", "analyse_test", "code", "forget_code", "names_in"]

_COUNTER_NAME = convention("counter")


@dataclass
class Condition:
    """One branch condition met by the analysis (an `if` or `while` test)."""

    id: int
    statement: ast.stmt
    test: ast.expr
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
    false_on_most: bool = False  # false on N - 1 of every N micro-batches (a step in its `else` runs N - 1 times)
    true_on_most: bool = False  # true on N - 1 of every N (`if i % N:`, `if i % N != 0:`: a step in its body)
    counter_starts: dict[str, int] = field(default_factory=dict)
    # A framework's window boundary (`accelerator.sync_gradients`, a gated `engine.step()`): the
    # window it counts (source text; None when not named), set when the test reads a gate flag.
    framework_gate: bool = False
    framework_window: str | None = None
    # Its truth changes from one iteration to the next (a window gate, a framework boundary): what a
    # path assumed of it in one iteration says nothing of the next.
    volatile: bool = False
    # The window's counter counts what each micro-batch holds (`seen += x.size(0)` ... `if seen >= total:`):
    # the increment's text; the window is `compared_to` samples (or tokens), not micro-batches.
    unit: str | None = None
    # The test read as a literal over a normalised atom (`pathcond`): paths remember the atom's truth
    # under `akey`, and the test holds when that truth equals `polarity`.
    atom: Atom | None = None
    polarity: bool = True
    # A caller's gate standing for a step method's flag parameter (`project.caller_gates`): where it was
    # read (`../train.py:347`); the method is linked to that call by its name only.
    caller: str | None = None
    # The windows of a counter the loop resets or counts down, run from its statements (`resets`).
    reset: ResetWindow | None = None

    @property
    def is_accumulation_gate(self) -> bool:
        return bool(self.moduli or self.compared_to or self.mentions_sync or self.framework_gate or self.reset)

    @property
    def window(self) -> str | None:
        """Source text of the accumulation window size, if the test names one."""
        if self.moduli:
            return self.moduli[0]
        if self.compared_to:
            return self.compared_to[0]
        if self.reset is not None:
            return self.reset.window
        return self.framework_window


def names_in(expr: ast.AST) -> frozenset[str]:
    """Every name a test mentions: plain names, dotted names, attribute and keyword names."""
    out: set[str] = set()

    class V:
        def visit_Name(self, node: ast.Name) -> None:
            out.add(node.id)

        def visit_Attribute(self, node: ast.Attribute) -> None:
            out.add(node.attr)
            d = dotted(node)
            if d:
                out.add(d)

        def visit_keyword(self, node: ast.keyword) -> None:
            if node.arg:
                out.add(node.arg)

    walk(expr, V())
    return frozenset(out)


def _is_mod(node: ast.AST) -> bool:
    return type(node) is ast.BinOp and type(node.op) is ast.Mod


def test_key(test: ast.expr) -> str:
    """The text a test is remembered by: its code, with the parts of `and`/`or` in one order, so that
    `stage == "jt" or stage == "lw"` and `stage == "lw" or stage == "jt"` are one fact (CoFi's fixed
    trainer unscales under the one and updates the scaler under the other)."""
    if isinstance(test, ast.BoolOp):
        joiner = " and " if isinstance(test.op, ast.And) else " or "
        parts = (f"({test_key(v)})" if isinstance(v, ast.BoolOp) else test_key(v) for v in test.values)
        return joiner.join(sorted(parts))
    return code(test)


def analyse_test(cid: int, statement: ast.stmt, test: ast.expr, alias: str | None = None,
                 sample_counters: Mapping[str, str] | None = None) -> Condition:
    """What a branch test says of windows; `sample_counters` are the counters incremented by what a
    micro-batch holds (`prescan`): a comparison of one of them is a window counted in samples."""
    moduli: list[str] = []
    counters: list[str] = []
    compared: list[str] = []
    units: list[str] = []
    sync = False

    class V:
        def visit_BinOp(self, node: ast.BinOp) -> None:
            if type(node.op) is ast.Mod:
                moduli.append(code(node.right))
                for n in counter_names(node.left):
                    counters.append(n)

        def visit_Compare(self, node: ast.Compare) -> None:
            left = node.left
            if any(isinstance(op, (ast.Eq, ast.GtE, ast.Gt)) for op in node.ops):
                if not _has_modulo(node) and isinstance(left, (ast.Name, ast.Attribute)):
                    name = dotted(left) or ""
                    right = node.comparators[0]
                    if sample_counters and name in sample_counters:
                        compared.append(code(right))  # `if steps_accum >= optim_batch_size:`
                        counters.append(name)
                        units.append(sample_counters[name])
                        return
                    counterish = _COUNTER_NAME.search(name.rsplit(".", 1)[-1])
                    above_one = isinstance(right, ast.Constant) and isinstance(right.value, int) and right.value > 1
                    if counterish and (not is_int(right) or above_one):
                        if not _mentions_len(right):
                            compared.append(code(right))
                            counters.append(name)
                            units.append("")
                elif not _has_modulo(node) and (since := micro_batches_since_mark(left, statement)) is not None:
                    # `if ni - last_opt_step >= accumulate:` ... `last_opt_step = ni`: the micro-batches since the
                    # last step, a window counter the step restarts (ultralytics' trainers)
                    right = node.comparators[0]
                    if not _mentions_len(right) and not (isinstance(right, ast.Constant) and isinstance(right.value, int)
                                                         and right.value <= 1):
                        compared.append(code(right))
                        counters.append(since)
                        units.append("")

        def visit_Attribute(self, node: ast.Attribute) -> None:
            nonlocal sync
            if node.attr == "sync_gradients":
                sync = True

    walk(test, V())
    if compared and NON_FINITE.search(code(test)):
        # `has_bad_grad = not isfinite(norm) or (step >= warmup and norm > spike)`: a test that skips a step
        # on a bad gradient compares a counter with a warm-up, not with a window size
        compared = []
    return Condition(
        id=cid,
        statement=statement,
        test=test,
        key=alias or test_key(test),
        names=names_in(test) | ({alias} if alias else frozenset()),
        moduli=tuple(moduli),
        counters=tuple(counters),
        compared_to=tuple(compared),
        mentions_sync=sync,
        early_exit=_exits_early(statement),
        volatile=bool(moduli or compared or sync),
        # the window the first comparison names is counted in samples (`if seen >= 50 or steps == 8:`)
        unit=units[0] or None if units and len(units) == len(compared) and not moduli else None,
    )


def micro_batches_since_mark(left: ast.expr, statement: ast.stmt) -> str | None:
    """`ni - last_opt_step` where the branch of `statement` marks the position, `last_opt_step = ni`: the count
    of micro-batches since the last time the branch ran, restarted by it (the counter `ni` it is read from)."""
    if not (type(left) is ast.BinOp and type(left.op) is ast.Sub):
        return None
    counter, mark = dotted(left.left), dotted(left.right)
    if counter is None or mark is None or type(statement) is not ast.If:
        return None
    for node in (n for part in statement.body for n in breadth_first(part)):
        if type(node) is ast.Assign and len(node.targets) == 1 and dotted(node.targets[0]) == mark \
                and dotted(node.value) == counter:
            return counter
    return None


def _exits_early(statement: ast.stmt) -> bool:
    """`if ...: continue` (the micro-batch skips the rest of the iteration, e.g. the step)."""
    return type(statement) is ast.If and bool(statement.body) and type(statement.body[-1]) is ast.Continue


def _has_modulo(node: ast.AST) -> bool:
    return bool(modulo_operations(node))


def _mentions_len(node: ast.AST) -> bool:
    text = code(node)
    return "len(" in text or "size" in text or "shape" in text
