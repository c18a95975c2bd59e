"""Run training scripts, each in a process forked from one that imported torch once; print JSON.

    python tests/forkserver.py MODE JOBS PATH...      (MODE: plain, guard or strict)

The parent imports torch (and the frameworks the scripts import) and never runs a tensor op, then
forks one child per script: each script gets a fresh process, as if started alone (process groups,
Lightning's and Accelerate's globals, patched torch functions all die with it), without paying
the interpreter's start and torch's import again (3-7 s a script, most of the suite's time before).
At most JOBS children run at once; scripts that set up process-wide state (torch.distributed,
Lightning, Accelerate, Transformers) run one at a time. A child writes its result to a pipe and
leaves with os._exit (gloo's threads abort in C++ destructors at a normal exit, now and then).

Per script: `error` (how the script failed, "" if it did not) and, under the guard, `found` ([line,
code] pairs of findings in that file), `findings` ([path, line, col, code, steps, first_step]) and
`messages` (each finding's report line), as tests/runtime_worker.py records them.
"""

from __future__ import annotations

import importlib
import json
import os
import re
import select
import signal
import sys
import time
import warnings

# A fixture runs in under a second alone (0.84 s the longest, `seconds` of each result): longer than this is a hang
# (a child forked after torch's import now and then hangs in a gloo process group; see script_runs: it is run again
# alone). 120 s cost a CI run two minutes of one of the two fork slots whenever it happened (a hang in three of
# seven full strict runs, measured here); 30 s leaves a margin of 35 times the longest run.
TIMEOUT_SECONDS = 30.0
_PROCESS_STATE = re.compile(r"^\s*(?:import|from)\s+(torch\.distributed|lightning|pytorch_lightning|accelerate|transformers)\b", re.M)


def _child(path: str, mode: str, write_fd: int) -> None:
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    result: dict[str, object] = {"error": ""}
    try:
        import runpy

        warnings.simplefilter("ignore")
        sys.argv = [path]
        if mode == "plain":
            try:
                runpy.run_path(path, run_name="__main__")
            except BaseException as exc:
                import traceback

                result["error"] = f"{type(exc).__name__}: {exc}\n" + traceback.format_exc(limit=3)
        else:
            from gradcheck_lint.runtime.guard import disable, enable

            enable(mode="record", strict=mode == "strict")
            try:
                runpy.run_path(path, run_name="__main__")
            except BaseException as exc:
                result["error"] = f"{type(exc).__name__}: {exc}"
            report = disable()
            result["found"] = sorted({(f.line, f.code) for f in report if f.path == path})
            result["findings"] = [[f.path, f.line, f.col, f.code, f.steps, f.first_step] for f in report]
            result["messages"] = [f.format() for f in report]
    except BaseException as exc:
        result["error"] = f"worker: {type(exc).__name__}: {exc}"
    data = json.dumps(result).encode()
    view = memoryview(data)
    while view:
        view = view[os.write(write_fd, view):]
    os._exit(0)


def _alone(path: str, mode: str) -> dict[str, object]:
    """Run one script in this very process (no fork): the fallback for a child that hung or died."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()  # the child writes and leaves with os._exit, as forked children do; nothing imported here first
    if pid == 0:
        os.close(read_fd)
        _child(path, mode, write_fd)
    os.close(write_fd)
    chunks = []
    while chunk := os.read(read_fd, 1 << 16):
        chunks.append(chunk)
    os.close(read_fd)
    os.waitpid(pid, 0)
    try:
        return dict(json.loads(b"".join(chunks)))
    except ValueError:
        return {"error": "worker died"}


def main(argv: list[str]) -> int:
    mode, jobs, paths = argv[0], int(argv[1]), argv[2:]
    assert mode in ("plain", "guard", "strict"), mode
    if jobs == 0:  # `forkserver.py MODE 0 PATH`: one script, in a fresh interpreter that imported nothing first
        print(json.dumps({path: _alone(path, mode) for path in paths}), flush=True)
        return 0
    warnings.simplefilter("ignore")
    import torch  # noqa: F401 - imported once, before any fork

    # What the first forward, backward and step import lazily (torch._dynamo pulls sympy, torch.fx and
    # ~800 modules: 1.5 s of CPU), imported here once rather than in every child. Importing runs no
    # tensor op and starts no thread pool, so forking after it stays safe.
    for name in ("torch._dynamo", "torch.optim", "torch.distributed"):
        try:
            importlib.import_module(name)
        except Exception:
            pass

    stateful: set[str] = set()
    for path in paths:
        with open(path, encoding="utf-8") as fh:
            found = _PROCESS_STATE.findall(fh.read())
        if found:
            stateful.add(path)
        for name in found:
            try:
                importlib.import_module(name)
            except Exception:
                pass
    if mode != "plain":
        importlib.import_module("gradcheck_lint.runtime.guard")
        # What the guard imports on its first finding, to apply the static side's settings and suppressions
        # (runtime/suppress.py: the configuration, the rule catalogue with every check and the analysis they
        # import, ~90 modules): imported here once, not again in each child that reports a finding. Child CPU
        # of 61 fixtures under the guard, forked from parents with and without it, run side by side: 9.1 s
        # against 23.9 s, same findings, messages and errors.
        from gradcheck_lint.registry import catalogue

        catalogue()
        for name in ("gradcheck_lint.config", "gradcheck_lint.suppressions", "gradcheck_lint.sources"):
            importlib.import_module(name)

    out: dict[str, dict[str, object]] = {}
    pending = list(paths)
    running: dict[int, tuple[str, int, float, list[bytes]]] = {}  # pid -> (path, read fd, start, chunks)
    while pending or running:
        while pending and len(running) < jobs:
            busy = any(p in stateful for p, *_ in running.values())
            pick = next((p for p in pending if not (busy and p in stateful)), None)
            if pick is None:
                break
            pending.remove(pick)
            read_fd, write_fd = os.pipe()
            sys.stdout.flush()
            pid = os.fork()
            if pid == 0:
                os.close(read_fd)
                _child(pick, mode, write_fd)
            os.close(write_fd)
            running[pid] = (pick, read_fd, time.monotonic(), [])
        fds = {entry[1]: pid for pid, entry in running.items()}
        ready, _, _ = select.select(list(fds), [], [], 1.0)
        for fd in ready:
            pid = fds[fd]
            chunk = os.read(fd, 1 << 16)
            if chunk:
                running[pid][3].append(chunk)
                continue
            path, _, start, chunks = running.pop(pid)
            os.close(fd)
            _, status = os.waitpid(pid, 0)
            try:
                out[path] = json.loads(b"".join(chunks))
            except ValueError:
                out[path] = {"error": f"worker died (wait status {status})"}
            out[path]["seconds"] = round(time.monotonic() - start, 3)
        now = time.monotonic()
        for pid, (path, fd, start, _chunks) in list(running.items()):
            if now - start > TIMEOUT_SECONDS:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                os.close(fd)
                running.pop(pid)
                out[path] = {"error": f"timeout: still running after {TIMEOUT_SECONDS:.0f} s", "seconds": now - start}
    print(json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
