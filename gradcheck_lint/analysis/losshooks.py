"""Loss hooks: methods whose returned loss a framework backpropagates, and divides by its accumulation
window only when the hook does not normalise it itself.

transformers' `Trainer.compute_loss` is the one modelled (`normaliser` in `apimodels/transformers.toml`):
given `num_items_in_batch`, the Trainer takes the returned loss as normalised over the whole window and
does not divide it. An override that ignores the argument and returns a per-batch mean therefore
makes every window's gradient the sum of its micro-batches' means (GL003). The Trainer counts that
number over the batch's `labels` only (`counted_key`): an override whose batch shows none gets None
and its loss is divided as before. Read from the syntax of the override alone; nothing in the file
needs to run.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass

from .apimodels import Hook
from .conventions import convention
from .parts import LossHooksHost
from .syntax import assignment_targets, code
from .walk import breadth_first, iter_tree, own_nodes

_WINDOW = convention("accumulation_flag")


@dataclass(frozen=True)
class UnnormalisedLoss:
    """A loss hook's `return` whose loss ignores the argument the framework gave for normalising it."""

    returned: ast.Return
    method: str  # `LogitsTrainer.compute_loss`
    loss_text: str
    hook: Hook


def unnormalised_losses(interp: LossHooksHost) -> list[UnnormalisedLoss]:
    out: list[UnnormalisedLoss] = []
    flags_set: set[str] | None = None
    for info in interp.classes.values():
        if not info.api:
            continue
        for name, fn in info.methods.items():
            hook = interp.catalogue.hook(info.api, name)
            if hook is None or not hook.normaliser:
                continue
            if flags_set is None:
                flags_set = _assigned_names(interp.module)
            if flags_set & set(hook.normalised_flags):
                continue  # the class says itself whether the framework divides
            found = _ignored_normaliser(fn, hook)
            if found is not None:
                out.append(UnnormalisedLoss(found, f"{info.name}.{name}", _loss_text(found.value), hook))
    return out


@dataclass(frozen=True)
class DividedReturn:
    """An automatic hook's `return` of a loss it divided by an accumulation count, which the framework
    divides again by its own window (`divides_returned`)."""

    returned: ast.Return
    method: str  # `LitModel.training_step`
    loss_text: str
    divisor: str
    hook: Hook


def automatic_hooks(interp: LossHooksHost) -> Iterator[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef, Hook]]:
    """The methods of this file's framework classes under automatic optimization that override a hook
    the framework calls itself: (`Class.method`, its definition, the catalogue's hook)."""
    for info in interp.classes.values():
        if not info.api or info.manual_optimization:
            continue
        for name, fn in info.methods.items():
            hook = interp.catalogue.hook(info.api, name)
            if hook is not None and hook.optimization == "automatic":
                yield f"{info.name}.{name}", fn, hook


def framework_divided_returns(interp: LossHooksHost) -> list[DividedReturn]:
    """Lightning's automatic optimization divides what `training_step` returns by
    `accumulate_grad_batches`: a `training_step` that divides it by an accumulation count too makes each
    micro-batch count 1/N² (and, with `accumulate_grad_batches` left at 1, every step 1/N)."""
    out: list[DividedReturn] = []
    configured: dict[str, frozenset[int]] = {}  # setting -> the ints the file configures it with (`Trainer(accumulate_grad_batches=4)`)
    for method, fn, hook in automatic_hooks(interp):
        setting = hook.divides_returned
        if not setting:
            continue
        if setting not in configured:
            configured[setting] = frozenset(
                k.value.value for k in iter_tree(interp.module) if isinstance(k, ast.keyword) and k.arg == setting
                and isinstance(k.value, ast.Constant) and type(k.value.value) is int and k.value.value > 1)
        found = _window_divided_return(fn, setting, configured[setting])
        if found is not None:
            returned, divisor = found
            loss = _returned_loss(returned.value)
            out.append(DividedReturn(returned, method, code(loss) if loss is not None else "", divisor, hook))
    return out


def _window_divided_return(fn: ast.FunctionDef | ast.AsyncFunctionDef, setting: str,
                           literals: frozenset[int] = frozenset()) -> tuple[ast.Return, str] | None:
    """The last `return` whose loss is divided by an accumulation count in this method (`loss /
    self.hparams.accumulate_grad_batches`, directly, through local names, or in the `"loss"` entry of
    a returned dict), with that divisor."""
    divided: dict[str, str] = {}  # local name -> the accumulation divisor it was divided by
    last: tuple[ast.Return, str] | None = None
    for node in sorted(own_nodes(fn), key=lambda n: (getattr(n, "lineno", 0), getattr(n, "col_offset", 0))):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            d = _accumulation_divisor(node.value, divided, setting, literals)
            if d is not None:
                divided[node.targets[0].id] = d
            else:
                divided.pop(node.targets[0].id, None)
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name) and isinstance(node.op, ast.Div) \
                and _is_accumulation(node.value, setting, literals):
            divided[node.target.id] = code(node.value)
        elif isinstance(node, ast.Return) and node.value is not None:
            value = _returned_loss(node.value)
            d = _accumulation_divisor(value, divided, setting, literals) if value is not None else None
            last = (node, d) if d is not None else None
    return last


