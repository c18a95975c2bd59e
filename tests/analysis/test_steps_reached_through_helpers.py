"""A method run once per batch from elsewhere (`train_step`) is a step function by what it reaches, not by
what it spells: a backward and a step through helper methods of its class (`self.backward(loss)`,
`self.update_params()`, ParlAI's `TorchAgent`) give it the implicit per-batch loop (`entrypoints`). Across
its calls, a test of a counter nothing assigns between two tests keeps its truth (`_forget_iteration`), a
setting only `__init__` assigns is the same on every call, and the first call sees the counters as
`__init__` left them."""

from __future__ import annotations

from gradcheck_lint import check_source

AGENT = """\
import torch


class Agent:
    def __init__(self, update_freq):
        self.model = torch.nn.Linear(4, 1)
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.1)
        self.update_freq = update_freq
        self._number_grad_accum = 0

    def backward(self, loss):
        {backward}

    def update_params(self):
        if self.update_freq > 1:
            self._number_grad_accum = (self._number_grad_accum + 1) % self.update_freq
            if self._number_grad_accum != 0:
                return
        self.optimizer.step()

    def zero_grad(self):
        if self._number_grad_accum != 0:
            return
        self.optimizer.zero_grad()

    def train_step(self, batch):
        self.zero_grad()
        loss = self.model(batch).pow(2).mean()
        self.backward(loss)
        self.update_params()
{extra}"""


def found(src: str) -> list[tuple[int, str, bool]]:
    return [(d.line, d.code, d.possible) for d in check_source(src)]


def test_backward_and_step_reached_through_helper_methods_make_a_step_function() -> None:
    src = AGENT.format(backward="loss.backward()", extra="")
    assert found(src) == [(12, "GL003", False)]


def test_the_same_agent_dividing_its_loss_is_silent() -> None:
    assert found(AGENT.format(backward="(loss / self.update_freq).backward()", extra="")) == []


def test_a_helper_reached_inside_a_loop_of_the_method_does_not_make_it_a_step_function() -> None:
    # `fit` loops over the batches itself: it is a training loop, analysed as one, not once per batch
    src = AGENT.format(backward="(loss / self.update_freq).backward()", extra="""
    def fit(self, batches):
        for batch in batches:
            self.train_step(batch)
""")
    assert found(src) == []


INLINE = """\
import torch


class Agent:
    def __init__(self, update_freq):
        self.model = torch.nn.Linear(4, 1)
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.1)
        self.update_freq = update_freq
        self._number_grad_accum = 0

    def train_step(self, batch):
        if self._number_grad_accum == 0:
            self.optimizer.zero_grad()
        loss = self.model(batch).pow(2).mean()
        (loss / self.update_freq).backward()
        if self.update_freq > 1:
            self._number_grad_accum = (self._number_grad_accum + 1) % self.update_freq
            if self._number_grad_accum != 0:
                return
        self.optimizer.step()
{extra}"""


def test_a_clear_and_a_step_gated_on_one_counter_are_no_discard_across_calls() -> None:
    # the step's test of the counter, after its last assignment, holds at the clear's test of the next call
    assert found(INLINE.format(extra="")) == []


def test_a_counter_another_method_resets_is_not_taken_as_built() -> None:
    # `restart` may run between two calls: the first call no longer knows the counter stands at 0, and a
    # path on which it never does (no clear, no accumulation) is left, only possible
    src = INLINE.format(extra="""
    def restart(self):
        self._number_grad_accum = 3
""")
    assert [(line, code) for line, code, possible in found(src) if not possible] == []
    assert (20, "GL001", True) in found(src)


def test_a_flag_another_method_sets_is_no_setting() -> None:
    # `self.update_freq` changed by `set_window` between calls: each call may take either arm of its test
    src = INLINE.format(extra="""
    def set_window(self, n):
        self.update_freq = n
""")
    assert (20, "GL001", True) in found(src)
