"""Assigning to a tuple of names (`a, b = value`): which part each name gets.

A value whose members are known gives each its own; otherwise each name gets some part of it (its
graphs, never the objects themselves), except the names a call hands back as what it was given
(`model, optim = strategy.prepare(model=model, optim_wrapper=optim)`), the one name a builder's single
object goes to (`optimizer, msg = build_optimizer(...)`), and the models unpacked next to the optimizer
that steps them (`netD_img, netD_seq, optimizer_netD = create_netD(opt)`).
"""

from __future__ import annotations

import ast

from . import names as N
from .conventions import convention
from .flow import Flow, Frame
from .parts import Unpacker, UnpackingHost
from .provenance import Assumption, assumed
from .syntax import arguments
from .values import PRESENT, Kind, Value, join


def unpack(ex: Unpacker, elems: list[ast.expr], value: Value, flow: Flow, frame: Frame, source: ast.AST | None, stmt: ast.AST,
           keep_phases: bool = False) -> None:
    interp = ex.interp
    positional = [value.item(str(i)) for i in range(len(elems))]
    known = all(p is not None for p in positional)
    named = None if known else _named_element(elems, value)
    if not known and named is None and type(source) is ast.Call and not value.entities:
        # `model, optim = strategy.prepare(model=model, optim_wrapper=optim)`, an unknown call
        # handed the objects it gives back under the same names: a wrapper returns what it wraps
        passed = {a.value.id for a in arguments(source) if type(a.value) is ast.Name}
        through = {i: ex.lookup(e.id, flow, frame) for i, e in enumerate(elems) if type(e) is ast.Name and e.id in passed}
        through = {i: v for i, v in through.items() if v is not None and (v.entities or v.modules)}
        if through:
            for i, v in through.items():
                ex.assign(elems[i], v, flow, frame, source, stmt, keep_phases)
            rest = [e for i, e in enumerate(elems) if i not in through]
            if rest:
                ex.assign(ast.Tuple(elts=rest, ctx=ast.Store()), value, flow, frame, source, stmt, keep_phases)
            return
    # the forward passes whose graph the parts carry, unless one part is indices (`_, idx = x.max(1)`)
    built = value.built if not _returns_indices(source) else frozenset()
    beside = _built_with_optimizer(interp, elems, source, value, flow) if not known else ()
    for i, elem in enumerate(elems):
        if i in beside:
            continue
        # without known members, an element is some part of the value: never the objects themselves,
        # except the one element named for the single object a builder made (`optimizer, msg = build_optimizer(...)`)
        sub = (positional[i] if known else value if i == named or value == PRESENT
               else Value(reach=value.reach | value.modules, params=value.params, opaque=True,
                          vague=_vague_part(elem, value), summed=value.summed, unseen_reduction=value.unseen_reduction,
                          built=built, vague_sites=value.vague_sites if built else frozenset(), sync=value.sync,
                          amp=value.amp))
        if isinstance(elem, ast.Starred):
            elem = elem.value
        ex.assign(elem, sub if sub is not None else value, flow, frame, source, stmt, keep_phases)
        if not known and i != named and built and type(elem) is ast.Name and not _LOSS_NAME.search(elem.id):
            interp.keepalives.tuple_parts.add(elem.id)  # `loss, hits = model(x)`: `hits` may hold no graph


def _built_with_optimizer(interp: UnpackingHost, elems: list[ast.expr], source: ast.AST | None, value: Value, flow: Flow) -> tuple[int, ...]:
    """`netD_img, netD_seq, optimizer_netD = create_netD(opt)`: a builder out of sight gives back models
    and the optimizer that steps them, named for the same role (`d`). Binds the models and that
    optimizer, owning them (less certain: known by names); returns the positions bound."""
    if type(source) is not ast.Call or value.entities or value.modules:
        return ()
    opt_at, models_at = _models_beside_optimizer(elems, interp.optimizer_refs)
    if opt_at is None or not models_at:
        return ()
    scope = interp.calls.call_path
    models = []
    for i in models_at:
        name = elems[i].id  # type: ignore[attr-defined]
        ent = interp.mint(Kind.MODEL, name, ("ref", name, scope), api="torch.nn.Module", provenance=assumed(Assumption.OPAQUE))
        interp.table.name_after(ent.uid, name)
        flow.env[name] = interp.model_value(ent)
        models.append(flow.env[name])
    name = elems[opt_at].id  # type: ignore[attr-defined]
    opt = interp.mint(Kind.OPTIMIZER, name, ("ref", name, scope), api="torch.optim.Optimizer", provenance=assumed(Assumption.OPAQUE))
    interp.table.name_after(opt.uid, name)
    interp.own(opt, None, join(models))
    flow.env[name] = Value(entities=frozenset({opt}))
    return (*models_at, opt_at)


