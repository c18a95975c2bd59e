# blind-program
# (a blind program: its expected findings, if any, are `# expect:` comments on their lines)
# why: one model, two optimizers over disjoint parameters (SGD for the embedding, AdamW with decay/no-decay param groups for the rest); both are cleared every iteration (one before backward, one after its step).
import torch
import torch.nn as nn

torch.manual_seed(0)


class BagModel(nn.Module):
    def __init__(self, vocab=50, dim=8):
        super().__init__()
        self.emb = nn.EmbeddingBag(vocab, dim, mode="mean")
        self.proj = nn.Linear(dim, dim)
        self.norm = nn.LayerNorm(dim)
        self.out = nn.Linear(dim, 3)

    def forward(self, tokens):
        h = self.emb(tokens)
        h = self.norm(torch.relu(self.proj(h)))
        return self.out(h)


model = BagModel()
emb_params = list(model.emb.parameters())
decay, no_decay = [], []
for name, p in model.named_parameters():
    if name.startswith("emb."):
        continue
    (no_decay if p.ndim == 1 else decay).append(p)

sparse_opt = torch.optim.SGD(emb_params, lr=0.1)
dense_opt = torch.optim.AdamW(
    [{"params": decay, "weight_decay": 0.05}, {"params": no_decay, "weight_decay": 0.0}],
    lr=1e-3,
)

for step in range(8):
    tokens = torch.randint(0, 50, (12, 6))
    labels = torch.randint(0, 3, (12,))
    sparse_opt.zero_grad()
    loss = nn.functional.cross_entropy(model(tokens), labels)
    loss.backward()
    sparse_opt.step()
    dense_opt.step()
    dense_opt.zero_grad(set_to_none=True)

print(loss.item())
