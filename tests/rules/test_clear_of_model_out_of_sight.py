"""GL001 "nothing clears the optimizer's gradients" is a claim about every clear of the loop: where one
of them reaches a model whose identity was not seen made (the result of a helper the analysis cannot
read), that this model is not the optimizer's is an assumption, and the finding is only possible
(pytorch-pruning's fine-tuner: `model = prune_vgg16_conv_layer(model, ...)` returns the model it was
handed, whose `zero_grad()` then clears the optimizer's parameters)."""

import textwrap

from gradcheck_lint import check_source
from gradcheck_lint.config import Settings
from gradcheck_lint.diagnostics import Certainty

TUNER = """
import torch
from surgery import shrink


class Tuner:
    def __init__(self, model, loader):
        self.model = model
        self.loader = loader

    def fit(self, optimizer):
        for x, y in self.loader:
            self.model.zero_grad()
            torch.nn.functional.mse_loss(self.model(x), y).backward()
            optimizer.step()

    def shrink_and_fit(self):
        self.model = {made}
        self.fit(torch.optim.SGD(model.parameters(), lr=0.1))


if __name__ == "__main__":
    model = torch.nn.Linear(4, 1)
    tuner = Tuner(model, [])
    tuner.fit(torch.optim.SGD(model.parameters(), lr=0.1))
    tuner.shrink_and_fit()
"""


def _gl001(made: str) -> list[tuple[int, Certainty]]:
    found = check_source(textwrap.dedent(TUNER.format(made=made)), "tune.py", settings=Settings.default())
    return [(d.span.line, d.certainty) for d in found if d.code == "GL001"]


def test_a_model_returned_by_an_unread_helper_may_be_the_optimizers() -> None:
    assert _gl001("shrink(self.model)") == [(15, Certainty.POSSIBLE)]


def test_a_model_made_in_sight_is_known_to_be_another() -> None:
    # a new module: its zero_grad() certainly leaves the first model's gradients in place
    assert _gl001("torch.nn.Linear(4, 1)") == [(15, Certainty.CERTAIN)]


def test_the_model_itself_is_cleared() -> None:
    assert _gl001("self.model") == []
