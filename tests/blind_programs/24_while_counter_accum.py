# blind-program
# (a blind program: its expected findings, if any, are `# expect:` comments on their lines)
# why: while loop with a micro-batch counter that starts at 1 and is incremented before the `% 4` check, so the first window steps after 3 micro-batches (later windows have 4); loss is divided by 4.
import torch
import torch.nn as nn

torch.manual_seed(0)

ACCUM = 4
TOTAL_MICRO = 27
model = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 2))
optimizer = torch.optim.Adam(model.parameters(), lr=5e-3)

xs = torch.randn(TOTAL_MICRO, 5, 4)
ys = torch.randint(0, 2, (TOTAL_MICRO, 5))

micro_step = 1
it = 0
n_updates = 0
while it < TOTAL_MICRO:
    loss = nn.functional.cross_entropy(model(xs[it]), ys[it]) / ACCUM
    loss.backward()
    micro_step += 1
    if micro_step % ACCUM == 0:  # expect: GL004
        optimizer.step()
        optimizer.zero_grad()
        n_updates += 1
    it += 1

print("updates", n_updates)
