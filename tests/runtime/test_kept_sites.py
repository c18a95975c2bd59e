"""GL008's runtime anchor (`runtime/kept_sites.py`): the statement keeping a loss's graph, looked up from
the backward, followed into a method of a class of the file the loss is handed to on an object
(`meter.update(loss, n)`), as it is into a function called by name."""

from __future__ import annotations

from pathlib import Path

import pytest

from gradcheck_lint.runtime.evidence import Site
from gradcheck_lint.runtime.kept_sites import kept_at

SOURCE = '''\
class Printer:
    def update(self, val, n=1):
        print(val)


class AverageMeter:
    def update(self, val, n=1):
        self.sum += val * n

    @staticmethod
    def record(history, val):
        history.append(val)


def train(model, opt, batches, meter, history):
    for x in batches:
        loss = model(x).mean()
        loss.backward()
        opt.step()
        meter.update(loss, x.size(0))


def train_keyword(model, batches, meter):
    for x in batches:
        loss = model(x).mean()
        loss.backward()
        meter.update(n=2, val=loss)


def train_static(model, batches, history):
    for x in batches:
        loss = model(x).mean()
        loss.backward()
        AverageMeter.record(history, loss)


def train_number(model, batches, meter):
    for x in batches:
        loss = model(x).mean()
        loss.backward()
        meter.update(loss.item())
'''


@pytest.fixture()
def program(tmp_path: Path) -> str:
    path = tmp_path / "loop.py"
    path.write_text(SOURCE, encoding="utf-8")
    return str(path)


@pytest.mark.parametrize(("backward", "kept", "stored", "loop"), [
    (18, (8, 9), "val * n", 16),  # `meter.update(loss, n)`: the class whose `update` keeps it, not the printer's
    (26, (8, 9), "val * n", 24),  # passed by keyword
    (33, (12, 9), "val", 31),  # a static method: its first parameter is the first argument
])
def test_a_loss_handed_to_a_method_is_kept_where_the_method_keeps_it(program: str, backward: int, kept: tuple[int, int],
                                                                     stored: str, loop: int) -> None:
    found = kept_at(Site(program, backward, "loss.backward()", 9))
    assert found is not None
    assert (found.site.line, found.site.col, found.stored, found.loop_line) == (*kept, stored, loop)


def test_a_number_handed_to_a_method_keeps_nothing(program: str) -> None:
    assert kept_at(Site(program, 40, "loss.backward()", 9)) is None


KEEPERS = '''\
class History:
    def __init__(self):
        self.values = []

    def append(self, val, count=1):
        self.values.append(val)


class Quiet:
    def add(self, val):
        print(val)


def train(model, batches, run_loss):
    for x in batches:
        loss = model(x).mean()
        loss.backward()
        run_loss.append(loss, count=2)


def optimize(model, batches):
    losses = []
    for x in batches:
        losses.append(sum(model(x)))
        losses[-1].backward(retain_graph=True)
    numbers = []
    for x in batches:
        numbers.append(model(x).sum().item())
        numbers[-1].backward()


def train_step(model, x):
    losses = model(x)
    losses.total.backward()
    return losses


def fit(model, batches):
    total_loss = 0
    for x in batches:
        reg, total = train_step(model, x)
        total_loss += total


def train_quiet(model, batches, seen, quiet):
    for x in batches:
        loss = model(x).mean()
        loss.backward()
        seen.add(loss)
'''


@pytest.fixture()
def keepers(tmp_path: Path) -> str:
    path = tmp_path / "keepers.py"
    path.write_text(KEEPERS, encoding="utf-8")
    return str(path)


@pytest.mark.parametrize(("backward", "text", "kept", "target", "stored"), [
    # a store call a class of the file defines: the statement in that method keeps it, as the static side says
    (17, "loss.backward()", (6, 9), "self.values", "val"),
    # the backward runs on an item of a container: the append into the container keeps every graph
    (25, "losses[-1].backward(retain_graph=True)", (24, 9), "losses", "sum(model(x))"),
    # the loss is returned as a tuple, unpacked by the caller into a running total's term
    (34, "losses.total.backward()", (42, 9), "total_loss", "total"),
    # a class of the file defines `add`, but keeps nothing there: the store call itself
    (48, "loss.backward()", (49, 9), "seen", "loss"),
])
def test_the_keeping_statement_is_found_past_the_loop_body(keepers: str, backward: int, text: str,
                                                           kept: tuple[int, int], target: str, stored: str) -> None:
    found = kept_at(Site(keepers, backward, text, 9))
    assert found is not None
    assert ((found.site.line, found.site.col), found.target, found.stored) == (kept, target, stored)


def test_an_item_of_a_container_of_numbers_is_kept_by_nothing(keepers: str) -> None:
    assert kept_at(Site(keepers, 29, "numbers[-1].backward()", 9)) is None


HOOKS = '''\
class Base:
    def on_step_end(self, batch, loss):
        pass

    def record(self, loss):
        pass

    def on_batch_end(self):
        pass

    def relay(self, batch, loss):
        self.record(loss)

    def step(self, x):
        loss = self.model(x).mean()
        loss.backward()
        return loss

    def fit(self, batches):
        for i, x in enumerate(batches):
            loss = self.model(x).mean()
            loss.backward()
            self.on_step_end(i, loss)

    def fit_returned(self, batches):
        for i, x in enumerate(batches):
            loss = self.step(x)
            self.on_step_end(i, loss)

    def fit_relayed(self, batches):
        for i, x in enumerate(batches):
            loss = self.model(x).mean()
            loss.backward()
            self.relay(i, loss)

    def fit_attribute(self, batches):
        for x in batches:
            self.loss = self.model(x).mean()
            self.loss.backward()
            self.on_batch_end()


class Keeper(Base):
    def on_step_end(self, batch, loss):
        self.history.append(loss)

    def record(self, loss):
        self.total += loss

    def on_batch_end(self):
        self.kept.append(self.loss)


class Numbers(Base):
    def on_step_end(self, batch, loss):
        self.history.append(loss.item())
'''


@pytest.fixture()
def hooks(tmp_path: Path) -> str:
    path = tmp_path / "hooks.py"
    path.write_text(HOOKS, encoding="utf-8")
    return str(path)


@pytest.mark.parametrize(("backward", "text", "kept", "target", "stored", "loop"), [
    # a base class's loop calls a hook a subclass overrides to keep the loss: the override's store
    (22, "loss.backward()", (45, 9), "self.history", "loss", 20),
    # the loss returned by the step method the loop calls, then handed to the hook
    (16, "loss.backward()", (45, 9), "self.history", "loss", 26),
    # the hook hands it on to another method the subclass overrides
    (33, "loss.backward()", (48, 9), "self.total", "loss", 31),
    # held by an attribute of the trainer, read by the hook through `self`
    (39, "self.loss.backward()", (51, 9), "self.kept", "self.loss", 37),
])
def test_a_hook_called_by_the_loop_keeps_the_loss_where_it_stores_it(hooks: str, backward: int, text: str,
                                                                      kept: tuple[int, int], target: str,
                                                                      stored: str, loop: int) -> None:
    found = kept_at(Site(hooks, backward, text, 9))
    assert found is not None
    assert ((found.site.line, found.site.col), found.target, found.stored, found.loop_line) == (
        kept, target, stored, loop)
