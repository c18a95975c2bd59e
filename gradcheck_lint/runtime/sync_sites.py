"""Where GL006 anchors when `no_sync()` is chosen the wrong way round: the choice, as the static side.

The guard sees the micro-batch that steps run its backward pass with gradient sync off; the bug is the
choice of the context manager around that pass (`with (model.no_sync() if last else nullcontext()):`),
not the backward call. Read from the source of the backward's own frame: the innermost `with` around
the backward line whose items name a method that switches sync off (the API catalogue's rows of effect
`sync`: DDP's and FSDP's `no_sync`, `accelerator.no_sync`, Fabric's `no_backward_sync`, ...), called or
chosen uncalled (`with (model.no_sync if c else nullcontext)():`), or that enters a name the function
last assigned such a choice to before the `with` (`ctx = model.no_sync if c else nullcontext`, then
`with ctx():`). The anchor is the conditional expression whose arm is the sync-off context (where the
static side anchors its choice), else the sync-off call itself; the site keeps the backward's call
text, which the message speaks of. No such `with` in the backward's own function (the context entered
by a caller): the backward itself.

A conditional expression is also read as the static side reads it (`analysis/sync_choices.py`), for its
words: the arm that switches sync off, as written, the test (through the name it was assigned to before,
`last = (i + 1) % N == 0`), and whether sync is off when the test holds (`SyncChoiceWords`).
"""

from __future__ import annotations

import ast
import dataclasses
import functools

from .evidence import Site
from .gates import _chain_to
from .source_calls import char_col, parsed

_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


@functools.cache
def _sync_names() -> frozenset[str]:
    from ..analysis.apimodels import catalogue_for

    return catalogue_for().named_by_effect("sync")


@dataclasses.dataclass(frozen=True, slots=True)
class SyncChoiceWords:
    """What the static side says of a sync choice (`messages.ddp_no_sync_chosen_on_stepping_micro_batch`)."""

    off_text: str  # the arm that switches sync off, as written (`model.no_sync`, `model.no_sync()`)
    test: str  # the choice's test, through the name it was assigned to (`(it + 1) % accum == 0`)
    off_when: bool  # sync is off when the test is this


def sync_choice_of(backward: Site) -> Site:
    """The backward's site anchored at the sync choice of the `with` around it, or unchanged."""
    return sync_choice(backward)[0]


def sync_choice(backward: Site) -> tuple[Site, SyncChoiceWords | None]:
    """`sync_choice_of`, with the words of the choice when it is a conditional expression (else None)."""
    p = parsed(backward.path)
    if p is None or backward.line <= 0:
        return backward, None
    names = _sync_names()
    chain = _chain_to(p.tree, backward.line)[:-1]
    for depth in range(len(chain) - 1, -1, -1):
        node = chain[depth]
        if isinstance(node, _SCOPES):
            break
        if isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                anchor = _choice_in(item.context_expr, names)
                if anchor is None:
                    anchor = _choice_through_name(item.context_expr, names, chain[:depth], node.lineno)
                if anchor is not None:
                    site = dataclasses.replace(backward, line=anchor.lineno,
                                               col=char_col(p, anchor.lineno, anchor.col_offset))
                    words = _words(anchor, names, chain[:depth], p.source) if isinstance(anchor, ast.IfExp) else None
                    return site, words
    return backward, None


def _words(choice: ast.IfExp, names: frozenset[str], outer: list[ast.AST], source: str) -> SyncChoiceWords | None:
    """The words of a conditional expression choosing a sync-off context, as `analysis/sync_choices.py`
    reads it: exactly one arm switches sync off; a test that is a name (or `not` a name) bound to a test
    before the choice, in the same function, is read as that test."""
    on_body, on_orelse = _is_sync(choice.body, names), _is_sync(choice.orelse, names)
    if on_body == on_orelse:
        return None
    from ..analysis.sync_choices import read_test

    test, off_when = read_test(choice.test, on_body, lambda name: _bound_test(name, outer, choice.lineno))
    return SyncChoiceWords(_text(choice.body if on_body else choice.orelse, source), _text(test, source), off_when)


def _last_assigned(name: str, outer: list[ast.AST], line: int, inclusive: bool = False) -> tuple[ast.expr, int] | None:
    """The value last assigned to `name` before `line` (or on it, `inclusive`) in the innermost function of
    `outer`, with its line; None when there is none."""
    scope = next((n for n in reversed(outer) if isinstance(n, _SCOPES)), outer[0] if outer else None)
    if scope is None:
        return None
    from ..analysis.walk import own_nodes  # (only once a finding is reported: not at the guard's import)

    best: tuple[ast.expr, int] | None = None
    for node in own_nodes(scope):
        value: ast.expr | None = None
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            value, at = node.value, node.lineno
        elif isinstance(node, (ast.AnnAssign, ast.NamedExpr)) and isinstance(node.target, ast.Name) and node.target.id == name:
            value, at = node.value, node.lineno
        if value is None or not (at <= line if inclusive else at < line) or (best is not None and at <= best[1]):
            continue
        best = (value, at)
    return best


def _bound_test(name: str, outer: list[ast.AST], line: int) -> ast.expr | None:
    """The test (a comparison, `and`/`or`, `not`, or a conditional expression of two truth values) last
    assigned to `name` before `line`, in the function."""
    from ..analysis.bound_tests import flag_test
    from ..analysis.syntax import TESTS

    found = _last_assigned(name, outer, line)
    if found is None:
        return None
    return found[0] if isinstance(found[0], TESTS) else flag_test(found[0])


def _text(node: ast.expr, source: str) -> str:
    """The node's text as the static side writes it (`analysis.syntax.code`: whitespace-normalised)."""
    from ..analysis.syntax import Source, code, register_foreign, unregister_foreign

    ids = {id(n) for n in ast.walk(node)}
    register_foreign(ids, Source(source))
    try:
        return code(node)
    finally:
        unregister_foreign(ids)


def _choice_in(expr: ast.expr, names: frozenset[str]) -> ast.expr | None:
    """The choice in a context expression: the conditional expression one of whose arms is a sync-off
    context (`model.no_sync() if c else nullcontext()`, `(model.no_sync if c else nullcontext)()`), where
    the static side anchors; else the sync-off call or method itself (`with model.no_sync():`)."""
    for sub in ast.walk(expr):
        if isinstance(sub, ast.IfExp) and any(_is_sync(arm, names) for arm in (sub.body, sub.orelse)):
            return sub
    for sub in ast.walk(expr):
        if isinstance(sub, ast.expr) and _is_sync(sub, names):
            return sub
    return None


def _is_sync(node: ast.AST, names: frozenset[str]) -> bool:
    """`model.no_sync` or `model.no_sync(...)` (the catalogue's `sync` rows)."""
    if isinstance(node, ast.Call):
        node = node.func
    return isinstance(node, ast.Attribute) and node.attr in names


def _choice_through_name(expr: ast.expr, names: frozenset[str], outer: list[ast.AST], line: int) -> ast.expr | None:
    """A context chosen into a name and entered through it (`ctx = model.no_sync if c else nullcontext`
    then `with ctx():`): the choice in the last assignment to that name before the `with`, in the
    backward's own function."""
    target = expr.func if isinstance(expr, ast.Call) and not expr.args and not expr.keywords else expr
    if not isinstance(target, ast.Name):
        return None
    found = _last_assigned(target.id, outer, line, inclusive=True)
    return _choice_in(found[0], names) if found is not None else None
