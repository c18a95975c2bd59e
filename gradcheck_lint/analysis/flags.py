"""Boolean flags a training loop keeps across iterations, followed per path.

    should_start_update = True
    for idx, batch in enumerate(loader):
        if should_start_update:
            optimizer.zero_grad()            # once per update
            should_start_update = False
        (loss / n).backward()
        if (idx + 1) % n:
            continue
        optimizer.step()
        should_start_update = True           # the next micro-batch starts a new window

The environment keeps one value per name for all paths, so after the first iteration the flag is
"True or False" and the clear looked as if it could run on any micro-batch (mmf's training loop: a
false GL002, and a false GL001 on the path that skipped it). A *literal flag* is a plain name that a
function only ever assigns `True` or `False` and tests bare (`if flag:`, `if not flag:`): each path
state carries its value (a phase keyed `@flag:<name>`), set at every assignment and read at every test,
so the path that stepped starts the next iteration with the flag set.

A flag set under an accumulation gate is that gate's verdict carried to a later test:

    for batch in loader:
        count += 1
        if count >= model.accum_iters:       # the gate
            count = 0
            apply_gradient = True
        else:
            apply_gradient = False
        model.optimize_parameters(batch, apply_gradient)   # steps `if apply_gradient:`

A flag handed bare to a call is followed too: the callee's parameter holds the caller's flag (its
value says so, `Value.flag`), and its test splits the paths the same way. The branch a true flag takes
is guarded, for the rules, by the gates it was set under (`gates_of`), so a step there is the window's
step, with the gate's window size (GL003, GL004) and its counter.

A list that stands for "something ran" is such a flag too (its emptiness):

    grads = []
    if train_d:
        grads = d_grads()                    # clears, backward
    if len(grads) > 0:                       # only where the pass ran
        d_optimizer.step()

`grads = []` sets it false, `grads.append(x)` true, any other assignment leaves it unknown; `if grads:`,
`if len(grads) > 0:`, `if not grads:`, `if len(grads) == 0:` test it (HyperGAN's alternating trainer: the
path that skipped the pass and stepped anyway, read as possible, gave a false GL001).
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from .flow import Flow, Function
from .gradstate import PathState
from .names import last_name
from .walk import breadth_first, child_nodes

PREFIX = "@flag:"


def literal_flags(fn: Function | ast.Module, touches: Callable[[str], bool]) -> frozenset[str]:
    """Names `fn` (a function, or a module's top level) assigns only literal booleans, at least once inside a
    loop, and tests bare in an `if` whose body calls something `touches` says can touch gradients (a clear, a
    step, a method that clears): only such flags are worth keeping paths apart for (a flag that reloads an
    RNG state would only multiply the paths)."""
    hit: frozenset[str] | None = getattr(fn, "_literal_flags", None)  # kept on the node: freed with its tree
    if hit is not None:
        return hit
    literal: set[str] = set()
    other: set[str] = set()
    in_loop: set[str] = set()
    tested: set[str] = set()

    def visit(node: ast.AST, looped: bool) -> None:
        for child in child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
                continue
            if isinstance(child, ast.Assign):
                is_bool = isinstance(child.value, ast.Constant) and isinstance(child.value.value, bool)
                for t in child.targets:
                    if isinstance(t, ast.Name):
                        (literal if is_bool else other).add(t.id)
                        if looped:
                            in_loop.add(t.id)
            elif isinstance(child, ast.Name) and not isinstance(child.ctx, ast.Load) and not isinstance(node, ast.Assign):
                other.add(child.id)  # a loop target, `x += 1`, `with ... as x`, an annotated or walrus store
            elif isinstance(child, ast.Call):  # `model.update(batch, apply_gradient)`: tested in the callee
                for arg in (*child.args, *(k.value for k in child.keywords)):
                    if isinstance(arg, ast.Name):
                        tested.add(arg.id)
            elif isinstance(child, ast.If):
                test = child.test.operand if isinstance(child.test, ast.UnaryOp) and isinstance(child.test.op, ast.Not) else child.test
                if isinstance(test, ast.Name) and _guards_gradient_calls(child, touches):
                    tested.add(test.id)
            visit(child, looped or isinstance(child, (ast.For, ast.AsyncFor, ast.While)))

    visit(fn, False)
    params = _parameters(fn)
    found = frozenset((literal & in_loop & tested) - other - params)
    fn._literal_flags = found  # type: ignore[union-attr]
    return found


def _guards_gradient_calls(stmt: ast.If, touches: Callable[[str], bool]) -> bool:
    """An arm of the `if` calls something that can touch gradients (a clear, a step, a method that trains)."""
    return any(isinstance(n, ast.Call) and touches(last_name(n.func) or "")
               for part in (*stmt.body, *stmt.orelse) for n in breadth_first(part))


def _parameters(fn: Function | ast.Module) -> set[str]:
    args = getattr(fn, "args", None)
    return {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)} if args is not None else set()


def flag_test(test: ast.expr, fn: Function | ast.Module, touches: Callable[[str], bool]) -> tuple[str, bool] | None:
    """`if flag:` / `if not flag:` of a literal flag, or a test of an emptiness flag: its name and whether the
    test is negated. (A presence flag's test is a branch of its own, narrowed by `narrow`.)"""
    negated = isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)
    name = test.operand if negated else test  # type: ignore[attr-defined]
    if isinstance(name, ast.Name) and name.id in literal_flags(fn, touches):
        return name.id, negated
    tested = emptiness_test(test)
    if tested is not None and tested[0] in emptiness_flags(fn, touches):
        return tested
    return None


def narrow(flow: Flow | None, name: str, present: bool) -> Flow | None:
    """The paths of `flow` on which the presence flag may be `present` (None: none)."""
    if flow is None:
        return None
    key = PREFIX + name
    wrong = frozenset({str(not present)})
    kept = frozenset(s for s in flow.states if s.phase(key, "") != wrong)
    if kept == flow.states:
        return flow
    return Flow(flow.env, kept) if kept else None


# A name that holds an object on some paths and None on others is a flag too (its presence):
#
#     if d_hnet is not None and not config.dont_train_rp_embeddings:
#         d_emb_optimizer = optim.Adam([emb])
#     else:
#         d_emb_optimizer = None
#     for i in range(n_iter):
#         if d_emb_optimizer is not None:
#             d_emb_optimizer.zero_grad()
#         ...
#         if d_hnet is not None and not config.dont_train_rp_embeddings:
#             d_emb_optimizer.step()
#
# The environment joins the two values into "an optimizer or None", and the clear's test became a fact of its
# own, independent of the test the optimizer was built under: the path that built it and skipped its clear was
# read as stepping stale gradients (hypercl's replay trainer, a certain GL001 false alarm). Each path now
# carries whether the name holds an object: `x = None` sets it false, an assignment of a value known to be
# present sets it true, any other assignment leaves it unknown; `x is None` / `x is not None` test it.


def presence_test(test: ast.expr) -> tuple[str, bool] | None:
    """`x is not None` (the name, False) / `x is None` (the name, True: the test holds where it is absent)."""
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.left, ast.Name) \
            and isinstance(test.comparators[0], ast.Constant) and test.comparators[0].value is None \
            and isinstance(test.ops[0], (ast.Is, ast.IsNot)):
        return test.left.id, isinstance(test.ops[0], ast.Is)
    return None


