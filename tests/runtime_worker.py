"""Run fixture scripts under the process-wide guard in record mode; print {path: [[line, code], ...]}.

`--strict` first makes the guard strict."""

from __future__ import annotations

import json
import runpy
import sys
import warnings

from gradcheck_lint.runtime.guard import disable, enable

warnings.simplefilter("ignore")
strict = sys.argv[1:2] == ["--strict"]
out: dict[str, object] = {}
for path in sys.argv[1 + strict:]:
    enable(mode="record", strict=strict)
    error = ""
    try:
        runpy.run_path(path, run_name="__main__")
    except BaseException as exc:  # noqa: BLE001 - a failing fixture is reported, not fatal
        error = f"{type(exc).__name__}: {exc}"
    diags = disable()
    out[path] = {"found": sorted({(d.line, d.code) for d in diags if d.path == path}), "error": error,
                 "messages": [f"{d.line}: {d.code} {d.message}" for d in diags]}
print(json.dumps(out))
