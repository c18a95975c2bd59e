# blind-program
# (a blind program: its expected findings, if any, are `# expect:` comments on their lines)
# why: GradScaler + manual micro-batch counter accumulating 2 micro-batches per step; scaler.scale(loss) is used but the loss is never divided by 2.
import torch
import torch.nn as nn

torch.manual_seed(0)

MICRO_PER_STEP = 2
net = nn.Sequential(nn.Linear(8, 16), nn.SiLU(), nn.Linear(16, 1))
opt = torch.optim.Adam(net.parameters(), lr=1e-3)
scaler = torch.amp.GradScaler("cpu", init_scale=256.0)

micro = 0
optimizer_steps = 0
for x, y in [(torch.randn(4, 8), torch.randn(4, 1)) for _ in range(14)]:
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = net(x)
    loss = nn.functional.mse_loss(out.float(), y)
    scaler.scale(loss).backward()  # expect: GL003
    micro += 1
    if micro == MICRO_PER_STEP:
        scaler.step(opt)
        scaler.update()
        opt.zero_grad()
        micro = 0
        optimizer_steps += 1

print("steps", optimizer_steps, "loss", loss.item())
