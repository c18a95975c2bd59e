"""The `gradlint` command: click wiring and printing only."""

from __future__ import annotations

import os
import sys
import time
from dataclasses import replace
from functools import partial

import click

from . import __version__
from .api import check_paths
from .cache import CACHE_DIR_ENV, CACHE_DIR_NAME, ResultCache, default_cache_dir
from .config import ConfigError, PathOptions, Settings, load_settings
from .diagnostics import Diagnostic, split_by_certainty
from .discovery import iter_python_files
from .fixes import FileResult, fix_paths, unified_diff, verified_entry, verify_fixes, write_fixed
from .output import write_atomic
from .registry import PARSE_ERROR_CODE, Selection, catalogue
from .render import COLOR_MODES, FORMATS, ReportOptions, render_report, use_color
from .render.location import text_location
from .rule_docs import read_doc
from .runner import RunStats, available_cores

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
STDIN = "-"
SUBCOMMANDS = ("rule", "run", "server")
EPILOG = """\b
Commands:
  gradlint rule [CODE]          list the rules, or print one rule's document
  gradlint run [--mode raise|warn|record] [--strict] [--verify-every-cycle] script.py [args...]
                                run a training script under the runtime guard
  gradlint server               a language server (LSP) on stdin/stdout, for editors

\b
A file or directory named like a command (`run`, `rule`, `server`) is checked when it exists here
(write `./run` to be explicit).
"""


def _split(values: tuple[str, ...]) -> list[str]:
    return [part for v in values for part in v.split(",") if part.strip()]


def _fail(message: str) -> None:
    """Print an error that is not about the command line's syntax (no click usage text) and exit 2."""
    click.echo(f"gradlint: error: {message}", err=True)
    sys.exit(EXIT_ERROR)


def _note(message: str, quiet: int) -> None:
    if not quiet:
        click.echo(f"gradlint: {message}", err=True)


@click.command(context_settings={"help_option_names": ["-h", "--help"]}, epilog=EPILOG)
# readable=False: a path that cannot be read is reported as GL000 for that file alone, never a usage error.
@click.argument("paths", nargs=-1, required=True, type=click.Path(readable=False, allow_dash=True))
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
@click.option("--exclude", multiple=True, metavar="PATTERNS", help="Comma-separated patterns to exclude, replacing the configured and built-in excludes.")
@click.option("--extend-exclude", multiple=True, metavar="PATTERNS", help="Comma-separated patterns to exclude in addition to the configured ones.")
@click.option("--per-file-ignores", multiple=True, metavar="PATTERN:CODES",
              help="Codes not reported in files matching PATTERN (e.g. 'tests/*.py:GL001,GL003'), added to the configured ones; repeatable.")
@click.option("--stdin-filename", metavar="PATH", help="With PATHS `-`: the name of the file read from standard input (configuration, per-file ignores and messages use it).")
@click.option("--add-noqa", is_flag=True, help="Write a `# gradlint: ignore[CODE]` comment on the line of every current finding.")
@click.option("--baseline", "baseline_file", type=click.Path(dir_okay=False), metavar="FILE",
              help="Report only findings not in FILE; when FILE does not exist, write it with the current findings.")
