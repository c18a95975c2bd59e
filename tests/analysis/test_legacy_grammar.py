"""Code written for Python 3.6 (PyTorch 0.3-0.4's `x.cuda(async=True)`) is read with that grammar."""

from __future__ import annotations

import textwrap
from pathlib import Path

from gradcheck_lint import check_source
from gradcheck_lint.config import Settings
from gradcheck_lint.runner import lint_files
from support import project_tree

MODEL = """\
    import torch


    class Model:
        def __init__(self, network, config):
            self.network = network
            self.config = config
            self.optimizer = torch.optim.SGD(network.parameters(), lr=0.1)
            self.optimizer.zero_grad()
            self.updates = 0

        def update(self, x, y):
            x = x.cuda(async=True)
            loss = torch.nn.functional.mse_loss(self.network(x), y){divided}
            loss.backward()
            self.updates += 1
            if self.updates % self.config["accum"] == 0:
                self.optimizer.step()
                self.optimizer.zero_grad()
"""


def _codes(text: str) -> list[tuple[int, str]]:
    return [(d.line, d.code) for d in check_source(textwrap.dedent(text), "model.py", settings=Settings.default())]


def test_async_as_a_keyword_argument_is_parsed_and_checked() -> None:
    # the callee counts its own calls and steps every `accum` of them: the undivided loss is found
    assert _codes(MODEL.format(divided="")) == [(15, "GL003")]
    assert _codes(MODEL.format(divided=' / self.config["accum"]')) == []


def test_a_file_no_grammar_parses_gets_the_current_grammars_error() -> None:
    # the error the user's Python would give: at `async`, not at the 3.6 grammar's later one
    [d] = check_source("import torch\nx.cuda(async=True)\nloss.backward()\nopt.step()\ndef f(:\n", "bad.py")
    assert d.code == "GL000" and d.line == 2


def test_a_legacy_file_is_read_when_another_file_calls_into_it(tmp_path: Path) -> None:
    helpers = "def to_device(x):\n    return x.cuda(async=True)\n\n\ndef backward_and_step(loss, optimizer):\n    loss.backward()\n    optimizer.step()\n"
    loop = textwrap.dedent("""\
        import torch
        from helpers import backward_and_step

        model = torch.nn.Linear(4, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for x, y in [(torch.randn(2, 4), torch.randn(2, 1))] * 4:
            loss = torch.nn.functional.mse_loss(model(x), y)
            backward_and_step(loss, opt)
    """)
    root = project_tree(tmp_path, {"helpers.py": helpers, "train.py": loop})
    found = lint_files([str(root / "train.py")], Settings.default())
    assert [(d.line, d.code) for d in found if not d.possible] == [(8, "GL001")]
