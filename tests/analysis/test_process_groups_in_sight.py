"""A DDP wrapper built under a test (`if args.local_rank != -1: model = DDP(model)`) where no code in sight starts a
process group: that arm raises (DDP needs one), or the group is started out of sight. GL006 on it is `possible`
(electra-pytorch's GLUE script, a copy of Hugging Face's `run_glue.py` without its `init_process_group` line: a
false certain GL006 of lockbox 22). A group started in the file, or in a project module it imports, or a wrapper built
on every path, keeps the finding certain."""

from __future__ import annotations

from pathlib import Path

import pytest

from gradcheck_lint.engine import analyse_text
from support import project_tree

SCRIPT = """\
import torch
from torch.nn.parallel import DistributedDataParallel as DDP
{imports}

def train(args, model, loader):
{start}    if args.local_rank != -1:
        model = DDP(model, device_ids=[args.local_rank])
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for i, x in enumerate(loader):
        loss = model(x).pow(2).mean() / args.accum
        loss.backward()
        if (i + 1) % args.accum == 0:
            optimizer.step()
            optimizer.zero_grad()
"""
HELPER = """\
import torch


def init_distributed_mode(args):
    torch.distributed.init_process_group(backend="nccl")
"""


def _gl006(root: Path, text: str) -> list[str]:
    (root / "train.py").write_text(text)
    return [d.certainty.value for d in analyse_text(text, str(root / "train.py")).diagnostics if d.code == "GL006"]


@pytest.mark.parametrize("imports, start, certainty", [
    ("", "", "possible"),
    ("", "    torch.distributed.init_process_group(backend='nccl')\n", "certain"),
    ("from utils import init_distributed_mode\n", "    init_distributed_mode(args)\n", "certain"),
], ids=["no-group-in-sight", "started-here", "started-by-a-project-helper"])
def test_a_wrapper_built_under_a_test_needs_a_group_in_sight(tmp_path: Path, imports: str, start: str, certainty: str) -> None:
    root = project_tree(tmp_path, {"utils.py": HELPER})
    assert _gl006(root, SCRIPT.format(imports=imports, start=start)) == [certainty]


def test_a_wrapper_built_on_every_path_says_the_script_runs_distributed(tmp_path: Path) -> None:
    root = project_tree(tmp_path, {})
    text = SCRIPT.format(imports="", start="").replace("    if args.local_rank != -1:\n        model = DDP(",
                                                       "    if True:\n        model = DDP(")
    text = text.replace("    if True:\n", "").replace("        model = DDP(", "    model = DDP(")
    assert _gl006(root, text) == ["certain"]