def presence_flags(fn: Function | ast.Module, touches: Callable[[str], bool]) -> frozenset[str]:
    """Names `fn` assigns `None` at least once and otherwise only by whole assignments of one name
    (`x = Adam(...)`), not a parameter, tested with `is None` / `is not None` in an `if` whose body calls
    something that can touch gradients."""
    known = _PRESENCE.get(id(fn))
    if known is not None and known[0] is fn:
        return known[1]
    nones: set[str] = set()
    spoiled: set[str] = set()
    tested: set[str] = set()
    whole: set[int] = set()  # the targets of whole assignments of one name
    for node in breadth_first(fn):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            whole.add(id(node.targets[0]))
            if isinstance(node.value, ast.Constant) and node.value.value is None:
                nones.add(node.targets[0].id)
            continue
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load) and id(node) not in whole:
            spoiled.add(node.id)  # in a tuple, a loop's or a `with`'s target, `+=`, a walrus, `del`
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            spoiled.update(node.names)
        elif isinstance(node, ast.If):
            found = presence_test(node.test)
            if found is not None and _guards_gradient_calls(node, touches):
                tested.add(found[0])
    params = _parameters(fn)
    found_flags = frozenset((nones & tested) - spoiled - params)
    if len(_PRESENCE) > 10_000:
        _PRESENCE.clear()
    _PRESENCE[id(fn)] = (fn, found_flags)
    return found_flags


