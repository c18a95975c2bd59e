# blind-program
# (a blind program: its expected findings, if any, are `# expect:` comments on their lines)
# why: bf16 autocast + GradScaler; each batch is split into 2 chunks, each chunk loss divided by 2, unscale+clip, scaler.step, then zero_grad(set_to_none=True).
import torch
import torch.nn as nn

torch.manual_seed(0)

N_CHUNKS = 2
model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
scaler = torch.amp.GradScaler("cpu", init_scale=1024.0)
loss_fn = nn.CrossEntropyLoss()


def batches(n):
    for _ in range(n):
        yield torch.randn(24, 16), torch.randint(0, 4, (24,))


for step, (x, y) in enumerate(batches(7)):
    for xc, yc in zip(x.chunk(N_CHUNKS), y.chunk(N_CHUNKS)):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            logits = model(xc)
            loss = loss_fn(logits.float(), yc) / N_CHUNKS
        scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    scaler.step(optimizer)
    scaler.update()
    optimizer.zero_grad(set_to_none=True)
    print(step, loss.item() * N_CHUNKS)
