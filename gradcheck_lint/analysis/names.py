"""Resolve what names mean: imports to qualified names, and which callees are torch APIs."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

from .walk import statements

_OPTIMIZER_CLASS = re.compile(
    r"(?:SGD|Adam\w*|AdamW\w*|RMSprop|Adagrad|Adadelta|Adamax|NAdam|RAdam|LBFGS|Rprop|ASGD|"
    r"SparseAdam|Lion\w*|Lamb|LAMB|Adafactor|Lars|LARS|Sophia\w*|Muon|Shampoo|NovoGrad|Novograd|"
    r"Ranger\w*|Yogi|AdaBelief|AdaBound|Prodigy\w*|DAdapt\w*|Fused\w+|ZeroRedundancyOptimizer|"
    r"\w*Optimizer)$"
)
_OPTIMIZER_FACTORY = re.compile(r"(?:^|_)(?:optim|optimizer|optimizers)(?:_|$)|optimi[sz]er", re.I)
_SCHEDULER = re.compile(r"sched|LR$|lr_|_lr\b|warmup|Schedule", re.I)
_LOSS_CLASS = re.compile(r"(?:Loss|Criterion)$")
_NOT_MODEL_CLASS = re.compile(
    r"(?:Dataset|DataLoader|Loader|Sampler|Tensor|Scaler|Writer|Logger|Config|Parser|Tokenizer|"
    r"Transform|Compose|Generator_?Rng|Timer|Meter|Namespace|Path|Accelerator|Trainer|Profiler|"
    r"Scheduler|Queue|Pool|Thread|Process|Dict|List|Event|Stream|Device)$"
)
# Names a parameter or attribute gets when it holds an optimizer.
OPTIMIZER_NAME = re.compile(r"(?:^|[_.])(?:opt|optim|optimi[sz]er|optimi[sz]ers|opts)(?:[_.]?[A-Za-z0-9]*)?$|optimi[sz]er", re.I)
SCHEDULER_NAME = re.compile(r"sched|lr_?s|warmup", re.I)
# Names a parameter or attribute gets when it holds a model.
MODEL_NAME = re.compile(
    r"(?:^|[_.])(?:model|models|net|network|netg|netd|net_g|net_d|g|d|gen|disc|generator|discriminator|"
    r"encoder|decoder|critic|actor|policy|classifier|clf|student|teacher|backbone|module|unet|vae|ae)"
    r"(?:_?[A-Za-z0-9]*)?$",
    re.I,
)

# Functions that neither run a model nor touch gradients, whatever they are given.
HARMLESS_BUILTINS = frozenset(
    {
        "print", "len", "isinstance", "range", "enumerate", "zip", "min", "max", "abs", "round", "int",
        "float", "str", "bool", "repr", "format", "type", "hasattr", "getattr", "setattr", "id", "hash",
        "sorted", "reversed", "any", "all", "iter", "next", "open", "vars", "dir", "callable", "super",
        "tqdm", "trange", "logging", "log", "info", "warning", "debug", "save", "deepcopy", "copy",
        "evaluate", "validate", "test", "eval_model", "accuracy", "plot", "show", "save_image",
        "save_checkpoint", "load_checkpoint", "count_parameters", "summary",
    }
)
_EFFECT_NAME = re.compile(r"zero|grad|clear|reset|step|update|optimi|backward|train|fit|freeze|toggle", re.I)


def callee_suggests_grad_effect(name: str) -> bool:
    """Tell whether an opaque function's name suggests it may clear or step gradients."""
    return bool(_EFFECT_NAME.search(name))


def is_optimizer_class(qualified: str) -> bool:
    """Tell whether a qualified callee name constructs an optimizer."""
    if "lr_scheduler" in qualified or _SCHEDULER.search(qualified.rsplit(".", 1)[-1]):
        return False
    last = qualified.rsplit(".", 1)[-1]
    if qualified.startswith("torch.optim.") and last[:1].isupper():
        return True
    if _OPTIMIZER_CLASS.fullmatch(last) and last[:1].isupper():
        return True
    # create_optimizer(...), build_optimizer(...), model.configure_optimizers(...)
    return bool(_OPTIMIZER_FACTORY.search(last)) and not last[:1].isupper() and "param" not in last


def is_scheduler_class(qualified: str) -> bool:
    last = qualified.rsplit(".", 1)[-1]
    return "lr_scheduler" in qualified or bool(_SCHEDULER.search(last))


def is_scaler_class(qualified: str) -> bool:
    return qualified.rsplit(".", 1)[-1] in {"GradScaler", "ShardedGradScaler"}


def is_accelerator_class(qualified: str) -> bool:
    return qualified.rsplit(".", 1)[-1] == "Accelerator"


def is_loss_class(qualified: str) -> bool:
    return bool(_LOSS_CLASS.search(qualified.rsplit(".", 1)[-1]))


def is_model_constructor(qualified: str, local_module_classes: frozenset[str]) -> bool:
    """Tell whether calling `qualified` builds an nn.Module (or a wrapper around one)."""
    last = qualified.rsplit(".", 1)[-1]
    if qualified in local_module_classes or last in local_module_classes:
        return True
    if is_loss_class(qualified) or _NOT_MODEL_CLASS.search(last):
        return False
    if qualified.startswith(("torch.nn.", "torchvision.models.", "timm.")) and last[:1].isupper():
        return last not in {"Parameter", "ParameterList", "ParameterDict"}
    if qualified.startswith(("torchvision.models.", "timm.create_model")) or last in {"create_model", "from_pretrained"}:
        return True
    return False


