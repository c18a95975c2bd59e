# blind-program
# (a blind program: its expected findings, if any, are `# expect:` comments on their lines)
# why: clears by setting p.grad = None at the START of each 4-micro-batch window, loss divided by 4, steps on the last micro-batch of the window; 16 batches per epoch so no partial window.
import torch
import torch.nn as nn

torch.manual_seed(0)

ACC = 4
model = nn.Sequential(nn.Linear(3, 8), nn.Sigmoid(), nn.Linear(8, 1))
params = [p for p in model.parameters()]
opt = torch.optim.RMSprop(params, lr=1e-3)

data = [(torch.randn(4, 3), torch.randn(4, 1)) for _ in range(16)]

for epoch in range(2):
    for i, (xb, yb) in enumerate(data):
        if i % ACC == 0:
            for p in params:
                p.grad = None
        loss = nn.functional.mse_loss(model(xb), yb) / ACC
        loss.backward()
        if i % ACC == ACC - 1:
            opt.step()
    print("epoch", epoch, loss.item())
