"""GL009 where real code hides the stale graph (`analysis/entrypoints.attribute_graphs`,
`recorder.guess_stepped`, `expressions._built_with_optimizer`, `recorder._builds_graph`), and the
neighbouring correct code each heuristic must leave alone."""

from __future__ import annotations

from gradcheck_lint.engine import analyse_text


def gl009_lines(text: str) -> list[int]:
    return sorted(d.span.line for d in analyse_text(text, "train.py").diagnostics if d.code == "GL009")


CLASS = """\
import torch
from torch import nn


class Model:
    def __init__(self):
        self.gen = nn.Linear(4, 8)
        self.enc = nn.Linear(8, 4)
        self.gen_opt = torch.optim.Adam(self.gen.parameters())
        self.enc_opt = torch.optim.Adam(self.enc.parameters())

    def forward(self, z):
        self.z = z
        self.fake = self.gen(z)
        self.z_recon = self.enc(self.fake)

    def update(self):
        self.gen_opt.zero_grad()
        self.fake.pow(2).mean().backward(retain_graph=True)
        self.gen_opt.step()
{between}
        self.gen_opt.zero_grad()
        self.enc_opt.zero_grad()
        (self.z_recon - self.z).abs().mean().backward()
        self.gen_opt.step()
        self.enc_opt.step()
"""


def test_a_graph_another_method_left_on_self_is_stale_after_a_step_here() -> None:
    """Two optimizers of `__init__`'s step in the method: only then are the other methods run on the side."""
    assert gl009_lines(CLASS.format(between="")) == [24]


def test_running_the_forward_again_after_the_step_refreshes_it() -> None:
    assert gl009_lines(CLASS.format(between="        self.forward(self.z)")) == []


def test_an_attribute_built_without_grad_holds_no_graph() -> None:
    text = CLASS.format(between="").replace("    def forward(self, z):", "    @torch.no_grad()\n    def forward(self, z):")
    assert gl009_lines(text) == []


HANDED_IN = """\
import torch
import torch.nn.functional as F
from torch import nn


class FactorLoss:
    def __init__(self):
        self.discriminator = nn.Linear(4, 2)
        self.optimizer_d = torch.optim.Adam(self.discriminator.parameters())

    def call_optimize(self, data, model, {optimizer}):
        recon, latent = model(data)
        d_z = self.discriminator(latent)
        vae_loss = F.mse_loss(recon, data) + d_z.mean()
        {optimizer}.zero_grad()
        vae_loss.backward(retain_graph=True)
        {optimizer}.step()
        self.optimizer_d.zero_grad()
        F.cross_entropy(d_z, torch.zeros(4, dtype=torch.long)).backward()
        self.optimizer_d.step()
"""


def test_an_optimizer_handed_in_beside_the_one_free_model_steps_it() -> None:
    assert gl009_lines(HANDED_IN.format(optimizer="optimizer")) == [19]


def test_an_optimizer_attribute_of_unknown_parameters_is_not_guessed() -> None:
    """`self.actor_opt` is often built for a part of a model (DeepRL): no guess, no finding."""
    text = HANDED_IN.format(optimizer="self.vae_opt").replace("model, self.vae_opt)", "model)")
    assert gl009_lines(text) == []


def test_with_two_free_models_the_handed_in_optimizer_is_not_guessed() -> None:
    text = HANDED_IN.format(optimizer="optimizer").replace("d_z = self.discriminator(latent)",
                                                           "d_z = self.discriminator(self.prior(latent))")
    text = text.replace("        self.optimizer_d = ", "        self.prior = nn.Linear(4, 4)\n        self.optimizer_d = ")
    assert gl009_lines(text) == []


BUILDER = """\
import torch
from models import create_netD, create_netG


def train(opt, loader):
    netG = create_netG(opt)
    optimizer_netG = torch.optim.Adam(netG.parameters())
    {targets} = create_netD(opt)
    for real, noise in loader:
        fake = netG(noise)
        loss_netD = netD_seq.netD_adv_loss(real, fake.detach())
        loss_adv = netD_seq.{method}(fake)
        optimizer_netD.zero_grad()
        loss_netD.backward()
        optimizer_netD.step()
        optimizer_netG.zero_grad()
        loss_adv.backward()
        optimizer_netG.step()
"""


