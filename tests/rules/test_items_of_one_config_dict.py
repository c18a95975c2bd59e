"""GL003: two items of one configuration dict are two quantities. pi-GAN weights a penalty by
`metadata["pos_lambda"]` while its window is `range(metadata["batch_split"])`: read as one quantity (`metadata`),
the weight was "the number of micro-batches the loss is multiplied by". The loss is in fact not divided by the
window, which is what is reported now; a loss multiplied by the window's own item still is that finding."""

import textwrap

from gradcheck_lint import check_source
from gradcheck_lint.config import Settings

LOOP = """
import torch

generator = torch.nn.Linear(4, 4)
optimizer_G = torch.optim.Adam(generator.parameters())
metadata = {{"batch_split": 2, "pos_lambda": 15.0}}
for z in [torch.randn(8, 4)] * 4:
    split_batch_size = z.shape[0] // metadata["batch_split"]
    optimizer_G.zero_grad()
    for split in range(metadata["batch_split"]):
        out = generator(z[split * split_batch_size:(split + 1) * split_batch_size])
        g_loss = out.pow(2).mean() + out.abs().mean() * metadata["{key}"]
        g_loss.backward()
    optimizer_G.step()
"""


def _gl003(key: str) -> list[str]:
    text = textwrap.dedent(LOOP.format(key=key))
    return [d.message for d in check_source(text, "pigan.py", settings=Settings.default()) if d.code == "GL003"]


def test_a_weight_of_the_same_dict_is_not_the_window() -> None:
    (message,) = _gl003("pos_lambda")
    assert 'is not divided by `metadata["batch_split"]`' in message


def test_the_windows_own_item_as_a_factor_is_still_a_multiplication() -> None:
    (message,) = _gl003("batch_split")
    assert 'multiplied by `metadata["batch_split"]`' in message