@click.option("--update-baseline", is_flag=True, help="With --baseline: write FILE again with the current findings.")
@click.option("--show-settings", is_flag=True, help="Print the settings used for the paths, and exit.")
@click.option("--show-files", is_flag=True, help="Print the files that would be checked, and exit.")
@click.option("-q", "--quiet", count=True, help="Print the diagnostics only, no summary or notes (-qq: print nothing; the exit code tells).")
@click.option("-v", "--verbose", is_flag=True, help="Also say which configuration was used, how many files were checked and answered from the cache, and how long it took.")
@click.version_option(__version__, prog_name="gradlint")
def check(
    paths: tuple[str, ...], fmt: str, select: tuple[str, ...], extend_select: tuple[str, ...], ignore: tuple[str, ...],
    config_file: str | None, isolated: bool, force_exclude: bool, exit_zero: bool,
    statistics: bool, show_source: bool, color_mode: str, output_file: str | None, show_possible: bool,
    fix: bool, unsafe_fixes: bool, diff: bool, jobs: int, no_cache: bool, cache_dir: str | None,
    exclude: tuple[str, ...], extend_exclude: tuple[str, ...], per_file_ignores: tuple[str, ...],
    stdin_filename: str | None, add_noqa: bool, baseline_file: str | None, update_baseline: bool,
    show_settings: bool, show_files: bool, quiet: int, verbose: bool,
) -> None:
    """Check PyTorch training scripts for gradient-accumulation bugs.

    PATHS are files or directories (walked for *.py and *.ipynb), or `-` for standard input (with
    --stdin-filename). Configuration is read from the nearest pyproject.toml with a [tool.gradlint] table.
    """
    started = time.perf_counter()
    from_stdin = STDIN in paths
    if from_stdin and len(paths) > 1:
        raise click.UsageError("`-` (standard input) cannot be combined with other paths")
    if stdin_filename is not None and not from_stdin:
        raise click.UsageError("--stdin-filename needs `-` among the paths (the text is read from standard input)")
    if update_baseline and baseline_file is None:
        raise click.UsageError("--update-baseline needs --baseline FILE")
    if add_noqa and (fix or diff or from_stdin):
        raise click.UsageError("--add-noqa cannot be combined with --fix, --diff or standard input")
    named = [stdin_filename or "stdin.py"] if from_stdin else list(paths)
    cli = Selection(select=tuple(_split(select)) or None, extend_select=tuple(_split(extend_select)), ignore=tuple(_split(ignore)))
    path_options = PathOptions(exclude=tuple(_split(exclude)) if exclude else None, extend_exclude=tuple(_split(extend_exclude)),
                               per_file_ignores=per_file_ignores)
    try:
        settings = load_settings(named, cli, config=config_file, isolated=isolated, force_exclude=force_exclude,
                                 path_options=path_options, show_possible=show_possible)
    except ConfigError as exc:
        _fail(str(exc))
    cache_directory = cache_dir or default_cache_dir(settings.root)
    if show_settings:
        click.echo(_settings_text(settings, named, cache_directory, no_cache))
        sys.exit(EXIT_CLEAN)
    if show_files:
        if not from_stdin:
            for path in iter_python_files(list(paths), settings):
                click.echo(path)
        sys.exit(EXIT_CLEAN)
    isatty = output_file is None and sys.stdout is not None and sys.stdout.isatty()
    try:
        options = ReportOptions(
            format=fmt, statistics=statistics, show_source=show_source,
            color=use_color(color_mode, isatty, os.environ), root=os.getcwd(), quiet=quiet > 0,
        )
    except ValueError as exc:
        raise click.UsageError(str(exc)) from exc
    if from_stdin:
        from .stdin import check_stdin

        check_stdin(named[0], settings, options=replace(options, unsafe_fixes=unsafe_fixes), fix=fix, diff=diff,
                    unsafe=unsafe_fixes, cache=None if no_cache else ResultCache(cache_directory),
                    exit_zero=exit_zero, output_file=output_file, quiet=quiet,
                    # one buffer never writes the project's baseline: it is only read, when it exists
                    baseline=None if baseline_file is None or update_baseline or not os.path.exists(baseline_file)
                    else lambda found: _apply_baseline(found, baseline_file, False, quiet))
    if add_noqa:
        from .add_noqa import add_noqa_paths

        done = add_noqa_paths(list(paths), settings, None if no_cache else ResultCache(cache_directory), jobs or available_cores())
        for path, why in done.failed:
            click.echo(f"gradlint: could not write {path}: {why}", err=True)
        for d in done.left:
            click.echo(f"gradlint: left {text_location(d)}: {d.code} unsuppressed: {done.why_left(d)}.", err=True)
        _note(f"added {done.added} suppression{'s' if done.added != 1 else ''} (# gradlint: ignore[...]) "
              f"in {done.files} file{'s' if done.files != 1 else ''}.", quiet)
        sys.exit(done.exit_code)
    fixed: int | None = None
    stats = RunStats()
    if diff or fix:
        # the files' current findings as a listing finds them (the cache, then the pool): only files with a
        # fix are analysed again, after it
        fix_jobs, fix_cache = jobs or available_cores(), None if no_cache else ResultCache(cache_directory)
    if diff:
        _print_diff(list(paths), settings, unsafe_fixes, fix_jobs, fix_cache)
    if fix:
        diagnostics, files, fixed, failed = _apply_fixes(list(paths), settings, unsafe_fixes, fix_jobs, fix_cache)
        stats.files = files
    else:
        cache = None if no_cache else ResultCache(cache_directory)
        listed = (fmt == "text" and not statistics) or fmt == "json"
        diagnostics, files = check_paths(list(paths), settings, jobs=jobs or available_cores(), cache=cache,
                                         stats=stats, verify=partial(verified_entry, unsafe_fixes) if listed else None)
        if listed:
            # A fix that would not remove its finding is not offered: the `[*]` marks agree with --fix and --diff.
            diagnostics = sorted(verify_fixes(diagnostics, unsafe_fixes, settings, cache), key=Diagnostic.sort_key)
        failed = False
    if files == 0:
        _note("warning: no Python file (*.py, *.ipynb) was found under " + ", ".join(paths)
              + "; nothing was checked (see --show-files, and the excludes in --show-settings).", quiet)
        if fmt == "text" and not statistics:
            sys.exit(EXIT_CLEAN)
    if baseline_file is not None:
        diagnostics = _apply_baseline(diagnostics, baseline_file, update_baseline, quiet)
    if verbose:
        _verbose(settings, stats, files, cache_directory if not no_cache and not fix else None, time.perf_counter() - started)
    # `certain` findings by default; `possible` ones (resting on an assumption) with --show-possible
    diagnostics, hidden = split_by_certainty(diagnostics, settings.show_possible)
    report = render_report(diagnostics, files, replace(options, unsafe_fixes=unsafe_fixes, fixed=fixed, hidden=hidden))
    if quiet > 1:
        report = ""
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


