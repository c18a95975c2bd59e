"""Correct (not judged): a summed token loss normalised by a token count that differs from
micro-batch to micro-batch and from window to window: a normalisation of its own, not a constant
weight, so the window's scale is not known from it."""
import torch
from torch import nn

torch.manual_seed(8)
accum = 2
emb = nn.Embedding(20, 8)
head = nn.Linear(8, 20)
opt = torch.optim.Adam([*emb.parameters(), *head.parameters()], lr=1e-3)
lengths = [5, 8, 3, 6, 7, 4, 2, 7]
windows = [lengths[i:i + accum] for i in range(0, len(lengths), accum)]
for window in windows:
    total = sum(window)
    for n in window:
        tokens = torch.randint(0, 20, (n,))
        logits = head(emb(tokens))
        loss = nn.functional.cross_entropy(logits, tokens, reduction="none").sum() / total
        loss.backward()
    opt.step()
    opt.zero_grad()
