"""A loop over a dict's keys that rewrites each item from itself (`for k in stats: stats[k] = w[k] * stats[k] /
len(batches)`) rewrites every item: each is read anew with `stats[k]` standing for it, so the terms summed after
it are each divided by the count. AgentTuning's actor-critic update (lockbox 23, after its opening) was a false
certain GL003. Without the division the window's sum is still found; a body read twice divides no item twice."""

from __future__ import annotations

from gradcheck_lint.engine import analyse_text

SOURCE = '''
import torch
from torch import nn


def update(network, optimizer, batches, w):
    for x, y in batches:
        stats = {}
        out = network(x)
        stats["loss_pg"] = (out - y).pow(2).mean()
        stats["loss_en"] = out.abs().mean()
        for k in stats:
            stats[k] = REWRITE
        stats["loss"] = SUM
        stats["loss"].backward()
    optimizer.step()
    optimizer.zero_grad()


net = nn.Linear(4, 1)
update(net, torch.optim.SGD(net.parameters(), lr=0.1), [(torch.randn(8, 4), torch.randn(8, 1))] * 4,
       {"loss_pg": 1.0, "loss_en": 0.1})
'''


def gl003(rewrite: str, total: str) -> list[str]:
    text = SOURCE.replace("REWRITE", rewrite).replace("SUM", total)
    return [d.message for d in analyse_text(text, "train.py").diagnostics if d.code == "GL003"]


def test_every_item_divided_by_the_count_is_a_mean() -> None:
    assert gl003("w[k] * stats[k] / len(batches)", "sum(stats[k] for k in stats)") == []
    assert gl003("stats[k] / len(batches)", 'stats["loss_pg"] + stats["loss_en"]') == []


def test_items_weighted_but_not_divided_still_sum_the_window() -> None:
    found = gl003("w[k] * stats[k]", 'stats["loss_pg"] + stats["loss_en"]')
    assert len(found) == 1 and "twice" not in found[0]
