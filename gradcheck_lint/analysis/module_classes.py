"""Which class of the project a submodule is an instance of.

A module stored on another (`self.loss = LPIPSWithDiscriminator(...)` in a VAE's `__init__`) becomes a part
of it: its value is a holder of the parent, `Holder(vae, ("loss",))`, and no longer the entity its
constructor made, so the class that entity was made from is not at hand when the code calls the part
(`self.loss(x, xrec, optimizer_idx=1)`). What that call returns depends on the part's own `forward` (a
VQGAN loss detaches the reconstruction on the discriminator's turn): this module keeps, per class and
attribute, the class of the module stored there, and walks a holder's path from the class of its root.

An attribute where two classes (or a module of unknown class) are ever stored has no class here: the
part's `forward` is then not read, as before.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from .definitions import ClassInfo
from .values import Holder

_MIXED = None  # an attribute where more than one class was stored


class ModuleClasses:
    """Classes of modules stored as attributes of modules of a class, and of the classes' stand-ins."""

    def __init__(self) -> None:
        self._stored: dict[tuple[str, str], ClassInfo | None] = {}
        self._stand_ins: dict[int, ClassInfo] = {}

    def note_stand_in(self, uid: int, cls: ClassInfo) -> None:
        """The uid of the `self` a method of `cls` runs on when it is read on its own."""
        self._stand_ins[uid] = cls

    def note_stored(self, owner: ClassInfo, attr: str, classes: Iterable[ClassInfo | None]) -> None:
        """A method of `owner` stored at `self.attr` a module made from these classes (None: of no class read)."""
        found = list(classes)
        made = set(map(id, found))
        key = (owner.name, attr)
        if len(made) != 1 or found[0] is None:
            self._stored[key] = _MIXED
            return
        known = self._stored.get(key, found[0])
        self._stored[key] = found[0] if known is found[0] else _MIXED

    def holds_module(self, owner: ClassInfo, attr: str, ancestors: Callable[[ClassInfo], Iterable[ClassInfo]]) -> bool:
        """Whether a method of `owner` (or of a base) stored a module at `self.attr`, of whatever class."""
        return any((c.name, attr) in self._stored for c in (owner, *ancestors(owner)))

    def of(self, holder: Holder, instance_class: dict[int, ClassInfo],
           ancestors: Callable[[ClassInfo], Iterable[ClassInfo]]) -> ClassInfo | None:
        """The class of the module `holder` stands for: its root's class, then the class stored at each
        attribute of its path (in the class or one of its bases); None when any step is unknown or mixed."""
        if holder.pseudo:
            return None
        info = instance_class.get(holder.uid) or self._stand_ins.get(holder.uid)
        for attr in holder.path:
            if info is None:
                return None
            family = (info, *ancestors(info))
            info = next((self._stored[(c.name, attr)] for c in family if (c.name, attr) in self._stored), None)
        return info
