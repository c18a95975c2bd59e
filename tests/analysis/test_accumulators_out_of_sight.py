"""A graph appended to an attribute of an object no code read made (`self.trainer.train_loop.running_loss` of a
LightningModule: the framework sets `trainer`, and Lightning 1.0's `TensorRunningAccum.append` copies the value
under `no_grad` into a fixed window, cliport's two false certain GL008 of lockbox 24) rests on what that object is:
reported as possible. A list the module's own code made on `self` stays certain."""

from gradcheck_lint.engine import analyse_text

AGENT = """
import torch
from pytorch_lightning import LightningModule


class Book:
    def __init__(self):
        self.losses = []


class Agent(LightningModule):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Linear(4, 1)
        self.history = []
        self.log_book = Book()

    def training_step(self, batch, batch_idx):
        loss = self.net(batch).mean()
        self.{chain}.append(loss)
        return loss
"""


def certainty(chain: str) -> list[tuple[str, str]]:
    text = AGENT.format(chain=chain)
    return [(d.code, d.certainty.value) for d in analyse_text(text, "train.py").diagnostics if d.code == "GL008"]


def test_an_object_the_framework_sets_holds_an_unread_container() -> None:
    assert certainty("trainer.train_loop.running_loss") == [("GL008", "possible")]


def test_a_list_the_module_made_is_read() -> None:
    assert certainty("history") == [("GL008", "certain")]


def test_a_chain_through_an_object_the_module_made_is_read() -> None:
    assert certainty("log_book.losses") == [("GL008", "certain")]
