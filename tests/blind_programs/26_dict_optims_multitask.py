# blind-program
# (a blind program: its expected findings, if any, are `# expect:` comments on their lines)
# why: shared trunk + two heads, one optimizer per part kept in a dict; all cleared, summed multi-task loss backpropagated with torch.autograd.backward, all stepped.
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

parts = nn.ModuleDict({
    "trunk": nn.Sequential(nn.Linear(10, 16), nn.ReLU()),
    "cls": nn.Linear(16, 4),
    "reg": nn.Linear(16, 1),
})
optimizers = {
    "trunk": torch.optim.SGD(parts["trunk"].parameters(), lr=0.01, momentum=0.9),
    "cls": torch.optim.Adam(parts["cls"].parameters(), lr=1e-3),
    "reg": torch.optim.Adam(parts["reg"].parameters(), lr=1e-3),
}


def train_step(x, y_cls, y_reg):
    for opt in optimizers.values():
        opt.zero_grad()
    h = parts["trunk"](x)
    loss_cls = F.cross_entropy(parts["cls"](h), y_cls)
    loss_reg = F.mse_loss(parts["reg"](h).squeeze(1), y_reg)
    total = loss_cls + 0.5 * loss_reg
    torch.autograd.backward(total)
    for opt in optimizers.values():
        opt.step()
    return total.item()


for step in range(6):
    x = torch.randn(20, 10)
    print(step, train_step(x, torch.randint(0, 4, (20,)), torch.randn(20)))
