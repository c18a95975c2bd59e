"""The guard on the mechanisms of issue 31 (`tests/runtime/programs/`): clipping after an accumulation
window, constant factors of the objective, reentrant checkpointing, steps fired from gradient hooks,
one backward feeding two optimizers, per-task backward passes of one batch, an epoch-start clear with
an off-by-one gate, an AMP loop judging the scaled gradient norm. Each program, run under the
process-wide guard in record mode (as `tests/runtime_worker.py` runs the fixtures), gives exactly the
(line, code) pairs of its `# expect:` comments: GL003 at the backward, GL001/GL005 at the step,
GL002 at the clear, GL004 at the gate, GL007 where the scaled gradients are read."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from support import made_once, parse_expectations

pytest.importorskip("torch")

HERE = Path(__file__).resolve().parent
PROGRAMS = sorted((HERE / "programs").glob("*.py"))
WORKER = HERE.parent / "runtime_worker.py"


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, object]]:
    """Made by one pytest-xdist worker, read by the other (each ran the programs: a torch import and every run)."""

    def make() -> dict[str, dict[str, object]]:
        proc = subprocess.run([sys.executable, str(WORKER), *map(str, PROGRAMS)], capture_output=True, text=True,
                              timeout=900)
        assert proc.returncode == 0, proc.stderr[-3000:]
        result: dict[str, dict[str, object]] = json.loads(proc.stdout.strip().splitlines()[-1])
        return result

    return made_once(tmp_path_factory, "guard_mechanisms_recorded", make)


def test_there_are_at_least_thirty_programs_both_correct_and_buggy() -> None:
    expectations = [parse_expectations(p.read_text(encoding="utf-8")) for p in PROGRAMS]
    assert len(PROGRAMS) >= 30
    assert sum(1 for e in expectations if e) >= 12 and sum(1 for e in expectations if not e) >= 12


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.stem)
def test_guard_reports_exactly_the_expected_codes_on_their_lines(program: Path, recorded) -> None:  # type: ignore[no-untyped-def]
    result = recorded[str(program)]
    assert not result["error"], result["error"]
    want = parse_expectations(program.read_text(encoding="utf-8"))
    got = {(line, code) for line, code in result["found"]}
    assert got == want, "\n".join(result["messages"])
    findings = result["findings"]
    assert all(f[0] == str(program) for f in findings), "\n".join(result["messages"])
    assert len({(f[1], f[3]) for f in findings}) == len(findings), "\n".join(result["messages"])
