# blind-program
# (a blind program: its expected findings, if any, are `# expect:` comments on their lines)
# why: zero_grad only happens inside the every-4-steps logging branch; on the other iterations grads are not cleared, so e.g. step 2 sees step 1's backward as well.
import torch
import torch.nn as nn

torch.manual_seed(0)

LOG_EVERY = 4
model = nn.Sequential(nn.Linear(3, 6), nn.ReLU(), nn.Linear(6, 2))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
ce = nn.CrossEntropyLoss()

running = 0.0
for step in range(12):
    x = torch.randn(10, 3)
    y = torch.randint(0, 2, (10,))
    loss = ce(model(x), y)
    loss.backward()
    opt.step()  # expect: GL001
    running += loss.item()
    if step % LOG_EVERY == 0:
        print(f"step {step} avg loss {running / (step + 1):.4f}")
        opt.zero_grad()
