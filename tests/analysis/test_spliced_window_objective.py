"""A micro-batch loop whose every pass rebuilds the whole window's input, the cached features of all its
micro-batches with the current one recomputed live (`cached[:j] + [live] + cached[j + 1:]`: open_clip's
feature-caching accumulation, GradCache), backpropagates the window's own objective each time with one part
differentiable: the passes' gradients add up to that objective's gradient, and dividing each by N would
make it N times too small. Lockbox 17's daclip GL003 (a certain false alarm) had that shape.

The loop still runs N backward passes through a DDP model, so the missing `no_sync` (GL006) stays."""

from __future__ import annotations

import pytest

from gradcheck_lint.engine import analyse_text


def codes(text: str) -> set[str]:
    return {d.code for d in analyse_text(text, "train.py").diagnostics}


CACHED = """\
import torch
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

encoder = DDP(build_encoder())
optimizer = torch.optim.AdamW(encoder.parameters(), lr=1e-4)

def contrastive(a, b):
    logits = a @ b.t()
    labels = torch.arange(a.shape[0])
    return F.cross_entropy(logits, labels)

def train(loader, chunks):
    cached_a, cached_b, pairs = [], [], []
    for step, (x, y) in enumerate(loader):
        with torch.no_grad():
            fa, fb = encoder(x, y)
        cached_a.append(fa)
        cached_b.append(fb)
        pairs.append((x, y))
        if (step + 1) % chunks != 0:
            continue
        optimizer.zero_grad()
        for j in range(chunks):
            xa, xb = pairs[j]
            la, lb = encoder(xa, xb)
            {inputs}
            loss = contrastive(a, b)
            loss.backward()
        optimizer.step()
        cached_a, cached_b, pairs = [], [], []
"""

SPLICED = ("a = torch.cat(cached_a[:j] + [la] + cached_a[j + 1:])\n"
           "            b = torch.cat(cached_b[:j] + [lb] + cached_b[j + 1:])")
# each pass's loss reads its own micro-batch only: an accumulation window whose sum is N times the mean
OWN = "a, b = la, lb"
# the whole window, but nothing spliced: the cached features are no part of this loop's objective's split
WHOLE_BEFORE_ONLY = ("a = torch.cat(cached_a[:j] + [la])\n"
                     "            b = torch.cat(cached_b[:j] + [lb])")


@pytest.mark.parametrize(("inputs", "gl003"), [(SPLICED, False), (OWN, True), (WHOLE_BEFORE_ONLY, True)])
def test_spliced_passes_are_one_objective(inputs: str, gl003: bool) -> None:
    found = codes(CACHED.format(inputs=inputs))
    assert ("GL003" in found) is gl003
    assert "GL006" in found  # N passes through DDP without no_sync, whatever the objective


def test_splice_around_another_index_is_no_window_objective() -> None:
    """`cached[:k] ... cached[j + 1:]` around two different indices is no splice of the pass's own part."""
    text = CACHED.format(inputs=SPLICED.replace("cached_a[:j]", "cached_a[:step]").replace("cached_b[:j]", "cached_b[:step]"))
    assert "GL003" in codes(text)
