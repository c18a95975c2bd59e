"""`isinstance` chains that dispatch on a value's type: what the arm for none of the listed types holds.

A helper like pytorch-forecasting's `detach(x)` handles a tensor (`x.detach()`), a dict, a list or tuple
(each item detached) and returns anything else unchanged (`else: return x`). The analysis does not know
which of these a value is, so every arm runs; but the last one is reached only by a value that is no
tensor, no dict, no list and no tuple: a number, a string, None. It holds no graph there, whatever the
value stood for before the tests (`Value.built` of the loss the caller handed in). Each arm where an
`isinstance(x, ...)` test failed remembers the types `x` is not; once they cover a tensor and the
containers that can hold one, `x` is narrowed to no graph.
"""

from __future__ import annotations

import ast
from dataclasses import replace

from . import names as N
from .apimodels import Catalogue
from .flow import Flow
from .names import ImportMap
from .values import Value

_EXCLUDED = "%not-of-types:"  # env key: the types a name's value is known not to be, as `Value.choices`
_EXCLUDED_OF = "%not-of-types-of:"  # ... and that value (the facts stand while the name holds it)
# `torch.autograd.Variable` is the tensor type itself since PyTorch 0.4: `isinstance(t, Variable)` holds for
# every tensor
_TYPES = {
    "torch.Tensor": "tensor", "torch.FloatTensor": "tensor", "torch.autograd.Variable": "tensor",
    "torch.autograd.variable.Variable": "tensor", "dict": "dict", "builtins.dict": "dict",
    "list": "list", "builtins.list": "list", "tuple": "tuple", "builtins.tuple": "tuple",
}
# a value none of these is cannot hold a graph: not a tensor, nor a container of the usual kinds
_COVER = frozenset({"tensor", "dict", "list", "tuple"})


def tested(test: ast.expr, imports: ImportMap) -> tuple[str, frozenset[str]] | None:
    """`isinstance(x, T)` or `isinstance(x, (T1, T2))` of a plain name: the name and the kinds of `_TYPES`
    among the types tested (an empty set when none is one of them). `torch.is_tensor(x)` tests a tensor."""
    if (isinstance(test, ast.Call) and len(test.args) == 1 and not test.keywords and isinstance(test.args[0], ast.Name)
            and isinstance(test.func, (ast.Name, ast.Attribute)) and imports.qualify(test.func) == "torch.is_tensor"):
        return test.args[0].id, frozenset({"tensor"})
    if not (isinstance(test, ast.Call) and isinstance(test.func, ast.Name) and test.func.id == "isinstance"
            and len(test.args) == 2 and not test.keywords and isinstance(test.args[0], ast.Name)):
        return None
    spec = test.args[1]
    types = spec.elts if isinstance(spec, ast.Tuple) else [spec]
    kinds = frozenset(k for k in (_TYPES.get(imports.qualify(t) or "") for t in types) if k is not None)
    return test.args[0].id, kinds


def instance_tested(test: ast.expr, imports: ImportMap) -> tuple[str, tuple[str, ...]] | None:
    """`isinstance(x, T)` or `isinstance(x, (T1, T2))` of a plain name: the name and the qualified names of the
    types (those the imports can name)."""
    if not (isinstance(test, ast.Call) and isinstance(test.func, ast.Name) and test.func.id == "isinstance"
            and len(test.args) == 2 and not test.keywords and isinstance(test.args[0], ast.Name)):
        return None
    spec = test.args[1]
    types = spec.elts if isinstance(spec, ast.Tuple) else [spec]
    qualified = tuple(q for t in types if (q := imports.qualify(t)) is not None)
    return (test.args[0].id, qualified) if len(qualified) == len(types) else None


def narrow_to_instances(flow: Flow, name: str, types: tuple[str, ...], catalogue: Catalogue) -> None:
    """On the arm where `isinstance(name, types)` holds, the name holds no object of a `closed` catalogue type
    (fully described, its bases too) that is none of those types and extends none of them: FreeLB's
    `if isinstance(model, torch.nn.DataParallel): model.module...` arm is never a DistributedDataParallel
    wrapper's, which extends `nn.Module` only."""
    value = flow.env.get(name)
    if value is None or not value.entities:
        return
    wanted = {catalogue.canonical(t) for t in types}
    drop = frozenset(e for e in value.entities if e.api and (kind := catalogue.type(e.api)) is not None and kind.closed
                     and not wanted & set(catalogue.lineage(e.api)))
    if drop:
        rest = replace(value, entities=value.entities - drop)
        if rest.entities or rest.modules:
            flow.env[name] = rest


