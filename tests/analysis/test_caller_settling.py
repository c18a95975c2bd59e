"""A finding settled by the files that call it (gradcheck_lint.project.callers): one report per bug,
where the bug is, certain when a caller proves what the callee's own file could only assume."""

from __future__ import annotations

import textwrap
from pathlib import Path

from gradcheck_lint.cache import ResultCache
from gradcheck_lint.config import Settings
from gradcheck_lint.diagnostics import Diagnostic
from gradcheck_lint.runner import lint_files
from support import project_tree as _tree

ENGINE = """\
    def train_one_epoch(model, optimizer, loader, criterion):
        model.train()
        for x, y in loader:
            out = model(x)
            loss = criterion(out, y)
            {clear}loss.backward()
            optimizer.step()
"""
MAIN = """\
    import torch
    from torch import nn
    from pkg.engine import train_one_epoch{imports}


    def main():
        model = nn.Linear(4, 2)
        opt = {optimizer}
        loader = [(torch.randn(3, 4), torch.randn(3, 2))]
        for epoch in range(3):
            train_one_epoch(model, opt, loader, nn.MSELoss())


    if __name__ == "__main__":
        main()
"""
SGD = "torch.optim.SGD(model.parameters(), lr=0.1)"
UNKNOWN = {"optimizer": "make_engine(model)", "imports": "\n    from thirdparty import make_engine"}




def _lint(*paths: Path, cache: ResultCache | None = None) -> list[Diagnostic]:
    return lint_files([str(p) for p in paths], Settings.default(), cache=cache)


def _found(diagnostics: list[Diagnostic], root: Path) -> list[tuple[str, int, str, str]]:
    return sorted((str(Path(d.path).relative_to(root)), d.line, d.code, d.certainty.value) for d in diagnostics)


def test_a_caller_that_hands_in_a_real_optimizer_makes_the_callee_finding_certain(tmp_path: Path) -> None:
    root = _tree(tmp_path, {"pkg/__init__.py": "", "pkg/engine.py": ENGINE.format(clear=""), "main.py": MAIN.format(optimizer=SGD, imports="")})
    everything = sorted(root.rglob("*.py"))
    found = _lint(*everything)
    # one report, where the loop without a clear is, proven by the call that hands in an SGD
    assert _found(found, root) == [("pkg/engine.py", 7, "GL001", "certain")]
    [d] = found
    assert "at line 6" in d.message and "Proven by its caller: `train_one_epoch(model, opt, loader, nn.MSELoss())` at ../main.py:11" in d.message
    assert [(Path(r.path).resolve(), r.span.line) for r in d.related] == [((root / "main.py").resolve(), 11)]
    assert d.assumptions == ()


def test_the_same_findings_whichever_files_are_checked(tmp_path: Path) -> None:
    root = _tree(tmp_path, {"pkg/__init__.py": "", "pkg/engine.py": ENGINE.format(clear=""), "main.py": MAIN.format(optimizer=SGD, imports="")})
    whole = _found(_lint(*sorted(root.rglob("*.py"))), root)
    one_by_one = sorted(f for p in sorted(root.rglob("*.py")) for f in _found(_lint(p), root))
    assert whole == one_by_one == [("pkg/engine.py", 7, "GL001", "certain")]


def test_read_alone_the_callee_finding_stays_possible(tmp_path: Path) -> None:
    # no file of the project calls it: what `optimizer` is stays an assumption
    root = _tree(tmp_path, {"pkg/__init__.py": "", "pkg/engine.py": ENGINE.format(clear="")})
    found = lint_files([str(root / "pkg/engine.py")], Settings.default())
    assert _found(found, root) == [("pkg/engine.py", 7, "GL001", "possible")]
    assert found[0].assumptions  # it says why


def test_a_caller_handing_in_an_object_of_unknown_type_proves_nothing(tmp_path: Path) -> None:
    root = _tree(tmp_path, {"pkg/__init__.py": "", "pkg/engine.py": ENGINE.format(clear=""),
                            "main.py": MAIN.format(**UNKNOWN)})
    assert _found(_lint(*sorted(root.rglob("*.py"))), root) == [("pkg/engine.py", 7, "GL001", "possible")]


