"""A buffer written only slot by slot through an index each run of a loop starts again from a literal holds one run's
items, not one more with every run: AWD-LSTM's `start, end, s_id = 0, bs, 0`, then `while start < batch_size:
hidden[s_id] = repackage_hidden(hidden[s_id]); log_prob, hidden[s_id] = model(x, hidden[s_id]); ... s_id += 1`, the
step after the micro-batch loop. The next batch writes the same slots, dropping the graphs they held (lockbox 22's
AsquaredM: a false certain GL008). An index that goes on counting across the runs, or a buffer also appended to,
still grows."""

from __future__ import annotations

from gradcheck_lint.engine import analyse_text

SOURCE = '''
import torch
from torch import nn


class LM(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.LSTM(8, 8)
        self.out = nn.Linear(8, 4)

    def forward(self, x, hidden):
        h, hidden = self.rnn(x, hidden)
        return self.out(h).log_softmax(-1), hidden


def repackage_hidden(h):
    if isinstance(h, torch.Tensor):
        return h.detach()
    return tuple(repackage_hidden(v) for v in h)


def train(data, targets, batch_size, small_batch_size):
    model = LM()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    hidden = [None for _ in range(batch_size // small_batch_size)]
    s_id = 0
    i = 0
    while i < len(data):
        optimizer.zero_grad()
        RESTART
        while start < batch_size:
            x, y = data[i][:, start:end], targets[i][:, start:end]
            if hidden[s_id] is not None:
                hidden[s_id] = repackage_hidden(hidden[s_id])
            log_prob, hidden[s_id] = model(x, hidden[s_id])
            loss = nn.functional.nll_loss(log_prob.view(-1, 4), y.reshape(-1)) * small_batch_size / batch_size
            loss.backward()
            s_id += 1
            start = end
            end = start + small_batch_size
        optimizer.step()
        i += 1
'''


def gl008(text: str) -> list[int]:
    return [d.span.line for d in analyse_text(text, "train.py").diagnostics if d.code == "GL008"]


def test_slots_written_again_from_a_restarted_index_hold_one_batch() -> None:
    assert gl008(SOURCE.replace("RESTART", "start, end, s_id = 0, small_batch_size, 0")) == []
    assert gl008(SOURCE.replace("RESTART", "s_id = 0\n        start, end = 0, small_batch_size")) == []


def test_an_index_that_goes_on_counting_keeps_every_batch() -> None:
    text = SOURCE.replace("RESTART", "start, end = 0, small_batch_size")
    assert gl008(text) == [next(n for n, line in enumerate(text.splitlines(), 1) if "log_prob, hidden[s_id] =" in line)]


def test_a_buffer_also_appended_to_still_grows() -> None:
    text = SOURCE.replace("RESTART", "start, end, s_id = 0, small_batch_size, 0").replace(
        "        optimizer.step()\n", "        hidden.append(log_prob)\n        optimizer.step()\n")
    assert gl008(text) != []
