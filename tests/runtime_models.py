"""Small real models for the runtime tests and benchmarks: a CNN and a transformer from torch.nn."""

from __future__ import annotations

import torch
from torch import nn


class SmallCNN(nn.Module):
    def __init__(self, classes: int = 10) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
        )
        self.head = nn.Linear(32, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(x).flatten(1))


class TinyTransformer(nn.Module):
    def __init__(self, vocab: int = 100, dim: int = 32, heads: int = 4, layers: int = 2, dropout: float = 0.0) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        layer = nn.TransformerEncoderLayer(dim, heads, dim * 2, dropout=dropout, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = nn.Linear(dim, vocab)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.head(self.encoder(self.embed(tokens)))


def cnn_batch(n: int = 8) -> tuple[torch.Tensor, torch.Tensor]:
    return torch.randn(n, 3, 8, 8), torch.randint(0, 10, (n,))


def token_batch(n: int = 8, length: int = 12, vocab: int = 100) -> tuple[torch.Tensor, torch.Tensor]:
    return torch.randint(0, vocab, (n, length)), torch.randint(0, vocab, (n, length))
