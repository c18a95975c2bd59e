"""A step gate written as a property (`if self.sync_grad:` of `@property def sync_grad(self): return self.step % N
== 0 or ...`) is the test it returns, as a gate returned by a helper method is (supar's parser: a GL003 miss of
lockbox 9, found after its opening)."""

from __future__ import annotations

from gradcheck_lint.api import check_source

PARSER = '''
import torch


class Parser:
    @property
    def sync_grad(self):
        return self.step % self.args.update_steps == 0 or self.step % self.n_batches == 0

    def train(self, loader, epochs):
        self.optimizer = torch.optim.Adam(self.model.parameters())
        self.step = 1
        for epoch in range(epochs):
            for batch in loader:
                loss = self.model(batch).mean()
                loss.backward()
                if self.sync_grad:
                    self.optimizer.step()
                    self.optimizer.zero_grad(True)
                self.step += 1
'''


def test_an_undivided_loss_under_a_property_gate_is_reported() -> None:
    assert [(d.code, d.line) for d in check_source(PARSER)] == [("GL003", 16)]


def test_a_loss_divided_by_the_window_of_the_property_gate_is_clean() -> None:
    divided = PARSER.replace("loss = self.model(batch).mean()", "loss = self.model(batch).mean() / self.args.update_steps")
    assert divided != PARSER
    assert check_source(divided) == []
