"""Code that sets up a gloo process group runs in a process of its own, under a time limit.

A gloo process group torn down inside a long-lived test process can deadlock it. DDP's reducer keeps the
group, with its three gloo threads, alive past `destroy_process_group()`, until the program's objects are
freed (by the cyclic garbage collector, at some later allocation, when they sit in cycles). The group's
destructor then joins gloo's worker threads holding the GIL, while a worker may still be freeing a
finished all-reduce, whose copy of the thread-local state holds the contextvars context torch stashes for
each backward: freeing it waits for the GIL (pytorch/pytorch#56297). Seen with gdb in a CI run of this
suite, and reproduced here: 1 hang in about 1,100 generated DDP programs run in one process under load.
A test that waits for such a process waits with a limit: a run that overstays it is shown (its output,
and the Python stacks of its threads at the limit) and made once more in a new process; a second overstay
fails the test. Nothing here can stall the suite.

- `call(fn, *args)`: `fn(*args)` in a child forked from a server (this file run as a script, one per test
  process) that imported torch and gradcheck_lint once, so a call costs a fork, not an interpreter and
  torch's import. The child hands back the value and leaves with `os._exit`: no destructor of a process
  group ever runs. `fn` and `args` must pickle (a module-level function, plain values).
- `run_command(args)`: a command in a session of its own (its children are killed with it on a timeout).
"""

from __future__ import annotations

import atexit
import os
import pickle
import select
import signal
import struct
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

CALL_TIMEOUT = 60.0  # a generated DDP program runs in under a second here, a few seconds under load
START_TIMEOUT = 300.0  # the server's imports (torch, torch._dynamo, gradcheck_lint): 5-20 s under load
# What the children need, imported once in the server (the first optimizer step imports torch._dynamo:
# 9 s of a child's 11 without it; the guard's first finding loads the rule catalogue: 1.6 s more)
PRELOAD = ("torch", "torch._dynamo", "torch.optim", "torch.distributed", "torch.nn.parallel",
           "gradcheck_lint.runtime.guard", "gradcheck_lint.config", "gradcheck_lint.suppressions", "loopgen_run")
_server: subprocess.Popen[bytes] | None = None
_server_errors = os.path.join(tempfile.gettempdir(), f"own-process-server-{os.getpid()}.err")  # its stderr


# -- the server (`python tests/own_process.py`: requests on stdin, a line per child on stdout) ---------
def _serve() -> None:
    import importlib
    import json

    sys.path[:] = [*json.loads(sys.argv[1]), str(Path(__file__).resolve().parent)]  # the test process's
    for name in PRELOAD:
        importlib.import_module(name)
    from gradcheck_lint.registry import catalogue

    catalogue()
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    while len(header := stdin.read(8)) == 8:
        request = stdin.read(struct.unpack("!Q", header)[0])
        pid = os.fork()
        if pid == 0:
            _child(request)
        stdout.write(b"%d\n" % pid)
        stdout.flush()
        _, status = os.waitpid(pid, 0)
        stdout.write(b"%d\n" % status)
        stdout.flush()


def _child(request: bytes) -> None:
    path, payload, output, reply = pickle.loads(request)
    fd = os.open(output, os.O_WRONLY | os.O_APPEND)
    os.dup2(fd, 1)  # the server's stdout is the protocol: the child writes only to its own output
    os.dup2(fd, 2)
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    import faulthandler

    faulthandler.register(signal.SIGUSR1, all_threads=True)  # the parent's "where are you?" at the limit
    try:
        sys.path[:] = path
        fn, args = pickle.loads(payload)
        answer: tuple[str, Any] = ("value", fn(*args))
    except BaseException:
        import traceback

        answer = ("raised", traceback.format_exc())
    with open(reply, "wb") as fh:
        pickle.dump(answer, fh)
    os._exit(0)  # no destructor runs: a process group dies with the process


# -- the test's side -----------------------------------------------------------------------------------
def _read_line(server: subprocess.Popen[bytes], deadline: float) -> bytes | None:
    """One line from the server, or None if none came before `deadline` (or the server died)."""
    assert server.stdout is not None
    fd, line = server.stdout.fileno(), b""
    while not line.endswith(b"\n"):
        ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            return None
        chunk = os.read(fd, 1)
        if not chunk:
            return None
        line += chunk
    return line