# A name that ends like the object first (`optimizer`, `g_optim`), then one that only mentions it (`opt_g`).
_ELEMENT_NAMES = {
    Kind.OPTIMIZER: (convention("optimizer_element"), convention("optimizer_element_mention")),
    Kind.SCHEDULER: (convention("scheduler_element"), convention("scheduler_element_mention")),
}


def _named_element(elems: list[ast.expr], value: Value) -> int | None:
    """`optimizer, optim_msg = build_optimizer(...)`: a value that is one optimizer (or scheduler), made by a
    call whose result is unpacked, goes to the one element named like it."""
    kinds = {e.kind for e in value.entities}
    if len(kinds) != 1 or value.items:
        return None
    for pattern in _ELEMENT_NAMES.get(kinds.pop(), ()):
        hits = [i for i, e in enumerate(elems) if isinstance(e, ast.Name) and pattern.search(e.id)]
        if hits:
            return hits[0] if len(hits) == 1 else None
    return None


def _models_beside_optimizer(elems: list[ast.expr], optimizer_refs: frozenset[str]) -> tuple[int | None, tuple[int, ...]]:
    """In the names a call's result is unpacked into, the one optimizer (`optimizer_netD`) and the names
    that share its role (`netD_img`, `netD_seq`: `d`), which are the models it steps."""
    names = [e.id if type(e) is ast.Name else None for e in elems]
    opts = [i for i, n in enumerate(names) if n is not None and n in optimizer_refs]
    if len(opts) != 1:
        return None, ()
    roles = N.roles(names[opts[0]] or "") - {"optimizers", "optim", "opts"}
    if not roles:
        return None, ()
    return opts[0], tuple(i for i, n in enumerate(names) if n is not None and i != opts[0] and not _LOSS_NAME.search(n)
                          and not N.SCHEDULER_NAME.search(n) and N.roles(n) & roles)


_LOSS_NAME = convention("loss")
_INDEX_NAME = convention("index_element")


def _vague_part(elem: ast.expr, value: Value) -> frozenset:
    """What an element of a tuple whose parts are not known reaches only by assumption: all of it when
    its name reads as indices or lengths (`audio, ids_slice, mask = model_g(...)`: integer tensors hold
    no graph, so the reach rests on the name alone), else what the tuple reaches vaguely."""
    if type(elem) is ast.Name and _INDEX_NAME.search(elem.id):
        return value.vague | value.reach | value.modules
    return value.vague

# Tensor functions returning (values, indices): the indices carry no graph.
# ... always (`sort`, `topk`), only given a dim (`max`, `min`, `median`), or among other parts (`unique`, `aminmax`)
_ALWAYS_PAIRED = frozenset({"sort", "topk", "kthvalue", "mode", "cummax", "cummin"})
_PAIRED_GIVEN_A_DIM = frozenset({"max", "min", "median", "nanmedian"})
_WITH_INDICES = _ALWAYS_PAIRED | _PAIRED_GIVEN_A_DIM | {"unique", "aminmax"}


def _returns_indices(source: ast.AST | None) -> bool:
    return isinstance(source, ast.Call) and (N.last_name(source.func) or "") in _WITH_INDICES



def indices_item(call: ast.expr, key: str) -> bool:
    """`torch.max(output, 1)[1]`, `scores.topk(5)[1]`: the indices a reduction returns beside its values,
    integers that hold no graph (video-classification keeps `torch.max(output, 1)[1]` across an epoch)."""
    if key != "1" or not isinstance(call, ast.Call):
        return False
    name = N.last_name(call.func) or ""
    if name in _ALWAYS_PAIRED:
        return True
    if name not in _PAIRED_GIVEN_A_DIM:
        return False
    # a method of the tensor (`x.max(1)`) is given its dim first; `torch.max(x, 1)` second
    on_torch = isinstance(call.func, ast.Attribute) and N.ref_text(call.func.value) in ("torch", "th")
    positional = [a for a in call.args if not isinstance(a, ast.Starred)]
    return len(positional) > (1 if on_torch else 0) or any(k.arg == "dim" for k in call.keywords)
