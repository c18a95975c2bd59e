# blind-program
# (a blind program: its expected findings, if any, are `# expect:` comments on their lines)
# why: one model, two optimizers (SGD on body, Adam on head); only the head optimizer is cleared, so the body optimizer steps on gradients accumulated over all previous iterations.
import torch
import torch.nn as nn

torch.manual_seed(0)

body = nn.Sequential(nn.Linear(4, 16), nn.ReLU())
head = nn.Linear(16, 2)
model = nn.Sequential(body, head)

opt_body = torch.optim.SGD(body.parameters(), lr=0.01)
opt_head = torch.optim.Adam(head.parameters(), lr=1e-3)

xs = torch.randn(7, 10, 4)
ys = torch.randint(0, 2, (7, 10))

for step in range(7):
    opt_head.zero_grad()
    out = model(xs[step])
    loss = nn.functional.cross_entropy(out, ys[step])
    loss.backward()
    opt_body.step()  # expect: GL001
    opt_head.step()

print("done", loss.item())
