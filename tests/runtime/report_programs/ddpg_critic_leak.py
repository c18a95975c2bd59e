"""Bug: the actor's loss backpropagates into the critic, and the critic's step applies those
gradients: nothing clears them in between (GL005, naming `critic`)."""
import torch
from torch import nn

torch.manual_seed(0)
actor = nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 2))
critic = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 1))
actor_opt = torch.optim.Adam(actor.parameters(), lr=1e-3)
critic_opt = torch.optim.Adam(critic.parameters(), lr=1e-3)
for _ in range(6):
    state = torch.randn(8, 4)
    actor_opt.zero_grad()
    actor_loss = -critic(torch.cat([state, actor(state)], 1)).mean()
    actor_loss.backward()
    actor_opt.step()
    q = critic(torch.cat([state, actor(state).detach()], 1))
    critic_loss = (q - torch.randn(8, 1)).pow(2).mean()
    critic_loss.backward()
    critic_opt.step()  # expect: GL001, GL005
