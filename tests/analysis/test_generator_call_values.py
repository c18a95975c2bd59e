"""A call of a generator function of the project is worth what its `yield`s give (`context_helpers.Run`), and a
function's `*args` is the tuple of the arguments beyond its named ones (`inlining`).

An optimizer over `chain(enc.parameters(), head.parameters())` of a project `chain` generator owned nothing known
before: a clear of one module was not seen to leave the other's gradients (a missed GL001), and a clear of
another optimizer over the same module, after the step that applied them, was read as dropping gradients that
no step had taken yet (lockbox 37's exorl `proto.py`: a certain false GL002, `utils.chain` in another file).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gradcheck_lint.config import Settings
from gradcheck_lint.engine import analyse_text
from support import project_tree

CHAIN = """\
def chain(*iterables):
    for it in iterables:
        yield from it
"""
PARAMS_OF = """\
def chain(*models):
    for m in models:
        for p in m.parameters():
            yield p
"""
LOOP = """\
import torch
import torch.nn as nn
HELPER

def main(loader):
    enc = nn.Linear(4, 4)
    head = nn.Linear(4, 1)
    opt = torch.optim.Adam(ARGS, lr=1e-3)
    for x, y in loader:
        loss = ((head(enc(x)) - y) ** 2).mean()
        CLEARS
        loss.backward()
        opt.step()
"""
YIELDING_ARGS = {CHAIN: "chain(enc.parameters(), head.parameters())", PARAMS_OF: "chain(enc, head)"}


def _found(text: str, path: str = "train.py") -> list[tuple[str, int, bool]]:
    report = analyse_text(text, path, Settings.default())
    return [(d.code, d.line, d.possible) for d in report.diagnostics]


def _loop(helper: str, clears: str) -> str:
    return LOOP.replace("HELPER", helper).replace("ARGS", YIELDING_ARGS[helper]).replace("CLEARS", clears)


@pytest.mark.parametrize("helper", [CHAIN, PARAMS_OF], ids=["yield-from", "yield"])
def test_a_clear_of_one_of_the_modules_a_generator_yields_leaves_the_other_accumulating(helper: str) -> None:
    text = _loop(helper, "enc.zero_grad()")
    step_line = text.splitlines().index("        opt.step()") + 1
    assert _found(text) == [("GL001", step_line, False)]


@pytest.mark.parametrize("helper", [CHAIN, PARAMS_OF], ids=["yield-from", "yield"])
@pytest.mark.parametrize("clears", ["enc.zero_grad()\n        head.zero_grad()", "opt.zero_grad()"])
def test_clears_of_every_module_a_generator_yields_are_a_clear_of_the_optimizer(helper: str, clears: str) -> None:
    assert _found(_loop(helper, clears)) == []


def test_star_args_spread_from_a_list_stay_out_of_sight() -> None:
    # `chain(*groups)`: what the tuple holds is not read here, so the optimizer's parameters stay unknown, and a
    # partial clear proves nothing either way
    text = _loop(CHAIN, "enc.zero_grad()").replace(YIELDING_ARGS[CHAIN], "chain(*[enc.parameters(), head.parameters()])")
    assert [f for f in _found(text) if not f[2]] == []


AGENT = """\
import torch
import torch.nn as nn

import utils


class Agent:
    def __init__(self):
        self.encoder = nn.Linear(4, 4)
        self.critic = nn.Linear(4, 1)
        self.proto = nn.Linear(4, 4)
        self.encoder_opt = torch.optim.Adam(self.encoder.parameters())
        self.critic_opt = torch.optim.Adam(self.critic.parameters())
        self.proto_opt = torch.optim.Adam(utils.chain(PROTO_OWNS))

    def update_proto(self, obs):
        loss = self.proto(self.encoder(obs)).pow(2).mean()
        self.proto_opt.zero_grad(set_to_none=True)
        loss.backward()
        self.proto_opt.step()

    def update_critic(self, obs, target):
        loss = (self.critic(obs) - target).pow(2).mean()
        self.encoder_opt.zero_grad(set_to_none=True)
        self.critic_opt.zero_grad(set_to_none=True)
        loss.backward()
        self.critic_opt.step()
        self.encoder_opt.step()

    def update(self, obs, target):
        self.update_proto(obs)
        self.update_critic(self.encoder(obs).detach(), target)


def main(loader):
    agent = Agent()
    for obs, target in loader:
        agent.update(obs, target)
"""


# the proto loss reaches the encoder: stepped by `proto_opt` when it owns the encoder, else cleared by the critic's
# update before any step applies it
@pytest.mark.parametrize(("owns", "expected"), [("self.encoder.parameters(), self.proto.parameters()", []),
                                                ("self.proto.parameters()", ["GL002"])])
def test_an_optimizer_over_a_generator_of_another_file_owns_what_it_yields(tmp_path: Path, owns: str,
                                                                          expected: list[str]) -> None:
    root = project_tree(tmp_path / "p", {"utils.py": CHAIN, "agent.py": AGENT.replace("PROTO_OWNS", owns)})
    path = root / "agent.py"
    found = _found(path.read_text(), str(path))
    assert [code for code, _line, possible in found if not possible] == expected, found

