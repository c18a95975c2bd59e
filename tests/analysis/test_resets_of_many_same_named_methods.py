"""What a loop resets each iteration is read through the methods it calls; a call made on an object of no known
class is matched by its method's name to the classes of the file. In a Keras-style file every layer class defines
`call`, and each calls `call` on its parts: following every candidate, through every candidate of theirs, made the
set of reset names grow without bound (transformers' `modeling_tf_data2vec_vision.py`, vendored in a lockbox 43
repository: over 20 GB, the machine's memory, on `gradlint .`). A method name more than a few classes define is not
followed. The file is still analysed: the running list of losses is found."""

from __future__ import annotations

import json
import resource
import subprocess
import sys
from pathlib import Path


def _layers(n: int) -> str:
    lines = ["import torch", ""]
    for i in range(n):
        lines += [f"class Layer{i}:", "    def __init__(self):", "        self.inner = None", "        self.cache = []",
                  "", "    def call(self, x):", "        self.cache = []", "        y = self.inner.call(x)",
                  "        return self.proj.call(y) + self.norm.call(x)", ""]
    lines += ["model = torch.nn.Linear(4, 1)", "optimizer = torch.optim.SGD(model.parameters(), lr=0.1)",
              "encoder = Layer0()", "history = []", "for x in torch.randn(8, 2, 4):", "    h = encoder.call(x)",
              "    loss = model(x).pow(2).mean()", "    optimizer.zero_grad()", "    loss.backward()",
              "    optimizer.step()", "    history.append(loss)", ""]
    return "\n".join(lines)


def _capped() -> None:  # (in the child: 1.5 GB of address space; the analysis of this file needs under 100 MB)
    resource.setrlimit(resource.RLIMIT_AS, (1_500_000_000, 1_500_000_000))


def test_a_file_of_many_layers_calling_each_other_is_analysed_within_bounded_memory(tmp_path: Path) -> None:
    script = tmp_path / "layers.py"
    script.write_text(_layers(16))
    done = subprocess.run([sys.executable, "-m", "gradcheck_lint", str(script), "--no-cache", "--format", "json"],
                          capture_output=True, text=True, timeout=600, preexec_fn=_capped)
    assert done.returncode == 1, done.stderr[-2000:]
    assert [d["code"] for d in json.loads(done.stdout)] == ["GL008"]
