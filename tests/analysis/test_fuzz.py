"""The analyzer never crashes or hangs: generated programs and mutated fixtures get diagnostics or a GL000.

A GL000 that says "internal error" is an exception the engine caught: a bug, so it fails here too.
`python benchmarks/fuzz.py` runs the same generators for thousands of examples.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fuzzing import (
    INTERNAL_ERROR,
    contract_violations,
    grammar_programs,
    mutate,
    mutation_steps,
    node_programs,
    spliced_programs,
    training_programs,
)
from gradcheck_lint import Diagnostic, check_file, check_source
from support import hang_guard, load_fixtures

# Deterministic for CI; a few hundred examples in all (see benchmarks/fuzz.py for the long run).
CI = settings(derandomize=True, deadline=None, database=None, print_blob=True,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much])
FIXTURE_BYTES = [f.path.read_bytes() for f in load_fixtures()]
fixture_index = st.integers(0, len(FIXTURE_BYTES) - 1)


def checked(text: str, path: str = "fuzzed.py") -> list[Diagnostic]:
    """Run check_source under the hang guard and fail on any broken contract."""
    with hang_guard():
        diags = check_source(text, path)
    problems = contract_violations(diags, path)
    assert not problems, problems
    return diags


@settings(CI, max_examples=100)
@given(training_programs())
def test_generated_training_programs_are_analysed(source: str) -> None:
    """Valid training code in loops, branches, helpers and classes: analysed, never a GL000."""
    diags = checked(source)
    assert [d for d in diags if d.code == "GL000"] == []


@settings(CI, max_examples=60)
@given(spliced_programs(st.deferred(grammar_programs)))
def test_hypothesmith_grammar_programs_spliced_with_training_code(source: str) -> None:
    """Programs from Python's grammar, with training statements inside, before, after or around them."""
    checked(source)


@settings(CI, max_examples=30)
@given(spliced_programs(st.deferred(node_programs)))
def test_hypothesmith_syntax_trees_spliced_with_training_code(source: str) -> None:
    """Programs built from libcst nodes (valid for libcst), spliced with training statements."""
    checked(source)


@settings(CI, max_examples=150)
@given(fixture_index, mutation_steps())
def test_mutated_fixtures_as_text(index: int, steps: list[tuple[str, int]]) -> None:
    """Every fixture with lines deleted, duplicated, swapped, re-indented, truncated, bytes and tokens changed."""
    data = mutate(FIXTURE_BYTES[index], steps)
    checked(data.decode("utf-8", errors="surrogateescape"))


@settings(CI, max_examples=50)
@given(fixture_index, mutation_steps())
def test_mutated_fixtures_as_files(index: int, steps: list[tuple[str, int]]) -> None:
    """The same mutants read from disk as bytes: decoding, BOMs, cookies and NULs go through check_file."""
    data = mutate(FIXTURE_BYTES[index], steps)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "mutant.py")
        with open(path, "wb") as fh:
            fh.write(data)
        with hang_guard():
            diags = check_file(path)
        problems = contract_violations(diags, path)
    assert not problems, problems


def test_mutators_keep_most_mutants_analysable() -> None:
    """The mutants reach the rules: most still parse, so the property tests exercise the analysis."""
    rng = random.Random(7)
    analysed = 0
    for k in range(60):
        steps = [(rng.choice(("edit_statements", "swap_names", "replace_token", "move_line")), rng.randrange(2**32))]
        diags = checked(mutate(FIXTURE_BYTES[k % len(FIXTURE_BYTES)], steps).decode("utf-8", "surrogateescape"))
        analysed += not any(d.code == "GL000" for d in diags)
    assert analysed >= 30, analysed


def test_cli_on_a_directory_of_mutants(tmp_path: Path) -> None:
    """`gradlint DIR` over a mutant of every fixture: no traceback or internal error, the good file still checked, exit 2."""
    rng = random.Random(2024)
    fixtures = load_fixtures()
    for k, fixture in enumerate(fixtures):
        steps = [(name, rng.randrange(2**32)) for name in rng.sample(sorted(("truncate", "swap_names", "flip_byte",
                 "edit_statements", "reindent_line", "insert_bytes", "delete_line")), rng.randint(1, 2))]
        (tmp_path / f"mutant_{k:03d}.py").write_bytes(mutate(fixture.path.read_bytes(), steps))
    (tmp_path / "zz_good.py").write_text(
        "import torch\nmodel = torch.nn.Linear(4, 1)\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "for x in torch.randn(8, 4).split(2):\n    model(x).sum().backward()\n    opt.step()\n"
    )
    res = subprocess.run([sys.executable, "-m", "gradcheck_lint", "--format", "json", str(tmp_path)],
                         capture_output=True, text=True, timeout=600)
    assert "Traceback" not in res.stderr, res.stderr
    data = json.loads(res.stdout)
    assert not [d for d in data if INTERNAL_ERROR in d["message"]]
    by_file: dict[str, list[str]] = {}
    for d in data:
        by_file.setdefault(Path(d["path"]).name, []).append(d["code"])
    assert by_file["zz_good.py"] == ["GL001"]
    failed = [name for name, codes in by_file.items() if "GL000" in codes]
    assert failed, "the mutants were expected to include unparsable files"
    assert all(codes == ["GL000"] for name, codes in by_file.items() if name in failed)
    assert res.returncode == 2
