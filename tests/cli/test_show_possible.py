"""`certain` findings by default, `possible` ones with `--show-possible` or `show-possible = true`; every
output format says which is which."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

# GL001 on an optimizer known only by its name (possible), and on one built in sight (certain).
POSSIBLE = """import torch
def train(model, optimizer, loader):
    for x in loader:
        model(x).sum().backward()
        optimizer.step()
"""
CERTAIN = """import torch
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for x in torch.randn(8, 2, 4):
    model(x).sum().backward()
    opt.step()
"""


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "gradcheck_lint", "--no-cache", *args], capture_output=True, text=True,
                          cwd=cwd, timeout=120)


@pytest.fixture()
def project(tmp_path: Path) -> Path:
    (tmp_path / "helper.py").write_text(POSSIBLE)
    (tmp_path / "script.py").write_text(CERTAIN)
    return tmp_path


def test_default_shows_certain_only_and_counts_the_rest(project: Path) -> None:
    res = run("helper.py", "script.py", cwd=project)
    assert res.returncode == 1
    assert "script.py:6:5: GL001" in res.stdout and "helper.py" not in res.stdout
    assert "1 possible problem not shown" in res.stdout


def test_only_possible_findings_exit_zero(project: Path) -> None:
    res = run("helper.py", cwd=project)
    assert res.returncode == 0, res.stdout
    assert "All checks passed" in res.stdout and "1 possible problem not shown" in res.stdout


def test_flag_shows_possible_marked(project: Path) -> None:
    res = run("--show-possible", "helper.py", "script.py", cwd=project)
    assert res.returncode == 1
    assert "helper.py:5:9: GL001 (possible)" in res.stdout
    assert "script.py:6:5: GL001 [*]" in res.stdout  # a certain finding is not marked


def test_config_key_shows_possible(project: Path) -> None:
    (project / "pyproject.toml").write_text("[tool.gradlint]\nshow-possible = true\n")
    res = run("helper.py", cwd=project)
    assert res.returncode == 1 and "GL001 (possible)" in res.stdout


def test_config_key_must_be_boolean(project: Path) -> None:
    (project / "pyproject.toml").write_text('[tool.gradlint]\nshow-possible = "yes"\n')
    res = run("helper.py", cwd=project)
    assert res.returncode == 2 and "show-possible must be true or false" in res.stderr


def test_json_sarif_github_carry_certainty(project: Path) -> None:
    data = json.loads(run("--show-possible", "--format", "json", "helper.py", "script.py", cwd=project).stdout)
    assert {(Path(d["path"]).name, d["certainty"]) for d in data} == {("helper.py", "possible"), ("script.py", "certain")}
    sarif = json.loads(run("--show-possible", "--format", "sarif", "helper.py", "script.py", cwd=project).stdout)
    results = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]: r for r in sarif["runs"][0]["results"]}
    assert results["helper.py"]["level"] == "note" and results["helper.py"]["properties"]["certainty"] == "possible"
    assert results["script.py"]["level"] == "error" and results["script.py"]["properties"]["certainty"] == "certain"
    github = run("--show-possible", "--format", "github", "helper.py", "script.py", cwd=project).stdout.splitlines()
    assert any(line.startswith("::notice file=helper.py") and "possible" in line for line in github)
    assert any(line.startswith("::error file=script.py") for line in github)
    # without the flag, the machine-readable outputs leave the possible finding out too
    assert [Path(d["path"]).name for d in json.loads(run("--format", "json", "helper.py", "script.py", cwd=project).stdout)] == ["script.py"]
