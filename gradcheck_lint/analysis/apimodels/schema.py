"""The rows of an API model file, validated: types, calls, methods, attributes, hooks, heuristics.

A model file (one per framework in this package, or the `[tool.gradlint.models]` table of a user's
`pyproject.toml`) says what training APIs do to gradients, as data. Each row maps a qualified name,
or an API type plus a method, to a list of *effects* drawn from a small closed vocabulary
(`EFFECTS`). Arguments are named by *argument references*: `self` (the receiver), `0` (the first
positional argument), `params` (a keyword), `0|params` (either), `args` (every positional argument).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "ApiType", "ArgRef", "AttributeModel", "CallModel", "Effect", "EFFECTS", "Heuristic", "Hook", "KINDS", "LITERAL_TYPES",
    "MethodModel", "ModelError", "ModelFile", "parse_model_file",
]

# The kinds of object the interpreter tracks; an API type is one of them.
KINDS = ("model", "optimizer", "scheduler", "tool", "tensor", "loss")
# The types of Python literals a type's `never_equal` may name (by `type(literal).__name__`).
LITERAL_TYPES = ("str", "bytes", "int", "float", "bool")

# Effect -> {field: "ref" (an argument reference) | "str" | "bool" | "int"}. `when` (a ref) is allowed on
# every effect: the effect happens when that argument is true (a literal False turns it off, any other
# expression is read as a branch condition), and always when the argument is not given. `given` (a ref),
# also on every effect: the effect happens only when that argument is passed; a call's row none of whose
# effects happen is as no row (`hydra.utils.instantiate(cfg, params=ps)` builds an optimizer of `ps`, and
# `instantiate(cfg)` anything at all: it stays a call the analysis cannot read). `unless` (a ref), also on every
# effect, is `when` turned round: the effect happens when that argument is false or not given (a literal True
# turns it off: Megatron's `forward_backward_func(..., forward_only=True)` runs no backward).
EFFECTS: dict[str, dict[str, str]] = {
    # a new object: `type` names its API type; an optimizer owns `params`; a wrapper holds `model`'s
    # parameters; `window` is the accumulation window its backward divides by and its gates count;
    # `fresh`: new parameters with no gradient yet; `tuple`: the call returns (this object, its optimizer, ...);
    # `configured`: the class is chosen by a configuration the analysis does not read (hydra's `instantiate`):
    # the object is taken for a `type`, and what its methods do rests on that (`Assumption.CLASS`);
    # `children`: the submodules the new module holds by index or key (`nn.ModuleList([q1, q2])`: `0`, a list or
    # dict whose items they are; `nn.Sequential(a, b)`: `args`, one per position)
    "construct": {"type": "str", "params": "ref", "model": "ref", "window": "ref", "fresh": "bool", "tuple": "str",
                  "children": "ref",
                  # enabled: the object does its work only where this argument is true (`GradScaler(enabled=False)`
                  # scales nothing, and its `unscale_` and `step` are no-ops and `optimizer.step()`): `switches`
                  "enabled": "ref",
                  "in_place": "bool",  # in_place: the `model` argument becomes the new object (FSDP2's `fully_shard(m)`)
                  # variant: `keyword=type` pairs joined by `;`: passed that keyword (anything but `None`; written
                  # `keyword:literal=type`, passed that literal: `devices:1`), the call
                  # makes that type instead (`Accelerator(deepspeed_plugin=p)` prepares DeepSpeed engines, not DDP)
                  "variant": "str",
                  # loss_scaler: `keyword=literal|literal`: passed one of those literals, the object scales the loss in
                  # its own backward with a GradScaler of its own and unscales in its prepared optimizers' steps
                  # (`Accelerator(mixed_precision="fp16")`); passed another literal, it scales nothing; passed a
                  # setting, or nothing (the launch configuration decides), it may: an assumption
                  "loss_scaler": "str",
                  "configured": "bool",
                  # parameter_free: the new module holds no parameter (`nn.ReLU()`, `nn.ZeroPad2d(2)`): calling it
                  # runs none, so its result holds its inputs' graphs only (torch_parameter_free.toml, generated)
                  "parameter_free": "bool"},
    # an optimizer updates `params` too from now on (`opt.add_param_group({"params": [p]})`); `key`: the item of a
    # parameter group (a dict) that holds them, when one is given
    "add_params": {"optimizer": "ref", "params": "ref", "key": "str"},
    # the call returns an argument (`.to()`, DDP(model)); `data_parallel`: a model returned may be wrapped for
    # data parallelism when launched on several processes (`accelerator.prepare`, `fabric.setup`), and the
    # framework's way to switch its gradient sync off, for messages (`{owner}` and `{model}` are filled in);
    # `unwraps`: the bare module inside such a wrapper (`accelerator.unwrap_model(m)`): its forward syncs nothing
    # `unless_requires`: a part of the receiver (`state.deepspeed_plugin`) whose presence makes it wrap nothing for
    # data parallelism; every path to the call running code that raises without it proves it (`required_settings`)
    # optimizer_attributes: the optimizers among what the call returns are wrappers of these attributes only
    # (`|`-joined; accelerate's `AcceleratedOptimizer` forwards no other attribute to the optimizer it wraps), so
    # `hasattr(opt, "first_step")` of another name is False
    "returns": {"value": "ref", "data_parallel": "str", "unwraps": "bool", "unless_requires": "str",
                "optimizer_attributes": "str"},
    "join": {},                                       # the call returns any of its arguments (`itertools.chain(a, b)`)
    "clone": {"value": "ref"},                       # a copy of a model with fresh parameters (deepcopy)
    # scales: none | window | framework; amp: "owner": multiplied by the owner's loss scale when it was built with one,
    # and `unscale_with` says, for messages, how the framework unscales (`{owner}` filled in)
    "backward": {"loss": "ref", "inputs": "ref", "scales": "str", "amp": "str", "unscale_with": "str"},
    # a schedule runs a step function it is given on each micro-batch and backpropagates the loss that function
    # computes (Megatron's `forward_backward_func(forward_step_func=f, ...)`): `function` is called with the
    # arguments `arguments` names (argument references joined by `,`, in the function's order); `loss` says where
    # its loss is: "returned" (the function returns it, or a tuple whose first item it is) or "callback" (it returns
    # `(output, loss_fn)`: the schedule calls `loss_fn(output)` and backpropagates the first item of its result);
    # `scales` as for `backward`, `window` the argument counting the micro-batches the schedule divides by, and
    # `model` the models the backward reaches when the function cannot be read
    "schedule": {"function": "ref", "arguments": "str", "loss": "str", "scales": "str", "window": "ref",
                 "model": "ref"},
    # evaluations: how often the step may call its closure ("once", the default; "several": LBFGS evaluates it
    # again after each inner update, so a closure that does not clear adds each evaluation to the last)
    "step": {"optimizer": "ref", "closure": "ref", "clears": "bool", "gated": "bool", "unscales": "bool",
             "evaluations": "str"},
    "clear": {"target": "ref", "gated": "bool"},
    "gate": {"model": "ref"},                         # context: steps and clears of prepared optimizers fire on boundaries
    "gate_flag": {},                                  # reading it tells whether this micro-batch steps
    "set_window": {},                                 # storing into it sets the object's accumulation window
    # the number of micro-batches the object's gated step waits for (DeepSpeed's
    # `engine.gradient_accumulation_steps()`): a loop of that many iterations spans one window, whose last one steps
    "window_size": {},
    # reading it tells the kind of launch (`accelerator.distributed_type`): `several` the values (joined by `|`) under
    # which the object's `prepare` wraps models for data parallelism, `usual` the one a multi-process run usually is
    "launch_kind": {"several": "str", "usual": "str"},
    # gradient-sync control (context, call or attribute); `decided_at`: "forward" (DDP: the forward pass
    # under the context decides whether its backward all-reduces, the default) or "backward" (FSDP)
    "sync": {"model": "ref", "enabled": "ref", "value": "ref", "decided_at": "str"},
    "hook_grads": {"target": "ref"},                  # a hook may rescale the target's gradients (DDP comm hooks)
    # gradients saved earlier are written back into the target (every model's when it names none): what a clear
    # since the save discarded is what the step applies again (an adversarial-training helper's `restore_grad()`)
    "restore_grads": {"target": "ref"},
    # `hook`, a function, runs inside each backward pass that accumulates into `target`, given `target`
    # (`p.register_post_accumulate_grad_hook(fn)`: the optimizer-in-backward idiom steps there)
    "grad_hook": {"target": "ref", "hook": "ref"},
    "unscale": {"optimizer": "ref", "all_if_absent": "bool"},  # all_if_absent: no optimizer given, every one
    "scaler_update": {},                              # a GradScaler forgets which optimizers it unscaled (`update()`)
    # `limit`: the bound (`max_norm`); an infinite one (`float("inf")`) changes nothing: the call reads the norm
    "clip": {"params": "ref", "optimizer": "ref", "unscales": "bool", "limit": "ref"},
    # reads the norm of the gradients given (`[p.grad for p in ...]`); tensor_otherwise: of another tensor, a
    # tensor computed from it (`torch.norm(w)`)
    "grad_norm": {"tensors": "ref", "tensor_otherwise": "bool"},
    "scale": {"value": "ref"},                        # the loss multiplied by an AMP loss scale
    "freeze": {"target": "ref", "flag": "ref", "frozen": "bool"},  # flag: requires_grad (frozen = not flag)
    "toggle": {"optimizer": "ref", "on": "bool"},     # Lightning: freeze every other optimizer's parameters
    "parameters": {},                                 # the receiver's parameters (`model.parameters()`)
    # the optimizers a framework made from a method of the model class (Lightning's `self.optimizers()`,
    # from `configure_optimizers`, named by `configured_by`)
    "optimizers": {"configured_by": "str"},
    "detach": {},                                     # the result carries no gradient
    "no_grad": {"flag": "ref"},                       # context; with `flag`, only when the flag is a literal False
    "enable_grad": {},
    "forward": {"module": "ref"},                     # runs a module (`checkpoint(block, x)`)
    "divide": {"by": "ref"},                          # the result is the receiver (or first argument) divided
    "multiply": {"by": "ref"},
    "tensor": {},                                     # a tensor computed from the arguments
    # a tensor computed from the arguments by a function no factor passes through (`softmax(x / T)`, `exp`,
    # `mse_loss`): what they were divided or multiplied by is no scale of the result
    "nonlinear": {},
    "constant": {},                                   # a tensor of fixed values (`torch.zeros(4, 8)`): the same data
    "measures": {},                                   # reads a clock or the memory in use (a benchmark's probe)
    "summed": {},                                     # a loss of the arguments summed over its samples: not to be divided by a window
    "number": {},                                     # a Python number computed from them (`float(loss)`): no graph
    "inert": {},                                      # no gradient effect, nothing of interest returned
    # calls a function it is given (`fire.Fire(main)`); `processes`: "several" when it runs it in several processes
    # (`torch.multiprocessing.spawn`, accelerate's `notebook_launcher`): data parallelism needs such a launch
    "invoke": {"function": "ref", "processes": "str"},
    "defer": {"function": "ref"},                     # a callable of `function` and the other arguments (`partial`)
    # runs the receiver's own method `method`, a subclass's override read in the project (`Thread.start()` runs `run`)
    "run_own": {"method": "str"},
    # the receiver's (or `owner`'s) attribute `name` (a literal) is `value` (`add_module`, `setattr(student, name, m)`)
    "set_attribute": {"name": "ref", "value": "ref", "owner": "ref"},
}
_SCALES = ("none", "window", "framework")
_SCHEDULE_LOSS = ("returned", "callback")
_NAME = re.compile(r"[A-Za-z_*][\w*]*(\.[A-Za-z_*][\w*]*)*")
_REF_PART = re.compile(r"self|args|\d+|=?[A-Za-z_]\w*")


class ModelError(ValueError):
    """A model row that cannot be used; the message names the file, the row and the field."""


@dataclass(frozen=True, slots=True)
class ArgRef:
    """Which argument(s) of a call an effect reads: the receiver, positions, keywords, or all positional ones."""

    receiver: bool = False
    positions: tuple[int, ...] = ()
    keywords: tuple[str, ...] = ()
    all_positional: bool = False

    @classmethod
    def parse(cls, text: str, where: str) -> ArgRef:
        receiver, positions, keywords, every = False, [], [], False
        for part in (p.strip() for p in text.split("|")):
            if not _REF_PART.fullmatch(part):
                raise ModelError(f"{where}: {text!r} is not an argument reference (self, args, a position, a keyword, joined by |)")
            if part.startswith("="):
                keywords.append(part[1:])  # `=args`: the keyword `args` (`args` alone is every positional argument)
            elif part == "self":
                receiver = True
            elif part == "args":
                every = True
            elif part.isdigit():
                positions.append(int(part))
            else:
                keywords.append(part)
        return cls(receiver, tuple(positions), tuple(keywords), every)


@dataclass(frozen=True, slots=True)
class Effect:
    """One thing a call does to gradients (or to what the analysis knows of objects)."""

    kind: str
    refs: tuple[tuple[str, ArgRef], ...] = ()
    values: tuple[tuple[str, object], ...] = ()
    when: ArgRef | None = None
    given: ArgRef | None = None  # the effect happens only when this argument is passed
    unless: ArgRef | None = None  # the effect happens only when this argument is false or not given

    def ref(self, name: str) -> ArgRef | None:
        for key, ref in self.refs:
            if key == name:
                return ref
        return None

    def value(self, name: str, default: Any = None) -> Any:
        for key, value in self.values:
            if key == name:
                return value
        return default

    def ref_list(self, name: str) -> tuple[ArgRef, ...]:
        """The argument references a `,`-joined field names, in order (`schedule`'s `arguments`)."""
        text = self.value(name, "")
        return tuple(ArgRef.parse(part.strip(), name) for part in str(text).split(",") if part.strip())


@dataclass(frozen=True, slots=True)
class ApiType:
    """A class of a training API: its kind, the names it is imported under, the types it extends."""

    name: str
    kind: str
    aliases: tuple[str, ...] = ()
    bases: tuple[str, ...] = ()
    # the bare name a star import leaves it under (`from pytorch_lightning import *`: `LightningModule`):
    # a class base named so, with no import saying where it comes from, is this type
    bare: str = ""
    # the types of Python literals (`str`, ...) an object of it never equals: `torch.device("cuda") == "cuda"`
    # is False, so a test `device == "cuda"` of such an object goes one way on every path
    never_equal: tuple[str, ...] = ()
    # the public attributes its instances have (with those of its bases'); `closed`: no others, a read of
    # any other public attribute raises AttributeError (`DistributedDataParallel` forwards nothing to the
    # module it wraps: `ddp_model.config` raises)
    members: tuple[str, ...] = ()
    closed: bool = False
    # its constructor raises unless a default process group was started first (`DistributedDataParallel`): a
    # wrapper made where no code in sight starts one rests on code out of sight (`process_groups`)
    needs_process_group: bool = False


@dataclass(frozen=True, slots=True)
class CallModel:
    """A function or class, by qualified name (`*` stands for one dotted segment or part of one)."""

    name: str
    effects: tuple[Effect, ...]
    origin: str = ""


@dataclass(frozen=True, slots=True)
class MethodModel:
    """A method of an API type (`__call__` for calling the object). `accepts`: every keyword it takes, when
    the row lists them: a call with another one raises TypeError before the method runs (`backward(
    retain_variables=True)`, PyTorch 0.3's name, is no keyword of `Tensor.backward` since 0.4)."""

    type: str
    name: str
    effects: tuple[Effect, ...]
    origin: str = ""
    accepts: tuple[str, ...] | None = None


@dataclass(frozen=True, slots=True)
class AttributeModel:
    """An attribute of an API type: read (a gate flag) or assigned (a sync flag), or holding another object."""

    type: str
    name: str
    effects: tuple[Effect, ...] = ()
    holds: str = ""  # the API type of the object it holds (`engine.optimizer`, `trainer.accelerator`)
    origin: str = ""


@dataclass(frozen=True, slots=True)
class Hook:
    """A method a framework calls once per batch on a subclass of `type` (`LightningModule.training_step`).

    `counter` names the argument that counts batches from 0; `optimization` says who steps: the user
    (`manual`), the framework after the method returns (`automatic`), and `manual_flag` is the
    attribute that switches an automatic hook to manual (`automatic_optimization = False`).
    `argument_types` gives API types to parameters (`optim_wrapper` of mmengine's `train_step`).
    `normaliser` names the argument of a hook whose returned loss the framework backpropagates, which
    tells the hook how to normalise that loss for the accumulation window: given it, the framework
    does not divide by the window itself (`num_items_in_batch` of transformers' `compute_loss`), and
    `normalised_flags` are the class attributes that settle the question explicitly instead, and
    `counted_key` the batch key without which the framework passes no normaliser (transformers counts
    `num_items_in_batch` only over a batch's `labels`: a batch without them is divided as before).
    `divides_returned` names the framework setting by whose value the framework divides the loss an
    automatic hook returns (Lightning's `accumulate_grad_batches`): the hook's own division by an
    accumulation count divides twice.
    `manual_only` names methods of `type` that raise unless the `manual_flag` switched the hook to manual
    (Lightning's `manual_backward` runs `_verify_is_manual_optimization`): a class that calls one on `self` and
    never reads the flag runs only under manual optimization, wherever the flag is set (a subclass of another
    file, a constructor's argument).
    `each_batch` names other methods of the class the framework calls around this hook once per batch or
    per optimizer step (Lightning's `on_train_batch_end`, `optimizer_zero_grad`): what they reset
    (`self.outputs.clear()`) holds one batch's, or one accumulation window's, values at most.
    `handed` makes the hook a function handed to the constructor of `type` as that argument instead of a
    method of a subclass (Ignite's `Engine(process_function)`, also `super().__init__(fn)` of a subclass);
    `method` is then empty, and the function is called as `fn(*hook_arguments)`.
    `counter_path` is the attribute chain under the `counter` argument that counts batches
    (`state.iteration` of Ignite's `engine`), and `counter_start` its value on the first call: 0 for
    Lightning's `batch_idx`, 1 for Ignite's `engine.state.iteration`, which Ignite increments before each
    call and never resets between epochs.
    """

    type: str
    method: str
    counter: ArgRef | None = None
    optimization: str = "manual"
    manual_flag: str = ""
    argument_types: tuple[tuple[str, str], ...] = ()
    origin: str = ""
    normaliser: str = ""
    normalised_flags: tuple[str, ...] = ()
    counted_key: str = ""
    divides_returned: str = ""
    each_batch: tuple[str, ...] = ()
    handed: ArgRef | None = None
    counter_path: str = ""
    counter_start: int = 0
    manual_only: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Heuristic:
    """A name pattern standing for an API type when nothing better is known (lower certainty).

    `receiver`: the text of a receiver of unknown value (`accelerator`, `self.scaler`).
    `callee`: the last name of a called function or class (`FusedAdam`, `build_optimizer`), with `effects`.
    """

    pattern: re.Pattern[str]
    target: str  # "receiver" or "callee"
    type: str = ""
    effects: tuple[Effect, ...] = ()
    origin: str = ""


@dataclass(frozen=True, slots=True)
class ModelFile:
    """Every row of one model file."""

    origin: str
    types: tuple[ApiType, ...] = ()
    calls: tuple[CallModel, ...] = ()
    methods: tuple[MethodModel, ...] = ()
    attributes: tuple[AttributeModel, ...] = ()
    hooks: tuple[Hook, ...] = ()
    heuristics: tuple[Heuristic, ...] = ()
    # top-level packages (dotted prefixes) of the framework the file describes: a source file importing
    # one of them is PyTorch code, whatever else it imports ...
    packages: tuple[str, ...] = ()
    # ... and of deep-learning frameworks other than PyTorch: a file importing one of them and none of
    # the former is not analysed (their `backward` and `step` follow other rules)
    foreign_packages: tuple[str, ...] = ()
    # the oldest release of `packages` whose code the analysis reads as live: a test of the package's
    # `__version__` against an older release (`version.parse(torch.__version__) < version.parse("1.6")`)
    # is decided as on any supported install, and the old release's branch is dead code
    version_floor: tuple[int, ...] = ()


_SECTIONS = {"framework", "description", "packages", "foreign_packages", "version_floor",
             "type", "call", "method", "attribute", "hook", "heuristic"}
_HEADER = {"framework", "description", "packages", "foreign_packages", "version_floor"}


def parse_model_file(data: Mapping[str, Any], origin: str) -> ModelFile:
    """Validate the rows of one model file (a parsed TOML document or `[tool.gradlint.models]` table).

    Raises:
        ModelError: naming `origin`, the section, the row's number and the field.
    """
    for key in data:
        if key not in _SECTIONS:
            raise ModelError(f"{origin}: unknown section {key!r}; sections: {', '.join(sorted(_SECTIONS - _HEADER))}")
    rows = {key: _table_list(data.get(key, []), f"{origin}: {key}") for key in ("type", "call", "method", "attribute", "hook", "heuristic")}
    types = tuple(_type(r, f"{origin}: type #{i + 1}") for i, r in enumerate(rows["type"]))
    calls = tuple(_call(r, f"{origin}: call #{i + 1}") for i, r in enumerate(rows["call"]))
    methods = tuple(_method(r, f"{origin}: method #{i + 1}") for i, r in enumerate(rows["method"]))
    attributes = tuple(_attribute(r, f"{origin}: attribute #{i + 1}") for i, r in enumerate(rows["attribute"]))
    hooks = tuple(_hook(r, f"{origin}: hook #{i + 1}") for i, r in enumerate(rows["hook"]))
    heuristics = tuple(_heuristic(r, f"{origin}: heuristic #{i + 1}") for i, r in enumerate(rows["heuristic"]))
    packages = _names(data, "packages", origin)
    foreign = _names(data, "foreign_packages", origin)
    floor = _release(data, origin)
    return ModelFile(origin, types, calls, methods, attributes, hooks, heuristics, packages, foreign, floor)


def _table_list(value: Any, where: str) -> list[Mapping[str, Any]]:
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        raise ModelError(f"{where} must be an array of tables ([[{where.rsplit(' ', 1)[-1]}]])")
    return value


def _keys(row: Mapping[str, Any], where: str, allowed: set[str]) -> bool:
    unknown = sorted(set(row) - allowed)
    if unknown:
        raise ModelError(f"{where}: unknown field {unknown[0]!r}; fields: {', '.join(sorted(allowed))}")
    return True


def _string(row: Mapping[str, Any], key: str, where: str, required: bool = True) -> str:
    value = row.get(key)
    if value is None and not required:
        return ""
    if not isinstance(value, str) or not value:
        raise ModelError(f"{where}: {key!r} must be a non-empty string")
    return value


def _name(row: Mapping[str, Any], key: str, where: str) -> str:
    value = _string(row, key, where)
    if not _NAME.fullmatch(value):
        raise ModelError(f"{where}: {key} {value!r} is not a dotted name")
    return value


def _ident(row: Mapping[str, Any], key: str, where: str) -> str:
    value = _string(row, key, where)
    if not value.isidentifier():
        raise ModelError(f"{where}: {key} {value!r} is not an identifier")
    return value


def _type(row: Mapping[str, Any], where: str) -> ApiType:
    _keys(row, where, {"name", "kind", "aliases", "bases", "bare", "never_equal", "members", "closed",
                       "needs_process_group"})
    kind = _string(row, "kind", where)
    if kind not in KINDS:
        raise ModelError(f"{where}: kind {kind!r} is not one of {', '.join(KINDS)}")
    bare = _ident(row, "bare", where) if "bare" in row else ""
    unequal = row.get("never_equal", [])
    if not isinstance(unequal, list) or not all(v in LITERAL_TYPES for v in unequal):
        raise ModelError(f"{where}: never_equal must be a list of literal types ({', '.join(LITERAL_TYPES)})")
    members = row.get("members", [])
    if not isinstance(members, list) or not all(isinstance(m, str) and m.isidentifier() for m in members):
        raise ModelError(f"{where}: members must be a list of attribute names")
    closed = row.get("closed", False)
    if not isinstance(closed, bool):
        raise ModelError(f"{where}: closed must be true or false")
    needs_group = row.get("needs_process_group", False)
    if not isinstance(needs_group, bool):
        raise ModelError(f"{where}: needs_process_group must be true or false")
    return ApiType(_name(row, "name", where), kind, _names(row, "aliases", where), _names(row, "bases", where), bare,
                   tuple(unequal), tuple(members), closed, needs_group)


def _release(data: Mapping[str, Any], where: str) -> tuple[int, ...]:
    """`version_floor = "2.0"` as (2, 0); () when absent."""
    value = data.get("version_floor", "")
    parts = value.split(".") if isinstance(value, str) and value else []
    if not isinstance(value, str) or not all(p.isdigit() for p in parts):
        raise ModelError(f"{where}: 'version_floor' must be a release number such as \"2.0\"")
    return tuple(int(p) for p in parts)


def _names(row: Mapping[str, Any], key: str, where: str) -> tuple[str, ...]:
    value = row.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) and _NAME.fullmatch(v) for v in value):
        raise ModelError(f"{where}: {key!r} must be a list of dotted names")
    return tuple(value)


