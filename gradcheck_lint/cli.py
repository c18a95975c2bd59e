"""The `gradlint` command: click wiring and printing only."""

from __future__ import annotations

import os
import sys
from dataclasses import replace

import click

from . import __version__
from .api import check_paths
from .cache import CACHE_DIR_ENV, CACHE_DIR_NAME, ResultCache, default_cache_dir
from .config import ConfigError, Settings, load_settings
from .diagnostics import Diagnostic, split_by_certainty
from .fixes import FileResult, fix_paths, unified_diff, write_fixed
from .output import write_atomic
from .registry import PARSE_ERROR_CODE, Selection, catalogue
from .render import COLOR_MODES, FORMATS, ReportOptions, render_report, use_color
from .rule_docs import read_doc
from .runner import available_cores

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


def _split(values: tuple[str, ...]) -> list[str]:
    return [part for v in values for part in v.split(",") if part.strip()]


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="text", show_default=True,
              help="Output format: text, json, sarif (SARIF 2.1.0) or github (Actions annotations).")
@click.option("--select", multiple=True, metavar="CODES", help="Comma-separated codes, prefixes, rule names or ALL to enable, replacing the config's selection.")
@click.option("--extend-select", multiple=True, metavar="CODES", help="Codes to enable in addition to the selection (e.g. GL100).")
@click.option("--ignore", multiple=True, metavar="CODES", help="Comma-separated codes or prefixes to disable, in addition to the config's.")
@click.option("--config", "config_file", type=click.Path(dir_okay=False), metavar="PATH", help="Read [tool.gradlint] from this file instead of searching for pyproject.toml.")
@click.option("--isolated", is_flag=True, help="Ignore every configuration file.")
@click.option("--force-exclude", is_flag=True, help="Apply exclude patterns to paths given on the command line too (for pre-commit).")
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when problems are found (files that fail to parse still exit 2).")
@click.option("--statistics", is_flag=True, help="Print a count per rule code instead of the diagnostics (text or json).")
@click.option("--show-source", is_flag=True, help="Show the source line under each text diagnostic, with carets.")
@click.option("--color", "color_mode", type=click.Choice(COLOR_MODES), default="auto", show_default=True,
              help="Colour text output; auto: on a terminal, honouring NO_COLOR and FORCE_COLOR.")
@click.option("-o", "--output-file", type=click.Path(dir_okay=False), default=None,
              help="Write the report to this file (atomically) instead of standard output.")
@click.option("--show-possible", is_flag=True,
              help="Also report possible findings: those resting on an assumption (an object known only by its name, code not read).")
@click.option("--fix", is_flag=True, help="Apply the safe fixes, then report what remains.")
@click.option("--unsafe-fixes", is_flag=True, help="Also apply (with --fix) or show as fixable the fixes that need review.")
@click.option("--diff", is_flag=True, help="Print the unified diff --fix would apply, write nothing (exit 1 if it is not empty).")
@click.option("-j", "--jobs", type=click.IntRange(min=0), default=0, show_default="0: one per core",
              help="Analyse files in this many processes (1: in this process).")
@click.option("--no-cache", is_flag=True, help="Analyse every file again; neither read nor write the result cache.")
@click.option("--cache-dir", type=click.Path(file_okay=False), default=None, metavar="DIR",
              help=f"Where to keep results [default: ${CACHE_DIR_ENV}, else {CACHE_DIR_NAME} in the project root]; deletable at any time.")