def _stop_server() -> None:
    global _server
    if _server is not None:
        _server.kill()
        _server.wait()
        _server = None
    if os.path.exists(_server_errors):
        os.unlink(_server_errors)


atexit.register(_stop_server)


def _start_server() -> subprocess.Popen[bytes]:
    global _server
    if _server is None or _server.poll() is not None:
        import json

        # the modules the test process imports (gradcheck_lint of this checkout, not an installed one)
        with open(_server_errors, "wb") as errors:
            _server = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), json.dumps(sys.path)],
                                       stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=errors)
    return _server


def _server_died(why: str) -> tuple[str, None, str]:
    errors = Path(_server_errors)
    text = errors.read_text(encoding="utf-8", errors="replace")[-3000:] if errors.exists() else ""
    _stop_server()
    return "died", None, f"(the server that forks the children {why})\n{text}"


def _once(fn: Callable[..., Any], args: tuple[Any, ...], timeout: float) -> tuple[str, Any, str]:
    """("value", v, output), ("raised", traceback, output), ("timeout", None, output) or ("died", None, output)."""
    with tempfile.TemporaryDirectory(prefix="own-process-") as work:
        output, reply = os.path.join(work, "output"), os.path.join(work, "reply")
        Path(output).touch()
        request = pickle.dumps((list(sys.path), pickle.dumps((fn, args)), output, reply))
        server = _start_server()
        assert server.stdin is not None
        try:
            server.stdin.write(struct.pack("!Q", len(request)) + request)
            server.stdin.flush()
        except BrokenPipeError:
            return _server_died("had died")
        pid = _read_line(server, time.monotonic() + START_TIMEOUT)
        if pid is None:
            return _server_died(f"forked none in {START_TIMEOUT:.0f} s")
        status = _read_line(server, time.monotonic() + timeout)
        if status is None:  # overstayed: its threads' Python stacks into its output, then kill it
            for sig in (signal.SIGUSR1, signal.SIGKILL):
                try:
                    os.kill(int(pid), sig)
                except ProcessLookupError:
                    pass
                time.sleep(1.0)
            if _read_line(server, time.monotonic() + 30.0) is None:
                _stop_server()
        text = Path(output).read_text(encoding="utf-8", errors="replace")
        if status is None:
            return "timeout", None, text
        if not os.path.exists(reply):
            return "died", None, text + f"\n(wait status {int(status)})"
        with open(reply, "rb") as fh:
            kind, value = pickle.load(fh)
        return kind, value, text


def call(fn: Callable[..., Any], *args: Any, timeout: float = CALL_TIMEOUT, what: str = "") -> Any:
    """Return `fn(*args)`, computed in a forked child; once more in another child if the first overstays
    `timeout` seconds or dies; a second time fails the test, with the child's output."""
    what = what or getattr(fn, "__qualname__", repr(fn))
    for attempt in (1, 2):
        kind, value, output = _once(fn, args, timeout)
        if kind == "value":
            return value
        if kind == "raised":
            raise AssertionError(f"{what} raised in its own process:\n{value}\n--- its output\n{output}")
        how = f"hung: still running after {timeout:.0f} s" if kind == "timeout" else "died before answering"
        report = f"{what} {how} (attempt {attempt} of 2, in its own process)\n--- its output\n{output}"
        if attempt == 2:
            raise AssertionError(report)
        warnings.warn(report + "\n(run once more)", RuntimeWarning, stacklevel=2)
    raise AssertionError("unreachable")


def run_command(args: list[str], *, timeout: float, what: str = "", **kwargs: Any) -> subprocess.CompletedProcess[str]:
    """`subprocess.run(args, capture_output=True, text=True, **kwargs)` in a session of its own; on a timeout
    its whole session is killed and the command made once more; a second timeout fails with the output."""
    what = what or " ".join(args[:3])
    for attempt in (1, 2):
        proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                                **kwargs)
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)  # the command and whatever it started (mp.spawn's ranks)
            out, err = proc.communicate()
            report = (f"{what} hung: still running after {timeout:.0f} s (attempt {attempt} of 2)\n"
                      f"--- stdout\n{out[-3000:]}\n--- stderr\n{err[-3000:]}")
            if attempt == 2:
                raise AssertionError(report) from None
            warnings.warn(report + "\n(run once more)", RuntimeWarning, stacklevel=2)
            continue
        return subprocess.CompletedProcess(args, proc.returncode, out, err)
    raise AssertionError("unreachable")


if __name__ == "__main__":
    _serve()