def _call(row: Mapping[str, Any], where: str) -> CallModel:
    _keys(row, where, {"name", "effect", "effects"})
    return CallModel(_name(row, "name", where), _effects(row, where), where)


def _method(row: Mapping[str, Any], where: str) -> MethodModel:
    _keys(row, where, {"type", "name", "effect", "effects", "accepts"})
    accepts = _identifiers(row["accepts"], f"{where} accepts") if "accepts" in row else None
    return MethodModel(_name(row, "type", where), _ident(row, "name", where), _effects(row, where), where, accepts)


def _attribute(row: Mapping[str, Any], where: str) -> AttributeModel:
    _keys(row, where, {"type", "name", "effect", "effects", "holds"})
    effects = _effects(row, where) if ("effect" in row or "effects" in row) else ()
    holds = _string(row, "holds", where, required=False)
    if not effects and not holds:
        raise ModelError(f"{where}: an attribute needs an effect or `holds`")
    return AttributeModel(_name(row, "type", where), _ident(row, "name", where), effects, holds, where)


def _hook(row: Mapping[str, Any], where: str) -> Hook:
    _keys(row, where, {"type", "method", "counter", "optimization", "manual_flag", "argument_types", "normaliser",
                       "normalised_flags", "counted_key", "divides_returned", "each_batch", "handed", "counter_path",
                       "counter_start", "manual_only"})
    optimization = _string(row, "optimization", where, required=False) or "manual"
    if optimization not in ("manual", "automatic"):
        raise ModelError(f"{where}: optimization must be 'manual' or 'automatic'")
    counter = row.get("counter")
    types = row.get("argument_types", {})
    if not isinstance(types, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in types.items()):
        raise ModelError(f"{where}: argument_types must be a table of parameter = \"api type\"")
    handed = row.get("handed")
    if handed is not None and not isinstance(handed, str):
        raise ModelError(f"{where}: handed must be an argument reference (a position, a keyword, joined by |)")
    if (handed is None) == ("method" not in row):
        raise ModelError(f"{where}: give exactly one of 'method' (a method of a subclass) "
                         "or 'handed' (a function handed to the constructor)")
    path = _string(row, "counter_path", where, required=False)
    if path and not (isinstance(counter, str) and all(p.isidentifier() for p in path.split("."))):
        raise ModelError(f"{where}: counter_path must be a dotted attribute chain under a 'counter' argument")
    start = row.get("counter_start", 0)
    if type(start) is not int or start < 0:
        raise ModelError(f"{where}: counter_start must be a non-negative integer")
    return Hook(
        _name(row, "type", where), _ident(row, "method", where) if handed is None else "",
        ArgRef.parse(counter, f"{where} counter") if isinstance(counter, str) else None,
        optimization, _string(row, "manual_flag", where, required=False), tuple(sorted(types.items())), where,
        _string(row, "normaliser", where, required=False), _identifiers(row.get("normalised_flags", []), f"{where} normalised_flags"),
        _string(row, "counted_key", where, required=False), _string(row, "divides_returned", where, required=False),
        _identifiers(row.get("each_batch", []), f"{where} each_batch"),
        ArgRef.parse(handed, f"{where} handed") if handed is not None else None, path, start,
        _identifiers(row.get("manual_only", []), f"{where} manual_only"),
    )