def narrow_failed(flow: Flow, name: str, kinds: frozenset[str]) -> None:
    """On the arm where `isinstance(name, ...)` of `kinds` is false: remember them, and once a tensor and the
    containers are all ruled out, the value holds no graph."""
    value = flow.env.get(name)
    if value is None:
        return
    known = flow.env.get(f"{_EXCLUDED}{name}")
    same = known is not None and known.choices is not None and flow.env.get(f"{_EXCLUDED_OF}{name}") is value
    before = known.choices if same and known is not None and known.choices is not None else frozenset()
    excluded = before | kinds
    # a value not known to be a container (no items read) that is no tensor: no graph, as the conditional
    # expression reads it (`val = val.detach().item() if isinstance(val, torch.Tensor) else val`); a container
    # built in sight stays until its kinds are ruled out too
    covered = _COVER <= excluded or ("tensor" in excluded and not value.items)
    if covered and (value.built or value.graph or value.items or value.kept):
        value = replace(value, built=frozenset(), graph=False, items=(), kept=frozenset())
        flow.env[name] = value
    flow.env[f"{_EXCLUDED_OF}{name}"] = value
    flow.env[f"{_EXCLUDED}{name}"] = Value(choices=excluded)


def ruled_out(flow: Flow, name: str, kinds: frozenset[str]) -> bool:
    """Whether an earlier failed test on this path already ruled out every kind `kinds` names for the value
    `name` holds (`if isinstance(v, Variable): ... elif isinstance(v, torch.Tensor):`: the second arm
    cannot be taken, a tensor having been ruled out by the first test)."""
    if not kinds:
        return False
    known = flow.env.get(f"{_EXCLUDED}{name}")
    if known is None or known.choices is None or flow.env.get(f"{_EXCLUDED_OF}{name}") is not flow.env.get(name):
        return False
    return kinds <= known.choices


# attributes every tensor has and plain numbers do not: `x.item() if hasattr(x, "item") else x`
_TENSOR_ATTRS = frozenset({"item", "detach", "backward", "grad_fn", "requires_grad", "grad"})


def tensor_tested(test: ast.expr, imports: ImportMap) -> str | None:
    """The text of what a test asks to be a tensor (`hasattr(x, "item")`, `isinstance(x, torch.Tensor)`,
    `torch.is_tensor(x)`), or None: on the arm where it fails, that value holds no graph."""
    if not isinstance(test, ast.Call) or test.keywords or not test.args:
        return None
    func = imports.qualify(test.func) if isinstance(test.func, (ast.Name, ast.Attribute)) else None
    if func in ("hasattr", "builtins.hasattr") and len(test.args) == 2:
        attr = test.args[1]
        if isinstance(attr, ast.Constant) and attr.value in _TENSOR_ATTRS:
            return ast.unparse(test.args[0])
    if func == "torch.is_tensor" and len(test.args) == 1:
        return ast.unparse(test.args[0])
    if func in ("isinstance", "builtins.isinstance") and len(test.args) == 2:
        spec = test.args[1]
        types = spec.elts if isinstance(spec, ast.Tuple) else [spec]
        if any(_TYPES.get(imports.qualify(t) or "") == "tensor" for t in types):
            return ast.unparse(test.args[0])
    return None


def without_graph(value: Value) -> Value:
    """What a value holds on an arm where it was found to be no tensor: no graph, no items holding one, and no
    parameter reached through one (a number, `feature_loss` of `feature_loss = 0` where no term was added)."""
    if value.built or value.graph or value.items or value.kept or value.reach or value.vague:
        return replace(value, built=frozenset(), graph=False, items=(), kept=frozenset(), reach=frozenset(),
                       vague=frozenset())
    return value