@click.version_option(__version__, prog_name="gradlint")
def check(
    paths: tuple[str, ...], fmt: str, select: tuple[str, ...], extend_select: tuple[str, ...], ignore: tuple[str, ...],
    config_file: str | None, isolated: bool, force_exclude: bool, exit_zero: bool,
    statistics: bool, show_source: bool, color_mode: str, output_file: str | None, show_possible: bool,
    fix: bool, unsafe_fixes: bool, diff: bool, jobs: int, no_cache: bool, cache_dir: str | None,
) -> None:
    """Check PyTorch training scripts for gradient-accumulation bugs.

    PATHS are files or directories (walked for *.py and *.ipynb). Configuration is read from the nearest
    pyproject.toml with a [tool.gradlint] table. Use `gradlint rule [CODE]` to read the rules.
    """
    cli = Selection(select=tuple(_split(select)) or None, extend_select=tuple(_split(extend_select)), ignore=tuple(_split(ignore)))
    try:
        settings = load_settings(paths, cli, config=config_file, isolated=isolated, force_exclude=force_exclude,
                                 show_possible=show_possible)
    except ConfigError as exc:
        raise click.UsageError(str(exc)) from exc
    isatty = output_file is None and sys.stdout is not None and sys.stdout.isatty()
    try:
        options = ReportOptions(
            format=fmt, statistics=statistics, show_source=show_source,
            color=use_color(color_mode, isatty, os.environ), root=os.getcwd(),
        )
    except ValueError as exc:
        raise click.UsageError(str(exc)) from exc
    fixed: int | None = None
    if diff:
        _print_diff(list(paths), settings, unsafe_fixes)
    if fix:
        diagnostics, files, fixed, failed = _apply_fixes(list(paths), settings, unsafe_fixes)
    else:
        cache = None if no_cache else ResultCache(cache_dir or default_cache_dir(settings.root))
        diagnostics, files = check_paths(list(paths), settings, jobs=jobs or available_cores(), cache=cache)
        failed = False
    # `certain` findings by default; `possible` ones (resting on an assumption) with --show-possible
    diagnostics, hidden = split_by_certainty(diagnostics, settings.show_possible)
    report = render_report(diagnostics, files, replace(options, unsafe_fixes=unsafe_fixes, fixed=fixed, hidden=hidden))
    if output_file is not None:
        try:
            write_atomic(output_file, report + "\n" if report else "")
        except OSError as exc:
            click.echo(f"gradlint: cannot write the report to {output_file}: {exc.strerror or exc}", err=True)
            sys.exit(EXIT_ERROR)
    elif report:
        # click strips ANSI codes from non-terminals unless told otherwise; the decision is made above.
        click.echo(report, color=options.color)
    if failed:
        sys.exit(EXIT_ERROR)
    if any(d.code == PARSE_ERROR_CODE for d in diagnostics):
        sys.exit(EXIT_ERROR)
    if any(not d.notice for d in diagnostics) and not exit_zero:  # a notice alone is no problem
        sys.exit(EXIT_FINDINGS)
    sys.exit(EXIT_CLEAN)


def _print_diff(paths: list[str], settings: Settings, unsafe: bool) -> None:
    """`--diff`: print the unified diff of what `--fix` would do, write nothing, and exit."""
    results = fix_paths(paths, None, unsafe, settings)
    changed = [r for r in results if r.changed]
    fixed = sum(r.applied for r in changed)
    for r in changed:
        click.echo(unified_diff(r), nl=False)
    files = len(changed)
    click.echo(f"Would fix {fixed} problem{'s' if fixed != 1 else ''} in {files} file{'s' if files != 1 else ''}." if changed
               else "No fixes to apply.", err=True)
    if _report_fix_errors(results):
        sys.exit(EXIT_ERROR)
    sys.exit(EXIT_FINDINGS if changed else EXIT_CLEAN)


def _report_fix_errors(results: list[FileResult]) -> bool:
    """Say once why some files were left unfixed (libcst is missing); tell whether any was."""
    errors = sorted({r.error for r in results if r.error})
    for error in errors:
        left = sorted(r.path for r in results if r.error == error)
        click.echo(f"gradlint: {error}: {', '.join(left)}", err=True)
    return bool(errors)


def _apply_fixes(paths: list[str], settings: Settings, unsafe: bool) -> tuple[list[Diagnostic], int, int, bool]:
    """`--fix`: write the fixed files; return what remains, the files checked, the fixes applied, and
    whether a write failed."""
    results = fix_paths(paths, None, unsafe, settings)
    fixed = sum(r.applied for r in results if r.changed)
    failed = _report_fix_errors(results)
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
    return diagnostics, len(results), fixed, failed


@click.command(name="rule", context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("code", required=False)
def rule(code: str | None) -> None:
    """Print the document of rule CODE, or list all rules."""
    rules = catalogue()
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
    """Entry point: `gradlint rule ...` reads the catalogue, `gradlint run ...` runs a script under the
    runtime guard, anything else checks paths."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] == "run":
        from .run import main as run_script

        sys.exit(run_script(args[1:]))
    if args and args[0] == "rule":
        rule.main(args=args[1:], prog_name="gradlint rule")
    else:
        check.main(args=args, prog_name="gradlint")