_PRESENCE: dict[int, tuple[ast.AST, frozenset[str]]] = {}


def raises_on_none(flow: Flow, name: str, fn: Function | ast.Module, touches: Callable[[str], bool]) -> None:
    """`opt.step()` of a presence flag: a path on which the name holds None raises AttributeError there and goes
    no further (`d_emb_optimizer.step()` under a test that does not decide it was built)."""
    if name not in presence_flags(fn, touches):
        return
    key = PREFIX + name
    absent = frozenset({"False"})
    if any(s.phase(key, "") == absent for s in flow.states):
        flow.states = frozenset(s for s in flow.states if s.phase(key, "") != absent)


_LIST_READERS = frozenset({"len", "sum", "stack", "cat", "mean", "zip", "enumerate", "print", "sorted", "list", "tuple",
                           "max", "min", "any", "all", "reversed", "isinstance"})
_NOT_EMPTY = {ast.Gt: 0, ast.GtE: 1, ast.NotEq: 0}  # `len(x) > 0`, `len(x) >= 1`, `len(x) != 0`: not empty
_EMPTY = {ast.Eq: 0, ast.Lt: 1, ast.LtE: 0}  # `len(x) == 0`, `len(x) < 1`, `len(x) <= 0`: empty


def _length_of(node: ast.expr) -> str | None:
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "len" and len(node.args) == 1
            and isinstance(node.args[0], ast.Name) and not node.keywords):
        return node.args[0].id
    return None


def emptiness_test(test: ast.expr) -> tuple[str, bool] | None:
    """A test of whether a list is empty: (its name, True when the test holds on the empty list)."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = emptiness_test(test.operand)
        return None if inner is None else (inner[0], not inner[1])
    if isinstance(test, ast.Name):
        return test.id, False
    named = _length_of(test)
    if named is not None:
        return named, False
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        named, bound = _length_of(test.left), test.comparators[0]
        if named is not None and isinstance(bound, ast.Constant) and type(bound.value) is int:
            op = type(test.ops[0])
            if _NOT_EMPTY.get(op) == bound.value:
                return named, False
            if _EMPTY.get(op) == bound.value:
                return named, True
    return None


_EMPTINESS: dict[int, tuple[ast.AST, frozenset[str]]] = {}


def emptiness_flags(fn: Function | ast.Module, touches: Callable[[str], bool]) -> frozenset[str]:
    """Names `fn` assigns an empty list (`[]`, `list()`) at least once, changes in place only by `append`,
    `insert` or `clear`, hands to no call but readers (`len`, `torch.stack`...), and tests for emptiness in an
    `if` whose body calls something that can touch gradients."""
    hit = _EMPTINESS.get(id(fn))
    if hit is not None and hit[0] is fn:
        return hit[1]
    emptied: set[str] = set()
    spoiled: set[str] = set()
    tested: set[str] = set()
    for node in breadth_first(fn):
        if isinstance(node, ast.Assign):
            empty = (isinstance(node.value, ast.List) and not node.value.elts) or (
                isinstance(node.value, ast.Call) and isinstance(node.value.func, ast.Name) and node.value.func.id == "list"
                and not node.value.args and not node.value.keywords)
            if empty:
                emptied.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.attr not in (
                    "append", "insert", "clear", "copy", "index", "count"):
                spoiled.add(func.value.id)  # `x.extend(...)`, `x.pop()`: its emptiness is not followed
            reader = last_name(func) in _LIST_READERS
            for arg in (*node.args, *(k.value for k in node.keywords)):
                if isinstance(arg, ast.Name) and not reader:
                    spoiled.add(arg.id)  # handed to a call that may fill or empty it
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)) and isinstance(node.target, ast.Name):
            spoiled.add(node.target.id)
        elif isinstance(node, ast.If):
            found = emptiness_test(node.test)
            if found is not None and _guards_gradient_calls(node, touches):
                tested.add(found[0])
    found_flags = frozenset((emptied & tested) - spoiled)
    if len(_EMPTINESS) > 10_000:
        _EMPTINESS.clear()
    _EMPTINESS[id(fn)] = (fn, found_flags)
    return found_flags


def forget(flow: Flow, name: str) -> None:
    """The flag's value is no longer known on any path (assigned something else)."""
    key = PREFIX + name
    flow.map(lambda s: s._with(phases=frozenset(x for x in s.phases if x[0] != key))
             if any(x[0] == key for x in s.phases) else s)


