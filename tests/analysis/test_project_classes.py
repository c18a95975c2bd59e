"""Classes across the files of a project: attributes a base class fills in, properties, delegate objects."""

from __future__ import annotations

from pathlib import Path

from gradcheck_lint.config import Settings
from gradcheck_lint.engine import analyse_text
from support import project_tree as _tree


def _found(path: Path, project: bool = True, show_possible: bool = False) -> list[tuple[str, int]]:
    report = analyse_text(path.read_text(), str(path), Settings.default().with_enabled(frozenset({f"GL00{i}" for i in range(1, 10)} | {"GL010"})),
                          project=project)
    return [(d.code, d.line) for d in report.diagnostics if show_possible or not d.possible]


PLACEHOLDER_BASE = """\
    import torch


    class BaseTrainer:
        def __init__(self, args):
            self.args = args
            self.model = None  # built by setup()
            self.optimizer = None

        def setup(self):
            self.model = build_model(self.args)
            self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.1)
"""
NO_SYNC_LATE = """\
    from base import BaseTrainer


    class Trainer(BaseTrainer):
        def forward_backward(self, batch, last):
            FORWARD
            if last:
                loss.backward()
            else:
                with self.model.no_sync():
                    LATE_FORWARD
                    loss.backward()

        def forward_backward_all(self, batches, accum):
            for micro in range(accum):
                self.forward_backward(batches[micro], micro == accum - 1)
"""


def test_an_attribute_a_base_class_of_another_file_fills_in_is_no_none(tmp_path: Path) -> None:
    # `self.model = None` in the base's `__init__`, built by its `setup()`: in the subclass's methods it is the
    # model, not None (LoongForge's finetune trainer lost its GL006 to this when its base class was read)
    forward = "loss = self.model(batch).mean()"
    buggy = NO_SYNC_LATE.replace("LATE_FORWARD\n", "").replace("FORWARD", forward)
    fixed = NO_SYNC_LATE.replace("            FORWARD\n", "").replace("LATE_FORWARD", forward).replace(
        "            if last:\n", f"            if last:\n                {forward}\n")
    root = _tree(tmp_path, {"base.py": PLACEHOLDER_BASE, "train.py": buggy, "train_ok.py": fixed})
    assert _found(root / "train.py") == [("GL006", 11)] == _found(root / "train.py", project=False)
    assert _found(root / "train_ok.py", show_possible=True) == []


PROPERTY_BASE = """\
    import torch
    from torch.nn.parallel import DistributedDataParallel as DDP


    class BaseTrainer:
        def __init__(self, net, rank):
            self._ddp_model = DDP(net, device_ids=[rank])
            self.optimizer = torch.optim.SGD(self._ddp_model.parameters(), lr=0.1)

        @property
        def model(self):
            return self._ddp_model
"""
PROPERTY_LOOP = """\
    import contextlib
    from base import BaseTrainer


    class Trainer(BaseTrainer):
        def fit(self, loader, accum):
            for i, (x, y) in enumerate(loader):
                with SYNC:
                    loss = (self.model(x) - y).pow(2).mean() / accum
                    loss.backward()
                if (i + 1) % accum == 0:
                    self.optimizer.step()
                    self.optimizer.zero_grad()
"""


def test_a_ddp_wrapper_reached_through_a_property_of_a_base_class_in_another_file(tmp_path: Path) -> None:
    # `self.model` is a property of the base class (base.py) returning the DDP wrapper its `__init__` built there
    root = _tree(tmp_path, {"base.py": PROPERTY_BASE,
                            "train.py": PROPERTY_LOOP.replace("SYNC", "contextlib.nullcontext()"),
                            "train_ok.py": PROPERTY_LOOP.replace("SYNC", "(contextlib.nullcontext() if (i + 1) % accum == 0 else self.model.no_sync())")})
    assert _found(root / "train.py") == [("GL006", 10)]
    assert _found(root / "train_ok.py", show_possible=True) == []


PROPERTY_OF_INSTANCE = """\
    import contextlib
    import torch
    from torch.nn.parallel import DistributedDataParallel as DDP


    class Runner:
        def __init__(self, net, rank):
            self._ddp = DDP(net, device_ids=[rank])

        @property
        def model(self):
            return self._ddp

        @model.setter
        def model(self, value):
            self._ddp = value


    def main(net, loader, accum):
        runner = Runner(net, 0)
        opt = torch.optim.SGD(runner.model.parameters(), lr=0.1)
        for i, (x, y) in enumerate(loader):
            with SYNC:
                loss = (runner.model(x) - y).pow(2).mean() / accum
                loss.backward()
            if (i + 1) % accum == 0:
                opt.step()
                opt.zero_grad()
"""