def test_the_correct_twin_is_silent(tmp_path: Path) -> None:
    root = _tree(tmp_path, {"pkg/__init__.py": "", "pkg/engine.py": ENGINE.format(clear="optimizer.zero_grad()\n            "),
                            "main.py": MAIN.format(optimizer=SGD, imports="")})
    assert _lint(*sorted(root.rglob("*.py"))) == []


STEP_HELPER = """\
    def backward_and_step(loss, optimizer):
        loss.backward()
        optimizer.step()
"""
LOOP = """\
    import torch
    from helpers import backward_and_step

    model = torch.nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for x, y in [(torch.randn(2, 4), torch.randn(2, 1))] * 4:
        loss = torch.nn.functional.mse_loss(model(x), y)
        backward_and_step(loss, opt)
"""


def test_a_step_helper_whose_loop_is_the_callers_is_reported_at_the_call(tmp_path: Path) -> None:
    # the helper's own finding assumed the loop around it: the loop, and the missing clear, are the caller's
    root = _tree(tmp_path, {"helpers.py": STEP_HELPER, "train.py": LOOP})
    found = _lint(*sorted(root.rglob("*.py")))
    assert [(f[0], f[1], f[2], f[3]) for f in _found(found, root) if f[3] == "certain"] == [("train.py", 8, "GL001", "certain")]


def test_a_change_to_the_caller_rechecks_the_callee(tmp_path: Path) -> None:
    root = _tree(tmp_path, {"pkg/__init__.py": "", "pkg/engine.py": ENGINE.format(clear=""), "main.py": MAIN.format(optimizer=SGD, imports="")})
    cache = ResultCache(str(tmp_path / "cache"))
    engine = root / "pkg" / "engine.py"
    assert _found(_lint(engine, cache=cache), root) == [("pkg/engine.py", 7, "GL001", "certain")]
    assert _found(_lint(engine, cache=cache), root) == [("pkg/engine.py", 7, "GL001", "certain")]
    assert cache.hits == 1
    # the caller now hands in an object of unknown type: the cached proof no longer holds
    (root / "main.py").write_text(textwrap.dedent(MAIN.format(**UNKNOWN)))
    assert _found(_lint(engine, cache=cache), root) == [("pkg/engine.py", 7, "GL001", "possible")]


EXECUTOR = """\
    import torch


    class Executor:
        def __init__(self):
            self.step = 0

        def train(self, model, optimizer, data_loader, args):
            model.train()
            for batch_idx, (feats, target) in enumerate(data_loader):
                loss = torch.nn.functional.mse_loss(model(feats), target)
                {clear}loss.backward()
                optimizer.step()
"""
EXECUTOR_MAIN = """\
    import torch
    from kws.executor import Executor


    def main():
        executor = Executor()
        model = torch.nn.Linear(3, 1)
        optimizer = torch.optim.Adam(model.parameters(), lr=0.1)
        for epoch in range(10):
            executor.train(model, optimizer, [], {})


    if __name__ == "__main__":
        main()
"""


def test_a_plain_class_of_another_file_runs_its_methods_on_the_callers_objects(tmp_path: Path) -> None:
    # an executor object (no nn.Module, no framework base) built in the caller: its method trains
    root = _tree(tmp_path, {"kws/__init__.py": "", "kws/executor.py": EXECUTOR.format(clear=""), "bin/train.py": EXECUTOR_MAIN})
    assert _found(_lint(*sorted(root.rglob("*.py"))), root) == [("kws/executor.py", 13, "GL001", "certain")]
    fixed = _tree(tmp_path / "fixed", {"kws/__init__.py": "", "kws/executor.py": EXECUTOR.format(clear="optimizer.zero_grad()\n                "),
                                       "bin/train.py": EXECUTOR_MAIN})
    assert _lint(*sorted(fixed.rglob("*.py"))) == []


