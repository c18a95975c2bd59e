"""Runs of training scripts (plain or under the guard), made once and cached on what they depend on.

`run_scripts(paths, mode)` runs the scripts through tests/forkserver.py (one process that imported
torch, a forked child per script, two at a time) and returns {path: result}. Each result is cached
on disk, keyed on the script's bytes, the mode, the torch version and, under the guard, the
contents of the gradcheck_lint package: a local re-run after a change to the tests, or to one
fixture, runs only what changed. The cache lives in `.pytest_cache/gradlint-script-runs/`;
`GRADLINT_SCRIPT_RUN_CACHE=0` turns it off. Several pytest-xdist workers asking for the same runs
wait on one lock: the first runs them, the others read its results.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from functools import lru_cache
from importlib import metadata
from pathlib import Path

from filelock import FileLock

ROOT = Path(__file__).resolve().parent.parent
FORKSERVER = Path(__file__).with_name("forkserver.py")
CACHE_DIR = ROOT / ".pytest_cache" / "gradlint-script-runs"
JOBS = max(1, min(2, os.cpu_count() or 1))


@lru_cache(maxsize=1)
def _package_digest() -> str:
    digest = hashlib.sha256()
    for path in sorted((ROOT / "gradcheck_lint").rglob("*")):
        if path.suffix in {".py", ".toml", ".pth"} and path.is_file():
            digest.update(str(path.relative_to(ROOT)).encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()


@lru_cache(maxsize=1)
def _torch_version() -> str:
    try:
        return metadata.version("torch")
    except metadata.PackageNotFoundError:
        return "none"


def _key(path: str, mode: str, cwd: str) -> str:
    digest = hashlib.sha256()
    for part in (mode, path, cwd, _torch_version(), "" if mode == "plain" else _package_digest()):
        digest.update(part.encode())
        digest.update(b"\0")
    digest.update(Path(cwd, path).read_bytes())
    return digest.hexdigest()


def _cache_enabled() -> bool:
    return os.environ.get("GRADLINT_SCRIPT_RUN_CACHE", "1") not in ("0", "false", "no")


def run_scripts(paths: list[str] | list[Path], mode: str = "guard", cwd: Path | None = None) -> dict[str, dict[str, object]]:
    """Return {path: result} for each script, run under `mode` (plain, guard or strict) from `cwd`."""
    names = [str(p) for p in paths]
    where = str(cwd or Path.cwd())
    if not _cache_enabled():
        return _run(names, mode, where)
    CACHE_DIR.mkdir(parents=True, exist_ok=True)
    keys = {name: _key(name, mode, where) for name in names}
    with FileLock(str(CACHE_DIR / "lock")):
        out: dict[str, dict[str, object]] = {}
        missing = []
        for name in names:
            entry = CACHE_DIR / f"{keys[name]}.json"
            if entry.is_file():
                out[name] = json.loads(entry.read_text(encoding="utf-8"))
            else:
                missing.append(name)
        if missing:
            fresh = _run(missing, mode, where)
            for name, result in fresh.items():
                if not str(result.get("error", "")).startswith(("worker", "timeout")):
                    (CACHE_DIR / f"{keys[name]}.json").write_text(json.dumps(result), encoding="utf-8")
            out.update(fresh)
    return out


def _run(names: list[str], mode: str, cwd: str) -> dict[str, dict[str, object]]:
    if not names:
        return {}
    env = dict(os.environ)
    # Two children at a time on two cores: torch's own thread pool would only fight them.
    env.setdefault("OMP_NUM_THREADS", "1")
    proc = subprocess.run([sys.executable, str(FORKSERVER), mode, str(JOBS), *names],
                          capture_output=True, text=True, cwd=cwd, env=env, timeout=1800)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result: dict[str, dict[str, object]] = json.loads(proc.stdout.strip().splitlines()[-1])
    # A child forked after torch's import hangs now and then in a gloo process group (a lock of a thread
    # the fork did not copy): such a script runs again alone, in a fresh interpreter that imported nothing.
    for name, entry in result.items():
        if str(entry.get("error", "")).startswith(("timeout", "worker died")):
            again = subprocess.run([sys.executable, str(FORKSERVER), mode, "0", name],
                                   capture_output=True, text=True, cwd=cwd, env=env, timeout=600)
            if again.returncode == 0 and again.stdout.strip():
                result[name] = json.loads(again.stdout.strip().splitlines()[-1])[name]
                result[name]["retried"] = entry["error"]
    return result


def runnable_fixtures() -> list[str]:
    """The fixtures that run (not marked static-only), as the session's fixture runs take them."""
    from support import load_fixtures

    return [str(f.path) for f in load_fixtures() if not f.static_only]


if __name__ == "__main__":  # `python tests/script_runs.py`: make (or find) the fixture runs of the session ahead of time
    for mode in ("guard", "strict"):
        run_scripts(runnable_fixtures(), mode, cwd=ROOT)
