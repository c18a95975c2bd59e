"""Resolve what names mean: imports to qualified names, and the naming conventions of training code.

What torch and the frameworks' APIs do is not here: it is data, in `apimodels/`. The patterns below
are conventions of the code people write (`opt_D` holds an optimizer, `netG` a model); the analysis
falls back on them only when construction and use say nothing, and then with less certainty.
"""

from __future__ import annotations

import ast
import functools
import re
from dataclasses import dataclass, field

from .conventions import convention
from .walk import breadth_first, statements

# Names a parameter or attribute gets when it holds an optimizer.
OPTIMIZER_NAME = convention("optimizer")
SCHEDULER_NAME = convention("scheduler")
# An object keeping an average of weights (EMA, SWA, Polyak), stepped like an optimizer but reading no
# gradient: `ema_optimizer.step()` of a `WeightEMA`.
AVERAGE_NAME = convention("weight_average")
# Names a parameter or attribute gets when it holds a model.
MODEL_NAME = convention("model")

_EFFECT_NAME = convention("gradient_effect")
_CLIPPING_NAME = convention("clipping_helper")


# Helpers that read an optimizer or its gradients, or set its learning rate, and clear nothing:
# `adjust_learning_rate(optimizer, epoch)`, `clip_gradient(optimizer, 5)`, `get_privacy_spent(...)`.
_PASSIVE_NAME = convention("passive_helper")
_ACTIVE_NAME = convention("active_helper")


# A checkpoint is written (or read) wherever the word sits: `lm_checkpoint(model=m, optimizer=opt)`,
# `write_ckpt(...)` save the optimizer's state, they do not clear its gradients.
_CHECKPOINT_NAME = convention("checkpoint")


def callee_is_passive(name: str) -> bool:
    """Tell whether an opaque function's name says it only reads what it is given (or sets a rate)."""
    last = name.rsplit(".", 1)[-1]
    return bool(_PASSIVE_NAME.search(last) or _CHECKPOINT_NAME.search(last)) and not _ACTIVE_NAME.search(last)


def callee_suggests_grad_effect(name: str) -> bool:
    """Tell whether an opaque function's name suggests it may clear or step gradients: not a clipping helper
    (`adaptive_clip_grad_(model.parameters())` rescales them in place) unless its name says it acts too."""
    last = name.rsplit(".", 1)[-1]
    if _CLIPPING_NAME.search(last) and not _ACTIVE_NAME.search(last):
        return False
    return bool(_EFFECT_NAME.search(name))


@dataclass
class ImportMap:
    """Alias -> qualified name, from every import statement in a module."""

    aliases: dict[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, module: ast.Module) -> ImportMap:
        m = cls()
        m._collect(module)
        return m

    def _collect(self, module: ast.Module) -> None:
        out = self.aliases
        for stmt in statements(module):  # imports are statements: expressions need no walk
            if isinstance(stmt, ast.Import):
                for alias in stmt.names:
                    if alias.asname is not None:
                        out[alias.asname] = alias.name
                    else:
                        head = alias.name.split(".", 1)[0]
                        out.setdefault(head, head)
            elif isinstance(stmt, ast.ImportFrom):
                base = "" if stmt.level or stmt.module is None else stmt.module
                for alias in stmt.names:
                    if alias.name == "*":
                        break
                    out[alias.asname or alias.name] = f"{base}.{alias.name}" if base else alias.name
            elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and (name := _imported_by_call(stmt.value)):
                # `self.amp = importlib.import_module("apex.amp")`: that module, under the target's text
                target = dotted(stmt.targets[0])
                if target is not None:
                    out.setdefault(target, name)

    def qualify(self, expr: ast.AST) -> str | None:
        """Return the qualified dotted name of an expression like `O.Adam`, or None."""
        text = dotted(expr)
        if text is None:
            return None
        head, _, rest = text.partition(".")
        if head in self.aliases:
            base = self.aliases[head]
            return f"{base}.{rest}" if rest else base
        if head == "self" and rest:  # `self.amp.scale_loss` of `self.amp = importlib.import_module("apex.amp")`
            owner, _, attr = rest.partition(".")
            module = self.aliases.get(f"self.{owner}")
            if module is not None:
                return f"{module}.{attr}" if attr else module
        return text


