"""Switches no run turns on: objects a file builds switched off on every run the project makes.

A GradScaler built `GradScaler(enabled=args.fp16)`, of a command-line option `-fp16` whose default is False and that
nothing of the project sets, scales nothing on any run the project makes; one built only under `if use_scaler:`, with
`use_scaler = model_config["train"]["half_precision"]` set False by every config file of the project, is never built.
A finding that holds only where such a scaler is on (a GL007 of gradients still scaled: clipped, their norm read,
changed, stepped past the scaler; or unscaled twice) then describes a run the project does not make (voicechanger's
four GL007 and SpeakerClassifier's two, lockbox 44, all read false). That someone turns the setting on is an
assumption: the finding becomes `possible`, the assumption said; it stays under `--show-possible`.

Decided only when every construction in the file of an object the catalogue says can be switched off (a `construct`
row with an `enabled` argument) is off on every run: its switch argument is a setting that is off, or it stands in
the body of an `if` whose test is such a setting (or the `else` of `if not setting:`). A setting is a command-line
option of the script (`args.fp16`), a settings field (`cfg.amp`, `self.use_amp`, `config["train"]["half_precision"]`,
`config.get("fp16")`), or a parameter whose off default no call passes, reached through names bound once
(`use_amp = args.fp16`); what value it has on every run is `project.setting_values`' to say. A file that builds no
such object (its scaler handed in) decides nothing.
"""

from __future__ import annotations

import ast

from ..analysis.apimodels import ArgRef, catalogue_for
from ..analysis.names import ImportMap
from ..analysis.syntax import innermost_function
from ..analysis.walk import breadth_first
from ..diagnostics import Certainty, Diagnostic, made_possible
from ..messages import needs_a_scaler_on
from ..sources import parsed_or_none
from .index import ProjectIndex
from .project_calls import defaults_where, rebound, unpassed
from .setting_values import OFF, Scope, alias_of, field_has, option_has, script_options

__all__ = ["settle_off_switches"]


def settle_off_switches(found: list[Diagnostic], text: str, index: ProjectIndex, path: str
                        ) -> tuple[list[Diagnostic], tuple[tuple[str, str], ...]] | None:
    """`found` (the findings of the file at `path`, whose source is `text`) with its certain findings that hold only
    where a GradScaler is on made possible when every scaler the file builds is off on every run the project makes,
    and the project files the decision read (with their SHA-256); None when nothing was decided."""
    if not any(_settleable(d) for d in found):
        return None
    tree = parsed_or_none(text)
    if tree is None:
        return None
    with index.reads_recorded() as read:
        settings = _switched_off(tree, index, path)
    if not settings:
        return None
    shown = ", ".join(f"`{s}`" for s in sorted(settings))
    assumption = (f"that the GradScaler is on (every scaler of the file is built off, or only under {shown}, a setting "
                  "every run of the project leaves off: its gradients are never scaled there)")
    out = []
    for d in found:
        if _settleable(d):
            d = made_possible(d, assumption)
        out.append(d)
    read.pop(path, None)
    return out, tuple(sorted(read.items()))


def _settleable(d: Diagnostic) -> bool:
    return d.certainty is Certainty.CERTAIN and needs_a_scaler_on(d.code, d.message) and d.cell is None


def _switched_off(tree: ast.Module, index: ProjectIndex, path: str) -> set[str] | None:
    """The settings that keep every switchable object the file builds off on every run; None when some may be on
    (built without a switch, or switched by something not shown off), or when the file builds none."""
    catalogue = catalogue_for()
    imports = ImportMap.of(tree)
    parents = {id(child): node for node in breadth_first(tree) for child in ast.iter_child_nodes(node)}
    settings: set[str] = set()
    built = 0
    for node in breadth_first(tree):
        if not isinstance(node, ast.Call):
            continue
        qualified = imports.qualify(node.func)
        ref = catalogue.switch_argument(qualified) if qualified is not None else None
        if ref is None:
            continue
        built += 1
        scope, cls = _scope_of(tree, node)
        switch = _argument(node, ref)
        name = _off_setting(switch, scope, cls, tree, index, path) if switch is not None else None
        if name is None:
            name = _off_gate(node, parents, scope, cls, tree, index, path)
        if name is None:
            return None
        settings.add(name)
    return settings if built else None


def _argument(call: ast.Call, ref: ArgRef) -> ast.expr | None:
    """The argument of `call` that `ref` names (by keyword, or by place); None when not given."""
    for keyword in call.keywords:
        if keyword.arg in ref.keywords:
            return keyword.value
    return next((call.args[p] for p in ref.positions if p < len(call.args)), None)


def _scope_of(tree: ast.Module, node: ast.Call) -> tuple[Scope, ast.ClassDef | None]:
    fn = innermost_function(tree, node.lineno)
    if fn is None:
        return tree, None
    cls = next((c for c in breadth_first(tree) if isinstance(c, ast.ClassDef) and any(s is fn for s in c.body)), None)
    return fn, cls


def _off_gate(node: ast.AST, parents: dict[int, ast.AST], scope: Scope, cls: ast.ClassDef | None, tree: ast.Module,
              index: ProjectIndex, path: str) -> str | None:
    """The setting of an `if` around `node` in its scope that is off on every run, `node` in its body (`if use_amp:`),
    or in its `else` when the test is `not setting`."""
    child, up = node, parents.get(id(node))
    while up is not None and up is not scope:
        if isinstance(up, ast.If):
            in_body = any(s is child for s in up.body)
            test = up.test
            if not in_body and isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
                test, in_body = test.operand, any(s is child for s in up.orelse)
            conjuncts = test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) else [test]
            for conjunct in conjuncts if in_body else ():
                name = _off_setting(conjunct, scope, cls, tree, index, path)
                if name is not None:
                    return name
        child, up = up, parents.get(id(up))
    return None


def _off_setting(expr: ast.expr, scope: Scope, cls: ast.ClassDef | None, tree: ast.Module, index: ProjectIndex,
                 path: str) -> str | None:
    """The name of the setting `expr` reads, when it is off on every run the project makes; None otherwise."""
    expr = alias_of(expr, scope, tree)
    if isinstance(expr, ast.Constant):
        return "False" if OFF.accepts(expr) else None
    if isinstance(expr, ast.Name) and not isinstance(scope, ast.Module) and not rebound(scope, expr.id):
        off = defaults_where(scope, OFF.accepts)
        return expr.id if expr.id in off and unpassed(scope, cls, {expr.id}, off, index, path) else None
    if isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name) and script_options(scope, tree,
                                                                                              expr.value.id):
        return expr.attr if option_has(expr.attr, tree, index, path, OFF) else None
    key = _key_read(expr)
    if key is None:
        return None
    family = None
    if isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name) and expr.value.id == "self" and cls:
        family = (cls.name, frozenset(b.id for b in cls.bases if isinstance(b, ast.Name)))
    return key if field_has(key, index, path, OFF, family) else None


def _key_read(expr: ast.expr) -> str | None:
    """The field a settings read names: `cfg.amp`, `config["train"]["half_precision"]`, `config.get("fp16")`."""
    if isinstance(expr, ast.Attribute):
        return expr.attr
    if isinstance(expr, ast.Subscript) and isinstance(expr.slice, ast.Constant) and isinstance(expr.slice.value, str):
        return expr.slice.value
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and expr.func.attr == "get" \
            and 1 <= len(expr.args) <= 2 and not expr.keywords and isinstance(expr.args[0], ast.Constant) \
            and isinstance(expr.args[0].value, str) and (len(expr.args) == 1 or OFF.accepts(expr.args[1])):
        return expr.args[0].value
    return None
