"""Name a model as the user's code names it (`critic`, `self.netG`, `model`), for the guard's messages.

Read only when a finding is worded, from the user's frames on the stack at that moment (the step or
the clear that showed it): a local or global variable holding the model, or an attribute of `self`
holding it. Nothing is read on a step that reports nothing.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from types import FrameType
from typing import Any

import torch

from .sites import _user_frame

_MAX_FRAMES = 6  # user frames walked up from the one that reports


def _user_frames(depth: int) -> Iterator[FrameType]:
    frame = _user_frame(sys._getframe(depth + 1))
    n = 0
    while frame is not None and n < _MAX_FRAMES:
        yield frame
        n += 1
        frame = _user_frame(frame.f_back)


def _named_modules(frame: FrameType) -> Iterator[tuple[str, torch.nn.Module]]:
    """The modules a frame names: its variables (locals; a module's globals), then `self`'s attributes."""
    scope = frame.f_locals
    for name, value in list(scope.items()):
        if isinstance(value, torch.nn.Module) and not name.startswith("__"):
            yield name, value
    owner = scope.get("self")
    if owner is not None and not isinstance(owner, torch.nn.Module):
        attrs = getattr(owner, "__dict__", None)
        if isinstance(attrs, dict):
            for name, value in list(attrs.items()):
                if isinstance(value, torch.nn.Module):
                    yield f"self.{name}", value
    if frame.f_globals is not scope:
        for name, value in list(frame.f_globals.items()):
            if isinstance(value, torch.nn.Module) and not name.startswith("__"):
                yield name, value


def module_name(module: Any, depth: int = 1) -> str | None:
    """The user's name of `module`, or of a wrapper holding it as `.module` (DDP), or None."""
    inner = getattr(module, "module", None)
    fallback = None
    for frame in _user_frames(depth):
        for name, value in _named_modules(frame):
            if value is module:
                return name
            if fallback is None and inner is not None and value is inner:
                fallback = name
    return fallback


def owner_name(param_ids: Iterable[int], depth: int = 1) -> str | None:
    """The user's name of the smallest model holding all these parameters (by id), or None."""
    wanted = set(param_ids)
    if not wanted:
        return None
    best: tuple[int, int, str] | None = None  # (parameters, frame distance, name)
    seen: set[int] = set()
    for distance, frame in enumerate(_user_frames(depth)):
        for name, value in _named_modules(frame):
            if id(value) in seen:
                continue
            seen.add(id(value))
            ids = {id(p) for p in value.parameters()}
            if wanted <= ids and (best is None or (len(ids), distance) < best[:2]):
                best = (len(ids), distance, name)
    return best[2] if best is not None else None