def test_a_property_of_a_local_instance_is_read_as_its_getters_return_value(tmp_path: Path) -> None:
    # the getter, not the setter defined after it under the same name, gives `runner.model`
    root = _tree(tmp_path, {"train.py": PROPERTY_OF_INSTANCE.replace("SYNC", "contextlib.nullcontext()"),
                            "train_ok.py": PROPERTY_OF_INSTANCE.replace(
                                "SYNC", "(contextlib.nullcontext() if (i + 1) % accum == 0 else runner.model.no_sync())")})
    assert _found(root / "train.py") == [("GL006", 25)]
    assert _found(root / "train_ok.py", show_possible=True) == []


DELEGATE = """\
    import torch


    class Base:
        def __init__(self, net, lr):
            self.model = net
            self.optimizer = torch.optim.SGD(net.parameters(), lr=lr)
"""
DELEGATING_TRAINER = """\
    from delegate import Base


    class Trainer:
        def __init__(self, net, accum):
            self.base = Base(net, 0.1)
            self.accum = accum

        def fit(self, loader):
            for i, (x, y) in enumerate(loader):
                loss = (self.base.model(x) - y).pow(2).mean()LOSS
                loss.backward()
                if (i + 1) % self.accum == 0:
                    self.base.optimizer.step()
                    self.base.optimizer.zero_grad()
"""


def test_a_model_and_optimizer_held_by_a_delegate_object_of_another_file(tmp_path: Path) -> None:
    # `self.base = Base(...)` of delegate.py: its `__init__` runs, so `self.base.optimizer` is the SGD made there
    # over the model `self.base.model` runs: read, not guessed from the names
    root = _tree(tmp_path, {"delegate.py": DELEGATE, "train.py": DELEGATING_TRAINER.replace("LOSS", ""),
                            "train_ok.py": DELEGATING_TRAINER.replace("LOSS", " / self.accum")})
    assert _found(root / "train.py") == [("GL003", 12)]
    assert _found(root / "train_ok.py", show_possible=True) == []


def test_a_delegate_of_the_same_file_holds_what_its_init_stored(tmp_path: Path) -> None:
    # the same delegate class in the file itself: calling `self.base.model(x)` runs the stored model
    single = DELEGATE + "\n\n" + DELEGATING_TRAINER.replace("    from delegate import Base\n", "")
    root = _tree(tmp_path, {"train.py": single.replace("LOSS", ""), "train_ok.py": single.replace("LOSS", " / self.accum")})
    [(code, _)] = _found(root / "train.py")
    assert code == "GL003"
    assert _found(root / "train_ok.py", show_possible=True) == []


LOSSES_DICT = """\
    class Transport:
        def __init__(self, weight):
            self.weight = weight

        def training_losses(self, model, x):
            terms = {}
            terms["pred"] = model(x)
            terms["loss"] = (terms["pred"] ** 2).mean() * self.weight
            return terms
"""
LOOP_WITH_TRANSPORT = """\
    import torch
    from transport import Transport

    model = torch.nn.Linear(4, 4)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    transport = Transport(1.0)
    for step, x in enumerate(loader):
        CLEAR
        loss = transport.training_losses(model, x)["loss"]
        (loss / 4).backward()
        if step % 4 == 0:
            opt.step()
"""


def test_a_dict_filled_key_by_key_and_returned_holds_its_items(tmp_path: Path) -> None:
    # `terms = {}; terms["loss"] = ...; return terms` in a method of a plain class of another file (RAE's
    # transport): the loss read back as `[...]["loss"]` still holds the model's graph
    root = _tree(tmp_path, {"transport.py": LOSSES_DICT, "train.py": LOOP_WITH_TRANSPORT.replace("CLEAR", "opt.zero_grad()"),
                            "train_ok.py": LOOP_WITH_TRANSPORT.replace("        CLEAR\n", "").replace("opt.step()", "opt.step()\n            opt.zero_grad()")})
    assert ("GL002", 8) in _found(root / "train.py")
    assert [c for c, _ in _found(root / "train_ok.py", show_possible=True) if c == "GL002"] == []


