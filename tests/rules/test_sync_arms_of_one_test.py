"""GL006 "sync switched off only after the forward pass" rests on a forward that ran with sync on and a backward
under `no_sync()` on one path. When the forward and the backward are each chosen by the same test
(SimpleAICV's fixed loop: `if i % N == 0: loss = model(x)...` / `else: with model.no_sync(): loss = model(x)...`,
then the same test around the backward), the loss joined after the first `if` holds both forwards, yet the
backward in the `no_sync()` arm comes from the `no_sync()` forward only: the other arm's forward is ruled out
by the path's own assumption of that test."""

from support import lines_of

LOOP = """
import torch


def train(loader, model, criterion, optimizer, N):
    model = torch.nn.parallel.DistributedDataParallel(model)
    iter_index = 1
    for images, labels in loader:
{forward}
        loss = loss / N
        if iter_index % N == 0:
            loss.backward()
        else:
            with model.no_sync():
                loss.backward()
        if iter_index % N == 0:
            optimizer.step()
            optimizer.zero_grad()
        iter_index += 1
"""

BOTH_ARMS = """\
        if iter_index % N == 0:
            loss = criterion(model(images), labels)
        else:
            with model.no_sync():
                loss = criterion(model(images), labels)"""

SYNC_ON = """\
        loss = criterion(model(images), labels)"""


def _gl006(forward: str) -> list[int]:
    return lines_of("GL006", LOOP.format(forward=forward))


def test_forward_and_backward_chosen_by_one_test_agree() -> None:
    assert _gl006(BOTH_ARMS) == []


def test_a_forward_with_sync_on_before_a_no_sync_backward_is_still_late() -> None:
    assert _gl006(SYNC_ON) == [15]
