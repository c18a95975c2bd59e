"""Run scripts under the process-wide guard in record mode; print {path: {...}} as JSON.

For each script: `found` ([line, code] pairs of findings in that file), `findings` (every finding
as [path, line, col, code, steps, first_step]), `error` (how the script failed, "" if it did not)
and `messages` (each finding's report line). `--strict` first makes the guard strict."""

from __future__ import annotations

import json
import os
import runpy
import sys
import warnings

from gradcheck_lint.runtime.guard import disable, enable

warnings.simplefilter("ignore")
strict = sys.argv[1:2] == ["--strict"]
out: dict[str, object] = {}
for path in sys.argv[1 + strict:]:
    print(path, file=sys.stderr, flush=True)  # where a hang happened, when one does
    enable(mode="record", strict=strict)
    error = ""
    try:
        runpy.run_path(path, run_name="__main__")
    except BaseException as exc:
        error = f"{type(exc).__name__}: {exc}"
    report = disable()
    out[path] = {"found": sorted({(f.line, f.code) for f in report if f.path == path}), "error": error,
                 "findings": [[f.path, f.line, f.col, f.code, f.steps, f.first_step] for f in report],
                 "messages": [f.format() for f in report]}
print(json.dumps(out), flush=True)
sys.stderr.flush()
# A fixture that ran a gloo process group leaves its threads to C++ destructors at interpreter exit,
# which abort ("terminate called without an active exception") now and then: the results are out,
# so leave without running them.
os._exit(0)