def _imported_by_call(value: ast.expr) -> str | None:
    """The module `importlib.import_module("a.b")` or `__import__("a.b", fromlist=[...])` returns, by its name."""
    if not isinstance(value, ast.Call) or not value.args or not isinstance(value.args[0], ast.Constant) \
            or not isinstance(value.args[0].value, str):
        return None
    func = dotted(value.func)
    if func in ("importlib.import_module", "import_module") or func == "__import__" and value.keywords:
        return value.args[0].value
    return None


def dotted(expr: ast.AST | None) -> str | None:
    """Return `a.b.c` for a Name/Attribute chain, else None."""
    parts: list[str] = []
    node = expr
    while type(node) is ast.Attribute:
        parts.append(node.attr)
        node = node.value
    if type(node) is ast.Name:
        if not parts:
            return node.id
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def ref_text(expr: ast.AST) -> str | None:
    """Return a stable key for an lvalue-like expression: `x`, `self.opt`, `opts[g]`."""
    kind = type(expr)
    if kind is ast.Name:
        return expr.id  # type: ignore[attr-defined]
    if kind is ast.Attribute:
        base = ref_text(expr.value)  # type: ignore[attr-defined]
        return None if base is None else f"{base}.{expr.attr}"  # type: ignore[attr-defined]
    if kind is ast.Subscript:
        base = ref_text(expr.value)  # type: ignore[attr-defined]
        if base is not None:
            key = literal_key(expr.slice)  # type: ignore[attr-defined]
            if key is not None:
                return f"{base}[{key}]"
    return None


def reads_any(expr: ast.AST, names: set[str] | frozenset[str]) -> bool:
    """`expr` reads one of `names`, plain or dotted (`self.update_every`)."""
    return any(isinstance(n, (ast.Name, ast.Attribute)) and dotted(n) in names for n in breadth_first(expr))


def member_ref(expr: ast.AST) -> str | None:
    """`opts[i]` (an index that is no literal) as a key standing for any member of `opts`: `opts[*]`."""
    if isinstance(expr, ast.Subscript) and type(expr.slice) is not ast.Slice and literal_key(expr.slice) is None:
        base = ref_text(expr.value)
        return None if base is None else f"{base}[*]"
    return None


def literal_key(expr: ast.AST | None) -> str | None:
    """The key a literal subscript or dict key names: a string's value, an integer's digits."""
    if type(expr) is ast.Constant:
        value = expr.value
        if type(value) is str:
            return value
        if type(value) is int:
            return str(value)
    return None


# A test of a non-finite loss or gradient norm (`isfinite(norm)`, `found_inf`): a step skipped on a bad gradient.
NON_FINITE = convention("non_finite")


def last_name(expr: ast.AST) -> str | None:
    if type(expr) is ast.Name:
        return expr.id
    if type(expr) is ast.Attribute:
        return expr.attr
    return None


_SYNONYMS = {
    "gen": "g", "generator": "g", "netg": "g", "disc": "d", "discriminator": "d", "netd": "d",
    "enc": "e", "encoder": "e", "nete": "e", "dec": "decoder", "decoder": "decoder",
}
_NOISE = {"loss", "err", "error", "net", "self", "model", "total", "opt", "optimizer", "backward", "the", "real", "fake"}


def roles(name: str) -> set[str]:
    """Role words of a name: `loss_GE` -> {g, e}; `errD` -> {d}; `netG` -> {g}; `student_loss` -> {student}."""
    return set(_roles(name))


@functools.lru_cache(maxsize=8192)
def _roles(name: str) -> frozenset[str]:
    """(`roles`, kept per name: GL005 asks for the same names once per contribution a step holds)"""
    out: set[str] = set()
    for part in re.split(r"[_.\[\]()\s]+", name):
        for tok in re.findall(r"[A-Z]{1,3}(?![a-z])|[A-Z]?[a-z]+|\d+", part):
            low = tok.lower()
            if tok.isupper() and len(tok) <= 3:
                out.update(tok.lower())
            elif low in _SYNONYMS:
                out.add(_SYNONYMS[low])
            elif len(low) == 1 and low.isalpha():
                out.add(low)
            elif low not in _NOISE and not low.isdigit():
                out.add(low)
    return frozenset(out - {"a", "b", "ab", "ba", "x", "y"})  # CycleGAN's domain letters name no role