# types whose objects hold no autograd graph: `if isinstance(x, np.ndarray): return x` returns no graph
_GRAPHLESS = frozenset({
    "numpy.ndarray", "numpy.generic", "numpy.number", "numpy.floating", "numpy.integer", "numbers.Number",
    "numbers.Real", "int", "float", "str", "bool", "builtins.int", "builtins.float", "builtins.str", "builtins.bool",
})


def graphless_subject(test: ast.expr, imports: ImportMap) -> tuple[ast.expr, bool] | None:
    """What a test finds to be of a type that holds no graph, and on which arm (True: where the test holds):
    `isinstance(x, float)` in the body; `if not isinstance(losses[idx], int): ... else:` in the `else` arm
    (HGN's loss logging: tensors go through `.item()`, the `else` adds the ints as they are)."""
    held = True
    while isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        test, held = test.operand, not held
    if not (isinstance(test, ast.Call) and isinstance(test.func, ast.Name) and test.func.id == "isinstance"
            and len(test.args) == 2 and not test.keywords):
        name = graphless_tested(test, imports)
        return (ast.Name(id=name), held) if name is not None and "[" not in name else None
    spec = test.args[1]
    types = spec.elts if isinstance(spec, ast.Tuple) else [spec]
    if types and all((imports.qualify(t) or "") in _GRAPHLESS for t in types):
        return test.args[0], held
    if isinstance(test.args[0], ast.Subscript) and types \
            and all(_TYPES.get(imports.qualify(t) or "") == "tensor" for t in types):
        # `if isinstance(terms[i], torch.Tensor): ... else:` an item found to be no tensor (a plain name: `tested`)
        return test.args[0], not held
    return None


def held_name(node: ast.expr) -> str | None:
    """The name `narrow_held` takes for an expression: a plain name, or an item at a literal key (`losses[0]`)."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and N.literal_key(node.slice) is not None:
        return f"{node.value.id}[{N.literal_key(node.slice)}]"
    return None


def graphless_tested(test: ast.expr, imports: ImportMap) -> str | None:
    """The plain name a test finds to be of a type that holds no graph, on the arm where it holds: `isinstance(x,
    np.ndarray)`, `isinstance(x, (int, float))`, `type(x) == np.ndarray`, `type(x) is float` (imaml's `to_numpy`:
    `if type(x) == np.ndarray: return x`)."""
    if not isinstance(test, (ast.Call, ast.Compare)):
        return None
    if isinstance(test, ast.Compare):
        if len(test.ops) != 1 or not isinstance(test.ops[0], (ast.Eq, ast.Is)):
            return None
        left, right = test.left, test.comparators[0]
        if not (isinstance(left, ast.Call) and isinstance(left.func, ast.Name) and left.func.id == "type"
                and len(left.args) == 1 and not left.keywords and isinstance(left.args[0], ast.Name)):
            return None
        return left.args[0].id if (imports.qualify(right) or "") in _GRAPHLESS else None
    if not (isinstance(test.func, ast.Name) and test.func.id == "isinstance" and len(test.args) == 2
            and not test.keywords):
        return None
    tested = test.args[0]
    if isinstance(tested, ast.Name):
        name = tested.id
    elif isinstance(tested, ast.Subscript) and isinstance(tested.value, ast.Name) \
            and N.literal_key(tested.slice) is not None:
        name = f"{tested.value.id}[{N.literal_key(tested.slice)}]"  # `isinstance(losses[0], int)`: that item
    else:
        return None
    spec = test.args[1]
    types = spec.elts if isinstance(spec, ast.Tuple) else [spec]
    if types and all((imports.qualify(t) or "") in _GRAPHLESS for t in types):
        return name
    return None


def narrow_held(flow: Flow, name: str) -> None:
    """On the arm where `graphless_tested` holds: the value holds no graph there (`name[key]`: that item of the
    value `name` holds)."""
    base, bracket, key = name.partition("[")
    if bracket:
        held = flow.env.get(base)
        item = held.item(key[:-1]) if held is not None else None
        if held is not None and item is not None:
            flow.env[base] = replace(held, items=tuple((k, without_graph(v) if k == key[:-1] else v)
                                                       for k, v in held.items))
        return
    value = flow.env.get(name)
    if value is not None:
        flow.env[name] = without_graph(value)