def test_models_unpacked_beside_their_optimizer_from_a_builder() -> None:
    assert gl009_lines(BUILDER.format(targets="netD_img, netD_seq, optimizer_netD", method="netG_adv_loss")) == [17]


def test_an_optimizer_named_for_no_role_binds_no_model() -> None:
    """`optimizer` names no role: nothing says which of the unpacked names it steps."""
    text = BUILDER.format(targets="netD_img, netD_seq, optimizer", method="netG_adv_loss").replace("optimizer_netD.", "optimizer.")
    assert gl009_lines(text) == []


def test_a_helper_method_of_a_model_is_not_a_forward_that_goes_stale() -> None:
    """`netD_seq.norm_input(fake)` may use no parameter (rl_games' `self.model.norm_obs(obs)`)."""
    assert gl009_lines(BUILDER.format(targets="netD_img, netD_seq, optimizer_netD", method="norm_input")) == []


def test_a_loop_in_a_helper_keeps_the_callers_step_counts() -> None:
    """`_permute_dims(z)` loops; the caller's graph built before the step stays stale after it."""
    text = """\
import torch
import torch.nn.functional as F
from torch import nn


def permute(z):
    out = []
    for i in range(z.size(1)):
        out.append(z[torch.randperm(z.size(0)), i])
    return torch.stack(out, 1)


def train(loader):
    vae, disc = nn.Linear(8, 4), nn.Linear(4, 2)
    opt_vae = torch.optim.Adam(vae.parameters())
    opt_d = torch.optim.Adam(disc.parameters())
    for x in loader:
        z = vae(x)
        d_z = disc(z)
        opt_vae.zero_grad()
        d_z.mean().backward(retain_graph=True)
        opt_vae.step()
        d_perm = disc(permute(vae(x)).detach())
        opt_d.zero_grad()
        (F.cross_entropy(d_z, torch.zeros(4, dtype=torch.long)) + d_perm.mean()).backward()
        opt_d.step()
"""
    assert gl009_lines(text) == [25]


RETURNED = """\
import torch
import torch.nn.functional as F
from torch import nn


class EdgeModel(nn.Module):
    def __init__(self):
        super().__init__()
        discriminator = nn.Linear(8, 1)
        self.add_module("generator", nn.Linear(8, 8))
        self.add_module("discriminator", discriminator)
        self.gen_optimizer = torch.optim.Adam(self.generator.parameters())
        self.dis_optimizer = torch.optim.Adam(discriminator.parameters())

    def process(self, images):
        outputs = self.generator(images)
        dis_loss = F.softplus(self.discriminator(outputs.detach())).mean()
        gen_loss = F.softplus(-self.discriminator(outputs)).mean()
        return outputs, {returned}, dis_loss

    def backward(self, gen_loss, dis_loss):
        dis_loss.backward()
        self.dis_optimizer.step()
        gen_loss.backward()
        self.gen_optimizer.step()
"""


def test_a_loss_another_method_returns_under_the_parameters_name_is_its_graph() -> None:
    """No caller in the file (edge-connect's script is elsewhere); `add_module` names `self.discriminator`."""
    assert gl009_lines(RETURNED.format(returned="gen_loss")) == [24]


def test_a_parameter_named_for_nothing_returned_is_of_unknown_origin() -> None:
    text = RETURNED.format(returned="gen_loss").replace("return outputs, gen_loss, dis_loss", "return outputs, adv_loss, dis_loss")
    text = text.replace("gen_loss = F.softplus", "adv_loss = F.softplus")
    assert gl009_lines(text) == []


def test_a_side_run_that_reaches_a_step_leaves_the_roots_events_alone() -> None:
    """XLM's trainer: a method run for its values inlines one that steps; the step event the root
    recorded must not take paths from that run (it did, and a rule then met a dropped backward)."""
    text = """\
import torch
from torch import nn


class Trainer:
    def __init__(self, model):
        self.model = model
        self.optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

    def optimize(self, loss):
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()

    def step(self, x):
        self.last = self.model(x)
        self.optimize(self.last.sum())

    def mt_step(self, x):
        loss = self.model(x).mean()
        self.optimize(loss)
        return loss
"""
    diagnostics = analyse_text(text, "trainer.py").diagnostics
    assert not [d for d in diagnostics if d.code == "GL000"]


