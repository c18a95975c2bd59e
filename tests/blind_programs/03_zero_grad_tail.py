# blind-program
# (a blind program: its expected findings, if any, are `# expect:` comments on their lines)
# why: clears at the END of each iteration (after step); the fresh model has no grads before the first backward, so every step sees only its own batch.
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class TinyClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(10, 20)
        self.fc2 = nn.Linear(20, 3)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


clf = TinyClassifier()
optim = torch.optim.SGD(
    [
        {"params": clf.fc1.parameters(), "lr": 0.1},
        {"params": clf.fc2.parameters(), "lr": 0.01},
    ],
    momentum=0.5,
)

data = torch.randn(80, 10)
labels = torch.randint(0, 3, (80,))

for it in range(8):
    idx = torch.randint(0, 80, (16,))
    logits = clf(data[idx])
    loss = F.cross_entropy(logits, labels[idx])
    loss.backward()
    optim.step()
    optim.zero_grad()

print("final loss", loss.item())
