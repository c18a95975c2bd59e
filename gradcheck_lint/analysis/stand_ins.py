"""The attributes of a class's stand-in `self`, moved onto the instance a method runs on.

`Objects.class_self_env` runs a module class's `__init__` once on a stand-in `self` (one entity per class), so
its submodules are holders of that stand-in: `Holder(stand_in, ("act",))`. A method run on an instance the
analysis made (`Net(...)`, whose `__init__` did not set everything in sight: a base `__init__` of another file
past the reading budget) is seeded with those attributes; left on the stand-in, they are children of no
instance. The instance's forward then fills gradients its `model.zero_grad()` never reaches, and its optimizer
owns them (diffpool's `self.act = nn.ReLU()`, filled through `pred_model` on one pass of a loop building the
model anew, then stepped stale on the next: a certain GL001). Moved, they are the instance's children.
"""

from __future__ import annotations

from dataclasses import replace

from .values import Holder, Value


def moved(env: dict[str, Value], stand_in: int, roots: frozenset[Holder]) -> dict[str, Value]:
    """`env` with every holder of the stand-in `stand_in` moved under each of `roots` (the instance's own holders)."""
    if not roots:
        return env
    return {k: _moved(v, stand_in, roots) for k, v in env.items()}


def _moved(value: Value, stand_in: int, roots: frozenset[Holder]) -> Value:
    def holders(hs: frozenset[Holder]) -> frozenset[Holder]:
        if not any(h.uid == stand_in for h in hs):
            return hs
        out: set[Holder] = set()
        for h in hs:
            if h.uid == stand_in:
                out |= {Holder(r.uid, r.path + h.path, h.pseudo) for r in roots}
            else:
                out.add(h)
        return frozenset(out)

    built = frozenset((h2, gens, site) for h, gens, site in value.built
                      for h2 in holders(frozenset({h}))) if value.built else value.built
    items = tuple((k, _moved(v, stand_in, roots)) for k, v in value.items)
    new = replace(value, modules=holders(value.modules), params=holders(value.params), reach=holders(value.reach),
                  vague=holders(value.vague), built=built, items=items)
    return value if new == value else new
