"""`benchmarks/gpu_check.py` on a machine without CUDA: a clear message and exit 0; its worker runs fixtures."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")

from support import FIXTURES, ROOT, parse_expectations  # noqa: E402

SCRIPT = ROOT / "benchmarks" / "gpu_check.py"


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}


@pytest.mark.skipif(torch.cuda.is_available(), reason="a CUDA device is present: the check would run")
def test_without_cuda_it_says_so_and_exits_cleanly() -> None:
    done = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True, env=_env(), timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["gpu_check: no CUDA device (torch.cuda.is_available() is False): nothing was checked."]


def test_its_worker_reports_a_fixtures_verdict_on_the_cpu() -> None:
    spec = importlib.util.spec_from_file_location("gpu_check", SCRIPT)
    assert spec is not None and spec.loader is not None
    gpu_check = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gpu_check)
    fixture = FIXTURES / "missing_zero_grad" / "accumulation_step_never_clears.py"
    out = gpu_check._run("cpu", [str(fixture)], 300)
    want = sorted([line, code] for line, code in parse_expectations(fixture.read_text(encoding="utf-8")))
    assert out[str(fixture)]["error"] == ""
    assert sorted(out[str(fixture)]["found"]) == want
