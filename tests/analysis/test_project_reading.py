"""Reading the whole project: calls into the project's own modules are followed (gradcheck_lint.project)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from gradcheck_lint.cache import ResultCache
from gradcheck_lint.config import Settings
from gradcheck_lint.engine import analyse_text
from gradcheck_lint.render.sarif import render_sarif
from gradcheck_lint.runner import lint_files
from support import project_tree as _tree


def _codes(path: Path, project: bool = True) -> list[tuple[str, int]]:
    report = analyse_text(path.read_text(), str(path), Settings.default(), project=project)
    return [(d.code, d.line) for d in report.diagnostics]


LOSSES = """\
    import torch.nn.functional as F


    def compute_loss(model, x, y):
        return F.mse_loss(model(x), y)


    def backward_and_step(loss, optimizer):
        loss.backward()
        optimizer.step()
"""
MODELS = {
    "models/__init__.py": "from .net import Net\n",
    "models/net.py": """\
        import torch.nn as nn


        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(4, 1)

            def forward(self, x):
                return self.fc(x)
    """,
    "utils/__init__.py": "from .opt import *\nfrom .dist import wrap\n",
    "utils/opt.py": """\
        import torch


        def make_optimizer(model, lr):
            return torch.optim.SGD(model.parameters(), lr=lr)
    """,
    "utils/dist.py": """\
        from torch.nn.parallel import DistributedDataParallel as DDP


        def wrap(model, rank):
            return DDP(model, device_ids=[rank])
    """,
}
TRAIN = """\
    from losses import compute_loss, backward_and_step
    from utils import make_optimizer
    from models import Net

    model = Net()
    opt = make_optimizer(model, 0.1)
    for x, y in loader:
        {clear}loss = compute_loss(model, x, y)
        backward_and_step(loss, opt)