# Wrappers that return the module they are given (same parameters).
MODULE_PASSTHROUGH_FUNCS = frozenset(
    {
        "DistributedDataParallel", "DataParallel", "FullyShardedDataParallel", "DDP", "FSDP", "DP",
        "compile", "convert_sync_batchnorm", "wrap", "prepare_model", "to_device",
    }
)
MODULE_PASSTHROUGH_METHODS = frozenset(
    {"to", "cuda", "cpu", "float", "half", "double", "bfloat16", "train", "eval", "requires_grad_",
     "type", "share_memory", "apply", "to_empty"}
)
# Module methods that are not forward passes.
MODULE_NON_FORWARD_METHODS = frozenset(
    {"parameters", "named_parameters", "buffers", "named_buffers", "children", "named_children",
     "modules", "named_modules", "state_dict", "load_state_dict", "zero_grad", "register_buffer",
     "register_parameter", "register_forward_hook", "register_full_backward_hook", "add_module",
     "get_submodule", "get_parameter", "extra_repr", "no_sync", "save_pretrained", "print_trainable_parameters",
     "configure_optimizers", "log", "log_dict", "optimizers", "lr_schedulers", "manual_backward",
     "toggle_optimizer", "untoggle_optimizer", "save_hyperparameters"}
) | MODULE_PASSTHROUGH_METHODS
TENSOR_CUTTING_METHODS = frozenset({"detach", "detach_", "item", "tolist", "numpy", "data_ptr", "size", "dim", "numel"})
NO_GRAD_CONTEXTS = frozenset({"torch.no_grad", "torch.inference_mode", "torch.autograd.no_grad"})


@dataclass
class ImportMap:
    """Alias -> qualified name, from every import statement in a module."""

    aliases: dict[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, module: ast.Module) -> "ImportMap":
        m = cls()
        m._collect(module)
        return m

    def _collect(self, module: ast.Module) -> None:
        out = self.aliases
        for stmt in statements(module):  # imports are statements: expressions need no walk
            if isinstance(stmt, ast.Import):
                for alias in stmt.names:
                    if alias.asname is not None:
                        out[alias.asname] = alias.name
                    else:
                        head = alias.name.split(".", 1)[0]
                        out.setdefault(head, head)
            elif isinstance(stmt, ast.ImportFrom):
                base = "" if stmt.level or stmt.module is None else stmt.module
                for alias in stmt.names:
                    if alias.name == "*":
                        break
                    out[alias.asname or alias.name] = f"{base}.{alias.name}" if base else alias.name

    def qualify(self, expr: ast.AST) -> str | None:
        """Return the qualified dotted name of an expression like `O.Adam`, or None."""
        text = dotted(expr)
        if text is None:
            return None
        head, _, rest = text.partition(".")
        if head in self.aliases:
            base = self.aliases[head]
            return f"{base}.{rest}" if rest else base
        return text


def dotted(expr: ast.AST | None) -> str | None:
    """Return `a.b.c` for a Name/Attribute chain, else None."""
    parts: list[str] = []
    node = expr
    while type(node) is ast.Attribute:
        parts.append(node.attr)  # type: ignore[union-attr]
        node = node.value  # type: ignore[union-attr]
    if type(node) is ast.Name:
        if not parts:
            return node.id  # type: ignore[union-attr]
        parts.append(node.id)  # type: ignore[union-attr]
        return ".".join(reversed(parts))
    return None


def ref_text(expr: ast.AST) -> str | None:
    """Return a stable key for an lvalue-like expression: `x`, `self.opt`, `opts[g]`."""
    kind = type(expr)
    if kind is ast.Name:
        return expr.id  # type: ignore[attr-defined]
    if kind is ast.Attribute:
        base = ref_text(expr.value)  # type: ignore[attr-defined]
        return None if base is None else f"{base}.{expr.attr}"  # type: ignore[attr-defined]
    if kind is ast.Subscript:
        base = ref_text(expr.value)  # type: ignore[attr-defined]
        if base is not None:
            key = literal_key(expr.slice)  # type: ignore[attr-defined]
            if key is not None:
                return f"{base}[{key}]"
    return None


def literal_key(expr: ast.AST | None) -> str | None:
    """The key a literal subscript or dict key names: a string's value, an integer's digits."""
    if type(expr) is ast.Constant:
        value = expr.value  # type: ignore[union-attr]
        if type(value) is str:
            return value
        if type(value) is int:
            return str(value)
    return None


def last_name(expr: ast.AST) -> str | None:
    if type(expr) is ast.Name:
        return expr.id  # type: ignore[attr-defined]
    if type(expr) is ast.Attribute:
        return expr.attr  # type: ignore[attr-defined]
    return None


_SYNONYMS = {
    "gen": "g", "generator": "g", "netg": "g", "disc": "d", "discriminator": "d", "netd": "d",
    "enc": "e", "encoder": "e", "nete": "e", "dec": "decoder", "decoder": "decoder",
}
_NOISE = {"loss", "err", "error", "net", "self", "model", "total", "opt", "optimizer", "backward", "the", "real", "fake"}


def roles(name: str) -> set[str]:
    """Role words of a name: `loss_GE` -> {g, e}; `errD` -> {d}; `netG` -> {g}; `student_loss` -> {student}."""
    out: set[str] = set()
    for part in re.split(r"[_.\[\]()\s]+", name):
        for tok in re.findall(r"[A-Z]{1,3}(?![a-z])|[A-Z]?[a-z]+|\d+", part):
            low = tok.lower()
            if tok.isupper() and len(tok) <= 3:
                out.update(tok.lower())
            elif low in _SYNONYMS:
                out.add(_SYNONYMS[low])
            elif len(low) == 1 and low.isalpha():
                out.add(low)
            elif low not in _NOISE and not low.isdigit():
                out.add(low)
    return out - {"a", "b", "ab", "ba", "x", "y"}  # CycleGAN's domain letters name no role