def _identifiers(value: object, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v.isidentifier() for v in value):
        raise ModelError(f"{where}: give a list of attribute names")
    return tuple(value)


def _heuristic(row: Mapping[str, Any], where: str) -> Heuristic:
    _keys(row, where, {"receiver", "callee", "type", "effect", "effects"})
    targets = [t for t in ("receiver", "callee") if t in row]
    if len(targets) != 1:
        raise ModelError(f"{where}: give exactly one of 'receiver' or 'callee' (a regular expression)")
    target = targets[0]
    try:
        pattern = re.compile(_string(row, target, where))
    except re.error as exc:
        raise ModelError(f"{where}: {target} is not a regular expression: {exc}") from exc
    effects = _effects(row, where) if ("effect" in row or "effects" in row) else ()
    type_ = _string(row, "type", where, required=False)
    if target == "receiver" and not type_:
        raise ModelError(f"{where}: a receiver heuristic names the API `type` it stands for")
    if target == "callee" and not effects:
        raise ModelError(f"{where}: a callee heuristic needs effects")
    return Heuristic(pattern, target, type_, effects, where)


def _effects(row: Mapping[str, Any], where: str) -> tuple[Effect, ...]:
    if ("effect" in row) == ("effects" in row):
        raise ModelError(f"{where}: give either 'effect' (a name or a table) or 'effects' (a list of them)")
    raw = [row["effect"]] if "effect" in row else row["effects"]
    if not isinstance(raw, list) or not raw:
        raise ModelError(f"{where}: 'effects' must be a non-empty list")
    return tuple(_effect(item, f"{where} effect #{i + 1}") for i, item in enumerate(raw))