def _settings_text(settings: Settings, named: list[str], cache_directory: str, no_cache: bool) -> str:
    """`--show-settings`: the resolved settings, one `key = value` a line (TOML-like, for reading)."""
    def listed(values: object) -> str:
        return "[" + ", ".join(f'"{v}"' for v in values) + "]"  # type: ignore[attr-defined]

    lines = [
        f"# settings for {', '.join(named)}",
        f"config-file = {settings.config_file or '(none: built-in defaults)'}",
        f"root = {settings.root}",
        f"select = {listed(sorted(settings.enabled))}",
        f"exclude = {listed(settings.exclude)}",
        f"extend-exclude = {listed(settings.extend_exclude)}",
        f"force-exclude = {str(settings.force_exclude).lower()}",
        "per-file-ignores = {" + ", ".join(f'"{e.pattern}" = {listed(sorted(e.codes))}' for e in settings.per_file_ignores) + "}",
        f"models = {'[tool.gradlint.models] rows' if settings.models else '(none)'}",
        f"cache-dir = {'(off: --no-cache)' if no_cache else cache_directory}",
    ]
    if len(named) == 1 and not os.path.isdir(named[0]):
        lines.append(f"codes for {named[0]} = {listed(sorted(settings.codes_for(named[0])))}")
    return "\n".join(lines)


def _verbose(settings: Settings, stats: RunStats, files: int, cache_directory: str | None, seconds: float) -> None:
    click.echo(f"gradlint: configuration: {settings.config_file or 'none (built-in defaults)'}", err=True)
    cached = f", {stats.cached} answered from the cache in {cache_directory}" if cache_directory else ""
    click.echo(f"gradlint: {files} file{'s' if files != 1 else ''} checked{cached}, in {seconds:.2f} s", err=True)


def _apply_baseline(diagnostics: list[Diagnostic], path: str, update: bool, quiet: int) -> list[Diagnostic]:
    """`--baseline FILE`: write it (absent, or `--update-baseline`) and report nothing old; else leave out
    the findings it holds."""
    from .baseline import BaselineError, filter_new, write

    if update or not os.path.exists(path):
        try:
            count = write(path, diagnostics)
        except OSError as exc:
            _fail(f"cannot write the baseline {path}: {exc.strerror or exc}")
        _note(f"wrote {count} finding{'s' if count != 1 else ''} to the baseline {path}; "
              "later runs with --baseline report only new ones.", quiet)
        return [d for d in diagnostics if d.code == PARSE_ERROR_CODE]
    try:
        result = filter_new(diagnostics, path)
    except BaselineError as exc:
        _fail(str(exc))
    if result.known:
        _note(f"{result.known} finding{'s' if result.known != 1 else ''} in the baseline {path} left out.", quiet)
    return result.new


def _print_diff(paths: list[str], settings: Settings, unsafe: bool, jobs: int = 1, cache: ResultCache | None = None) -> None:
    """`--diff`: print the unified diff of what `--fix` would do, write nothing, and exit."""
    results = fix_paths(paths, None, unsafe, settings, jobs=jobs, cache=cache)
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


def _apply_fixes(paths: list[str], settings: Settings, unsafe: bool, jobs: int = 1,
                 cache: ResultCache | None = None) -> tuple[list[Diagnostic], int, int, bool]:
    """`--fix`: write the fixed files; return what remains, the files checked, the fixes applied, and
    whether a write failed."""
    results = fix_paths(paths, None, unsafe, settings, jobs=jobs, cache=cache)
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


@click.command(name="server", context_settings={"help_option_names": ["-h", "--help"]})
def server() -> None:
    """Run the gradlint language server (LSP) on standard input and output, for editors."""
    try:
        from .server import serve
    except ImportError as exc:
        _fail(f"`gradlint server` needs pygls and lsprotocol (the `server` extra: pip install '.[server]'): {exc}")
    sys.exit(serve())


def subcommand(args: list[str]) -> str | None:
    """The subcommand `args` start with, if any: a file or directory of that name in the working
    directory is a path to check instead (`./run` always is)."""
    if args and args[0] in SUBCOMMANDS and not os.path.exists(args[0]):
        return args[0]
    return None


def main(argv: list[str] | None = None) -> None:
    """Entry point: `gradlint rule ...` reads the catalogue, `gradlint run ...` runs a script under the
    runtime guard, `gradlint server` serves editors, anything else checks paths."""
    args = list(sys.argv[1:] if argv is None else argv)
    command = subcommand(args)
    if command is None and args and args[0] == "run":
        click.echo("gradlint: `run` exists here, so it is checked as a path; to run a script under the guard, "
                   "use `python -m gradcheck_lint.run script.py`.", err=True)
    if command == "run":
        from .run import main as run_script

        sys.exit(run_script(args[1:]))
    if command == "rule":
        rule.main(args=args[1:], prog_name="gradlint rule")
    elif command == "server":
        server.main(args=args[1:], prog_name="gradlint server")
    else:
        check.main(args=args, prog_name="gradlint")
