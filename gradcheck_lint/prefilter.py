"""The cheap textual test run before any parsing; imports nothing heavy (the flake8 plugin relies on it)."""

from __future__ import annotations

import re

# Every way to run a backward pass contains this word; files without it hold no training step.
_PREFILTER = re.compile(r"backward")


def might_train(text: str) -> bool:
    """Cheap textual test: can this file contain a training step at all?"""
    return _PREFILTER.search(text) is not None
