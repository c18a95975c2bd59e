"""A counter incremented at the top of the loop body (`self.current_step += 1`) is 1 on the first micro-batch, also
when an inner loop runs between the increment and the test (`for k, v in data.items(): data[k] = v.to(device)`):
a new iteration of the inner loop is no new iteration of the loop around it (SOICT_hackathon's trainers, lockbox
21: a false certain GL004 whose "safe" fix would have shifted correct windows by one)."""

import textwrap

from gradcheck_lint import check_source
from gradcheck_lint.config import Settings

TRAINER = """import torch


class Trainer:
    def __init__(self, model, loader, update_freq):
        self.model = model
        self.loader = loader
        self.update_freq = update_freq
        self.optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
        self.current_step = 0

    def train_epoch(self):
        for data in self.loader:
{before}            for k, v in data.items():
                data[k] = v.to("cuda")
            loss = self.model(**data)["loss"] / self.update_freq
            loss.backward()
            if self.current_step % self.update_freq == 0:
                self.optimizer.step()
                self.optimizer.zero_grad()
{after}"""

INCREMENT = "            self.current_step += 1\n"


def _gl004(before: str, after: str) -> list[int]:
    source = textwrap.dedent(TRAINER).replace("{before}", before).replace("{after}", after)
    found = check_source(source, "trainer.py", settings=Settings.default())
    return [d.span.line for d in found if d.code == "GL004"]


def test_an_increment_before_an_inner_loop_still_counts_at_the_test() -> None:
    assert _gl004(INCREMENT, "") == []


def test_an_increment_after_the_test_is_still_found() -> None:
    assert _gl004("", INCREMENT) == [18]


def test_a_local_counter_alike() -> None:
    source = (textwrap.dedent(TRAINER).replace("{before}", "            step += 1\n").replace("{after}", "")
              .replace("self.current_step %", "step %").replace("        for data in self.loader:",
                                                                  "        step = 0\n        for data in self.loader:"))
    assert [d.span.line for d in check_source(source, "trainer.py", settings=Settings.default()) if d.code == "GL004"] == []
