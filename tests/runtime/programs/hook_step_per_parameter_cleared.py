"""Correct: the optimizer-in-backward idiom: one optimizer per parameter, stepped and cleared from
`register_post_accumulate_grad_hook` as soon as the parameter's gradient is complete."""
import torch
from torch import nn

torch.manual_seed(12)
model = nn.Sequential(nn.Linear(6, 12), nn.ReLU(), nn.Linear(12, 1))
optimizers = {p: torch.optim.SGD([p], lr=0.01) for p in model.parameters()}


def step_in_backward(p):
    optimizers[p].step()
    optimizers[p].zero_grad()


for p in model.parameters():
    p.register_post_accumulate_grad_hook(step_in_backward)
for _ in range(6):
    x, y = torch.randn(4, 6), torch.randn(4, 1)
    nn.functional.mse_loss(model(x), y).backward()
