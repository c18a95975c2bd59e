"""GL009's question, "does the forward of the stepped module save a parameter for backward?", answered through the
classes of the project a module is built of, file by file: an actor whose `__init__` builds an encoder class of
another file, which builds `nn.Linear` layers, saves weights (lockbox 27's PPO scheduler: the job actor's critic
and encoder are classes of the project, and the finding stayed possible). A class of the project that builds only
what is out of sight keeps it possible."""

from __future__ import annotations

from pathlib import Path

from gradcheck_lint.config import Settings
from gradcheck_lint.runner import lint_files
from support import project_tree

ENCODER = """\
    import torch.nn as nn


    class Encoder(nn.Module):
        def __init__(self, width):
            super().__init__()
            self.layers = nn.Sequential(nn.Linear(width, width), nn.Tanh(), nn.Linear(width, width))

        def forward(self, x):
            return self.layers(x)
"""
ACTOR = """\
    import torch.nn as nn
    from models.encoder import Encoder


    class Actor(nn.Module):
        def __init__(self, width, n_actions):
            super().__init__()
            self.encoder = Encoder(width)
            self.policy = Encoder(width)
            self.head = nn.Identity()
            self.n_actions = n_actions

        def forward(self, x):
            h = self.encoder(x)
            return self.head(self.policy(h)), h.sum(-1)
"""
TRAIN = """\
    import torch
    from models.actor import Actor

    actor = Actor(8, 2)
    critic = torch.nn.Linear(8, 1)
    actor_opt = torch.optim.Adam(actor.parameters(), lr=1e-3)
    critic_opt = torch.optim.Adam(critic.parameters(), lr=1e-3)
    for obs in torch.randn(20, 16, 8):
        logits, value = actor(obs)
        actor_loss = -logits.log_softmax(-1).mean()
        critic_loss = (value - critic(obs).squeeze(-1)).pow(2).mean()
        actor_opt.zero_grad()
        actor_loss.backward(retain_graph=True)
        actor_opt.step()
        critic_opt.zero_grad()
        critic_loss.backward()
        critic_opt.step()
"""


def _lint(root: Path) -> list[tuple[int, str, str]]:
    settings = Settings.default()
    return [(d.line, d.code, d.certainty.value) for d in lint_files([str(root / "train.py")], settings)]


def test_a_class_built_of_project_classes_that_build_linear_layers_saves_weights(tmp_path: Path) -> None:
    root = project_tree(tmp_path / "p", {"models/__init__.py": "", "models/encoder.py": ENCODER,
                                         "models/actor.py": ACTOR, "train.py": TRAIN})
    assert _lint(root) == [(16, "GL009", "certain")]


def test_a_script_folder_without_a_package_marker_reads_them_too(tmp_path: Path) -> None:
    # the scripts' own folder is where `from models.actor import ...` starts (no __init__.py anywhere)
    root = project_tree(tmp_path / "p", {"code/models/encoder.py": ENCODER, "code/models/actor.py": ACTOR,
                                         "code/train.py": TRAIN})
    settings = Settings.default()
    found = lint_files([str(root / "code" / "train.py")], settings)
    assert [(d.line, d.code, d.certainty.value) for d in found] == [(16, "GL009", "certain")]


def test_classes_built_of_what_is_out_of_sight_leave_it_possible(tmp_path: Path) -> None:
    opaque = ENCODER.replace("import torch.nn as nn", "import torch.nn as nn\n    from graphlib_x import GraphConv").replace(
        "nn.Sequential(nn.Linear(width, width), nn.Tanh(), nn.Linear(width, width))", "GraphConv(width, width)")
    root = project_tree(tmp_path / "p", {"models/__init__.py": "", "models/encoder.py": opaque,
                                         "models/actor.py": ACTOR, "train.py": TRAIN})
    assert _lint(root) == [(16, "GL009", "possible")]


def test_a_graph_of_the_whole_module_is_judged_by_the_part_the_step_changed(tmp_path: Path) -> None:
    # the optimizer steps the embedding table only (it saves its indices, not its weight); the module's Linear head,
    # which saves its weight, is not stepped before the second backward: nothing raises, nothing is reported
    train = """\
        import torch
        import torch.nn as nn


        class Tagger(nn.Module):
            def __init__(self):
                super().__init__()
                self.table = nn.Embedding(100, 8)
                self.head = nn.Linear(8, 3)

            def forward(self, ids):
                return self.head(self.table(ids)).mean(), self.table(ids).pow(2).mean()


        model = Tagger()
        table_opt = torch.optim.SGD(model.table.parameters(), lr=0.1)
        head_opt = torch.optim.SGD(model.head.parameters(), lr=0.1)
        for ids in torch.randint(0, 100, (10, 4)):
            task, reg = model(ids)
            table_opt.zero_grad()
            reg.backward(retain_graph=True)
            table_opt.step()
            head_opt.zero_grad()
            task.backward()
            head_opt.step()
"""
    root = project_tree(tmp_path / "p", {"train.py": train})
    assert _lint(root) == []
    # the head stepped first instead, its gradients zeroed (not set to None: the step then updates it in place): its
    # weight was saved by the head's linear op, and the second backward raises (from the second batch on). Cleared to
    # None, the head holds no gradient at its step (`reg` does not reach it): SGD skips it, and nothing raises.
    swapped = train.replace("table_opt.zero_grad()\n            reg.backward",
                            "head_opt.zero_grad(set_to_none=False)\n            reg.backward") \
        .replace("reg.backward(retain_graph=True)\n            table_opt.step()", "reg.backward(retain_graph=True)\n            head_opt.step()") \
        .replace("head_opt.zero_grad()\n            task.backward()\n            head_opt.step()", "table_opt.zero_grad()\n            task.backward()\n            table_opt.step()")
    root = project_tree(tmp_path / "q", {"train.py": swapped})
    assert "GL009" in [code for _line, code, _c in _lint(root)]
    cleared = swapped.replace("head_opt.zero_grad(set_to_none=False)", "head_opt.zero_grad()")
    root = project_tree(tmp_path / "r", {"train.py": cleared})
    assert "GL009" not in [code for _line, code, _c in _lint(root)]
