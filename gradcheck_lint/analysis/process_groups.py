"""Whether code in sight starts a process group.

`DistributedDataParallel(model)` raises unless a default process group was started first
(`torch.distributed.init_process_group`, or a helper around it: `init_distributed_mode(args)`, mmcv's
`init_dist`, DeepSpeed's `init_distributed`). A script that wraps its model in DDP under `if args.local_rank != -1:`
but starts no group anywhere in sight (a copy of Hugging Face's `run_glue.py` with the `init_process_group` line
removed) cannot take that arm without raising, or starts the group in code the analysis does not read: a finding
about the wrapper's gradient sync rests on that (`Assumption.PROCESS_GROUP`). A wrapper built on every path says the
script runs distributed, whoever starts the group (`TrainingModel.group_out_of_sight`).

Read from the text of the checked file and of the project modules it imports (two levels deep), by the names such
calls go by (the `process_group_starter` naming convention): a name that looks like a starter keeps a finding certain,
so the convention errs on the side of finding one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .conventions import convention

if TYPE_CHECKING:
    from ..project.context import ProjectView

__all__ = ["started_in_sight"]


def started_in_sight(source: str, project: ProjectView | None) -> bool:
    """Some code of the checked file, or of a project module it imports, may start a process group."""
    starter = convention("process_group_starter")
    if starter.search(source):
        return True
    if project is None:
        return False
    return any(starter.search(text) for text, _memo in project.index.imported_texts(project.abs, source, depth=2))
