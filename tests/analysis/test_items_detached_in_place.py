"""`for h in H: h.detach_()` detaches each item of `H` in place: the list keeps no graph afterwards.

GRU4Rec (lockbox 12, after its opening: it does not count there) carries its hidden states in a list the model's
`forward` writes into (`H[0] = E`, followed into the caller's list since `handed_containers`) and detaches them in
place at the top of every iteration; read as still holding the last iteration's graph, the next backward was a
possible GL009 (a graph built before the step changed the parameters)."""

from __future__ import annotations

from gradcheck_lint.engine import analyse_text


def found(text: str) -> list[tuple[str, int]]:
    return sorted((d.code, d.span.line) for d in analyse_text(text, "train.py").diagnostics)


# the real file as a statement-deleting reducer left it (names it never defines stay unknown), `H = []` put back
RECURRENT = """\
import torch
from torch import nn

class GRU4RecModel(nn.Module):

    def embed_gru(self, X, H, Y=None):
        E = self.GE(X, H)
        return (E, O, B)

    def embed(self, X, H, Y=None):
        if self.constrained_embedding:
            pass
        elif self.embedding > 0:
            pass
        else:
            E, O, B = self.embed_gru(X, H[0], Y)
        return (E, O, B)

    def hidden_step(self, X, H, training=False):
        for i in range(self.start, len(self.layers)):
            H[i] = X
        return X

    def forward(self, X, H, Y, training=False):
        E, O, B = self.embed(X, H, Y)
        if not (self.constrained_embedding or self.embedding):
            H[0] = E
        Xh = self.hidden_step(E, H, training=training)
        R = self.score_items(Xh, O, B)
        return R

class GRU4Rec:

    def fit(self, data, sample_cache_max_size=10000000, compatibility_mode=True, item_key='ItemId', session_key='SessionId', time_key='Time'):
        model = GRU4RecModel(self.data_iterator.n_items, self.layers, self.dropout_p_embed, self.dropout_p_hidden, self.embedding, self.constrained_embedding).to(self.device)
        self.model = model
        opt = IndexedAdagradM(self.model.parameters(), self.learning_rate, self.momentum)
        for epoch in range(self.n_epochs):
            H = []
            for i in range(len(self.layers)):
                H.append(torch.zeros((self.batch_size, self.layers[i]), dtype=torch.float32, requires_grad=False, device=self.device))
            for in_idx, out_idx in self.data_iterator(enable_neg_samples=self.n_sample > 0, reset_hook=reset_hook):
                DETACH
                self.model.zero_grad()
                R = self.model.forward(in_idx, H, out_idx, training=True)
                L = self.loss_function(R, out_idx, n_valid) / self.batch_size
                L.backward()
                opt.step()
"""


def test_a_list_whose_items_are_detached_in_place_keeps_no_graph() -> None:
    assert found(RECURRENT.replace("DETACH", "for h in H: h.detach_()")) == []
    # without it, the next backward runs through the hidden state built before the last step
    assert found(RECURRENT.replace("DETACH", "pass")) == [("GL009", 47)]
