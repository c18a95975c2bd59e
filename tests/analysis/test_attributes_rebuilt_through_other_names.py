"""An attribute grown from itself (`q_proj.temp_weight = q_proj.temp_weight / s`) keeps every iteration's graph only
if nothing makes it afresh in between. When the same file also makes that attribute afresh through a name whose
object the analysis cannot tell (`for fc in fcs: fc.temp_weight = fc.weight * s`, a list handed in), that object may
be this one (OmniQuant's smoothing helpers, lockbox 20): the GL008 rests on the two being different, `possible`."""

import textwrap

from gradcheck_lint import check_source
from gradcheck_lint.config import Settings

SMOOTHING = """import torch
from torch import nn


class Attn(nn.Module):
    def __init__(self):
        super().__init__()
        self.q_proj = nn.Linear(8, 8)
        self.k_proj = nn.Linear(8, 8)

    def forward(self, x):
        q = x @ self.q_proj.temp_weight.t()
        k = x @ self.k_proj.temp_weight.t()
        return q @ k.t()


class DecoderLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.self_attn = Attn()
        self.register_parameter("qkv_smooth_scale", nn.Parameter(torch.ones(8)))
        self.register_parameter("qkt_smooth_scale", nn.Parameter(torch.ones(8)))

    def forward(self, x):
        return self.self_attn(x)


def smooth_fcs(fcs, scales):
    for fc in fcs:
        fc.{attribute} = fc.weight * scales.view(1, -1)


def smooth_q_k(q_proj, k_proj, scales):
    q_proj.temp_weight = q_proj.temp_weight / scales.view(-1, 1)
    k_proj.temp_weight = k_proj.temp_weight * scales.view(-1, 1)


def smooth_temporary(model):
    {rebuild}
    smooth_q_k(model.self_attn.q_proj, model.self_attn.k_proj, model.qkt_smooth_scale)


def calibrate(inputs, targets, epochs):
    qlayer = DecoderLayer()
    optimizer = torch.optim.AdamW([qlayer.qkv_smooth_scale, qlayer.qkt_smooth_scale], lr=1e-3)
    loss_func = torch.nn.MSELoss()
    for epoch in range(epochs):
        for x, y in zip(inputs, targets):
            smooth_temporary(qlayer)
            out = qlayer(x)
            loss = loss_func(y, out)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
"""

REBUILD = "smooth_fcs([model.self_attn.q_proj, model.self_attn.k_proj], model.qkv_smooth_scale)"


def _gl008(rebuild: str, attribute: str = "temp_weight") -> list[tuple[int, str]]:
    source = textwrap.dedent(SMOOTHING).replace("{rebuild}", rebuild).replace("{attribute}", attribute)
    found = check_source(source, "omniquant.py", settings=Settings.default())
    return [(d.span.line, d.certainty.name) for d in found if d.code == "GL008"]


def test_an_attribute_a_helper_may_rebuild_through_an_unknown_name_is_possible() -> None:
    assert _gl008(REBUILD) == [(34, "POSSIBLE"), (35, "POSSIBLE")]


def test_the_store_afresh_counts_wherever_the_file_holds_it() -> None:
    # the helper that rebuilds it is not called on this path: the file still holds the store, so it may run
    assert _gl008("pass") == [(34, "POSSIBLE"), (35, "POSSIBLE")]


def test_another_attribute_made_afresh_leaves_the_finding_certain() -> None:
    assert _gl008(REBUILD, attribute="temp_bias") == [(34, "CERTAIN"), (35, "CERTAIN")]
