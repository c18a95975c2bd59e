"""`gradlint run [--mode raise|warn|record] [--strict] [--verify-every-cycle] script.py [args...]`: run a
training script under
the process-wide runtime guard (as `coverage run` runs one under coverage), print the guard's report,
and exit 1 when the gradient contract was broken.

Also `python -m gradcheck_lint.run ...`. Exit codes: the script's own when it fails (a non-zero
`sys.exit`, an uncaught exception: 1), else 1 when the guard found a problem, else 0; 2 for a usage
error. Importing this module needs no torch; running a script does.
"""

from __future__ import annotations

import argparse
import os
import runpy
import sys
import traceback
from typing import Any

USAGE = "gradlint run [--mode raise|warn|record] [--strict] [--verify-every-cycle] script.py [args...]"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="gradlint run", usage=USAGE,
                                     description="Run a training script under gradcheck_lint's runtime guard.")
    parser.add_argument("--mode", choices=("raise", "warn", "record"), default="record",
                        help="raise: stop at the first broken step; warn: warn once per problem; "
                             "record (default): run to the end; the report is printed in every mode")
    parser.add_argument("--strict", action="store_true",
                        help="measure in-place rescaling on every parameter (device syncs; see the README)")
    parser.add_argument("--verify-every-cycle", action="store_true", default=None,
                        help="check every call on the full path (no sampled cycles; slower: see the README); "
                             "also GRADLINT_VERIFY_EVERY_CYCLE=1")
    parser.add_argument("script", help="the Python script to run")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="the script's own arguments")
    return parser


def _exit_code(exc: SystemExit) -> int:
    code = exc.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)  # `sys.exit("message")`, as Python itself prints it
    return 1


def _as_given(report: Any, script: str, given: str) -> Any:
    """The report with paths spelt as the static side spells them: the script as it was named on the
    command line, other files relative to the working directory when they lie inside it."""
    import dataclasses

    from .render.location import relative_to
    from .runtime.report import Report

    def shown(path: str) -> str:
        if os.path.abspath(path) == script:
            return given
        return relative_to(path, os.getcwd()) or path if os.path.isabs(path) else path

    return Report([dataclasses.replace(f, path=shown(f.path)) for f in report])


def main(argv: list[str] | None = None) -> int:
    """Run the script named in `argv` under the guard; return the exit code."""
    try:
        opts = _parser().parse_args(sys.argv[1:] if argv is None else argv)
    except SystemExit as exc:
        return 2 if exc.code else 0
    if not os.path.isfile(opts.script):
        print(f"gradlint run: no such script: {opts.script}", file=sys.stderr)
        return 2
    try:
        from .runtime.guard import GradientContractError, disable, enable
    except ImportError as exc:
        print(f"gradlint run: {exc}", file=sys.stderr)
        return 2
    script = os.path.abspath(opts.script)
    saved_argv, saved_path0 = sys.argv, sys.path[0] if sys.path else None
    sys.argv = [opts.script, *opts.args]
    if sys.path:
        sys.path[0] = os.path.dirname(script)  # as `python script.py` sets it
    else:
        sys.path.insert(0, os.path.dirname(script))
    code = 0
    enable(mode=opts.mode, strict=opts.strict, verify_every_cycle=opts.verify_every_cycle)
    try:
        runpy.run_path(script, run_name="__main__")
    except SystemExit as exc:
        code = _exit_code(exc)
    except GradientContractError:
        code = -1  # the guard stopped the run (raise mode): the report below says why
    except BaseException:
        traceback.print_exc()
        code = 1
    finally:
        report = disable()
        sys.argv = saved_argv
        if saved_path0 is not None:
            sys.path[0] = saved_path0
    sys.stdout.flush()
    report = _as_given(report, script, opts.script)
    print(report, file=sys.stderr)
    if code == -1:
        return 1
    if code != 0:
        return code
    return 1 if len(report) else 0


if __name__ == "__main__":
    sys.exit(main())
