"""A clip's window is an optimizer's: which one owns the clipped parameters is read, or it is an assumption.

eval-nas's ENAS trainer (lockbox 28, two certain GL007 false alarms) clips the shared model's gradients after every
batch's backward and steps the shared optimizer right after; its controller optimizer, stepped in another method, was
said to see a partial window. Both optimizers come from out of sight (a factory of optimizer classes, attributes of
the trainer): which parameters each updates is not known, so that the clip acted on the controller's window rests on
an assumption, and the finding is `possible`."""

from __future__ import annotations

from gradcheck_lint.engine import analyse_text

TRAINER = """\
import torch


class Trainer(object):
    def __init__(self, args):
        self.args = args
        {init}

    def train(self):
        for self.epoch in range(self.args.max_epoch):
            self.train_shared()
            self.train_controller()

    def train_shared(self):
        model = self.shared

        def _clip_gradient():
            torch.nn.utils.clip_grad_norm_(model.parameters(), self.args.shared_grad_clip)

        for step in range(self.args.max_step):
            dags = self.controller.sample(self.args.num_sample)
            for b in range(0, self.args.num_batch_per_iter):
                inputs, targets = self.get_batch(self.train_data, b)
                loss, sample_loss, rest_loss = self.get_loss(inputs, targets, dags)
                self.shared_optim.zero_grad()
                if b == self.args.num_batch_per_iter - 1:
                    sample_loss.backward()
                    rest_loss.backward()
                else:
                    loss.backward()
                _clip_gradient()
                {step}

    def train_controller(self):
        for step in range(self.args.controller_max_step):
            loss = self.get_reward_loss(self.controller.sample(1))
            self.controller_optim.zero_grad()
            loss.backward()
            self.controller_optim.step()
"""
IN_SIGHT = ("self.shared = torch.nn.Linear(4, 4); self.controller = torch.nn.LSTM(4, 4)\n"
            "        self.shared_optim = torch.optim.SGD(self.shared.parameters(), lr=0.1)\n"
            "        self.controller_optim = torch.optim.Adam(self.controller.parameters(), lr=0.01)")


def gl007(init: str, step: str) -> list[tuple[int, bool]]:
    found = analyse_text(TRAINER.format(init=init, step=step), "trainer.py").diagnostics
    return [(d.line, d.possible) for d in found if d.code == "GL007"]


def test_optimizers_out_of_sight_make_the_partial_window_an_assumption() -> None:
    """The controller clears its gradients before its own backward and step: whatever it owns, the gradients the
    clip saw never reach its step (a partial window is one a step applies), so nothing is reported at all."""
    assert gl007("pass", "self.shared_optim.step()") == []
    # with no clear before the controller's step, its window would be partial: possible, its parameters unknown
    uncleared = TRAINER.replace("            self.controller_optim.zero_grad()\n", "")
    found = analyse_text(uncleared.format(init="pass", step="self.shared_optim.step()"), "trainer.py").diagnostics
    assert [(d.line, d.possible) for d in found if d.code == "GL007"] == [(18, True)]


def test_optimizers_in_sight_step_the_clipped_parameters_on_every_batch() -> None:
    assert gl007(IN_SIGHT, "self.shared_optim.step()") == []


# DAMO-ConvAI's SPACE models (lockbox 28, true): a model clips `self.parameters()` on every micro-batch and steps the
# optimizer its trainer gave it only on the last. That optimizer's parameters are not known, but it is the only one
# stepped: the clip's parameters are its own, and the partial window is read, not assumed.
ONE_OPTIMIZER = """\
import torch
import torch.nn as nn


class UnifiedTransformer(nn.Module):
    def __init__(self, hidden, grad_clip):
        super().__init__()
        self.body = nn.Linear(hidden, hidden)
        self.grad_clip = grad_clip

    def _optimize(self, loss, do_update):
        loss.backward()
        if self.grad_clip is not None and self.grad_clip > 0:
            torch.nn.utils.clip_grad_norm_(parameters=self.parameters(), max_norm=self.grad_clip)
        if do_update:
            self.optimizer.step()
            self.optimizer.zero_grad()


def train(model, loader, accumulation):
    for step, (x, y) in enumerate(loader):
        loss = ((model.body(x) - y) ** 2).mean() / accumulation
        model._optimize(loss, do_update=(step + 1) % accumulation == 0)
"""


def test_the_one_optimizer_out_of_sight_owns_what_its_model_clips() -> None:
    found = analyse_text(ONE_OPTIMIZER, "model.py").diagnostics
    assert [(d.line, d.possible) for d in found if d.code == "GL007"] == [(14, False)]
