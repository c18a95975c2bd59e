"""The cheap textual test run before any parsing; imports nothing heavy (the flake8 plugin relies on it).

Every rule reports at an optimizer step and about gradients a backward pass wrote, so a file the
analysis can flag calls both, and each call is spelt with one of these words right before its `(`:

- a backward pass: `loss.backward()`, `accelerator.backward(loss)`, `scaler.scale(loss).backward()`,
  `self.manual_backward(loss)`, `torch.autograd.backward(...)`, or a name bound by importing it
  (`from torch.autograd import backward as bw`: then the import names it);
- a step: `opt.step()`, `scaler.step(opt)`, `opt.step(closure)`, `xm.optimizer_step(opt)`.

Spaces, line continuations and closing parentheses may stand between the word and the call's `(`
(`(loss.backward)()`), as the parser allows. A file with no such call of either kind is never parsed.
`tests/test_prefilter.py` proves on every fixture, every rule example, generated training programs
and mutants of them that no file the analysis flags is dropped.
"""

from __future__ import annotations

import re

REQUIRED_WORDS = ("backward", "step")

# The call itself, or an import naming the function (`from torch.autograd import (grad, backward as bw)`).
_BACKWARD = re.compile(r"backward[\s\\)]*\(|^[ \t]*from[ \t]+[\w.]+[ \t]+import[ \t]*(?:\([^)]*|(?:[^\n]|\\\n)*)\bbackward\b",
                       re.MULTILINE)
_STEP = re.compile(r"step[\s\\)]*\(")


def might_train(text: str) -> bool:
    """Cheap textual test: can this file contain a training step at all?"""
    # The plain substring tests first: most files fail them, and they are faster than any regex.
    return "backward" in text and "step" in text and _STEP.search(text) is not None and _BACKWARD.search(text) is not None
