"""Tests of an installed framework's release, decided by the catalogue's `version_floor`.

`if version.parse(torch.__version__) < version.parse("1.6"): _use_apex = True` picks apex's AMP for a
PyTorch older than the native one. gradlint reads code for PyTorch 2 (the torch model file's
`version_floor`), so on every install the code can meet that test is False and the apex branch is dead:
findings in it describe code that never runs (VL_adapter's trainers: GL007 on apex's clipping). Only a
comparison with a release older than the floor is decided; `torch.__version__ >= "2.1"` stays open.

The release is read through the usual wrappers (`version.parse`, `packaging.version.Version`,
`LooseVersion`, `pkg_resources.parse_version`, `float(torch.__version__[:3])`,
`tuple(map(int, torch.__version__.split(".")[:2]))`) and through a module-level name bound once to one
(`TORCH_VERSION = version.parse(torch.__version__)`).
"""

from __future__ import annotations

import ast
import re

from .apimodels import Catalogue
from .names import ImportMap

# calls that hand their one argument's release on (a parsed version, a number, a tuple of its parts)
_WRAPPERS = frozenset({"parse", "Version", "LooseVersion", "StrictVersion", "parse_version",
                       "float", "tuple", "list", "str"})
_RELEASE = re.compile(r"(\d+)(?:\.(\d+))?(?:\.(\d+))?")
_ORDER = (ast.Lt, ast.LtE, ast.Gt, ast.GtE)


class ReleaseTests:
    """Decides release comparisons of one module (its imports and module-level names)."""

    def __init__(self, module: ast.Module, imports: ImportMap, catalogue: Catalogue) -> None:
        self.imports = imports
        self.catalogue = catalogue
        self._module = module
        self._bound: dict[str, ast.expr] | None = None

    def outcome(self, test: ast.expr) -> bool | None:
        """True or False for `<release of a framework> <op> <literal release>` when the literal is older than
        the framework's floor (either side, any of `<`, `<=`, `>`, `>=`); None for anything else."""
        if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], _ORDER)):
            return None
        op, left, right = test.ops[0], test.left, test.comparators[0]
        package, literal = self._package_of(left), _literal(right)
        installed_left = True
        if package is None:
            package, literal, installed_left = self._package_of(right), _literal(left), False
        if package is None or literal is None:
            return None
        floor = self.catalogue.version_floor(package)
        if not floor or _padded(literal, floor) >= _padded(floor, literal):
            return None
        # the installed release is at least the floor, so above the literal
        above = isinstance(op, (ast.Gt, ast.GtE))
        return above if installed_left else not above

    def _package_of(self, expr: ast.expr, depth: int = 0) -> str | None:
        """The top-level package whose `__version__` the expression reads (through the wrappers), or None."""
        if depth > 6:
            return None
        if isinstance(expr, ast.Attribute) and expr.attr == "__version__":
            qual = self.imports.qualify(expr.value)
            return qual.split(".", 1)[0] if qual is not None else None
        if isinstance(expr, ast.Subscript):  # `torch.__version__[:3]`, `....split(".")[:2]`
            return self._package_of(expr.value, depth + 1)
        if isinstance(expr, ast.Name):
            bound = self._module_names().get(expr.id)
            return self._package_of(bound, depth + 1) if bound is not None else None
        if not isinstance(expr, ast.Call):
            return None
        if isinstance(expr.func, ast.Attribute) and expr.func.attr == "split":
            return self._package_of(expr.func.value, depth + 1)
        func = expr.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
        if name == "map" and len(expr.args) == 2:
            return self._package_of(expr.args[1], depth + 1)
        if name in _WRAPPERS and len(expr.args) == 1 and not expr.keywords:
            return self._package_of(expr.args[0], depth + 1)
        return None

    def _module_names(self) -> dict[str, ast.expr]:
        """Names the module binds exactly once, at its top level, to their values."""
        if self._bound is None:
            seen: dict[str, list[ast.expr]] = {}
            for stmt in _top_level(self._module.body):
                if isinstance(stmt, ast.Assign):
                    for target in stmt.targets:
                        if isinstance(target, ast.Name):
                            seen.setdefault(target.id, []).append(stmt.value)
                elif isinstance(stmt, (ast.AugAssign, ast.AnnAssign)) and isinstance(stmt.target, ast.Name):
                    # (an augmented name is bound twice)
                    seen.setdefault(stmt.target.id, []).extend([stmt.value] * 2 if stmt.value is not None else [])
            self._bound = {k: v[0] for k, v in seen.items() if len(v) == 1}
        return self._bound


def _top_level(body: list[ast.stmt]) -> list[ast.stmt]:
    """The module's own statements, also those in its `if`/`try`/`with`/loop blocks, not in functions or classes."""
    out: list[ast.stmt] = []
    for stmt in body:
        out.append(stmt)
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        for field in ("body", "orelse", "finalbody"):
            out.extend(_top_level(getattr(stmt, field, None) or []))
        for handler in getattr(stmt, "handlers", None) or []:
            out.extend(_top_level(handler.body))
    return out


def _literal(expr: ast.expr) -> tuple[int, ...] | None:
    """A release written as a literal: `"1.6"`, `"1.10.0a0"`, `1.6`, `(1, 6)`, or one of those wrapped
    (`version.parse("1.6")`); None for anything else."""
    if isinstance(expr, ast.Call) and len(expr.args) == 1 and not expr.keywords:
        return _literal(expr.args[0])
    if isinstance(expr, ast.Constant) and isinstance(expr.value, (str, float)) and not isinstance(expr.value, bool):
        m = _RELEASE.match(str(expr.value))
        return tuple(int(g) for g in m.groups() if g is not None) if m else None
    if isinstance(expr, ast.Tuple) and expr.elts:
        parts = [e.value for e in expr.elts if isinstance(e, ast.Constant) and type(e.value) is int]
        return tuple(parts) if len(parts) == len(expr.elts) else None
    return None


def _padded(release: tuple[int, ...], other: tuple[int, ...]) -> tuple[int, ...]:
    """`release` with zeros up to `other`'s length: (2,) against (1, 6) compares as (2, 0)."""
    return release + (0,) * (len(other) - len(release))
