"""A class named but not called: a factory that builds one when it is called.

`def fit(model, opt_func=optim.SGD): opt = opt_func(model.parameters(), lr)` and fastai's
`self.opt_func = opt_func` ... `self.opt = self.opt_func(self.parameters(), self.lr)`: the value of the
expression `optim.SGD` is the class, and calling whatever holds it is the call written
`optim.SGD(model.parameters(), lr)`, read as that call is (the catalogue, or the heuristics for a class
no row describes, `bnb.optim.AdamW8bit(params)`); a
parameter's default is its value where no caller in sight hands it another (an entry function's
parameter, read in `entrypoints`), and a caller that does hand one in replaces it as any argument does.

`getattr(torch.optim, name)` names a class of a package whose every class one catalogue row models (`torch.optim.*`
constructs an optimizer): whichever name the run picks, calling it builds what that row builds (`chosen`).

A class of this file is named the same way by a classmethod's `cls` (`MLP.get_model(stage, opt)` whose body
returns `cls(d_in)`): calling it constructs that class, and the method itself, called through the class
name, runs like any method (`local`).
"""

from __future__ import annotations

from .apimodels import Catalogue
from .names import ImportMap
from .values import Value

_CLASS = "class"
_LOCAL = "local class"


def reference(dotted: str, imports: ImportMap, catalogue: Catalogue) -> Value | None:
    """The value of the dotted name `dotted` (`optim.SGD`, `SGD`, `bnb.optim.AdamW8bit`) when it names a class
    through an import (a capitalised last name); else None. Calling it is the call written with that name,
    whatever the catalogue knows of it."""
    qual = _through_import(dotted, imports)
    if qual is None:
        return None
    last = qual.rsplit(".", 1)[-1]
    if not last[:1].isupper():  # a class (`SGD`, `AdamW8bit`), not a function or a value (`torch.float16`)
        return None
    return Value(const=(_CLASS, qual), present=True)


def referenced(value: Value | None) -> str | None:
    """The qualified name of the class a value is (see `reference`), or None."""
    const = value.const if value is not None else None
    if isinstance(const, tuple) and len(const) == 2 and const[0] == _CLASS:
        return str(const[1])
    return None


def local(name: str) -> Value:
    """The value of a class of the project named by itself (a classmethod's `cls`)."""
    return Value(const=(_LOCAL, name), present=True)


def local_named(value: Value | None) -> str | None:
    """The name of the project class a value is (see `local`), or None."""
    const = value.const if value is not None else None
    if isinstance(const, tuple) and len(const) == 2 and const[0] == _LOCAL:
        return str(const[1])
    return None


def chosen(module: str, imports: ImportMap, catalogue: Catalogue) -> Value | None:
    """`getattr(module, name)` with `name` known only at run time: a class of that package, when one catalogue row
    models every capitalised name in it (`torch.optim.*`) and constructs an object of a type it names; the value
    is that type (`torch.optim.Optimizer`), called as its own row says. None otherwise."""
    package = _through_import(module, imports)
    if package is None:
        return None
    row = catalogue.call(f"{package}.AnyClass")
    if row is None or row.name != f"{package}.*":
        return None
    made = [str(e.value("type")) for e in row.effects if e.kind == "construct"]
    return Value(const=(_CLASS, made[0]), present=True) if len(made) == 1 and made[0] else None


def _through_import(dotted: str, imports: ImportMap) -> str | None:
    """The qualified name of a dotted name whose head is an import (`optim.SGD` -> `torch.optim.SGD`), else None."""
    head, _, rest = dotted.partition(".")
    base = imports.aliases.get(head)
    if base is None:
        return None
    return f"{base}.{rest}" if rest else base
