# blind-program
# (a blind program: its expected findings, if any, are `# expect:` comments on their lines)
# why: frozen embedding (requires_grad False) + encoder kept out of the optimizer; backward(inputs=head params) so only the head gets grads; while loop over a global step, 2-micro-batch accumulation with loss/2, clear after each step.
import torch
import torch.nn as nn

torch.manual_seed(0)

ACC = 2
embed = nn.Embedding(30, 8)
embed.weight.requires_grad_(False)
encoder = nn.Sequential(nn.Linear(8, 8), nn.Tanh())
head = nn.Linear(8, 2)
head_params = list(head.parameters())
opt = torch.optim.SGD(head_params, lr=0.1)
sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1.0 / (1 + 0.1 * s))

global_step = 0
updates = 0
while updates < 6:
    tokens = torch.randint(0, 30, (6, 5))
    labels = torch.randint(0, 2, (6,))
    feats = encoder(embed(tokens).mean(dim=1))
    loss = nn.functional.cross_entropy(head(feats), labels) / ACC
    loss.backward(inputs=head_params)
    global_step += 1
    if global_step % ACC == 0:
        opt.step()
        sched.step()
        opt.zero_grad(set_to_none=True)
        updates += 1

print("global_step", global_step, "updates", updates)