"""


def test_a_step_and_backward_in_an_imported_helper_are_followed(tmp_path: Path) -> None:
    root = _tree(tmp_path, {"losses.py": LOSSES, **MODELS, "train.py": TRAIN.format(clear="")})
    train = root / "train.py"
    assert _codes(train, project=False) == []  # read alone, the file calls nothing it can see train
    report = analyse_text(train.read_text(), str(train), Settings.default())
    [d] = report.diagnostics
    assert (d.code, d.line) == ("GL001", 9)  # at the call of the helper in this file
    assert "losses.py:10" in d.message and "losses.py:9" in d.message  # the step and the backward, where they are
    assert [(r.path, r.span.line) for r in d.related] == [(str(root / "losses.py"), 10)]
    assert d.fix is None  # a fix would have to edit losses.py
    read = {p for p, _ in report.dependencies}  # the result depends on these files (re-exporting __init__s too)
    assert {str(root / f) for f in ("losses.py", "models/net.py", "models/__init__.py", "utils/opt.py")} <= read
    assert str(root / "train.py") not in read and all(p.startswith(str(root)) for p in read)


def test_the_correct_twin_is_silent(tmp_path: Path) -> None:
    root = _tree(tmp_path, {"losses.py": LOSSES, **MODELS, "train.py": TRAIN.format(clear="opt.zero_grad()\n        ")})
    assert _codes(root / "train.py") == []


def test_relative_imports_and_package_reexports(tmp_path: Path) -> None:
    files = {f"pkg/{k}": v for k, v in MODELS.items()}
    files["pkg/__init__.py"] = ""
    files["pkg/losses/__init__.py"] = "from .core import *\n"
    files["pkg/losses/core.py"] = LOSSES
    files["pkg/train.py"] = TRAIN.replace("from losses", "from .losses").replace("from utils", "from .utils").replace(
        "from models", "from .models").format(clear="")
    root = _tree(tmp_path, files)
    assert [c for c, _ in _codes(root / "pkg" / "train.py")] == ["GL001"]


def test_a_ddp_wrapper_returned_by_an_imported_helper(tmp_path: Path) -> None:
    loop = """\
        import contextlib
        import torch
        from utils import wrap

        def main(model, loader, rank, accum):
            model = wrap(model, rank)
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            for i, (x, y) in enumerate(loader):
                with SYNC:
                    loss = torch.nn.functional.mse_loss(model(x), y) / accum
                    loss.backward()
                if (i + 1) % accum == 0:
                    opt.step()
                    opt.zero_grad()
    """
    buggy = loop.replace("SYNC", "contextlib.nullcontext()")
    fixed = loop.replace("SYNC", "(contextlib.nullcontext() if (i + 1) % accum == 0 else model.no_sync())")
    root = _tree(tmp_path, {**MODELS, "train.py": buggy, "train_ok.py": fixed})
    assert [c for c, _ in _codes(root / "train.py")] == ["GL006"]
    assert _codes(root / "train.py", project=False) == []
    assert _codes(root / "train_ok.py") == []


def test_an_unreadable_helper_stays_an_assumption(tmp_path: Path) -> None:
    root = _tree(tmp_path, {"losses.py": "def backward_and_step(loss, optimizer:\n", **MODELS,
                            "train.py": TRAIN.format(clear="").replace("compute_loss, ", "")
                            .replace("loss = compute_loss(model, x, y)", "loss = model(x).sum()")})
    # the helper cannot be parsed: the call is opaque, never a fact; nothing is claimed, nothing crashes
    assert [c for c, _ in _codes(root / "train.py") if c == "GL000"] == []


def test_installed_package_names_are_never_read_from_the_project(tmp_path: Path) -> None:
    # a folder named like a framework package is not taken for the framework's code
    root = _tree(tmp_path, {"torch/__init__.py": "raise SystemExit\n", "torch/optim.py": "def SGD(*a, **k):\n    return 1\n",
                            "losses.py": LOSSES, **MODELS, "train.py": TRAIN.format(clear="")})
    report = analyse_text((root / "train.py").read_text(), str(root / "train.py"), Settings.default())
    assert not any("torch" in p for p, _ in report.dependencies)


def test_sarif_and_json_carry_the_other_file(tmp_path: Path) -> None:
    root = _tree(tmp_path, {"losses.py": LOSSES, **MODELS, "train.py": TRAIN.format(clear="")})
    diags = analyse_text((root / "train.py").read_text(), str(root / "train.py"), Settings.default()).diagnostics
    result = json.loads(render_sarif(diags, str(root)))["runs"][0]["results"][0]
    [related] = result["relatedLocations"]
    assert related["physicalLocation"]["artifactLocation"]["uri"] == "losses.py"
    assert related["physicalLocation"]["region"]["startLine"] == 10
    assert diags[0].to_json()["related"][0]["line"] == 10


def test_a_change_to_a_helper_rechecks_its_caller(tmp_path: Path) -> None:
    root = _tree(tmp_path, {"losses.py": LOSSES, **MODELS, "train.py": TRAIN.format(clear="")})
    cache = ResultCache(str(tmp_path / "cache"))
    files = [str(root / "train.py")]
    first = lint_files(files, Settings.default(), cache=cache)
    assert [d.code for d in first] == ["GL001"]
    assert [d.code for d in lint_files(files, Settings.default(), cache=cache)] == ["GL001"]
    assert cache.hits == 1
    # the helper now clears before stepping: the cached result of train.py no longer holds
    (root / "losses.py").write_text(textwrap.dedent(LOSSES).replace("    optimizer.step()", "    optimizer.step()\n    optimizer.zero_grad()"))
    assert lint_files(files, Settings.default(), cache=cache) == []


def test_changed_files_only_give_the_whole_tree_findings(tmp_path: Path) -> None:
    root = _tree(tmp_path, {"losses.py": LOSSES, **MODELS, "train.py": TRAIN.format(clear="")})
    everything = sorted(str(p) for p in root.rglob("*.py"))
    whole = [d for d in lint_files(everything, Settings.default()) if d.path.endswith("train.py")]
    alone = lint_files([str(root / "train.py")], Settings.default())  # what a pre-commit hook passes
    assert whole == alone and [d.code for d in alone] == ["GL001"]


BASE = """\
    import torch


    class BaseTrainer:
        def __init__(self, model, lr):
            self.model = model
            self.optimizer = torch.optim.SGD(model.parameters(), lr=lr)

        def compute_loss(self, batch):
            raise NotImplementedError

        def train_step(self, batch):
            loss = self.compute_loss(batch)
            loss.backward()
            self.optimizer.step()
