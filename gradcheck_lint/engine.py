"""Pure analysis: source text in, diagnostics out. Parse once, build the model once, run the rules, apply suppressions."""

from __future__ import annotations

import ast
import warnings

import libcst as cst

from .analysis import TrainingModel
from .config import Settings
from .diagnostics import Diagnostic, Severity, Span
from .fixplan import resolve as resolve_fix
from .prefilter import might_train
from .registry import PARSE_ERROR_CODE, PARSE_ERROR_HELP, PARSE_ERROR_NAME, Rule, all_rules
from .suppressions import UnusedSuppression, apply_suppressions

# Larger files (generated code, data dumps) are parsed for syntax only.
MAX_ANALYSED_CHARS = 3_000_000

__all__ = ["MAX_ANALYSED_CHARS", "check_text", "might_train", "syntax_problems", "unanalysable"]


def unanalysable(path: str, reason: str, line: int = 1, column: int = 1, help: str | None = None) -> Diagnostic:
    """The one GL000 diagnostic of a file that could not be analysed; it is never suppressed or deselected."""
    return Diagnostic(
        path=path,
        span=Span(line, column, line, column),
        code=PARSE_ERROR_CODE,
        name=PARSE_ERROR_NAME,
        message=f"{path} {reason}; it was not analysed.",
        help=help or PARSE_ERROR_HELP,
        severity=Severity.ERROR,
    )


def check_text(text: str, path: str, settings: Settings | None = None) -> list[Diagnostic]:
    """Analyse one file's source text under `settings` (default: built-in) and return its diagnostics, sorted; never raises."""
    enabled = (settings or Settings.default()).codes_for(path)
    # CPython's own parser first: it is fast, and it rejects input (5,000 nested brackets, say) that
    # would overflow the native stack of libcst's parser instead of raising.
    trains = might_train(text)
    if trains and len(text) > MAX_ANALYSED_CHARS:
        return [unanalysable(
            path, f"is too large to analyse ({len(text) / 1e6:.1f} MB; the limit is {MAX_ANALYSED_CHARS / 1e6:.0f} MB)",
            help="training scripts are far smaller: this is probably generated code; exclude it from the checked paths.",
        )]
    tree, problems = _parse_python(text, path)
    if tree is None:
        return problems
    # An unused suppression is judged against every analysis rule, selected or not.
    run_all = UnusedSuppression.code in enabled
    rules = [cls for code, cls in all_rules().items() if run_all or code in enabled]
    module: cst.Module | None = None
    if trains and rules:
        module, problems = _parse_cst(text, path)
        if module is None:
            return problems
    try:
        out = _run_rules(module, text, path, rules) if module is not None else []
        if len(text) <= MAX_ANALYSED_CHARS:  # generated files too big to analyse are not tokenized either
            out = apply_suppressions(out, text, tree, path, enabled)
    except RecursionError:
        return [unanalysable(path, "is nested too deeply to analyse (recursion limit)")]
    except Exception as exc:  # noqa: BLE001 - one file's analysis failure must not end the run
        return [unanalysable(path, f"could not be analysed: internal error {type(exc).__name__}: {exc}",
                             help="this is a bug in gradlint; please report it with the file. Other files were still checked.")]
    return sorted({d for d in out if d.code in enabled}, key=Diagnostic.sort_key)


def syntax_problems(text: str, path: str) -> list[Diagnostic]:
    """Parse with CPython's parser only; return one GL000 if the text is not valid Python."""
    return _parse_python(text, path)[1]


def _parse_cst(text: str, path: str) -> tuple[cst.Module | None, list[Diagnostic]]:
    """Parse with libcst: the module, or a GL000 diagnostic when libcst refuses the text."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return cst.parse_module(text), []
    except cst.ParserSyntaxError as exc:
        # Python itself accepted the file, so this is a limit of libcst's parser, not the user's syntax.
        return None, [unanalysable(path, f"could not be parsed by libcst although Python accepts it ({exc.message})",
                                   exc.raw_line, exc.raw_column + 1,
                                   help="this is a limit of the parser gradlint uses; exclude the file from the checked paths.")]
    except RecursionError:
        return None, [unanalysable(path, "is nested too deeply to parse (recursion limit)")]
    except Exception as exc:  # noqa: BLE001 - the parser must never take the run down
        return None, [unanalysable(path, f"could not be parsed ({type(exc).__name__}: {exc})")]


def _run_rules(module: cst.Module, text: str, path: str, rules: list[type[Rule]]) -> list[Diagnostic]:
    """Build the semantic model once and run `rules` over it."""
    model = TrainingModel(module)
    out: list[Diagnostic] = []
    for rule_cls in rules:
        for finding in rule_cls().check(model):
            out.append(
                Diagnostic(
                    path=path,
                    span=model.span(finding.node),
                    code=rule_cls.code,
                    name=rule_cls.name,
                    message=finding.message,
                    help=finding.help,
                    severity=rule_cls.severity,
                    certainty=finding.certainty,
                    fix=resolve_fix(model, text, finding.fix, finding.certainty),
                )
            )
    return out


def _parse_python(text: str, path: str) -> tuple[ast.Module | None, list[Diagnostic]]:
    """Parse with CPython: the tree (statement ranges for suppressions), or a GL000 diagnostic."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ast.parse(text), []
    except SyntaxError as exc:
        return None, [unanalysable(path, f"has a syntax error: {exc.msg}", exc.lineno or 1, exc.offset or 1)]
    except (RecursionError, MemoryError):
        return None, [unanalysable(path, "is nested too deeply to parse (recursion limit)")]
    except ValueError as exc:
        return None, [unanalysable(path, f"could not be parsed ({exc})")]
