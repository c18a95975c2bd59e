"""Gradients summed into a buffer before each clear and written back before the step (`p.grad = self.grad_buffer[j]`
for `p` over fresh leaf tensors the optimizer was built on: a MAML meta-batch's gradient buffer, Leon0402's baselines,
lockbox 32: two certain GL002): the clears drop nothing the step needs. Without the write-back the clear is still
reported."""

from __future__ import annotations

from support import lines_of

META = 'import torch\nfrom torch import nn\n\n\nclass Learner:\n    def __init__(self, meta_batch_size=4):\n        self.net = nn.Linear(4, 2)\n        self.weights = [p.clone().detach() for p in self.net.parameters()]\n        for p in self.weights:\n            p.requires_grad = True\n        self.optimizer = torch.optim.Adam(self.weights, lr=1e-3)\n        self.meta_batch_size = meta_batch_size\n        self.grad_buffer = [torch.zeros(p.size()) for p in self.weights]\n\n    def meta_train(self, tasks):\n        self.optimizer.zero_grad()\n        for i, x in enumerate(tasks):\n            task_weights = [p.clone() for p in self.weights]\n            loss = torch.nn.functional.linear(x, task_weights[0], task_weights[1]).pow(2).mean()\n            loss.backward()\n            self.grad_buffer = [\n                self.grad_buffer[j] + self.weights[j].grad if self.weights[j].grad is not None else self.grad_buffer[j]\n                for j in range(len(self.weights))\n            ]\n            self.optimizer.zero_grad()\n            if (i + 1) % self.meta_batch_size == 0:\n                for j, p in enumerate(self.weights):\n                    p.grad = self.grad_buffer[j]\n                self.optimizer.step()\n                self.grad_buffer = [torch.zeros(p.size()) for p in self.weights]\n                self.optimizer.zero_grad()\n\n\nif __name__ == "__main__":\n    Learner().meta_train([torch.randn(8, 4) for _ in range(16)])\n'
CLEAR = 25  # `self.optimizer.zero_grad()` after the buffer is updated


def test_a_buffer_written_back_before_the_step_makes_the_clear_harmless() -> None:
    assert lines_of("GL002", META) == []


def test_without_the_write_back_the_clear_drops_the_meta_batch() -> None:
    text = META.replace("                    p.grad = self.grad_buffer[j]\n", "                    pass\n")
    assert text != META
    assert lines_of("GL002", text) == [CLEAR]


def test_a_write_of_the_gradient_computed_from_itself_is_no_backup() -> None:
    text = META.replace("p.grad = self.grad_buffer[j]", "p.grad = p.grad[:1]")
    assert lines_of("GL002", text) == [CLEAR]
