"""A tensor computed with autograd off holds no graph (`no_grad_results`): not the graphs of its inputs
either. sheeprl's dreamer computes `discount` under `torch.no_grad()` from values the actor's forward made, steps
the actor, then backpropagates a loss scaled by `discount`: that backward never runs through the actor's
forward (37 possible GL009 when `Value.built` was kept through `no_grad`). The same for what a
`@torch.no_grad()` function returns. A name for a tensor that really holds a graph keeps it, and GL009 with it."""

import textwrap

from gradcheck_lint import check_source
from gradcheck_lint.config import Settings

DREAMER = "import torch\nfrom torch.optim import Adam\nfrom torch.distributions import Bernoulli, Distribution, Independent, Normal, OneHotCategorical\n\ndef train(fabric, world_model, actor, critic, target_critic, world_optimizer, actor_optimizer, critic_optimizer, data, aggregator, args, cnn_keys, mlp_keys, actions_dim):\n    imagined_trajectories = torch.empty(args.horizon + 1, batch_size * sequence_length, stoch_state_size + args.recurrent_state_size, device=device)\n    for i in range(1, args.horizon + 1):\n        actions = torch.cat(actor(imagined_latent_state.detach())[0], dim=-1)\n        imagined_prior, recurrent_state = world_model.rssm.imagination(imagined_prior, recurrent_state, actions)\n        imagined_latent_state = torch.cat((imagined_prior, recurrent_state), -1)\n        imagined_trajectories[i] = imagined_latent_state\n    continues = Independent(Bernoulli(logits=world_model.continue_model(imagined_trajectories), validate_args=False), 1).mean\n    true_done = (1 - data['dones']).reshape(1, -1, 1) * args.gamma\n    continues = torch.cat((true_done, continues[1:]))\n    with torch.no_grad():\n        discount = torch.cumprod(torch.cat((torch.ones_like(continues[:1]), continues[:-1]), 0), 0)\n    actor_optimizer.zero_grad()\n    fabric.backward(-torch.mean(discount * critic(imagined_trajectories)))\n    actor_optimizer.step()\n    # discount was computed under torch.no_grad(): value_loss reaches only the critic\n    critic_optimizer.zero_grad()\n    value_loss = -torch.mean(discount[:-1, ..., 0] * qv.log_prob(lambda_values.detach()))\n    fabric.backward(value_loss)\n    critic_optimizer.step()\n\ndef main():\n    if args.checkpoint_path:\n        args.per_rank_batch_size = state['batch_size'] // fabric.world_size\n    actor_optimizer = Adam(actor.parameters(), lr=args.actor_lr, weight_decay=1e-06, eps=1e-05)\n    for global_step in range(start_step, num_updates + 1):\n        if global_step >= learning_starts and step_before_training <= 0:\n            for i in distributed_sampler:\n                train(fabric, world_model, actor, critic, target_critic, world_optimizer, actor_optimizer, critic_optimizer, local_data[i].view(args.per_rank_sequence_length, args.per_rank_batch_size), aggregator, args, cnn_keys, mlp_keys, actions_dim)"

LOOP = """
import torch

{helper}actor = torch.nn.Linear(4, 4)
critic = torch.nn.Linear(4, 1)
actor_opt = torch.optim.Adam(actor.parameters())
critic_opt = torch.optim.Adam(critic.parameters())
for step in range(10):
    x = torch.randn(2, 4)
    traj = actor(x)
{discount}
    actor_opt.zero_grad(set_to_none=False)  # zeros, not None: the step below updates the actor in place
    actor_opt.step()
    critic_opt.zero_grad()
    value_loss = (discount * critic(x)).mean()
    value_loss.backward()  # the line of GL009 when `discount` holds the actor's graph
    critic_opt.step()
"""


def _codes(text: str) -> list[str]:
    return sorted(d.code for d in check_source(textwrap.dedent(text), "train.py", settings=Settings.default()))


def _loop(discount: str, helper: str = "") -> list[str]:
    return _codes(LOOP.format(discount=textwrap.indent(textwrap.dedent(discount), "    "), helper=helper))


HELPER = """@torch.no_grad()
def squash(t):
    return {returned}


"""


def test_a_value_computed_under_no_grad_holds_no_graph() -> None:
    assert _codes(DREAMER) == []


def test_without_no_grad_the_graph_is_kept() -> None:
    assert _loop("discount = torch.sigmoid(traj)") == ["GL002", "GL009"]


def test_what_a_no_grad_function_returns_holds_no_graph() -> None:
    assert _loop("discount = squash(traj)", HELPER.format(returned="torch.sigmoid(t)")) == []
    assert _loop("discount, other = squash(traj)", HELPER.format(returned="torch.sigmoid(t), t * 2")) == []


def test_another_name_for_a_tensor_keeps_its_graph() -> None:
    assert _loop("""
        with torch.no_grad():
            discount = traj
    """) == ["GL002", "GL009"]
    assert _loop("other, discount = squash(traj)", HELPER.format(returned="torch.sigmoid(t), t")) == ["GL002", "GL009"]


def test_detach_holds_no_graph() -> None:
    assert _loop("discount = torch.sigmoid(traj).detach()") == []
