"""What each item of a model's returned tuple holds: read where the tuple is built, assumed where it is not.

Lockbox 14's BERT-for-RRC-ABSA (a certain GL005 false alarm): the model's forward returns
`(loss, masked_lm_loss.detach(), target_mask, domain_ids) + outputs`, a sampler keeps item 1 (per-example losses,
no graph) and steps its own optimizer on an objective made from it. Three facts were taken as known:
- `(a, b) + rest` was one blur of its operands, so item 1 held the loss's graph (`analysis/concatenation.py`);
- `if lm_labels is not None:` in a forward called without `lm_labels` (default None) ran on some paths
  (`fixed_tests.constant_comparison`);
- `outputs[1]` of a model handed in as a parameter, whose class nothing names, surely reached the model
  (`Objects._result_read`: what an item of an unread forward's result holds is assumed).
And nebuly's chatllama (GL005 x2, certain): a loss whose reach is known only vaguely, through two parts of one
model (`actorcritic.actor` and `.critic`, returned together by an unread forward), was said to write both.
"""

from __future__ import annotations

from gradcheck_lint.engine import analyse_text


def found(text: str) -> set[tuple[str, str]]:
    return {(d.code, d.certainty) for d in analyse_text(text, "train.py").diagnostics}


MODEL = """\
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x, labels=None, lm_labels=None):
        out = self.lin(x)
        outputs = (out,)
        if labels is not None:
            per_ex = (out - labels).pow(2).mean(-1)
            loss = per_ex.mean()
            outputs = (loss, {kept}) + outputs
        if lm_labels is not None:
            outputs = (out.sum(),) + outputs
        return outputs


class Sampler(nn.Module):
    def __init__(self):
        super().__init__()
        self.logits = nn.Parameter(torch.zeros(3))
        self.losses = []

    def forward(self):
        return torch.log_softmax(self.logits, 0)


def train(loader{param}):
{made}    sampler = Sampler()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    meta_opt = torch.optim.SGD(sampler.parameters(), lr=0.1)
    for step, (x, y) in enumerate(loader):
        outputs = model(x, labels=y)
        loss = outputs[0]
        opt.zero_grad()
        loss.backward()
        opt.step()
        sampler.losses.append(outputs[1])
        if step % 16 == 1:
            losses = torch.cat(sampler.losses)
            meta_loss = -(sampler() * losses.mean()).mean()
            meta_opt.zero_grad()
            meta_loss.backward()
            meta_opt.step()
            sampler.losses = []
"""


def program(kept: str, handed: bool = False) -> str:
    return MODEL.format(kept=kept, param=", model" if handed else "", made="" if handed else "    model = Net()\n")


def test_a_detached_item_of_a_concatenated_tuple_holds_no_graph():
    assert not {c for c, _ in found(program("per_ex.detach()"))} & {"GL005", "GL009"}


def test_the_same_item_with_its_graph_is_backpropagated_after_the_step():
    # the bug: the per-example losses keep the model's graph, and the sampler's backward runs through it after
    # `opt.step()` changed the model (PyTorch raises, or the gradient is of the old weights)
    assert ("GL009", "certain") in found(program("per_ex"))


def test_a_branch_on_a_parameter_the_call_leaves_at_none_does_not_run():
    # `outputs = (out.sum(),) + outputs` shifts item 1 to the loss: only when `lm_labels` is given
    text = program("per_ex.detach()").replace("model(x, labels=y)", "model(x, labels=y, lm_labels=y)")
    assert ("GL009", "certain") in found(text)


def clear_after_step(text: str) -> str:
    # the model's optimizer clears after its step, as transformers' example trainers do: what the sampler's
    # backward writes into the model (if its objective held the model's graph) is stepped next
    moved = text.replace("        opt.zero_grad()\n", "")
    return moved.replace("        opt.step()\n", "        opt.step()\n        opt.zero_grad()\n")


def test_an_item_of_what_a_model_of_no_known_class_returned_is_assumed():
    # `model` handed in: its forward is not read, so whether `outputs[1]` holds its graph is not known
    assert {c for c, k in found(clear_after_step(program("per_ex.detach()", handed=True))) if k == "certain"} == set()


def test_the_model_known_and_its_item_holding_the_graph_writes_into_it():
    assert ("GL005", "certain") in found(clear_after_step(program("per_ex")))


def test_a_handed_model_whose_first_item_is_the_loss_still_trains_it():
    text = program("per_ex.detach()", handed=True).replace("        opt.zero_grad()\n", "")
    assert ("GL001", "certain") in found(text)


ACTOR_CRITIC = """\
import torch
from agents import Actor


class ActorCritic(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.actor = Actor()
        self.critic = torch.nn.Linear(8, 1)


def learn(dataset, use_actor_io):
    ac = ActorCritic()
    actor_opt = torch.optim.Adam(ac.actor.parameters())
    critic_opt = torch.optim.Adam(ac.critic.parameters())
    part = ac.actor if use_actor_io else ac.critic
    loader = part.make_loader(dataset)  # a method of one of two parts, not read: what it returns may hold either
    for obs, rewards in loader:
        loss = -(ac.actor(obs).log_softmax(-1).mean() * rewards).mean()
        loss.backward()
        actor_opt.step()
        actor_opt.zero_grad()
        value_loss = (({value} - rewards) ** 2).mean()
        value_loss.backward()
        critic_opt.step()
        {clear}
"""


def test_a_vague_reach_over_two_parts_of_one_model_writes_neither_for_certain():
    # nebuly's chatllama: batches of `engine.deepspeed_io(dataset)`, `engine` the actor's or the critic's
    text = ACTOR_CRITIC.format(value="rewards.mean()", clear="critic_opt.zero_grad()")
    assert {c for c, k in found(text) if k == "certain"} == set()


def test_a_missing_clear_of_one_part_is_still_found():
    # the critic's own loss, through the critic: the step's missing clear does not rest on the loader
    text = ACTOR_CRITIC.format(value="ac.critic(obs).squeeze(-1)", clear="pass")
    assert ("GL001", "certain") in found(text)


DEEPSPEED_IO = """\
import deepspeed


def initialize(model, cfg):
    engine, optimizer, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config=cfg)
    return engine, engine.module, optimizer


def learn(actor, critic, dataset, cfg):
    actor_engine, actor, _ = initialize(actor, cfg)
    critic_engine, critic, _ = initialize(critic, cfg)
    engine = actor_engine or critic_engine
    loader = engine.deepspeed_io(dataset)
    total_reward = 0
    for obs, rewards in loader:
        loss = -(actor_engine(obs).log_softmax(-1).mean() * rewards).mean()
        actor_engine.backward(loss)
        actor_engine.step()
        value_loss = ((critic_engine(obs).squeeze(-1) - rewards) ** 2).mean()
        critic_engine.backward(value_loss)
        critic_engine.step()
        total_reward += rewards.sum()
"""


def test_the_batches_of_a_deepspeed_loader_are_data_not_a_forward_pass():
    # `engine.deepspeed_io(dataset)` builds a DataLoader (the catalogue says so); each engine's step clears its
    # own gradients, each loss reaches its own engine's model only, and a running sum of the rewards keeps no graph
    assert found(DEEPSPEED_IO) == set()
