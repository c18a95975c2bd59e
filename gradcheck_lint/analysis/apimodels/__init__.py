"""What training APIs do to gradients, as data: the catalogue of API models.

Each framework has one model file in this package (`torch.toml`, `accelerate.toml`, ...): rows that
map a qualified name, or an API type plus a method, to effects (backward, step, clear, gate, sync,
unscale, clip, freeze, detach, construct, ...; see `schema.EFFECTS`). Users add rows for their own
trainers in the `[tool.gradlint.models]` table of `pyproject.toml`, with the same schema; their rows
come first. The interpreter asks the catalogue and holds no framework names of its own.

Lookups resolve qualified names first (`import torch.optim as O` makes `O.Adam` `torch.optim.Adam`);
name heuristics (a receiver called `accelerator`, a class called `FusedAdam`) come last and the
interpreter marks what they decide as less certain.
"""

from __future__ import annotations

import functools
import os
import re
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

from .schema import (
    EFFECTS,
    KINDS,
    ApiType,
    ArgRef,
    AttributeModel,
    CallModel,
    Effect,
    Heuristic,
    Hook,
    MethodModel,
    ModelError,
    ModelFile,
    parse_model_file,
)

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

__all__ = [
    "ApiType", "ArgRef", "AttributeModel", "CallModel", "Catalogue", "EFFECTS", "Effect", "Heuristic", "Hook",
    "KINDS", "MethodModel", "ModelError", "ModelFile", "builtin_files", "catalogue_for", "parse_model_file",
]

_HERE = os.path.dirname(os.path.abspath(__file__))


def _pattern(name: str) -> re.Pattern[str]:
    """`torch.optim.*` -> one more dotted segment; `torch.nn.*Loss` -> a segment ending in Loss;
    `torch.**` -> any number of segments."""
    segments = [".+" if seg == "**" else "[^.]*".join(re.escape(p) for p in seg.split("*")) for seg in name.split(".")]
    return re.compile(r"\.".join(segments) + r"\Z")


@dataclass(frozen=True)
class _Wildcard:
    pattern: re.Pattern[str]
    specificity: int
    model: CallModel