# -- tensors that carry no graph of their argument: labels shaped like an output, star-imported torch
GAIL = """\
{imports}
G, D = nn.Linear(4, 2), nn.Linear(6, 1)
opt_G, opt_D = torch.optim.Adam(G.parameters()), torch.optim.Adam(D.parameters())
bce = nn.BCEWithLogitsLoss()
for states in torch.randn(5, 8, 4):
    actions = G(states)
    expert = D(torch.cat([states, torch.randn(8, 2)], 1))
    fake = D(torch.cat([states, actions], 1))
    opt_D.zero_grad()
    (bce(expert, torch.ones_like(expert)) + bce(fake, torch.zeros_like(fake))).backward(retain_graph=True)
    opt_D.step()
    opt_G.zero_grad()
    bce(D(torch.cat([states, actions], 1)), {label}).backward()
    opt_G.step()
"""


def test_a_label_shaped_like_a_stale_output_carries_no_graph() -> None:
    """yama1to/gail: `torch.zeros_like(generator_preds)` as the generator's target, after D's step: a new
    tensor with no history (PyTorch raises nothing). Reusing `fake` itself is the bug."""
    imports = "import torch\nfrom torch import nn"
    assert gl009_lines(GAIL.format(imports=imports, label="torch.zeros_like(fake)")) == []
    assert gl009_lines(GAIL.format(imports=imports, label="fake.new_ones(fake.shape)")) == []
    assert gl009_lines(GAIL.format(imports=imports, label="fake")) == [14]


def test_torch_from_a_star_import_is_the_package() -> None:
    """oscardong0813/ml_projects: `from network import *` brings `torch`; `torch.tensor(log_probs)` then
    copies the rollout's log-probabilities with no graph, as with `import torch`."""
    star = "from network import *\nfrom torch import nn"
    assert gl009_lines(GAIL.format(imports=star, label="torch.zeros_like(fake)")) == []
    assert gl009_lines(GAIL.format(imports=star, label="torch.tensor(fake.tolist())")) == []
    assert gl009_lines(GAIL.format(imports=star, label="fake")) == [14]


ROLLOUT = """\
import torch
from torch import nn, optim

actor = nn.Sequential(nn.Linear(4, 128), nn.ReLU(), nn.Linear(128, 2))
opt = optim.Adam(actor.parameters())
memory = []
for t in range(3):
    prob = torch.softmax(actor(torch.randn(1, 4)), dim=1)
    STORE
UPDATE
"""
PER_TRANSITION = {
    "elements": ("memory.append(prob[0, 0])", "for p in memory:"),
    "tuples unpacked": ("memory.append((prob[0, 0], 1.0))", "for p, r in memory:"),
}


def _rollout(store: str, loop: str) -> str:
    update = f"""{loop}
    loss = -torch.log(p)
    opt.zero_grad()
    loss.backward(retain_graph=True)
    opt.step()"""
    return ROLLOUT.replace("STORE", store).replace("UPDATE", update)


def test_a_step_per_stored_transition_backpropagates_the_next_ones_stale_graph() -> None:
    """ActorCritic's `for prob, ... in net.memory: backward(); step()` over graphs the rollout built: from the second
    transition on, the backward runs through a forward made before the last step (lockbox 20, after its opening)."""
    for store, loop in PER_TRANSITION.values():
        assert gl009_lines(_rollout(store, loop)) == [13]


def test_one_step_after_the_stored_transitions_is_silent() -> None:
    update = """losses = []
for p, r in memory:
    losses.append(-torch.log(p) * r)
opt.zero_grad()
torch.stack(losses).sum().backward()
opt.step()"""
    assert gl009_lines(ROLLOUT.replace("STORE", "memory.append((prob[0, 0], 1.0))").replace("UPDATE", update)) == []


def test_transitions_stored_without_a_graph_are_forwarded_again() -> None:
    store = "memory.append(torch.randn(1, 4))"
    update = """for s in memory:
    loss = -torch.log(torch.softmax(actor(s), dim=1)[0, 0])
    opt.zero_grad()
    loss.backward()
    opt.step()"""
    assert gl009_lines(ROLLOUT.replace("STORE", store).replace("UPDATE", update)) == []
