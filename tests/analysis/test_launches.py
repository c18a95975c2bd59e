"""How the project launches its scripts (gradcheck_lint.project.launches): a GL006 (micro-batches synchronised
for nothing) rests on the script running on several processes. Where every launch the project writes starts one
(flan-ul2-alpaca's README: `python train_lora.py`, lockbox 42), and nothing asks for several, the finding is
possible; a multi-process launch anywhere (`accelerate launch train.py`, `torchrun --nproc_per_node 8`), a
configuration asking for several, a script that starts its processes itself, or no launch written at all keeps it
certain."""

from __future__ import annotations

from pathlib import Path

import pytest

from gradcheck_lint.cache import ResultCache
from gradcheck_lint.config import Settings
from gradcheck_lint.runner import lint_files
from support import project_tree

TRAIN = """\
    import torch
    from accelerate import Accelerator


    def main():
        accelerator = Accelerator()
        accumulation_steps = 8
        model = torch.nn.Linear(4, 1)
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
        loader = torch.utils.data.DataLoader(torch.randn(64, 4), batch_size=4)
        model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
        for step, x in enumerate(loader):
            loss = model(x).mean() / accumulation_steps
            accelerator.backward(loss)
            if (step + 1) % accumulation_steps == 0:
                optimizer.step()
                optimizer.zero_grad()


    if __name__ == "__main__":
        main()
"""
BACKWARD = 14  # the line of `accelerator.backward(loss)`


def _gl006(root: Path, cache: ResultCache | None = None) -> list[tuple[int, str]]:
    found = lint_files([str(root / "train_lora.py")], Settings.default(), cache=cache)
    return [(d.line, d.certainty.value) for d in found if d.code == "GL006"]


def _tree(tmp: Path, files: dict[str, str]) -> Path:
    return project_tree(tmp / "p", {"train_lora.py": TRAIN, **files})


@pytest.mark.parametrize("files", [
    {"README.md": "## Training\n\n```bash\npython train_lora.py\n```\n"},
    {"run.sh": "#!/bin/bash\nCUDA_VISIBLE_DEVICES=0 python3 -u ./train_lora.py \\\n    --lr 1e-4\n"},
    {"scripts/run.sh": "torchrun --nproc_per_node=1 ../train_lora.py --config configs/a.yaml\n",
     "configs/a.yaml": "nodes: 1\ntasks_per_node: 1\n"},
    {"README.md": "accelerate launch --num_processes 1 train_lora.py\n"},
    # several processes of other scripts of the project, whose runs cannot reach this one (T5VQVAE's README runs
    # `run_squad.py` on several processes beside `run_swag.py`, lockbox 46 after its reading)
    {"README.md": "python train_lora.py\n", "other.sh": "torchrun --nproc_per_node=8 pretrain.py\n",
     "pretrain.py": "import torch\nprint(torch.__version__)\n"},
    {"README.md": "python train_lora.py\n",
     "tools/bench.py": "import torch.multiprocessing as mp\n\ndef work(rank):\n    pass\n\nmp.spawn(work, nprocs=4)\n"},
])
def test_every_launch_the_project_writes_starts_one_process(tmp_path: Path, files: dict[str, str]) -> None:
    assert _gl006(_tree(tmp_path, files)) == [(BACKWARD, "possible")]


@pytest.mark.parametrize("files", [
    {},  # no launch written: the user may launch it any way
    {"README.md": "python train_lora.py\n\nOn 8 GPUs: `accelerate launch train_lora.py`\n"},
    # another script whose run imports this one (a launch of several processes of it may run this file's code)
    {"README.md": "python train_lora.py\n", "other.sh": "torchrun --nproc_per_node=8 pretrain.py\n",
     "pretrain.py": "from train_lora import main\nmain()\n"},
    {"README.md": "python train_lora.py\n", "run.sh": "torchrun --nproc_per_node $NGPUS train_lora.py\n"},
    {"README.md": "python train_lora.py\n", "default_config.yaml": "distributed_type: MULTI_GPU\nnum_processes: 4\n"},
    {"README.md": "python train_lora.py\n", "slurm.sh": "#SBATCH --gres=gpu:4\nsrun python train_lora.py\n"},
    {"README.md": "python launch.py\n",
     "launch.py": "import torch.multiprocessing as mp\nfrom train_lora import main\nmp.spawn(main, nprocs=4)\n"},
    {"README.md": "python setup_data.py\n"},  # a launch of no script of the project
    # several processes of a script the project does not have: a placeholder may stand for this one (minimind)
    {"README.md": "python train_lora.py\n", "other.sh": "torchrun --nproc_per_node N train_xxx.py\n"},
])
def test_a_launch_of_several_processes_or_none_written_keeps_the_finding_certain(tmp_path: Path,
                                                                                  files: dict[str, str]) -> None:
    assert _gl006(_tree(tmp_path, files)) == [(BACKWARD, "certain")]


def test_a_launch_added_later_is_seen_through_the_cache(tmp_path: Path) -> None:
    root = _tree(tmp_path, {"README.md": "python train_lora.py\n"})
    cache = ResultCache(tmp_path / "cache")
    assert _gl006(root, cache) == [(BACKWARD, "possible")]
    (root / "README.md").write_text("python train_lora.py\n\naccelerate launch --multi_gpu train_lora.py\n")
    assert _gl006(root, cache) == [(BACKWARD, "certain")]


def test_a_nested_projects_launches_are_its_own(tmp_path: Path) -> None:
    # an example inside the project, a project of its own (its marker), launched in one process by its README
    files = {"examples/lora/setup.cfg": "[metadata]\nname = example\n", "examples/lora/README.md": "python train.py\n",
             "examples/lora/train.py": "print('example')\n"}
    assert _gl006(_tree(tmp_path, files)) == [(BACKWARD, "certain")]


def test_a_folder_of_scripts_without_a_marker_decides_nothing(tmp_path: Path) -> None:
    root = _tree(tmp_path, {"README.md": "python train_lora.py\n"})
    (root / "pyproject.toml").unlink()  # no marker: what else launches these scripts is not known
    assert _gl006(root) == [(BACKWARD, "certain")]