def _effect(item: Any, where: str) -> Effect:
    table = {"effect": item} if isinstance(item, str) else item
    if not isinstance(table, dict) or not isinstance(table.get("effect"), str):
        raise ModelError(f"{where}: an effect is a name or a table with an 'effect' key")
    kind = table["effect"]
    fields = EFFECTS.get(kind)
    if fields is None:
        raise ModelError(f"{where}: unknown effect {kind!r}; effects: {', '.join(EFFECTS)}")
    refs: list[tuple[str, ArgRef]] = []
    values: list[tuple[str, object]] = []
    when = given = unless = None
    for key, value in table.items():
        if key == "effect":
            continue
        if key == "when":
            when = ArgRef.parse(_as(value, str, f"{where} when"), f"{where} when")
            continue
        if key == "given":
            given = ArgRef.parse(_as(value, str, f"{where} given"), f"{where} given")
            continue
        if key == "unless":
            unless = ArgRef.parse(_as(value, str, f"{where} unless"), f"{where} unless")
            continue
        expected = fields.get(key)
        if expected is None:
            known = ', '.join(['when', 'given', 'unless', *fields])
            raise ModelError(f"{where}: effect {kind!r} has no field {key!r}; fields: {known}")
        if expected == "ref":
            refs.append((key, ArgRef.parse(_as(value, str, f"{where} {key}"), f"{where} {key}")))
        elif expected == "bool":
            values.append((key, _as(value, bool, f"{where} {key}")))
        else:
            values.append((key, _as(value, str, f"{where} {key}")))
    if when is not None and unless is not None:
        raise ModelError(f"{where}: give `when` or `unless`, not both")
    effect = Effect(kind, tuple(refs), tuple(values), when, given, unless)
    if kind in ("backward", "schedule") and effect.value("scales", "none") not in _SCALES:
        raise ModelError(f"{where}: scales must be one of {', '.join(_SCALES)}")
    if kind == "schedule":
        if effect.value("loss", "returned") not in _SCHEDULE_LOSS:
            raise ModelError(f"{where}: loss must be one of {', '.join(_SCHEDULE_LOSS)}")
        if effect.ref("function") is None:
            raise ModelError(f"{where}: a schedule names the `function` it runs")
        for part in str(effect.value("arguments", "")).split(","):
            if part.strip():
                ArgRef.parse(part.strip(), f"{where} arguments")
    if kind == "construct" and not effect.value("type"):
        raise ModelError(f"{where}: construct needs the API `type` it makes")
    scaler = str(effect.value("loss_scaler", "")) if kind == "construct" else ""
    if scaler and not (scaler.partition("=")[0].isidentifier() and all(scaler.partition("=")[2].split("|"))):
        raise ModelError(f"{where}: a loss_scaler is `keyword=literal|literal`, not {scaler!r}")
    if kind == "backward" and effect.value("amp", "owner") != "owner":
        raise ModelError(f"{where}: a backward's amp is \"owner\", not {effect.value('amp')!r}")
    for pair in str(effect.value("variant", "")).split(";") if kind == "construct" and effect.value("variant") else ():
        keyword, _, made = pair.partition("=")
        name, _, literal = keyword.partition(":")
        if not name.strip().isidentifier() or not made.strip() or (":" in keyword and not literal.strip()):
            raise ModelError(f"{where}: a variant is `keyword=type` or `keyword:literal=type`, not {pair!r}")
    return effect


def _as(value: Any, kind: type, where: str) -> Any:
    if not isinstance(value, kind):
        raise ModelError(f"{where} must be a {'boolean' if kind is bool else 'string'}, not {value!r}")
    return value
