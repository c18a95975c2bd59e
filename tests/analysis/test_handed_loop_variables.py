"""A buffer a loop binds afresh in each iteration holds one iteration's graph, whether the loop writes it or a function
it calls does through a parameter: iCaRL's `compute_loss(outputs, labels, old_outputs)` writes `labels[:, old] =
sig(old_outputs[:, old])` into the `labels` that `for images, labels, _ in loader:` binds anew (lockbox 22: a false
certain GL008, after its opening). The same helper handed a buffer made once, before the loops, keeps every
iteration's graph."""

from __future__ import annotations

from gradcheck_lint.engine import analyse_text

SOURCE = '''
import torch
from torch import nn

DEVICE = "cpu"
seen_classes = []


def compute_loss(outputs, labels, old_outputs=None):
    sig = nn.Sigmoid()
    if old_outputs is None:
        one_hot = torch.eye(100)[labels].to(DEVICE)
        loss = nn.functional.binary_cross_entropy_with_logits(outputs, one_hot)
    if old_outputs is not None:
        one_hot = torch.eye(100)[labels].to(DEVICE)
        new = seen_classes[-10:]
        old = seen_classes[:-10]
        class_loss = nn.functional.cross_entropy(outputs[:, new], one_hot[:, new].argmax(1))
        labels[:, old] = sig(old_outputs[:, old])
        loss = class_loss + nn.functional.l1_loss(outputs[:, old], one_hot[:, old])
    return loss


net = nn.Linear(8, 100)
soft = torch.zeros(4, 100)
old_outputs = None
task = 1
for current_classes in [list(range(10)), list(range(10, 20))]:
    optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
    seen_classes += current_classes
    for epoch in range(2):
        for images, labels, _ in [(torch.randn(4, 8), torch.randint(0, 10, (4,)), None)]:
            images = images.to(DEVICE)
            labels = labels.to(DEVICE)
            optimizer.zero_grad()
            if task >= 2:
                old_net = torch.load("resNet_task" + str(task - 1) + ".pt").train(False)
                old_outputs = old_net(images)
            outputs = net(images)
            loss = compute_loss(outputs, HANDED)
            loss.backward()
            optimizer.step()
    task += 1
'''


def gl008(text: str) -> list[int]:
    return [d.span.line for d in analyse_text(text, "train.py").diagnostics if d.code == "GL008"]


def test_a_loop_variable_handed_to_a_helper_that_writes_into_it_holds_one_iteration() -> None:
    assert gl008(SOURCE.replace("HANDED", "labels, old_outputs")) == []
    assert gl008(SOURCE.replace("HANDED", "old_outputs=old_outputs, labels=labels")) == []


def test_a_buffer_made_once_and_handed_to_the_helper_keeps_every_iteration() -> None:
    """(The graph kept is the old model's: `nn.Sigmoid()` holds no parameter and adds none, so the old model is one
    whose forward is known here, not the object of `torch.load`.)"""
    text = SOURCE.replace("HANDED", "soft, old_outputs").replace(
        'torch.load("resNet_task" + str(task - 1) + ".pt").train(False)', "nn.Linear(8, 100)")
    assert gl008(text) == [next(n for n, line in enumerate(text.splitlines(), 1) if "labels[:, old] =" in line)]


def test_the_loop_variable_written_by_the_loop_itself_holds_one_iteration() -> None:
    text = SOURCE.replace("HANDED", "labels, old_outputs").replace(
        "            outputs = net(images)\n",
        "            outputs = net(images)\n            if old_outputs is not None:\n"
        "                labels[:, :10] = torch.sigmoid(old_outputs[:, :10])\n")
    assert gl008(text) == []


def test_an_item_of_an_object_the_loop_makes_afresh_holds_one_iteration() -> None:
    # (FrozenBiLM's `mask_tokens(encoded["input_ids"], tokenizer)`, `encoded` made by the tokenizer in each iteration)
    text = SOURCE.replace("HANDED", 'batch["labels"], old_outputs').replace(
        "            labels = labels.to(DEVICE)\n", '            labels = labels.to(DEVICE)\n            batch = {"labels": labels}\n')
    assert gl008(text) == []