"""
SUBCLASS = """\
    import torch
    from base import BaseTrainer


    class MyTrainer(BaseTrainer):
        def compute_loss(self, batch):
            x, y = batch
            return torch.nn.functional.mse_loss(self.model(x), y)


    trainer = MyTrainer(torch.nn.Linear(4, 1), 0.1)
    for batch in [(torch.randn(2, 4), torch.randn(2, 1))] * 4:
        {clear}trainer.train_step(batch)
"""


def test_a_base_class_of_another_file_runs_with_the_subclass_hook(tmp_path: Path) -> None:
    # the loop calls a method the subclass inherits from base.py; that method calls the hook the subclass implements
    root = _tree(tmp_path, {"base.py": BASE, "train.py": SUBCLASS.format(clear=""),
                            "train_ok.py": SUBCLASS.format(clear="trainer.optimizer.zero_grad()\n        ")})
    report = analyse_text((root / "train.py").read_text(), str(root / "train.py"), Settings.default())
    [d] = report.diagnostics
    assert (d.code, d.line) == ("GL001", 13)
    assert "base.py:14" in d.message and d.related[0].span.line == 15
    assert _codes(root / "train.py", project=False) == []
    assert _codes(root / "train_ok.py") == []


def test_a_plain_wrapper_class_of_another_file_is_read_from_its_use(tmp_path: Path) -> None:
    # a wrapper object (not a module, not an optimizer) built in another file: its attributes are read from how
    # the loop uses them, as when the file is read alone (following its __init__ would lose `D.net`)
    wrapper = """\
        import torch.nn as nn


        class Discriminator:
            def __init__(self, name):
                self.net = build(name)
    """
    loop = """\
        import torch
        from wrappers import Discriminator

        D = Discriminator("d")
        optimizer_D = torch.optim.Adam(D.net.parameters(), lr=1e-3)
        for x in loader:
            loss = D.net(x).mean()
            loss.backward()
            optimizer_D.step()
    """
    root = _tree(tmp_path, {"wrappers.py": wrapper, "train.py": loop})
    assert _codes(root / "train.py") == _codes(root / "train.py", project=False) == [("GL001", 9)]


def test_objects_made_by_another_files_code_are_marked(tmp_path: Path) -> None:
    import ast

    from gradcheck_lint.analysis import TrainingModel
    from gradcheck_lint.analysis.apimodels import catalogue_for
    from gradcheck_lint.project import ProjectView, index_for

    root = _tree(tmp_path, {**MODELS, "train.py": "from utils import wrap\nimport torch\nm = wrap(torch.nn.Linear(2, 2), 0)\n"
                            "opt = torch.optim.SGD(m.parameters(), lr=0.1)\nm(x).sum().backward()\nopt.step()\n"})
    path = str(root / "train.py")
    text = (root / "train.py").read_text()
    view = ProjectView(index_for(path), path, catalogue_for(()))  # type: ignore[arg-type]
    model = TrainingModel(ast.parse(text), text, project=view)
    kinds = {e.uid: e.api for e in model.table.entities.values()}
    # the DDP wrapper `wrap` made in utils/dist.py is marked; the optimizer made here is not
    assert any(kinds.get(uid) == "torch.nn.parallel.DistributedDataParallel" for uid in model.made_elsewhere)
    assert not any(kinds.get(uid, "").startswith("torch.optim") for uid in model.made_elsewhere)
    alone = TrainingModel(ast.parse(text), text)
    assert alone.made_elsewhere == set()
