"""The `gradlint` command: click wiring and printing only."""

from __future__ import annotations

import sys

import click

from . import __version__
from .api import check_paths
from .diagnostics import Diagnostic
from .fixes import fix_paths, unified_diff, write_fixed
from .registry import PARSE_ERROR_CODE, all_rules, expand_selection
from .render import render_json, render_text
from .rule_docs import read_doc

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


def _split(values: tuple[str, ...]) -> list[str]:
    return [part for v in values for part in v.split(",") if part.strip()]


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True, help="Output format.")
@click.option("--select", multiple=True, metavar="CODES", help="Comma-separated codes or prefixes to enable (default: all).")
@click.option("--ignore", multiple=True, metavar="CODES", help="Comma-separated codes or prefixes to disable.")
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when problems are found (files that fail to parse still exit 2).")
@click.option("--fix", is_flag=True, help="Apply the safe fixes, then report what remains.")
@click.option("--unsafe-fixes", is_flag=True, help="Also apply (with --fix) or show as fixable the fixes that need review.")
@click.option("--diff", is_flag=True, help="Print the unified diff --fix would apply, write nothing (exit 1 if it is not empty).")
@click.version_option(__version__, prog_name="gradlint")
def check(paths: tuple[str, ...], fmt: str, select: tuple[str, ...], ignore: tuple[str, ...], exit_zero: bool,
          fix: bool, unsafe_fixes: bool, diff: bool) -> None:
    """Check PyTorch training scripts for gradient-accumulation bugs.

    PATHS are files or directories (walked for *.py). Use `gradlint rule [CODE]` to read the rules.
    """
    try:
        codes = expand_selection(_split(select) or None, _split(ignore) or None)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from exc
    if fix or diff:
        _apply_fixes(list(paths), codes, fmt, exit_zero, unsafe_fixes, diff)
    diagnostics, files = check_paths(list(paths), codes)
    if fmt == "json":
        click.echo(render_json(diagnostics))
    else:
        click.echo(render_text(diagnostics, files, unsafe_fixes))
    if any(d.code == PARSE_ERROR_CODE for d in diagnostics):
        sys.exit(EXIT_ERROR)
    if diagnostics and not exit_zero:
        sys.exit(EXIT_FINDINGS)
    sys.exit(EXIT_CLEAN)


def _apply_fixes(paths: list[str], codes: frozenset[str], fmt: str, exit_zero: bool, unsafe: bool, diff_only: bool) -> None:
    """Run `--fix` or `--diff`, print, and exit."""
    results = fix_paths(paths, codes, unsafe)
    changed = [r for r in results if r.changed]
    fixed = sum(r.applied for r in changed)
    if diff_only:
        for r in changed:
            click.echo(unified_diff(r), nl=False)
        files = len(changed)
        click.echo(f"Would fix {fixed} problem{'s' if fixed != 1 else ''} in {files} file{'s' if files != 1 else ''}." if changed
                   else "No fixes to apply.", err=True)
        sys.exit(EXIT_FINDINGS if changed else EXIT_CLEAN)
    failed = False
    diagnostics: list[Diagnostic] = []
    for r in results:
        if r.changed:
            try:
                write_fixed(r)
            except OSError as exc:
                click.echo(f"gradlint: could not write {r.path}: {exc}", err=True)
                failed = True
                fixed -= r.applied
                diagnostics.extend(r.before)
                continue
        diagnostics.extend(r.after)
    diagnostics.sort(key=Diagnostic.sort_key)
    if fmt == "json":
        click.echo(render_json(diagnostics))
    else:
        click.echo(render_text(diagnostics, len(results), unsafe, fixed=fixed))
    if failed or any(d.code == PARSE_ERROR_CODE for d in diagnostics):
        sys.exit(EXIT_ERROR)
    sys.exit(EXIT_FINDINGS if diagnostics and not exit_zero else EXIT_CLEAN)


@click.command(name="rule", context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("code", required=False)
def rule(code: str | None) -> None:
    """Print the document of rule CODE, or list all rules."""
    rules = all_rules()
    if code is None:
        for c, cls in rules.items():
            click.echo(f"{c}  {cls.name:<28} {cls.summary}")
        return
    wanted = code.upper()
    by_name = {cls.name: c for c, cls in rules.items()}
    wanted = by_name.get(code, wanted)
    if wanted not in rules:
        raise click.UsageError(f"unknown rule {code!r}; valid codes: {', '.join(rules)}")
    doc = read_doc(wanted)
    if doc is None:
        cls = rules[wanted]
        click.echo(f"# {wanted}: {cls.name}\n\n{cls.summary}")
        return
    click.echo(doc.rstrip())


def main(argv: list[str] | None = None) -> None:
    """Entry point: `gradlint rule ...` reads the catalogue, anything else checks paths."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] == "rule":
        rule.main(args=args[1:], prog_name="gradlint rule")
    else:
        check.main(args=args, prog_name="gradlint")
