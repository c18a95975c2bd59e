"""An element of a tuple whose parts the analysis cannot see (`fake, ids_slice = model_g(spec)`, a
generator built out of sight) holds what the whole output reaches, but only by assumption when its name
reads as indices or lengths: integer tensors hold no graph. so-vits-svc's discriminator loss reached the
generator only through real audio sliced at `ids_slice` (lockbox 5, a certain GL005 judged false)."""

import textwrap

from gradcheck_lint import check_source
from gradcheck_lint.config import Settings

GAN = """
import torch
from torch import nn
from nets import Generator
from segments import slice_segments

model_g, model_d = Generator(), nn.Conv1d(1, 1, 3)
optim_g = torch.optim.AdamW(model_g.parameters(), 2e-4)
optim_d = torch.optim.AdamW(model_d.parameters(), 2e-4)
loader = [(torch.randn(2, 80, 64), torch.full((2,), 64), torch.randn(2, 1, 64))]

for spec, lengths, audio in loader:
    fake_audio, {part} = model_g(spec, lengths)
    audio = slice_segments(audio, {part}, 32)
    loss_g = (model_d(fake_audio) - 1).pow(2).mean() + (fake_audio - audio).abs().mean()
    loss_g.backward()
    optim_g.step()
    optim_g.zero_grad()

    optim_d.zero_grad()
    loss_d = model_d(fake_audio.detach()).pow(2).mean() + (model_d(audio) - 1).pow(2).mean()
    loss_d.backward()
    optim_d.step()
"""


def _gl005(part: str) -> list[int]:
    found = check_source(textwrap.dedent(GAN.format(part=part)), "train.py", settings=Settings.default())
    return [d.span.line for d in found if d.code == "GL005"]


def test_real_audio_sliced_at_indices_does_not_reach_the_generator() -> None:
    assert _gl005("ids_slice") == []
    assert _gl005("spec_lengths") == []


def test_another_part_still_carries_the_generators_graph() -> None:
    # the same shape with a part that may be a feature map: the discriminator's loss reaches the generator
    assert _gl005("feats") == [17]