SCHEDULER = """\
    class Scheduler:
        def __init__(self, optimizer, lr):
            self.optimizer = optimizer
            self.lr = lr

        def step(self):
            self.optimizer.step()

        def zero_grad(self):
            self.optimizer.zero_grad()
"""
LOOP_WITH_SCHEDULER = """\
    import torch
    from mylib import make_optimizer
    from scheduler import Scheduler

    model = torch.nn.Linear(4, 1)
    scheduler = Scheduler(make_optimizer(model), 0.1)
    for x in loader:
        model(x).mean().backward()
        scheduler.step()
        CLEAR
"""


def test_an_attribute_handed_in_unreadable_is_read_from_its_use_in_the_delegates_methods(tmp_path: Path) -> None:
    # neural_sp's LRScheduler: the optimizer it wraps comes from an installed helper; `self.optimizer.step()`
    # in its `step()` steps an optimizer (used as one there: stepped and cleared)
    root = _tree(tmp_path, {"scheduler.py": SCHEDULER, "train.py": LOOP_WITH_SCHEDULER.replace("        CLEAR\n", ""),
                            "train_ok.py": LOOP_WITH_SCHEDULER.replace("CLEAR", "scheduler.zero_grad()")})
    assert [c for c, _ in _found(root / "train.py", show_possible=True)] == ["GL001"]
    assert _found(root / "train_ok.py", show_possible=True) == []


def test_a_delegate_past_the_reading_budget_is_read_from_its_use(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    # when the budget for other files' code is spent, `scheduler.step()` is no opaque call: the object is
    # read from its use (stepped and cleared: an optimizer), as when its class is not read at all
    from gradcheck_lint.project import context

    monkeypatch.setattr(context, "FOREIGN_WORK_BUDGET", -1)
    root = _tree(tmp_path, {"scheduler.py": SCHEDULER, "train.py": LOOP_WITH_SCHEDULER.replace("CLEAR", "scheduler.zero_grad()").replace(
        "        scheduler.zero_grad()", "")})
    (root / "train.py").write_text((root / "train.py").read_text() + "    if False:\n        scheduler.zero_grad()\n")
    assert [c for c, _ in _found(root / "train.py", show_possible=True)] == ["GL001"]


UNKNOWN_BASE = """\
    from somelib.nets import PatchNet


    class Discriminator(PatchNet):
        def __init__(self, channels):
            super().__init__(channels)
            self.channels = channels
"""
GAN = """\
    import torch
    from discriminator import Discriminator

    G = torch.nn.Linear(4, 4)
    D = Discriminator(4)
    opt_g = torch.optim.Adam(G.parameters())
    opt_d = torch.optim.Adam(D.parameters())
    for x in loader:
        opt_g.zero_grad()
        fake = G(x)
        loss_g = D(fake).mean()
        loss_g.backward()
        opt_g.step()
        CLEAR
        loss_d = D(fake.detach()).mean() - D(x).mean()
        loss_d.backward()
        opt_d.step()
"""


def test_a_class_extending_an_unknown_installed_class_is_read_from_its_use(tmp_path: Path) -> None:
    # MONAI's PatchDiscriminator extends a class of an installed package the catalogue does not know: it may be a
    # module, so `D` is read from its use (called, its parameters optimised), not taken for a plain object
    root = _tree(tmp_path, {"discriminator.py": UNKNOWN_BASE, "train.py": GAN.replace("        CLEAR\n", ""),
                            "train_ok.py": GAN.replace("CLEAR", "opt_d.zero_grad()")})
    assert ("GL005", 16) in _found(root / "train.py")
    assert _found(root / "train_ok.py", show_possible=True) == []


CLIPPING_LOOP = """\
    import torch
    from scheduler import Scheduler

    model = torch.nn.Linear(4, 1)
    scheduler = Scheduler(torch.optim.SGD(model.parameters(), lr=0.1), 0.1)
    for i, x in enumerate(loader):
        (model(x).mean() / 4).backward()
        if (i + 1) % 4 == 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            scheduler.step()
            scheduler.zero_grad()
"""


def test_a_followed_delegate_is_read_the_same_way_on_every_iteration(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    # the budget for other files' code runs out while the loop's fixpoint iterates: `scheduler.step()`, followed
    # on the first iteration, is followed again, not read as another object (an optimizer named `scheduler`)
    # whose step leaves the real optimizer's clipped gradients to the next micro-batch (a false GL007)
    from gradcheck_lint.project import context

    monkeypatch.setattr(context, "FOREIGN_WORK_BUDGET", 6)
    root = _tree(tmp_path, {"scheduler.py": SCHEDULER, "train.py": CLIPPING_LOOP})
    assert _found(root / "train.py", show_possible=True) == []
