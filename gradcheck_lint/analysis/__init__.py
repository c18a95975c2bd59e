"""The shared semantic model of training steps, computed once per file.

`TrainingModel` is imported on first use, so that `analysis.apimodels` (the catalogue the textual
prefilter reads) can be imported without the interpreter.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .model import TrainingModel

__all__ = ["TrainingModel"]


def __getattr__(name: str) -> Any:
    if name == "TrainingModel":
        from .model import TrainingModel

        return TrainingModel
    raise AttributeError(name)
