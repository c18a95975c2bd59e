"""GL003: a micro-batch loop over a list cut into `n` chunks in another method (DL-Art-School's SRGAN:
`self.var_L = torch.chunk(data["LQ"], chunks=self.mega_batch_factor, dim=0)` in `feed_data`, then
`for var_L, var_ref in zip(self.var_L, self.var_ref):` in `optimize_parameters`) has a window of `n`: a loss
divided by `self.mega_batch_factor` is divided by the window, although the name reads like a batch size."""

import textwrap

from gradcheck_lint import check_source
from gradcheck_lint.config import Settings

MODEL = """
import torch


class Model:
    def __init__(self, netD, opt):
        self.netD = netD
        self.mega_batch_factor = opt["mega_batch_factor"]
        self.optimizer_D = torch.optim.Adam(netD.parameters())
        self.cri_gan = torch.nn.BCEWithLogitsLoss()

    def feed_data(self, data):
        self.var_L = torch.chunk(data["LQ"], chunks=self.mega_batch_factor, dim=0)
        self.var_ref = [t for t in torch.chunk(data["REF"], chunks=self.mega_batch_factor, dim=0)]

    def optimize_parameters(self, step):
        self.optimizer_D.zero_grad()
        for var_L, var_ref in zip(self.var_L, self.var_ref):
            pred_d_real = self.netD(var_ref)
            l_d_real = self.cri_gan(pred_d_real, torch.ones_like(pred_d_real)){divided}
            l_d_real.backward()
        self.optimizer_D.step()
"""


def _gl003(divided: str) -> list[int]:
    text = textwrap.dedent(MODEL.format(divided=divided))
    return [d.span.line for d in check_source(text, "srgan.py", settings=Settings.default()) if d.code == "GL003"]


def test_divided_by_the_number_of_chunks_whatever_its_name() -> None:
    assert _gl003(" / self.mega_batch_factor") == []


def test_divided_by_the_length_of_the_chunks() -> None:
    assert _gl003(" / len(self.var_L)") == []


def test_not_divided_is_still_reported() -> None:
    assert _gl003("") == [21]