NETS = """\
    import torch.nn as nn


    class Generator(nn.Module):
        def __init__(self):
            super().__init__()
            self.net = nn.Sequential(nn.Linear(2, 8), nn.ReLU(), nn.Linear(8, 4))

        def forward(self, z):
            return self.net(z)


    class Discriminator(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 1)

        def forward(self, x):
            return self.fc(x)
"""
GAN = """\
    import torch
    from nets import Generator, Discriminator

    G, D = Generator(), Discriminator()
    opt_G, opt_D = torch.optim.Adam(G.parameters()), torch.optim.Adam(D.parameters())
    bce = torch.nn.BCEWithLogitsLoss()
    for real in torch.randn(8, 4, 4):
        fake = G(torch.randn(4, 2))
        d_fake = D(fake)
        opt_D.zero_grad()
        d_loss = bce(D(real), torch.ones(4, 1)) + bce(d_fake, torch.zeros(4, 1))
        d_loss.backward(retain_graph=True)
        opt_D.step()
        opt_G.zero_grad()
        g_loss = bce(d_fake, torch.ones(4, 1))
        g_loss.backward()
        opt_G.step()
"""


def test_layers_of_a_model_class_of_another_file_say_what_its_forward_saves(tmp_path: Path) -> None:
    # D is made of nn.Linear, which saves its weight for backward: after opt_D.step() changed it in place,
    # backpropagating through `d_fake` raises: certain, as for a class of the same file
    root = _tree(tmp_path, {"nets.py": NETS, "gan.py": GAN})
    assert _found(_lint(root / "gan.py"), root) == [("gan.py", 16, "GL009", "certain")]


def test_a_script_in_a_package_folder_imports_its_neighbours(tmp_path: Path) -> None:
    # `python tuning/tune.py` puts tuning/ first on the import path: `from utils import train_one_epoch`
    # is tuning/utils.py, although tuning/ is a package
    root = _tree(tmp_path, {"tuning/__init__.py": "", "tuning/utils.py": ENGINE.format(clear=""),
                            "tuning/tune.py": MAIN.format(optimizer=SGD, imports="").replace("from pkg.engine import", "from utils import")})
    assert _found(_lint(root / "tuning" / "utils.py"), root) == [("tuning/utils.py", 7, "GL001", "certain")]


# VQ-VAE-Speech (lockbox 14): the trainer's constructor is handed a real Adam by a factory module, which returns
# the trainer; the runner that calls `train()` names the factory, never the trainer's module, and trains nothing
# itself (no backward or step in its text).
TRAINER = """\
    class Trainer(object):
        def __init__(self, model, optimizer, loader):
            self._model = model
            self._optimizer = optimizer
            self._loader = loader

        def train(self):
            for data in self._loader:
                {clear}loss = self._model(data).mean()
                loss.backward()
                self._optimizer.step()
"""
FACTORY = """\
    import torch
    from torch import nn
    from trainer import Trainer


    class Factory(object):
        @staticmethod
        def build(loader):
            model = nn.Linear(4, 1)
            optimizer = {optimizer}
            return model, Trainer(model, optimizer, loader)
"""
RUNNER = """\
    from factory import Factory


    def main(loader):
        model, trainer = Factory.build(loader)
        trainer.train()
"""


def _factory_tree(tmp_path: Path, clear: str = "", optimizer: str = "torch.optim.Adam(model.parameters())") -> Path:
    return _tree(tmp_path, {"trainer.py": TRAINER.format(clear=clear), "factory.py": FACTORY.format(optimizer=optimizer),
                            "runner.py": RUNNER})


def test_a_runner_that_names_only_the_factory_proves_the_trainers_finding(tmp_path: Path) -> None:
    root = _factory_tree(tmp_path)
    assert _found(_lint(root / "trainer.py"), root) == [("trainer.py", 11, "GL001", "certain")]


def test_the_factory_runner_chain_with_the_clear_is_silent(tmp_path: Path) -> None:
    root = _factory_tree(tmp_path, clear="self._optimizer.zero_grad()\n                ")
    assert _found(_lint(root / "trainer.py"), root) == []


def test_a_factory_handing_in_an_optimizer_out_of_sight_leaves_it_possible(tmp_path: Path) -> None:
    root = _factory_tree(tmp_path, optimizer="make_optimizer(model)")
    assert _found(_lint(root / "trainer.py"), root) == [("trainer.py", 11, "GL001", "possible")]
