"""Generate `gradcheck_lint/analysis/apimodels/torch_parameter_free.toml`: the `torch.nn` modules that hold no
parameter (activations, padding, pooling, dropout, resampling, reshaping), as catalogue rows.

    python benchmarks/gen_parameter_free_modules.py [-o PATH]

Calling a module is taken to run its parameters, so its result holds a graph even when its inputs hold none. For
these modules that is wrong: `nn.ZeroPad2d(2)(noise)` of a tensor with no graph holds none (SinGAN's padded noise
kept in a list is no GL008). The list is measured on the installed torch, never written by hand: every public
`torch.nn` module class is built with small arguments (named below by parameter name) and kept when it holds no
parameter and no submodule. Each boolean argument of its constructor is then flipped: one that gives it parameters
(`nn.InstanceNorm2d(c, affine=True)`) becomes a condition of the row (parameter-free unless that argument is true).
A class that cannot be built from these arguments is left out (read as a module with parameters, as before), and so
is anything whose constructor takes a module (containers). Losses are modelled in torch.toml already.
"""

from __future__ import annotations

import argparse
import inspect
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "gradcheck_lint" / "analysis" / "apimodels" / "torch_parameter_free.toml"

# small values for required constructor arguments, by name; anything else gets 2
_ARGS = {"unflattened_size": (2, 2), "normalized_shape": 4, "output_size": 2, "size": 2, "scale_factor": 2.0,
         "dim": 1, "lambd": 0.5, "threshold": 0.1, "value": 0.0, "kernel_size": 2, "padding": 1, "p": 0.5,
         "norm_type": 2.0, "upscale_factor": 2, "downscale_factor": 2, "groups": 2, "alpha": 1.0,
         "negative_slope": 0.01, "min_val": -1.0, "max_val": 1.0, "output_ratio": 0.5}


def _build(cls, overrides: dict[str, object] | None = None):
    sig = inspect.signature(cls.__init__)
    args = []
    for name, param in list(sig.parameters.items())[1:]:
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        if param.default is param.empty:
            args.append(_ARGS.get(name, 2))
    return cls(*args, **(overrides or {}))


# constructor arguments that hand a module its parts (containers, wrappers): what it holds is what it is given
_PARTS = frozenset({"module", "modules", "parameters", "values"})


def _takes_parts(cls) -> bool:
    """A container or wrapper (`nn.ModuleList(mods)`, `nn.ParameterList(values)`, `nn.DataParallel(model)`, by the
    name of an argument; `nn.Sequential(*layers)`, which given a layer holds its parameters): empty when built here,
    not when used. Also the bases `nn.Module` and `nn.Container` themselves, which take parts through `add_module`
    after they are built. (`nn.Identity(*args)` ignores what it is given: not one.)"""
    from torch import nn

    if cls in (nn.Module, nn.Container):
        return True
    params = list(inspect.signature(cls.__init__).parameters.values())[1:]
    if any(p.name in _PARTS for p in params):
        return True
    if any(p.kind is p.VAR_POSITIONAL for p in params) and cls.__init__ is not nn.Module.__init__:
        try:
            return bool(list(cls(nn.Linear(2, 2)).parameters()))
        except Exception:  # a class that does not take a module
            return False
    return False


def _holds_nothing(module) -> bool:
    return not list(module.parameters()) and not list(module.children())


def parameter_free_modules():
    """(qualified names, the flag arguments (position among the constructor's, name) that give it parameters)."""
    import torch
    from torch import nn

    found = []
    for name in sorted(dir(nn)):
        cls = getattr(nn, name)
        if not inspect.isclass(cls) or not issubclass(cls, nn.Module) or name.startswith("_"):
            continue
        if issubclass(cls, nn.modules.loss._Loss) or name.startswith("Lazy") or _takes_parts(cls):
            continue
        try:
            module = _build(cls)
        except Exception:  # a class these arguments cannot build is left out
            continue
        if not _holds_nothing(module):
            continue
        params = list(inspect.signature(cls.__init__).parameters.values())[1:]
        flags = []
        for i, param in enumerate(params):
            if isinstance(param.default, bool):
                try:
                    flipped = _build(cls, {param.name: not param.default})
                except Exception:  # a flag this class refuses
                    continue
                if not _holds_nothing(flipped):
                    flags.append((i, param.name, not param.default))
        if any(default is False for _i, _n, default in flags):
            continue  # (a flag whose default gives parameters: not one found in torch 2.13; left out if ever)
        names = [f"torch.nn.{name}"]
        home = cls.__module__
        if home.startswith("torch.nn.modules.") and getattr(__import__(home, fromlist=[name]), name, None) is cls:
            names.append(f"{home}.{name}")
        found.append((names, flags))
    return torch.__version__, found


def render(version: str, found) -> str:
    lines = [
        "# torch.nn modules that hold no parameter: calling one builds no graph of its own (its result holds its",
        "# inputs' graphs only). Generated by benchmarks/gen_parameter_free_modules.py from the installed torch "
        f"({version}):",
        "# each public torch.nn module class built with small arguments, kept when it holds no parameter and no",
        "# submodule; a boolean argument that gives it parameters when flipped is a condition of the row. Do not edit",
        "# by hand: regenerate. Schema: schema.py.",
        'framework = "torch"',
        'description = "torch.nn modules without parameters (generated)"',
    ]
    for names, flags in found:
        for qual in names:
            lines += ["", "[[call]]", f'name = "{qual}"']
            if not flags:
                lines.append('effect = { effect = "construct", type = "torch.nn.Module", fresh = true, parameter_free = true }')
                continue
            refs = [f"{i}|{n}" for i, n, _d in flags]
            free = ", ".join(f'unless = "{r}"' for r in refs[:1])
            lines.append("effects = [")
            lines.append(f'    {{ effect = "construct", type = "torch.nn.Module", fresh = true, parameter_free = true, {free} }},')
            lines.append(f'    {{ effect = "construct", type = "torch.nn.Module", fresh = true, given = "{refs[0]}", '
                         f'when = "{refs[0]}" }},')
            lines.append("]")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-o", "--output", type=Path, default=OUT)
    args = parser.parse_args()
    version, found = parameter_free_modules()
    multi = [names for names, flags in found if len(flags) > 1]
    if multi:
        raise SystemExit(f"more than one flag gives parameters (a row takes one condition): {multi}")
    args.output.write_text(render(version, found))
    print(f"{sum(len(n) for n, _f in found)} rows ({len(found)} classes) -> {args.output}")


if __name__ == "__main__":
    main()
