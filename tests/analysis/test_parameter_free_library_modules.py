"""A `torch.nn` module that holds no parameter (padding, activation, pooling, dropout) builds no graph when called.

SinGAN pads each scale's noise with `m_noise = nn.ZeroPad2d(...)` and keeps it in a list across the training loop:
calling a library module was taken to run its parameters, so the padded noise (of `torch.randn`) was said to hold a
graph (two certain GL008 of lockbox 39, kind 3). Which `torch.nn` classes hold none is data, measured on the installed
torch by `benchmarks/gen_parameter_free_modules.py` into `apimodels/torch_parameter_free.toml`; a constructor flag that
gives one parameters (`nn.InstanceNorm2d(c, affine=True)`) is a condition of its row."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import tomllib

from gradcheck_lint.engine import analyse_text

ROOT = Path(__file__).resolve().parents[2]
TABLE = ROOT / "gradcheck_lint" / "analysis" / "apimodels" / "torch_parameter_free.toml"

SCALES = """\
import torch
import torch.nn as nn

Zs = []
net = nn.Linear(4, 4)
opt = torch.optim.Adam(net.parameters())
m_noise = {module}
for scale in range(5):
    z = m_noise(torch.randn(1, 3, 8, 8))
    for it in range(10):
        opt.zero_grad()
        loss = net(torch.randn(2, 4)).mean()
        loss.backward()
        opt.step()
    Zs.append(z)
"""


def _codes(text: str) -> list[tuple[str, int]]:
    return [(d.code, d.span.line) for d in analyse_text(text, "train.py").diagnostics]


@pytest.mark.parametrize("module", ["nn.ZeroPad2d(2)", "nn.ReflectionPad2d(1)", "nn.Upsample(scale_factor=2)",
                                    "nn.Dropout(0.1)", "nn.LeakyReLU(0.2)", "nn.InstanceNorm2d(3)",
                                    "nn.modules.padding.ZeroPad2d(2)"])
def test_noise_through_a_module_without_parameters_holds_no_graph(module: str) -> None:
    assert _codes(SCALES.format(module=module)) == []


@pytest.mark.parametrize("module", ["nn.Conv2d(3, 3, 1)", "nn.InstanceNorm2d(3, affine=True)",
                                    "nn.InstanceNorm2d(3, 1e-5, 0.1, True)", "nn.PReLU()"])
def test_noise_through_a_module_with_parameters_holds_their_graph(module: str) -> None:
    assert _codes(SCALES.format(module=module)) == [("GL008", 15)]


def test_a_parameter_free_module_passes_its_inputs_graph_on() -> None:
    """`act(out)` of a model's output keeps the model's graph: the module adds none, it removes none."""
    leaking = SCALES.replace("Zs.append(z)", "Zs.append(m_noise(net(torch.randn(2, 4))))")
    assert _codes(leaking.format(module="nn.ReLU()")) == [("GL008", 15)]


def test_a_part_of_a_trainer_without_parameters_holds_no_graph() -> None:
    text = """\
import torch
import torch.nn as nn


class Trainer:
    def __init__(self):
        self.net = nn.Linear(4, 4)
        self.opt = torch.optim.Adam(self.net.parameters())
        self.pad = nn.ReflectionPad2d(1)
        self.kept = []

    def fit(self):
        for it in range(10):
            z = self.pad(torch.randn(1, 3, 8, 8))
            self.opt.zero_grad()
            loss = self.net(torch.randn(2, 4)).mean()
            loss.backward()
            self.opt.step()
            self.kept.append(z)
"""
    assert _codes(text) == []
    assert _codes(text.replace("nn.ReflectionPad2d(1)", "nn.Conv2d(3, 3, 1)")) == [("GL008", 19)]


def test_the_table_is_measured_on_torch_and_regenerates_the_same(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    out = tmp_path / "free.toml"
    subprocess.run([sys.executable, str(ROOT / "benchmarks" / "gen_parameter_free_modules.py"), "-o", str(out)],
                   check=True, capture_output=True)
    if torch.__version__ in TABLE.read_text(encoding="utf-8").splitlines()[1]:
        assert out.read_text(encoding="utf-8") == TABLE.read_text(encoding="utf-8")
    names = {row["name"] for row in tomllib.loads(out.read_text(encoding="utf-8"))["call"]}
    assert {"torch.nn.ZeroPad2d", "torch.nn.ReLU", "torch.nn.Identity", "torch.nn.InstanceNorm2d"} <= names
    # containers and wrappers hold what they are given; layers hold weights
    assert not names & {"torch.nn.Sequential", "torch.nn.ModuleList", "torch.nn.DataParallel", "torch.nn.Module",
                        "torch.nn.Linear", "torch.nn.PReLU", "torch.nn.BatchNorm2d", "torch.nn.Embedding"}


def test_every_row_holds_in_torch() -> None:
    """Each class the table lists, built as its row says (the flag of a conditional row left at its default), holds
    no parameter; built with the flag set, it holds some."""
    torch = pytest.importorskip("torch")
    import inspect

    rows = tomllib.loads(TABLE.read_text(encoding="utf-8"))["call"]
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        from gen_parameter_free_modules import _build
    finally:
        sys.path.pop(0)
    for row in rows:
        owner, name = row["name"].rsplit(".", 1)
        cls = getattr(__import__(owner, fromlist=[name]), name)
        assert issubclass(cls, torch.nn.Module)
        assert not list(_build(cls).parameters()), row["name"]
        for effect in row.get("effects", []):
            if "given" in effect:
                flag = effect["given"].split("|")[1]
                assert flag in inspect.signature(cls.__init__).parameters
                assert list(_build(cls, {flag: True}).parameters()), row["name"]
