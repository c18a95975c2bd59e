"""A loss that reaches a model surely on one arm of a branch and only through an unread call on the other
(nemo-rl's policy: `logits = outputs.logits` if the output has them, else `self.model.lm_head(hidden)`, a part of a
model built out of sight that the analysis cannot read) is reached surely on the first arm's paths: a certain
witness. GL003 on its undivided micro-batches was `possible` only; it is certain now. A loss reached only through
the unread part stays possible."""

import textwrap

import pytest

from gradcheck_lint import check_source
from gradcheck_lint.config import Settings

LOOP = """
import torch
from transformers import AutoModelForCausalLM


def train(name, data, mbs):
    model = AutoModelForCausalLM.from_pretrained(name)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-5)
    for batch in data:
        optimizer.zero_grad()
        for mb in batch.make_microbatch_iterator(mbs):
            outputs = model(mb["input_ids"])
{logits}
            loss = torch.nn.functional.cross_entropy(logits, mb["labels"])
            loss.backward()
        optimizer.step()
"""

BOTH_ARMS = """\
            if not hasattr(outputs, "logits"):
                logits = model.lm_head(outputs.last_hidden_state)
            else:
                logits = outputs.logits"""
UNREAD_PART_ONLY = """\
            logits = model.lm_head(outputs.last_hidden_state)"""


@pytest.mark.parametrize("logits, certainty", [(BOTH_ARMS, "certain"), (UNREAD_PART_ONLY, "possible")])
def test_gl003_is_as_certain_as_its_surest_arm(logits: str, certainty: str) -> None:
    text = textwrap.dedent(LOOP.format(logits=logits))
    found = [d.certainty.value for d in check_source(text, "train.py", settings=Settings.default()) if d.code == "GL003"]
    assert found == [certainty]
