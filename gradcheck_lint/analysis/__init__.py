"""The shared semantic model of training steps, computed once per file."""

from .model import TrainingModel

__all__ = ["TrainingModel"]
