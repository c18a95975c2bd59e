"""`gradlint - --stdin-filename path.py`: check (or fix) source read from standard input, as ruff does.

The text is checked as the file it is named for: the configuration found for that name, its per-file
ignores, and its path in every message. Without `--fix` the report goes to standard output. With `--fix`
the fixed source goes to standard output (the input unchanged when nothing applies, or when it cannot be
rewritten byte for byte) and the report of what remains to standard error, so that an editor or a
formatter pipeline can replace the buffer with the output. `--diff` prints the diff instead.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import replace

import click

from .buffers import lint_bytes
from .cache import ResultCache
from .config import Settings
from .diagnostics import Diagnostic
from .fixes import FileResult, decode_exactly, encode_like, fix_source, unified_diff
from .output import write_atomic
from .registry import PARSE_ERROR_CODE
from .render import ReportOptions, render_report
from .sources import decode_source

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


def read_stdin() -> bytes:
    """All of standard input, as bytes (the encoding is the source's own, PEP 263)."""
    stream = getattr(sys.stdin, "buffer", None)
    if stream is not None:
        return bytes(stream.read())
    return sys.stdin.read().encode("utf-8")


def check_stdin(path: str, settings: Settings, *, options: ReportOptions, fix: bool, diff: bool, unsafe: bool,
                cache: ResultCache | None, exit_zero: bool, output_file: str | None, quiet: int,
                baseline: Callable[[list[Diagnostic]], list[Diagnostic]] | None = None) -> None:
    """Check or fix standard input as the file `path`, print, and exit with gradlint's exit codes.

    `baseline`, when given, leaves out the findings a baseline holds."""
    data = read_stdin()
    fixed: int | None = None
    linted = decode_source(data).text
    rewritable = decode_exactly(data, linted) if linted is not None else None
    result = fix_source(rewritable.raw, path, None, unsafe, settings) if rewritable is not None and (fix or diff) else None
    if result is not None and result.error:
        click.echo(f"gradlint: {result.error}: {path}", err=True)
    changed = rewritable is not None and result is not None and result.error is None and result.text != rewritable.raw
    if diff:
        if changed and rewritable is not None and result is not None:
            click.echo(unified_diff(FileResult(path, rewritable.raw, result.text, result.applied, result.before, result.after,
                                               rewritable.encoding, rewritable.bom)), nl=False)
            sys.exit(EXIT_FINDINGS)
        click.echo("No fixes to apply.", err=True)
        sys.exit(EXIT_ERROR if result is not None and result.error else EXIT_CLEAN)
    if fix:
        out = data
        if changed and rewritable is not None and result is not None:
            out = encode_like(result.text, rewritable) or data
        stream = getattr(sys.stdout, "buffer", None)
        if stream is not None:
            stream.write(out)
        else:
            sys.stdout.write(out.decode(rewritable.encoding if rewritable else "utf-8", "replace"))
        sys.stdout.flush()
        diagnostics = list(result.after) if result is not None else lint_bytes(data, path, settings, cache)
        fixed = result.applied if result is not None and out is not data else 0
    else:
        diagnostics = lint_bytes(data, path, settings, cache)
        if rewritable is not None and any(d.fix is not None and d.fix.applies(unsafe) for d in diagnostics):
            # As for files: a fix that would not remove its finding is not marked `[*]`.
            trial = fix_source(rewritable.raw, path, None, unsafe, settings, diagnostics)
            if trial.error is None:
                diagnostics = list(trial.before)
    if baseline is not None:
        diagnostics = baseline(diagnostics)
    report = render_report(diagnostics, 1, replace(options, fixed=fixed))
    if quiet > 1:
        report = ""
    if output_file is not None:
        try:
            write_atomic(output_file, report + "\n" if report else "")
        except OSError as exc:
            click.echo(f"gradlint: cannot write the report to {output_file}: {exc.strerror or exc}", err=True)
            sys.exit(EXIT_ERROR)
    elif report:
        click.echo(report, err=fix, color=options.color)  # with --fix, standard output holds the source
    if any(d.code == PARSE_ERROR_CODE for d in diagnostics) or (result is not None and result.error):
        sys.exit(EXIT_ERROR)
    sys.exit(EXIT_FINDINGS if diagnostics and not exit_zero else EXIT_CLEAN)
