"""Bug: the optimizer-in-backward idiom without the clear: each parameter's optimizer, stepped from its
post-accumulate-grad hook, applies every earlier batch's gradients again (GL001 at the step)."""
import torch
from torch import nn

torch.manual_seed(12)
model = nn.Sequential(nn.Linear(6, 12), nn.ReLU(), nn.Linear(12, 1))
optimizers = {p: torch.optim.SGD([p], lr=0.01) for p in model.parameters()}


def step_in_backward(p):
    optimizers[p].step()  # expect: GL001


for p in model.parameters():
    p.register_post_accumulate_grad_hook(step_in_backward)
for _ in range(6):
    x, y = torch.randn(4, 6), torch.randn(4, 1)
    nn.functional.mse_loss(model(x), y).backward()
