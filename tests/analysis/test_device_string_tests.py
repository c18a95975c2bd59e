"""A `torch.device` never equals a str (`torch.device("cuda") == "cuda"` and `torch.device("cpu") == "cpu"` are
False): `if device == "cuda":` of a device `torch.device(...)` made goes one way on every path (the type's
`never_equal` in the catalogue, read by `fixed_tests.FixedTests.unequal_test`). The DCGAN tutorial's copies guard a
typo that aliases G and D (`netG = nn.DataParallel(netD, ...)`) with `(device.type == 'cuda')`; written
`(device == 'cuda')`, that branch never runs, and a certain GL009 on it was a false alarm on unseen code. A device
from elsewhere, a str, or `device.type` (a str) keep both ways open."""

from __future__ import annotations

import pytest

from gradcheck_lint.analysis.apimodels import ModelError, catalogue_for, parse_model_file
from gradcheck_lint.engine import analyse_text

GAN = """\
import torch
import torch.nn as nn

ngpu = 2
{make}
netG = nn.Linear(8, 4).to(device)
netD = nn.Linear(4, 1).to(device)
if {test}:
    netG = nn.DataParallel(netD, list(range(ngpu)))
optD = torch.optim.Adam(netD.parameters(), lr=2e-4)
optG = torch.optim.Adam(netG.parameters(), lr=2e-4)
criterion = nn.BCEWithLogitsLoss()

for real in torch.randn(10, 16, 4):
    netD.zero_grad()
    fake = netG(torch.randn(16, 8, device=device))
    errD = criterion(netD(real), torch.ones(16, 1)) + criterion(netD(fake.detach()), torch.zeros(16, 1))
    errD.backward()
    optD.step()
    netG.zero_grad()
    errG = criterion(netD(fake), torch.ones(16, 1))
    errG.backward()
    optG.step()
"""

DEVICE = 'device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")'

NEVER = [
    "(device == 'cuda') and (ngpu > 1)",
    "device == 'cuda'",
    "'cuda' == device",
    "device == 'cuda:0'",
    "device == 'cpu'",
    "not device != 'cuda'",
    "ngpu > 1 and not (device != 'cpu')",
    "(device == 'cuda' or device == 'cuda:0') and ngpu > 1",
]

# the aliasing branch may run: the GL009 of the step of D before G's backward through D stays
MAYBE = [
    (DEVICE, "(device.type == 'cuda') and (ngpu > 1)"),  # a str
    (DEVICE, "str(device) == 'cuda:0'"),
    ("device = 'cuda'", "(device == 'cuda') and (ngpu > 1)"),  # a str, not a device
    ("device = 'cuda' if torch.cuda.is_available() else 'cpu'", "device == 'cuda'"),
    ("device = torch.device('cuda') if torch.cuda.is_available() else 'cpu'", "device == 'cpu'"),  # a str on one path
    ("from config import args\ndevice = args.device", "device == 'cuda'"),  # out of sight
    ("from config import get_device\ndevice = get_device()", "device == 'cuda'"),
    ("device = torch.device('cuda')\ndevice = 'cuda'", "device == 'cuda'"),  # rebound to a str
]


def codes(make: str, test: str) -> list[str]:
    return [d.code for d in analyse_text(GAN.format(make=make, test=test), "dcgan.py").diagnostics]


@pytest.mark.parametrize("test", NEVER)
def test_a_device_compared_with_a_str_never_takes_the_branch(test: str) -> None:
    assert codes(DEVICE, test) == []


@pytest.mark.parametrize("make", [DEVICE, "import torch as th\ndevice = th.device('cuda')",
                                  "from torch import device as dev\ndevice = dev('cpu')"])
def test_however_torch_device_is_imported(make: str) -> None:
    assert codes(make, "(device == 'cuda') and (ngpu > 1)") == []


@pytest.mark.parametrize("test", ["device != 'cuda'", "not device == 'cuda'", "ngpu > 1 or device != 'cpu'"])
def test_a_device_is_always_unequal_to_a_str(test: str) -> None:
    assert codes(DEVICE, test) == ["GL009"]  # the aliasing branch runs on every path: a real GL009


@pytest.mark.parametrize("make,test", MAYBE)
def test_a_value_that_may_equal_the_str_keeps_both_ways(make: str, test: str) -> None:
    assert codes(make, test) == ["GL009"]


# a trainer class: the device is an attribute `__init__` sets; a device handed in from elsewhere is not known
CLASS = """\
import torch
import torch.nn as nn


class Trainer:
    def __init__(self, ngpu{param}):
        self.device = {device}
        self.netG = nn.Linear(8, 4)
        self.netD = nn.Linear(4, 1)
        if self.device == "cuda" and ngpu > 1:
            self.netG = nn.DataParallel(self.netD, list(range(ngpu)))
        self.optD = torch.optim.Adam(self.netD.parameters())
        self.optG = torch.optim.Adam(self.netG.parameters())

    def train(self, loader):
        for real in loader:
            self.netD.zero_grad()
            fake = self.netG(torch.randn(16, 8))
            (self.netD(real).mean() - self.netD(fake.detach()).mean()).backward()
            self.optD.step()
            self.netG.zero_grad()
            (-self.netD(fake).mean()).backward()
            self.optG.step()
"""


def test_an_attribute_set_to_a_device_never_equals_a_str() -> None:
    text = CLASS.format(param="", device='torch.device("cuda" if torch.cuda.is_available() else "cpu")')
    assert [d.code for d in analyse_text(text, "trainer.py").diagnostics] == []


def test_a_device_handed_in_as_a_parameter_keeps_both_ways() -> None:
    text = CLASS.format(param=", device", device="device")
    assert [d.code for d in analyse_text(text, "trainer.py").diagnostics] == ["GL009"]


def test_the_catalogue_says_a_device_never_equals_a_str() -> None:
    catalogue = catalogue_for()
    assert catalogue.never_equal("torch.device") == frozenset({"str"})
    assert catalogue.never_equal("torch.nn.Module") == frozenset()


def test_never_equal_names_literal_types_only() -> None:
    with pytest.raises(ModelError, match="never_equal must be a list of literal types"):
        parse_model_file({"type": [{"name": "a.B", "kind": "tool", "never_equal": ["list"]}]}, "x.toml")
