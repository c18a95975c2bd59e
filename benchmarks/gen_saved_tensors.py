"""Generate `gradcheck_lint/analysis/apimodels/saved/torch_saved_tensors.toml`: which inputs (and outputs) each
PyTorch operator saves for its backward pass, read from PyTorch's own `tools/autograd/derivatives.yaml`.

    python benchmarks/gen_saved_tensors.py [--torchgen DIR] [--commit SHA] [-o PATH]

The file is read through PyTorch's own loader (`torchgen`'s `load_derivatives`, with the
`native_functions.yaml` and `tags.yaml` beside it), so a saved variable is exactly what the autograd
code generator saves: an argument used only through its sizes, strides, dtype or layout in a formula
(`self.sym_sizes()`) is not saved as a tensor. By default it reads the copy packaged in the installed
wheel (`torchgen/packaged`), which is the source tree's file at the wheel's commit; `--torchgen` names
another `torchgen/packaged`-shaped directory (a PyTorch checkout's `tools/autograd` and
`aten/src/ATen/native` can be arranged so). Only data derived from the file is written, with the
source commit in its header; PyTorch's code itself is never copied.

A gradient check asks the table: "does a forward pass through this op keep this tensor for backward?"
A parameter changed in place after it was saved makes backward raise; one that no op saved (it went
only through `exp`, which saves its result) does not.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "gradcheck_lint" / "analysis" / "apimodels" / "saved" / "torch_saved_tensors.toml"

# Python functions that are composites (no derivative of their own): the operator they run, and which
# of its arguments each of theirs becomes. `F.linear(input, weight, bias)` runs `addmm(bias, input,
# weight.t())` (or `mm`/`matmul`): `weight` is `mat2` there, through a view (`t()`), which shares its
# version counter. Layers are the modules that run them, with the parameters they pass.
COMPOSITES = {
    "linear": ("addmm", {"input": "mat1", "weight": "mat2", "bias": "self"}),
    "matmul": ("mm", {"self": "self", "other": "mat2", "input": "self"}),
    "conv1d": ("convolution", {"input": "input", "weight": "weight", "bias": "bias"}),
    "conv2d": ("convolution", {"input": "input", "weight": "weight", "bias": "bias"}),
    "conv3d": ("convolution", {"input": "input", "weight": "weight", "bias": "bias"}),
    "conv_transpose1d": ("convolution", {"input": "input", "weight": "weight", "bias": "bias"}),
    "conv_transpose2d": ("convolution", {"input": "input", "weight": "weight", "bias": "bias"}),
    "conv_transpose3d": ("convolution", {"input": "input", "weight": "weight", "bias": "bias"}),
    "layer_norm": ("native_layer_norm", {"input": "input", "weight": "weight", "bias": "bias"}),
    "batch_norm": ("native_batch_norm", {"input": "input", "weight": "weight", "bias": "bias"}),
    "group_norm": ("native_group_norm", {"input": "input", "weight": "weight", "bias": "bias"}),
    "softmax": ("_softmax", {"input": "self", "self": "self"}),
    "log_softmax": ("_log_softmax", {"input": "self", "self": "self"}),
    "bilinear": ("_trilinear", {"input1": "i1", "input2": "i2", "weight": "i3"}),
    "embedding_bag": ("_embedding_bag", {"weight": "weight", "input": "indices"}),
}
LAYERS = {
    "torch.nn.Linear": "linear", "torch.nn.LazyLinear": "linear", "torch.nn.Bilinear": "bilinear",
    "torch.nn.Conv1d": "conv1d", "torch.nn.Conv2d": "conv2d", "torch.nn.Conv3d": "conv3d",
    "torch.nn.ConvTranspose1d": "conv_transpose1d", "torch.nn.ConvTranspose2d": "conv_transpose2d",
    "torch.nn.ConvTranspose3d": "conv_transpose3d",
    "torch.nn.LayerNorm": "layer_norm", "torch.nn.GroupNorm": "group_norm",
    "torch.nn.BatchNorm1d": "batch_norm", "torch.nn.BatchNorm2d": "batch_norm", "torch.nn.BatchNorm3d": "batch_norm",
    "torch.nn.Embedding": "embedding", "torch.nn.EmbeddingBag": "embedding_bag",
    # recurrent layers and attention multiply their inputs by their weights (mm/addmm: saved)
    "torch.nn.LSTM": "linear", "torch.nn.GRU": "linear", "torch.nn.RNN": "linear",
    "torch.nn.LSTMCell": "linear", "torch.nn.GRUCell": "linear", "torch.nn.RNNCell": "linear",
    "torch.nn.MultiheadAttention": "linear",
}
# Modules with no parameters of their own (activations, pooling, dropout): nothing of theirs to save.
# (Containers are left out: what a `Sequential` runs is its children, known or not.)
NO_OWN_PARAMETERS = (
    "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveAvgPool3d", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d", "AvgPool1d",
    "AvgPool2d", "AvgPool3d", "CELU", "Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "ELU", "Flatten", "GELU", "GLU",
    "Hardsigmoid", "Hardswish", "Hardtanh", "Identity", "LeakyReLU", "LogSigmoid", "LogSoftmax", "MaxPool1d", "MaxPool2d",
    "MaxPool3d", "Mish", "PixelShuffle", "ReLU", "ReLU6", "SELU", "SiLU",
    "Sigmoid", "Softmax", "Softplus", "Tanh", "Unflatten", "Upsample", "UpsamplingBilinear2d", "UpsamplingNearest2d",
)


def _packaged_root() -> Path:
    import torchgen

    return Path(torchgen.__file__).resolve().parent / "packaged"


def _commit() -> str:
    try:
        import torch

        return f"torch {torch.__version__}, commit {torch.version.git_version}"
    except ImportError:  # pragma: no cover
        return "unknown commit"


def saved_by_op(root: Path) -> dict[str, set[str]]:
    """Operator base name -> the tensor arguments (by name) and `result` its backward saves, over overloads."""
    from torchgen.packaged.autograd.load_derivatives import load_derivatives

    infos, _ = load_derivatives(str(root / "autograd" / "derivatives.yaml"),
                                str(root / "ATen" / "native" / "native_functions.yaml"),
                                str(root / "ATen" / "native" / "tags.yaml"))
    out: dict[str, set[str]] = {}
    for schema, by_key in infos.items():
        info = by_key.get("Default") or next(iter(by_key.values()))
        tensors = {a.name for a in schema.arguments.flat_all if "Tensor" in str(a.type)}
        saved = {s.nctype.name for s in info.all_saved_inputs} & tensors
        if info.all_saved_outputs:
            saved.add("result")
        base = schema.name.name.base
        out.setdefault(base, set()).update(saved)
    return out


def render(ops: dict[str, set[str]], source: str) -> str:
    lines = [
        "# Which inputs each PyTorch operator saves for backward (`result`: its output).",
        f"# Generated by benchmarks/gen_saved_tensors.py from PyTorch's tools/autograd/derivatives.yaml ({source}),",
        "# read with torchgen's load_derivatives. Data derived from that file; do not edit by hand: regenerate.",
        "# [ops]: operator base name (torch.X, Tensor.X, F.X share it) -> saved argument names, over its overloads.",
        "# [composites]: Python functions without a derivative of their own -> the operator they run and the",
        "# arguments of theirs that it saves. [layers]: torch.nn modules -> the parameters their forward saves.",
        "",
        "[ops]",
    ]
    for name in sorted(ops):
        lines.append(f'{name} = [{", ".join(repr(s).replace(chr(39), chr(34)) for s in sorted(ops[name]))}]')
    lines += ["", "[composites]"]
    for name, (op, mapping) in sorted(COMPOSITES.items()):
        saved = sorted(k for k, v in mapping.items() if v in ops.get(op, set()))
        lines.append(f'{name} = {{op = "{op}", saves = [{", ".join(chr(34) + s + chr(34) for s in saved)}]}}')
    lines += ["", "[layers]"]
    params = ("weight", "bias")
    for layer, fn in sorted(LAYERS.items()):  # then the modules without parameters of their own, saving none
        if fn in COMPOSITES:
            op, mapping = COMPOSITES[fn]
            saved = sorted(p for p in params if mapping.get(p) in ops.get(op, set()))
        else:
            saved = sorted(p for p in params if p in ops.get(fn, set()))
        lines.append(f'"{layer}" = [{", ".join(chr(34) + s + chr(34) for s in saved)}]')
    for name in NO_OWN_PARAMETERS:
        lines.append(f'"torch.nn.{name}" = []')
    return "\n".join(lines) + "\n"


def generator_arguments(argv: list[str], doc: str, default_output: Path) -> tuple[Path, str, Path]:
    """The command line of a generator of data from derivatives.yaml: the torchgen directory, the source
    commit to name in the header, the output file."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--torchgen", type=Path, default=None, help="a torchgen/packaged-shaped directory (default: the installed wheel's)")
    parser.add_argument("--commit", default=None, help="the source commit to name in the header")
    parser.add_argument("-o", "--output", type=Path, default=default_output)
    args = parser.parse_args(argv)
    return args.torchgen or _packaged_root(), args.commit or _commit(), args.output


def main(argv: list[str]) -> int:
    root, commit, output = generator_arguments(argv, __doc__ or "", OUT)
    ops = saved_by_op(root)
    output.write_text(render(ops, commit), encoding="utf-8")
    print(f"{len(ops)} operators -> {os.path.relpath(output)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
