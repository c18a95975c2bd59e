"""GL004 reads a modulo test of a counter as an accumulation window only when the counter moves with the
micro-batches. The index of a loop around the batch loop (`for epoch in range(n)`) that the batch loop never
rebinds has one value for every micro-batch of an epoch: `if epoch % save_every == 0: ...; continue` picks whole
epochs (ACGAN-PyTorch's feature dumps, lockbox 21: three false certain GL004)."""

import textwrap

from gradcheck_lint import check_source
from gradcheck_lint.config import Settings

GAN = """import torch
from torch import nn, optim

netD = nn.Linear(8, 1)
netG = nn.Linear(4, 8)
optimizerD = optim.Adam(netD.parameters(), lr=2e-4)
optimizerG = optim.Adam(netG.parameters(), lr=2e-4)
loader = [torch.randn(4, 8) for _ in range(10)]
feature_batches = []
for epoch in range(25):
    feature_batch_counter = 0
    for i, data in enumerate(loader, 0):
        if {test}:
            netD.eval()
            with torch.no_grad():
                if len(feature_batches) < 2:
                    feature_batches.append(data)
                eval_f = netD(feature_batches[feature_batch_counter])
            feature_batch_counter += 1
            continue
        netD.zero_grad()
        errD = netD(data).mean() - netD(netG(torch.randn(4, 4)).detach()).mean()
        errD.backward()
        optimizerD.step()
        netG.zero_grad()
        errG = -netD(netG(torch.randn(4, 4))).mean()
        errG.backward()
        optimizerG.step()
"""

ACCUMULATION = """
import torch
from torch import nn, optim

model = nn.Linear(8, 1)
optimizer = optim.Adam(model.parameters(), lr=2e-4)
loader = [torch.randn(4, 8) for _ in range(10)]
for epoch in range(25):
    for i, data in enumerate(loader):
        loss = model(data).mean() / 4
        loss.backward()
        if {test}:
            optimizer.step()
            optimizer.zero_grad()
"""


def _gl004(program: str, test: str) -> list[int]:
    source = textwrap.dedent(program).replace("{test}", test)
    return [d.span.line for d in check_source(source, "train.py", settings=Settings.default()) if d.code == "GL004"]


def test_a_test_of_the_epoch_index_inside_the_batch_loop_is_no_window() -> None:
    assert _gl004(GAN, "SAVE and epoch % EVERY == 0 and feature_batch_counter < 2") == []


def test_a_window_of_the_batch_index_inside_an_epoch_loop_is_still_read() -> None:
    assert _gl004(ACCUMULATION, "i % 4 == 0") == [12]
    assert _gl004(ACCUMULATION, "(i + 1) % 4 == 0") == []
