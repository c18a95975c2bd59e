"""A forward read whose returned parts a call not read made (`return criterion(self, batch, log)`, the criterion handed
in): that a part holds the forward's graph is an assumption. DSKD (lockbox 25) unpacks `loss, log = engine(criterion,
batch, log, denom)` through a DeepSpeed engine over its `Distiller`, backpropagates `loss` and sums the numbers its
criterion appended to `log` with `.item()`: three GL008 and a GL009 (the log fed back into the next forward) were
`certain`."""

from __future__ import annotations

from pathlib import Path

from gradcheck_lint.config import Settings
from gradcheck_lint.engine import analyse_text
from support import project_tree as _tree

DISTILLER = """\
    import torch.nn as nn
    from transformers import AutoModelForCausalLM


    class Distiller(nn.Module):
        def __init__(self, args):
            super().__init__()
            self.student = AutoModelForCausalLM.from_pretrained(args.student)
            self.teacher = AutoModelForCausalLM.from_pretrained(args.teacher)
            self.head = nn.Linear(8, 8)

        def forward(self, criterion, batch, log, denom):
            RETURN
"""
OUT_OF_SIGHT = """loss, log = criterion(self, batch, log, denom)
            return loss, log"""
IN_SIGHT = """loss = self.head(batch).pow(2).mean() / denom
            log["loss"].append(loss)
            return loss, log"""
TRAIN = """\
    import deepspeed
    from distiller import Distiller


    def train(args, criterion, loader):
        distiller = Distiller(args)
        engine, optimizer, _, _ = deepspeed.initialize(model=distiller, args=args)
        log = {"loss": []}
        total = 0.0
        for epoch in range(args.epochs):
            for batch in loader:
                loss, log = engine(criterion, batch, log, 4.0)
                engine.backward(loss)
                engine.step()
            total += sum(log["loss"])
        return total
"""


def _found(path: Path) -> list[tuple[str, int, bool]]:
    settings = Settings.default().with_enabled(frozenset({f"GL00{i}" for i in range(1, 10)}))
    report = analyse_text(path.read_text(), str(path), settings, project=True)
    return sorted((d.code, d.line, d.possible) for d in report.diagnostics)


def test_parts_a_criterion_handed_in_made_hold_graphs_only_by_assumption(tmp_path: Path) -> None:
    root = _tree(tmp_path, {"distiller.py": DISTILLER.replace("RETURN", OUT_OF_SIGHT), "train.py": TRAIN})
    # the engine runs the Distiller's forward (read); what the criterion returns is not: both possible
    assert _found(root / "train.py") == [("GL008", 15, True), ("GL009", 13, True)]


def test_parts_the_forward_computes_in_sight_hold_its_graph(tmp_path: Path) -> None:
    # the same loop with a forward that appends its loss tensor to the log: the graphs are kept, certainly (reported at
    # the call in the loop that runs the append)
    root = _tree(tmp_path, {"distiller.py": DISTILLER.replace("RETURN", IN_SIGHT), "train.py": TRAIN})
    assert ("GL008", 12, False) in _found(root / "train.py")
