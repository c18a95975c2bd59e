"""Pure analysis: source text in, diagnostics out. Parse once, build the model once, run the rules."""

from __future__ import annotations

import ast
import re
import warnings
from typing import Iterable

import libcst as cst

from .analysis import TrainingModel
from .diagnostics import Diagnostic, Severity, Span
from .registry import PARSE_ERROR_CODE, PARSE_ERROR_NAME, all_rules

# Larger files (generated code, data dumps) are parsed for syntax only.
MAX_ANALYSED_CHARS = 3_000_000
# Every way to run a backward pass contains this word; files without it hold no training step.
_PREFILTER = re.compile(r"backward")


def might_train(text: str) -> bool:
    """Cheap textual test: can this file contain a training step at all?"""
    return _PREFILTER.search(text) is not None


def unanalysable(path: str, reason: str, line: int = 1, column: int = 1, help: str | None = None) -> Diagnostic:
    return Diagnostic(
        path=path,
        span=Span(line, column, line, column),
        code=PARSE_ERROR_CODE,
        name=PARSE_ERROR_NAME,
        message=f"{path} {reason}; it was not analysed.",
        help=help or "fix the file so that Python can parse it, or exclude it from the checked paths.",
        severity=Severity.ERROR,
    )


def check_text(text: str, path: str, codes: Iterable[str] | None = None) -> list[Diagnostic]:
    """Analyse one file's source text and return its diagnostics, sorted; never raises."""
    selected = frozenset(codes) if codes is not None else None
    # CPython's own parser first: it is fast, and it rejects input (5,000 nested brackets, say) that
    # would overflow the native stack of libcst's parser instead of raising.
    trains = might_train(text)
    if trains and len(text) > MAX_ANALYSED_CHARS:
        return [unanalysable(
            path, f"is too large to analyse ({len(text) / 1e6:.1f} MB; the limit is {MAX_ANALYSED_CHARS / 1e6:.0f} MB)",
            help="training scripts are far smaller: this is probably generated code; exclude it from the checked paths.",
        )]
    problems = _syntax_only(text, path)
    if problems or not trains:
        return problems
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            module = cst.parse_module(text)
    except cst.ParserSyntaxError as exc:
        # Python itself accepted the file, so this is a limit of libcst's parser, not the user's syntax.
        return [unanalysable(path, f"could not be parsed by libcst although Python accepts it ({exc.message})",
                             exc.raw_line, exc.raw_column + 1,
                             help="this is a limit of the parser gradlint uses; exclude the file from the checked paths.")]
    except RecursionError:
        return [unanalysable(path, "is nested too deeply to parse (recursion limit)")]
    except Exception as exc:  # noqa: BLE001 - the parser must never take the run down
        return [unanalysable(path, f"could not be parsed ({type(exc).__name__}: {exc})")]
    try:
        model = TrainingModel(module)
        out: list[Diagnostic] = []
        for code, rule_cls in all_rules().items():
            if selected is not None and code not in selected:
                continue
            rule = rule_cls()
            for finding in rule.check(model):
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
                    )
                )
    except RecursionError:
        return [unanalysable(path, "is nested too deeply to analyse (recursion limit)")]
    except Exception as exc:  # noqa: BLE001 - one file's analysis failure must not end the run
        return [unanalysable(path, f"could not be analysed: internal error {type(exc).__name__}: {exc}",
                             help="this is a bug in gradlint; please report it with the file. Other files were still checked.")]
    return sorted(set(out), key=Diagnostic.sort_key)


def _syntax_only(text: str, path: str) -> list[Diagnostic]:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ast.parse(text)
    except SyntaxError as exc:
        return [unanalysable(path, f"has a syntax error: {exc.msg}", exc.lineno or 1, exc.offset or 1)]
    except (RecursionError, MemoryError):
        return [unanalysable(path, "is nested too deeply to parse (recursion limit)")]
    except ValueError as exc:
        return [unanalysable(path, f"could not be parsed ({exc})")]
    return []
