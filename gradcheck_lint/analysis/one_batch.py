"""Which loops draw new data, and which run again and again on the batch another loop drew.

An accumulation window is a loop (or a gate) whose iterations each bring a *different* micro-batch: the
window's gradient is the mean of theirs, so each micro-batch's loss is divided by N. A loop whose
iterations all run on the one batch the loop around it drew (`for x, y in loader:` then `for w in widths:
loss = kl(model_at_width(w)(x), ...); loss.backward()`) adds up losses of one batch: sub-networks,
augmented views, refinements, a critic's repetitions. Their sum is the objective its author wrote, not a
window to average, and whether each term is weighted is the author's choice (GradAug sums its sub-network
losses on purpose).

Read from the syntax of the function holding the loops, once per loop:
- a loop *draws* batches when it walks something other than numbers (`for x, y in loader:`,
  `enumerate(tqdm(loader))`), or when its body fetches one before the inner loop (`for step in range(n): data,
  target = next(it)`); `for epoch in range(n)` and `while` loops are not otherwise known to;
- a loop *re-uses* the drawn batch when it sits in a loop that draws, fetches nothing (`next(it)`,
  `get_batch()`), indexes nothing by what it walks (`x[i]`, `chunks[k]`), walks nothing made from the batch
  (`for chunk in x.split(n)` cuts it into micro-batches), and reads the batch whole (a name bound by the
  drawing loop, or computed from one there before it).
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator

from .conventions import convention
from .names import last_name
from .walk import breadth_first

_FETCH = convention("batch_fetch")
_COUNTS = frozenset({"range", "trange", "count"})
_LOOPS = (ast.For, ast.AsyncFor)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef, ast.Module)


def counted(it: ast.expr) -> bool:
    """`range(n)`, `itertools.count()`, `enumerate(range(n))`, `tqdm(range(n))`: numbers, not data."""
    if not isinstance(it, ast.Call):
        return False
    name = last_name(it.func)
    return name in _COUNTS or bool(it.args) and not isinstance(it.args[0], ast.Starred) and counted(it.args[0])


def fetches(node: ast.AST) -> bool:
    """A call that fetches data: a new micro-batch where it runs (`next(it)`, `get_batch()`, `loader.sample()`)."""
    return isinstance(node, ast.Call) and bool(_FETCH.search(last_name(node.func) or ""))


def draws_batches(loop: ast.AST) -> bool:
    """`for x, y in loader:`, `for i, batch in enumerate(tqdm(loader)):`: each iteration draws data (a loop
    over numbers, `for epoch in range(n)`, or a `while` loop, is not known to)."""
    return isinstance(loop, _LOOPS) and not counted(loop.iter)


def _walked_names(loop: ast.For | ast.AsyncFor | ast.While) -> set[str]:
    """What the loop walks: a `for` loop's target, or the names a `while` loop tests and its body rebinds (`start` of
    `while start < n: ...; start = end`)."""
    if isinstance(loop, ast.While):
        tested = {n.id for n in breadth_first(loop.test) if isinstance(n, ast.Name)}
        return {n.id for stmt in loop.body for n in breadth_first(stmt)
                if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store) and n.id in tested}
    return {n.id for n in breadth_first(loop.target) if isinstance(n, ast.Name)}


def _fetches_or_indexes(loop: ast.For | ast.AsyncFor | ast.While) -> bool:
    """The body fetches data (`next(it)`, `get_batch()`) or indexes something by what the loop walks."""
    walked = _walked_names(loop)
    for node in (n for stmt in loop.body for n in breadth_first(stmt)):
        if fetches(node):
            return True
        if isinstance(node, ast.Subscript) and any(isinstance(n, ast.Name) and n.id in walked
                                                   for n in breadth_first(node.slice)):
            return True
    return False


def cuts_one_batch(loop: ast.AST) -> bool:
    """A loop over micro-batches sliced from one batch: `for i in range(0, n, mb): ... x[i:i + mb]`, `while start <
    bs: ... data[:, start:end]` (DARTS' recurrent search): its body fetches nothing, and every subscript by what it
    walks is a slice. Its iterations are as many as the batch has micro-batches, whatever the run's length."""
    if not (isinstance(loop, _LOOPS) and counted(loop.iter) or isinstance(loop, ast.While)):
        return False
    walked = _walked_names(loop)
    sliced = False
    for node in (n for stmt in loop.body for n in breadth_first(stmt)):
        if fetches(node):
            return False
        if isinstance(node, ast.Subscript) and any(isinstance(n, ast.Name) and n.id in walked
                                                   for n in breadth_first(node.slice)):
            parts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            if not any(isinstance(p, ast.Slice) for p in parts):
                return False  # `dataset[i]`, `hidden[s_id]`-like reads are checked by their slices only
            sliced = True
    return sliced


def fetches_each_time(loop: ast.AST) -> bool:
    """A loop each iteration of which fetches a batch in its own body (`while i < n: data = get_batch(source, i)`)."""
    if not isinstance(loop, (*_LOOPS, ast.While)):
        return False
    return any(fetches(n) for stmt in loop.body if not isinstance(stmt, (*_LOOPS, ast.While))
               for n in breadth_first(stmt))


def repeats_on_one_batch(loop: ast.AST) -> bool:
    """`for _ in range(rep_discriminator):` whose body fetches no data (`next(it)`, `get_batch()`) and
    indexes nothing by its counter (`dataset[i]`): it repeats its work on the batch already drawn."""
    return isinstance(loop, _LOOPS) and counted(loop.iter) and not _fetches_or_indexes(loop)


def reuses_drawn_batch(loop: ast.AST, parent: Callable[[ast.AST], ast.AST | None]) -> bool:
    """Every iteration of `loop` runs on the batch a loop around it (in the same function) drew, read whole
    (see the module's doc). A `while` loop too: DROID-SLAM's random restarts (`while r < restart_prob: r =
    rng.random(); ... model(Gs, images, ...) ... loss.backward()`) run again on the batch drawn."""
    if not isinstance(loop, (*_LOOPS, ast.While)) or _fetches_or_indexes(loop):
        return False
    walks = loop.test if isinstance(loop, ast.While) else loop.iter
    inner = _walked_names(loop)
    rebound = {n.id for stmt in loop.body for n in breadth_first(stmt)
               if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    computed = [n.value for stmt in loop.body for n in breadth_first(stmt)
                if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and n.value is not None]
    for drawing in _drawing_loops(loop, parent):
        batch = _batch_names(drawing, loop)
        if not batch:
            return False
        if _reads(walks, batch):
            # `for chunk in x.split(n):` walks micro-batches cut from the batch; but a loop around it that walks
            # what the body never reads itself, only to make what it walks (FairNAS's `for topo in
            # topology_sampler(model): for path in op_sampler(topo): path(input)...`: sub-networks, not data),
            # draws no batch of its own: the batch is that of the loop around it
            if any(_reads(v, _walked_names(drawing)) for v in computed):
                return False
            continue
        whole = batch - inner - rebound
        # read by a computation (`out = model(F.interpolate(x, size))`), not only logged
        return any(_reads_whole(v, whole) for v in computed)
    return False


def _drawing_loops(loop: ast.AST, parent: Callable[[ast.AST], ast.AST | None]) -> Iterator[ast.For | ast.AsyncFor]:
    """The loops around `loop` that walk something other than numbers, nearest first (in its function)."""
    node = parent(loop)
    while node is not None and not isinstance(node, _SCOPES):
        if draws_batches(node) or isinstance(node, (*_LOOPS, ast.While)) and _fetched_before(node, loop):
            yield node  # type: ignore[misc]
        node = parent(node)


def _fetched_before(drawing: ast.For | ast.AsyncFor | ast.While, inner: ast.AST) -> bool:
    """The loop's body fetches a batch before `inner` (`data, target = next(data_iterator)` at the top of `for step
    in range(max_iter):`, in a `try` that restarts the iterator or not): each of its iterations draws one."""
    return any(fetches(n) for stmt in _statements_before(drawing.body, inner) for n in breadth_first(stmt))


def _batch_names(drawing: ast.For | ast.AsyncFor | ast.While, inner: ast.AST) -> set[str]:
    """The names the drawing loop binds to its batch (what it walks, or what its body fetches: `data, target =
    next(it)`), and those its body computes from them before `inner` (`images, labels = images.to(device), ...`;
    `x = batch["input"]`), in the order its statements run."""
    batch = _walked_names(drawing) if draws_batches(drawing) else set()
    for stmt in _statements_before(drawing.body, inner):
        for node in [stmt] if isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)) else breadth_first(stmt):
            if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)) and node.value is not None \
                    and (_reads(node.value, batch) or any(fetches(n) for n in breadth_first(node.value))):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                batch |= {n.id for t in targets for n in breadth_first(t) if isinstance(n, ast.Name)}
    return batch


def _statements_before(body: list[ast.stmt], inner: ast.AST) -> Iterator[ast.stmt]:
    """The statements of `body` (and of the blocks nested in it) that run before `inner` in one iteration."""
    for stmt in body:
        if stmt is inner:
            return
        if any(n is inner for n in breadth_first(stmt)):
            for field in ("body", "orelse", "finalbody", "handlers"):
                yield from _statements_before(getattr(stmt, field, []) or [], inner)
            return
        yield stmt


def _reads(expr: ast.AST, names: set[str]) -> bool:
    return any(isinstance(n, ast.Name) and n.id in names and isinstance(n.ctx, ast.Load) for n in breadth_first(expr))


def _reads_whole(stmt: ast.AST, names: set[str]) -> bool:
    """`stmt` reads one of `names` as a value of its own, not only through a subscript (`x[k]`)."""
    sliced = {id(n.value) for n in breadth_first(stmt) if isinstance(n, ast.Subscript)}
    return any(isinstance(n, ast.Name) and n.id in names and isinstance(n.ctx, ast.Load) and id(n) not in sliced
               for n in breadth_first(stmt))