def _accumulation_divisor(expr: ast.expr, divided: dict[str, str], setting: str, literals: frozenset[int] = frozenset()) -> str | None:
    """The accumulation count `expr` is divided by: in a division it holds, or through a local name
    divided before (`loss = loss / n`, then `return loss * 1.0`)."""
    for node in breadth_first(expr):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div) and _is_accumulation(node.right, setting, literals):
            return code(node.right)
        if isinstance(node, ast.Name) and node.id in divided:
            return divided[node.id]
    return None


def _is_accumulation(expr: ast.expr, setting: str, literals: frozenset[int] = frozenset()) -> bool:
    """Named for accumulation, or the literal the file configures the setting with (`/ 4` and
    `Trainer(accumulate_grad_batches=4)`)."""
    if isinstance(expr, ast.Constant) and type(expr.value) is int and expr.value in literals:
        return True
    text = code(expr)
    return setting in text or bool(_WINDOW.search(text))


def _returned_loss(value: ast.expr | None) -> ast.expr | None:
    """The loss a hook returns: the value itself, or the `"loss"` entry of a returned dict."""
    if isinstance(value, ast.Dict):
        return next((v for k, v in zip(value.keys, value.values) if isinstance(k, ast.Constant) and k.value == "loss"), None)
    return value


def _ignored_normaliser(fn: ast.FunctionDef | ast.AsyncFunctionDef, hook: Hook) -> ast.Return | None:
    """The last `return` of a loss, when `fn` receives the normaliser and never reads it, never delegates
    to the framework's own method and never divides by an accumulation window."""
    params = {a.arg for a in (*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs)}
    if hook.normaliser in params:
        received = hook.normaliser
    elif fn.args.kwarg is not None:
        received = fn.args.kwarg.arg  # `**kwargs`: the framework passes it by keyword
    else:
        return None  # a signature from before the framework passed it: the framework divides
    returns: list[ast.Return] = []
    if hook.counted_key and not _may_hold(fn, hook.counted_key, params - {received}):
        return None  # the framework passes no normaliser for such a batch, and divides the loss itself
    for node in own_nodes(fn):
        if isinstance(node, ast.Name) and node.id == received and isinstance(node.ctx, ast.Load):
            return None
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == fn.name \
                and isinstance(node.func.value, ast.Call) and code(node.func.value.func) == "super":
            return None  # `super().compute_loss(...)`: the framework's own normalisation
        if _divides_by_window(node):
            return None
        if isinstance(node, ast.Return) and node.value is not None and not _is_none(node.value):
            returns.append(node)
    return max(returns, key=lambda r: (r.lineno, r.col_offset)) if returns else None  # the last in the source


def _may_hold(fn: ast.FunctionDef | ast.AsyncFunctionDef, key: str, params: set[str]) -> bool:
    """Does the batch the hook receives show `key`? It is read by name (`inputs["labels"]`,
    `inputs.pop("labels")`), or a parameter is passed whole as keywords (`model(**inputs)`), where
    the model takes its labels. A hook that reads other keys only (`inputs["student_input_ids"]`)
    trains on batches without it."""
    for node in own_nodes(fn):
        if isinstance(node, ast.Constant) and node.value == key:
            return True
        if isinstance(node, ast.keyword) and node.arg is None and isinstance(node.value, ast.Name) \
                and node.value.id in params:
            return True
    return False


def _divides_by_window(node: ast.AST) -> bool:
    if isinstance(node, (ast.BinOp, ast.AugAssign)) and isinstance(node.op, (ast.Div, ast.FloorDiv)):
        return bool(_WINDOW.search(code(node.right if isinstance(node, ast.BinOp) else node.value)))
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("div", "div_", "true_divide"):
        return any(_WINDOW.search(code(a)) for a in node.args)
    return False


def _is_none(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def _loss_text(value: ast.expr | None) -> str:
    """`(loss, outputs) if return_outputs else loss` -> `loss`."""
    if isinstance(value, ast.IfExp):
        value = value.orelse
    if isinstance(value, ast.Tuple) and value.elts:
        value = value.elts[0]
    return code(value) if value is not None else ""


def _assigned_names(module: ast.Module) -> set[str]:
    """Every attribute or name assigned anywhere in the module, and every keyword argument passed."""
    out: set[str] = set()
    for node in iter_tree(module):
        if isinstance(node, ast.keyword) and node.arg:
            out.add(node.arg)
        for t in assignment_targets(node):
            if isinstance(t, ast.Attribute):
                out.add(t.attr)
            elif isinstance(t, ast.Name):
                out.add(t.id)
    return out