CALLER = "@caller:"  # a step method's parameter standing for a caller's flag (`project.caller_gates`)


def caller_flag(param: str) -> str:
    """The flag name of a step method's parameter set by its callers' gates."""
    return CALLER + param


def forget_calls(state: PathState) -> PathState:
    """A new call of the step method: its callers' flags are read afresh."""
    if not any(c.startswith(PREFIX + CALLER) for c, _w, _p in state.phases):
        return state
    return state._with(phases=frozenset(x for x in state.phases if not x[0].startswith(PREFIX + CALLER)))


def held_flag(test: ast.expr, flow: Flow) -> tuple[str, bool] | None:
    """`if apply_gradient:` on a parameter that holds a caller's literal flag: the caller's flag name and
    whether the test is negated."""
    negated = isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)
    name = test.operand if isinstance(test, ast.UnaryOp) and negated else test
    if isinstance(name, ast.Name):
        held = flow.env.get(name.id)
        if held is not None and held.flag is not None:
            return held.flag, negated
    return None


def gates_of(set_under: dict[str, tuple[int, ...]], name: str, negated: bool,
             frame_ifs: tuple[int, ...]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The gates guarding the arm where the flag is true (the body of `if flag:`, the `else` of `if not
    flag:`), as (body's, else's) extra `ifs`: those it was set true under, not already enclosing."""
    gates = tuple(c for c in set_under.get(name, ()) if c not in frame_ifs)
    return ((), gates) if negated else (gates, ())


def assign(flow: Flow, name: str, value: bool) -> None:
    """Every path now holds this value of the flag."""
    phase = frozenset({str(value)})
    flow.map(lambda s: s.with_phase(PREFIX + name, "", phase))


def split(flow: Flow, name: str, negated: bool) -> tuple[Flow | None, Flow | None]:
    """The paths on which the test holds, and those on which it does not. A path that has not set the flag
    (it came in from the caller) follows the environment's value, or takes both arms when that is unknown."""
    const = flow.env[name].const if name in flow.env else None
    default = True if const == "True" else False if const == "False" else None
    taken: list[PathState] = []
    skipped: list[PathState] = []
    pin = name.startswith(CALLER)  # one call's flag: its value holds to the end of the call (`forget_calls`)
    for s in flow.states:
        phase = s.phase(PREFIX + name, "")
        value = ("True" in phase) if phase is not None and len(phase) == 1 else default
        if value is None and pin:
            taken.append(s.with_phase(PREFIX + name, "", frozenset({str(not negated)})))
            skipped.append(s.with_phase(PREFIX + name, "", frozenset({str(negated)})))
            continue
        if value is None or value != negated:
            taken.append(s)
        if value is None or value == negated:
            skipped.append(s)
    t = Flow(dict(flow.env), frozenset(taken)) if taken else None
    f = Flow(dict(flow.env), frozenset(skipped)) if skipped else None
    return t, f
