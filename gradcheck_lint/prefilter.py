"""The cheap textual test run before any parsing; imports nothing heavy (the flake8 plugin relies on it).

Every rule reports at an optimizer step and about gradients a backward pass wrote, so a file the
analysis can flag holds both events, and each is spelt with one of these words:

- a backward pass: `loss.backward()`, `accelerator.backward(loss)`, `scaler.scale(loss).backward()`,
  `self.manual_backward(loss)`, `torch.autograd.backward(...)` (also when imported under another name:
  the import still names it);
- a step: `opt.step()`, `scaler.step(opt)`, `opt.step(closure)`, `xm.optimizer_step(opt)`.

A file missing either word is never parsed. `tests/test_prefilter.py` proves on every fixture, on
generated training programs and on mutants of them that no file the analysis flags is dropped.
"""

from __future__ import annotations

REQUIRED_WORDS = ("backward", "step")


def might_train(text: str) -> bool:
    """Cheap textual test: can this file contain a training step at all?"""
    return "backward" in text and "step" in text
