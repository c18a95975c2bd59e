"""A value an iteration reads before it assigns it was made by the previous iteration: its graph is as old
as that iteration's step (option-critic's `state`, an RNN hidden state never detached). A value made anew
before it is read (or detached first) is this iteration's."""

import ast
import textwrap
from pathlib import Path

from gradcheck_lint import check_source
from gradcheck_lint.analysis.syntax import carried_names
from gradcheck_lint.config import Settings
from gradcheck_lint.engine import analyse_text
from support import write


def _loop(source: str) -> ast.AST:
    return next(n for n in ast.walk(ast.parse(textwrap.dedent(source))) if isinstance(n, (ast.For, ast.While)))


def test_carried_names_follow_the_order_the_code_runs() -> None:
    loop = _loop("""
        for x in data:
            a, logp = act(state)
            state = encode(x)
            if flag:
                y = 1
            else:
                y = 2
            use(y)
            total += loss
            h = h.detach()
            fn = lambda: late
            z = [w for w in items]
        """)
    assert carried_names(loop) == {"act", "state", "encode", "flag", "use", "total", "loss", "h", "items"}


def test_while_test_reads_first() -> None:
    assert "done" in carried_names(_loop("while not done:\n    done = step()\n"))


def _gl009(source: str) -> list[int]:
    found = check_source(textwrap.dedent(source), "train.py", settings=Settings.default())
    return [d.span.line for d in found if d.code == "GL009"]


OPTION_CRITIC = """
import torch
from torch import nn
from torch.distributions import Categorical


class OptionCritic(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 8))
        self.policy = nn.Linear(8, 2)

    def get_state(self, obs):
        return self.features(obs)

    def get_action(self, state):
        dist = Categorical(logits=self.policy(state))
        action = dist.sample()
        return action.item(), dist.log_prob(action)


def run(env, steps):
    model = OptionCritic()
    optim = torch.optim.RMSprop(model.parameters())
    state = model.get_state(env.reset())
    for _ in range(steps):
        {top}action, logp = model.get_action(state)
        next_obs, reward = env.step(action)
        state = model.get_state(next_obs)
        loss = -logp * reward
        optim.zero_grad()
        loss.backward()
        optim.step()
"""


def test_state_made_before_the_step_and_read_next_iteration_is_gl009() -> None:
    assert _gl009(OPTION_CRITIC.format(top="")) == [32]


def test_state_detached_at_the_top_is_silent() -> None:
    assert _gl009(OPTION_CRITIC.format(top="state = state.detach()\n        ")) == []


def test_state_recomputed_before_it_is_read_is_silent() -> None:
    assert _gl009(OPTION_CRITIC.format(top="state = model.get_state(env.observe())\n        ")) == []


RNN = """
import torch
from torch import nn

rnn = nn.GRU(4, 8)
head = nn.Linear(8, 1)
opt = torch.optim.SGD(list(rnn.parameters()) + list(head.parameters()), lr=0.1)


def repackage_hidden(h):
    if isinstance(h, torch.Tensor):
        return h.detach()
    return tuple(repackage_hidden(v) for v in h)


def train(batches):
    h = torch.zeros(1, 2, 8)
    for x, y in batches:
        {top}out, h = rnn(x, h)
        loss = ((head(out) - y) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
"""


def test_rnn_hidden_state_never_detached_is_gl009() -> None:
    assert _gl009(RNN.format(top="")) == [22]


def test_rnn_hidden_state_detached_or_repackaged_is_silent() -> None:
    assert _gl009(RNN.format(top="h = h.detach()\n        ")) == []
    assert _gl009(RNN.format(top="h = repackage_hidden(h)\n        ")) == []


def _gl009_certainty(source: str) -> list[tuple[int, str]]:
    found = check_source(textwrap.dedent(source), "train.py", settings=Settings.default())
    return [(d.span.line, d.certainty.name) for d in found if d.code == "GL009"]


MEMORY = """
import torch
from torch import nn
{model}

opt = torch.optim.SGD(model.parameters(), lr=0.1)
mems = ()
for x in data:
    ret = model(x, *mems)
    loss, mems = ret[0], ret[1:]
    opt.zero_grad()
    loss.backward()
    opt.step()
"""

IN_FILE = """
class Memory(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = nn.Linear(8, 8)

    def forward(self, x, *mems):
        h = self.layer(x)
        return h.sum(), {memory}


model = Memory()
"""


def test_carried_memory_of_a_class_read_here_follows_what_its_forward_returns() -> None:
    # transformer-xl's loop: `mems` the previous iteration's forward returned feed this one's forward
    assert _gl009_certainty(MEMORY.format(model=IN_FILE.format(memory="h"))) == [(24, "CERTAIN")]
    assert _gl009_certainty(MEMORY.format(model=IN_FILE.format(memory="h.detach()"))) == []


def _project_gl009(root: Path, memory: str) -> list[tuple[int, bool]]:
    write(root, {
        "pyproject.toml": "",
        "mem_transformer.py": "import torch\nfrom torch import nn\n" + IN_FILE.format(memory=memory).split("model =")[0],
        "train.py": MEMORY.format(model="from mem_transformer import Memory\nmodel = Memory()\n"),
    })
    train = root / "train.py"
    report = analyse_text(train.read_text(), str(train), Settings.default(), project=True)
    return [(d.line, d.possible) for d in report.diagnostics if d.code == "GL009"]


def test_carried_memory_of_a_class_of_another_file_rests_on_an_assumption(tmp_path: Path) -> None:
    # a forward of another file is followed only as far as the project reading goes (transformer-xl's
    # `_update_mems` builds the memory under `no_grad` two calls deep): a carried graph is an assumption
    assert _project_gl009(tmp_path / "kept", "h") == [(14, True)]
    assert _project_gl009(tmp_path / "cut", "h.detach()") == []


def test_carried_state_of_a_torch_module_stays_certain() -> None:
    found = check_source(textwrap.dedent(RNN.format(top="")), "train.py", settings=Settings.default())
    assert [(d.span.line, d.certainty.name) for d in found if d.code == "GL009"] == [(22, "CERTAIN")]