@dataclass(eq=False)
class Catalogue:
    """The API models in force for one analysis: the built-in files, with the user's rows first."""

    files: tuple[ModelFile, ...]
    _types: dict[str, ApiType] = field(default_factory=dict)
    _canonical: dict[str, str] = field(default_factory=dict)
    _calls: dict[str, CallModel] = field(default_factory=dict)
    _wildcards: list[_Wildcard] = field(default_factory=list)
    _methods: dict[tuple[str, str], MethodModel] = field(default_factory=dict)
    _attributes: dict[tuple[str, str], AttributeModel] = field(default_factory=dict)
    _hooks: list[Hook] = field(default_factory=list)
    _methods_by_name: dict[str, list[MethodModel]] = field(default_factory=dict)
    _receivers: list[Heuristic] = field(default_factory=list)
    _callees: list[Heuristic] = field(default_factory=list)
    _bare: dict[str, str] = field(default_factory=dict)
    _packages: frozenset[str] = frozenset()
    _foreign: frozenset[str] = frozenset()
    _named_by_effect: dict[tuple[tuple[str, ...], bool], frozenset[str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # Earlier files win: the user's rows are given first and replace built-in rows of the same name.
        for f in self.files:
            for t in f.types:
                if t.name not in self._types:
                    self._types[t.name] = t
                for name in (t.name, *t.aliases):
                    self._canonical.setdefault(name, t.name)
                if t.bare:
                    self._bare.setdefault(t.bare, t.name)
        self._packages = frozenset(p for f in self.files for p in f.packages)
        self._foreign = frozenset(p for f in self.files for p in f.foreign_packages)
        for f in self.files:
            for c in f.calls:
                if "*" in c.name:
                    self._wildcards.append(_Wildcard(_pattern(c.name), len(c.name.replace("*", "")), c))
                else:
                    self._calls.setdefault(c.name, c)
            for m in f.methods:
                self._methods.setdefault((self.canonical(m.type), m.name), m)
                self._methods_by_name.setdefault(m.name, []).append(m)
            for a in f.attributes:
                self._attributes.setdefault((self.canonical(a.type), a.name), a)
            self._hooks.extend(f.hooks)
            for h in f.heuristics:
                (self._receivers if h.target == "receiver" else self._callees).append(h)
        # the most specific pattern first; among equals, the earlier row
        self._wildcards.sort(key=lambda w: -w.specificity)

    def window_keywords(self, qualified: str) -> tuple[str, ...]:
        """The keywords by which the framework's constructor `qualified` is given its accumulation window
        (`accelerate.Accelerator(gradient_accumulation_steps=...)`): those of its `construct` row's `window`."""
        row = self.call(qualified)
        return tuple(k for e in (row.effects if row is not None else ()) if e.kind == "construct"
                     for key, ref in e.refs if key == "window" for k in ref.keywords)

    def switch_argument(self, qualified: str) -> ArgRef | None:
        """Where the constructor `qualified` takes the setting that switches its object off
        (`torch.amp.GradScaler(enabled=...)`): its `construct` row's `enabled`; None when it takes none."""
        row = self.call(qualified)
        return next((ref for e in (row.effects if row is not None else ()) if e.kind == "construct"
                     for key, ref in e.refs if key == "enabled"), None)

    # -- types
    def canonical(self, name: str) -> str:
        """The catalogue's name for a type known under `name` (an alias or a re-export), else `name`."""
        return self._canonical.get(name, name)

    def type(self, name: str) -> ApiType | None:
        return self._types.get(self.canonical(name))

    def lineage(self, name: str) -> Iterator[str]:
        """The type and its bases, nearest first (each once)."""
        seen: set[str] = set()
        todo = [self.canonical(name)]
        while todo:
            current = todo.pop(0)
            if current in seen:
                continue
            seen.add(current)
            yield current
            t = self._types.get(current)
            if t is not None:
                todo.extend(self.canonical(b) for b in t.bases)

    def is_a(self, name: str, ancestor: str) -> bool:
        """Whether `name` is `ancestor` or extends it."""
        target = self.canonical(ancestor)
        return any(t == target for t in self.lineage(name))

    def bare_type(self, name: str) -> str | None:
        """The type a class base named `name` with no import stands for (`LightningModule` after
        `from pytorch_lightning import *`), by the rows' `bare` names; None if none is named so."""
        return self._bare.get(name)

    def is_package(self, name: str) -> bool:
        """`name` is a top-level package of a PyTorch framework (a model file's `packages`: `torch`)."""
        return name in self._packages

    def version_floor(self, package: str) -> tuple[int, ...]:
        """The oldest release of a framework's top-level package whose code is read as live (a model file's
        `version_floor`); () when the catalogue names none."""
        return next((f.version_floor for f in self.files if package in f.packages and f.version_floor), ())

    def another_framework(self, imported: Iterable[str]) -> bool:
        """Whether a source file importing these qualified names is code of another deep-learning
        framework (MXNet, TensorFlow, JAX...): it imports one of the `foreign_packages` and none of the
        `packages` of a PyTorch framework (DeepLearningExamples keeps trainers of several side by side)."""
        names = list(imported)
        return any(_under(n, self._foreign) for n in names) and not any(_under(n, self._packages) for n in names)

    def constructs(self, effects: Iterable[Effect], kind: str) -> bool:
        """These effects build an object of a type of this kind (`optimizer`: `torch.optim.SGD(...)`)."""
        return any(e.kind == "construct" and self.kind(self.canonical(str(e.value("type")))) == kind for e in effects)

    def kind(self, name: str) -> str | None:
        for t in self.lineage(name):
            found = self._types.get(t)
            if found is not None:
                return found.kind
        return None

    def never_equal(self, name: str) -> frozenset[str]:
        """The types of Python literals an object of type `name` (or of a type it extends) never equals."""
        return frozenset(v for t in self.lineage(name) if (found := self._types.get(t)) for v in found.never_equal)

    def lacks(self, name: str, attr: str) -> bool:
        """Whether reading public attribute `attr` of an object of type `name` raises AttributeError: the type
        is `closed` and neither it nor its bases have such a member (nor a method or attribute row of it)."""
        lineage = list(self.lineage(name))
        own = self._types.get(lineage[0]) if lineage else None
        if own is None or not own.closed or attr.startswith("_"):
            return False
        if any(attr in found.members for t in lineage if (found := self._types.get(t)) is not None):
            return False
        return self.method(name, attr) is None and self.attribute(name, attr) is None

    # -- rows
    @functools.lru_cache(maxsize=4096)  # noqa: B019 - one catalogue per configuration, kept for the process
    def call(self, qualified: str) -> CallModel | None:
        """The model of calling `qualified` (a function or a class), exact names before patterns."""
        exact = self._calls.get(qualified)
        if exact is not None:
            return exact
        for w in self._wildcards:
            if w.pattern.match(qualified):
                return w.model
        return None

    def method(self, type_name: str, name: str) -> MethodModel | None:
        """The model of `type_name.name(...)`, inherited from the type's bases."""
        for t in self.lineage(type_name):
            found = self._methods.get((t, name))
            if found is not None:
                return found
        return None

    def clearing_method(self, type_name: str) -> str | None:
        """The name of a method of the type (or of its bases) that clears its own gradients (`zero_grad_buffer`
        of Megatron's DistributedDataParallel, `zero_grad` of a module), nearest type first."""
        for t in self.lineage(type_name):
            for (owner, name), row in sorted(self._methods.items()):
                targets = [e.ref("target") for e in row.effects if e.kind == "clear"]
                if owner == t and any(r is not None and r.receiver for r in targets):
                    return name
        return None

    def methods_named(self, name: str) -> list[MethodModel]:
        """Every type's method of this name (a cheap test before resolving a receiver's type)."""
        return self._methods_by_name.get(name, [])

    def named_by_effect(self, *kinds: str, clears: bool = False) -> frozenset[str]:
        """The method names, and the last names of called functions, whose rows have an effect of one of
        `kinds` (`step` -> `step`, `optimizer_step`, `update_params`); with `clears`, also a step that
        clears (`update_params`). The names a call of unknown receiver is a training event by."""
        return self._last_names((kinds, clears),
                                lambda e: e.kind in kinds or clears and e.kind == "step" and bool(e.value("clears")))

    @functools.lru_cache(maxsize=4096)  # noqa: B019 - one catalogue per configuration, kept for the process
    def wraps_for_data_parallel(self, qualified: str) -> bool:
        """Calling `qualified` makes a data-parallel wrapper of a model: it constructs a type whose gradient sync can be
        switched (`DistributedDataParallel(model)`, `FSDP(model)`), or hands back the model wrapped on several
        processes (a `returns` effect with `data_parallel`)."""
        row = self.call(qualified)
        if row is None:
            return False
        for e in row.effects:
            if e.kind == "returns" and e.value("data_parallel"):
                return True
            if e.kind == "construct" and self.switches_sync(str(e.value("type"))):
                return True
        return False

    def switches_sync(self, type_name: str) -> bool:
        """Objects of this type can have their gradient sync switched off (`no_sync()`, `require_backward_grad_sync`,
        `set_requires_gradient_sync`): data-parallel wrappers."""
        rows = (self.method(type_name, "no_sync"), self.attribute(type_name, "require_backward_grad_sync"),
                self.method(type_name, "set_requires_gradient_sync"))
        return any(r is not None and any(e.kind == "sync" for e in r.effects) for r in rows)

    def parallelising_names(self) -> frozenset[str]:
        """The last names of the calls that hand back the model they are given, wrapped for data parallelism on
        several processes (`accelerator.prepare`, `fabric.setup`): rows whose `returns` effect has `data_parallel`."""
        return self._last_names((("parallelising",), False),
                                lambda e: e.kind == "returns" and bool(e.value("data_parallel")))

    def _last_names(self, key: tuple[tuple[str, ...], bool], wanted: Callable[[Effect], bool]) -> frozenset[str]:
        """The method names and the last names of called functions (a type's `__call__` and wildcard call rows left
        out) of the rows with an effect `wanted` accepts, kept under `key`."""
        found = self._named_by_effect.get(key)
        if found is None:
            rows: list[MethodModel | CallModel] = [*(m for f in self.files for m in f.methods if m.name != "__call__"),
                                                   *(c for f in self.files for c in f.calls if "*" not in c.name)]
            found = self._named_by_effect[key] = frozenset(
                row.name.rsplit(".", 1)[-1] for row in rows if any(wanted(e) for e in row.effects))
        return found

    def mode_setters(self) -> frozenset[str]:
        """The last names of calls that switch autograd by a flag (`set_grad_enabled`): on a line of their own they
        set the mode from there on (`grad_mode`)."""
        key = (("%mode",), False)
        found = self._named_by_effect.get(key)
        if found is None:
            found = self._named_by_effect[key] = frozenset(
                c.name.rsplit(".", 1)[-1] for f in self.files for c in f.calls
                if any(e.kind == "no_grad" and e.ref("flag") is not None for e in c.effects))
        return found

    def attribute(self, type_name: str, name: str) -> AttributeModel | None:
        for t in self.lineage(type_name):
            found = self._attributes.get((t, name))
            if found is not None:
                return found
        return None

    def launch_attributes(self) -> dict[str, tuple[frozenset[str], str]]:
        """The attributes that tell a framework's kind of launch (`launch_kind`), by name: the values under which
        it wraps prepared models for data parallelism, and the usual one of those."""
        found: dict[str, tuple[frozenset[str], str]] = {}
        for a in self._attributes.values():
            for e in a.effects:
                if e.kind == "launch_kind":
                    several = frozenset(str(e.value("several", "")).split("|")) - {""}
                    found[a.name] = (several, str(e.value("usual", "")))
        return found

    def hook(self, type_name: str, method: str) -> Hook | None:
        """The per-batch hook `method` of a class that extends `type_name`."""
        lineage = list(self.lineage(type_name))
        for h in self._hooks:
            if h.method == method and self.canonical(h.type) in lineage:
                return h
        return None

    def hooks(self) -> tuple[Hook, ...]:
        return tuple(self._hooks)

    def handed_hook(self, type_name: str) -> Hook | None:
        """The hook that is a function handed to the constructor of `type_name` or of a type it extends
        (Ignite's `Engine(process_function)`)."""
        lineage = list(self.lineage(type_name))
        return next((h for h in self._hooks if h.handed is not None and self.canonical(h.type) in lineage), None)

    @functools.lru_cache(maxsize=4096)  # noqa: B019
    def receiver_type(self, text: str) -> str | None:
        """The API type a receiver of unknown value stands for, by its name alone (a heuristic)."""
        last = text.rsplit(".", 1)[-1]
        for h in self._receivers:
            if h.pattern.search(last):
                return h.type
        return None

    @functools.lru_cache(maxsize=4096)  # noqa: B019
    def callee_heuristic(self, last_name: str) -> Heuristic | None:
        """Effects of a call known by the callee's last name alone (`FusedAdam(...)`, `freeze(model)`)."""
        for h in self._callees:
            if h.pattern.search(last_name):
                return h
        return None


def _under(name: str, packages: frozenset[str]) -> bool:
    """`name` is one of `packages` or inside one (`torch.nn.Module` is inside `torch`)."""
    parts = name.split(".")
    return any(".".join(parts[:i]) in packages for i in range(1, len(parts) + 1))


def builtin_files() -> tuple[ModelFile, ...]:
    """The model files shipped in this package, one per framework, in name order."""
    return _builtin_files()


@functools.lru_cache(maxsize=1)
def _builtin_files() -> tuple[ModelFile, ...]:
    out = []
    for name in sorted(os.listdir(_HERE)):
        if name.endswith(".toml"):
            path = os.path.join(_HERE, name)
            with open(path, "rb") as fh:
                out.append(parse_model_file(tomllib.load(fh), f"gradcheck_lint/analysis/apimodels/{name}"))
    return tuple(out)


@functools.lru_cache(maxsize=8)
def catalogue_for(user: tuple[ModelFile, ...] = ()) -> Catalogue:
    """The catalogue of the built-in models with `user` rows first (cached per configuration)."""
    return Catalogue((*user, *builtin_files()))


def rows(files: Iterable[ModelFile]) -> int:
    """How many rows the files hold (for `gradlint models` and tests)."""
    return sum(len(f.types) + len(f.calls) + len(f.methods) + len(f.attributes) + len(f.hooks) + len(f.heuristics) for f in files)
