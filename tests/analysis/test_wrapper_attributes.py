"""A DistributedDataParallel wrapper forwards no attribute to the module it wraps: `ddp_model.config` raises
AttributeError. The catalogue describes DDP as a `closed` type (its members and `nn.Module`'s), so on the paths
where a name holds the wrapper such a read ends the run, and the paths that go on hold the bare module; and the arm
of `isinstance(model, torch.nn.DataParallel)` never holds a DDP wrapper, which does not extend DataParallel.
FreeLB's and IntelLabs' trainers (after HF's old examples) read `model.encoder` / `model.config` after
`if args.local_rank != -1: model = DDP(model)`: their distributed run stops there, before any backward, and
the GL006 reported on it was on a path that cannot run (lockbox 21)."""

from __future__ import annotations

from gradcheck_lint.analysis.apimodels import catalogue_for
from gradcheck_lint.engine import analyse_text

SCRIPT = '''
import argparse

import torch
from torch import nn


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.embeddings = nn.Embedding(100, 16)
        self.head = nn.Linear(16, 2)

    def forward(self, inputs_embeds):
        return self.head(inputs_embeds).mean()


def train(args, model, loader):
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    if args.local_rank != -1:
        model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[args.local_rank])
    model.zero_grad()
    for step, batch in enumerate(loader):
        if isinstance(model, torch.nn.DataParallel):
            embeds = model.module.embeddings(batch)
        else:
            embeds = model.embeddings(batch)
        loss = model(embeds) / args.gradient_accumulation_steps
        loss.backward()
        if (step + 1) % args.gradient_accumulation_steps == 0:
            optimizer.step()
            model.zero_grad()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--local_rank", type=int, default=-1)
    parser.add_argument("--gradient_accumulation_steps", type=int, default=1)
    args = parser.parse_args()
    train(args, Encoder(), [torch.randint(0, 100, (4, 8)) for _ in range(8)])
'''


def codes(text: str) -> list[str]:
    return [d.code for d in analyse_text(text, "train.py").diagnostics]


def test_a_read_the_wrapper_lacks_ends_its_distributed_run() -> None:
    assert codes(SCRIPT) == []


def test_the_wrapper_unwrapped_by_its_module_attribute_still_accumulates_with_all_reduce() -> None:
    text = SCRIPT.replace("        if isinstance(model, torch.nn.DataParallel):\n", "        if isinstance(model, "
                          "torch.nn.parallel.DistributedDataParallel):\n")
    assert codes(text) == ["GL006"]


def test_an_unwrapping_that_works_on_every_run_still_accumulates_with_all_reduce() -> None:
    text = SCRIPT.replace("""        if isinstance(model, torch.nn.DataParallel):
            embeds = model.module.embeddings(batch)
        else:
            embeds = model.embeddings(batch)
""", """        bare = model.module if hasattr(model, "module") else model
        embeds = bare.embeddings(batch)
""")
    assert codes(text) == ["GL006"]


def test_an_attribute_the_code_sets_on_some_object_is_not_taken_to_raise() -> None:
    text = SCRIPT.replace("    model.zero_grad()\n    for step", "    model.embeddings = model.module.embeddings if "
                          "args.local_rank != -1 else model.embeddings\n    model.zero_grad()\n    for step", 1)
    assert codes(text) == ["GL006"]


def test_the_catalogue_knows_what_the_wrapper_has() -> None:
    cat = catalogue_for(())
    ddp = "torch.nn.parallel.DistributedDataParallel"
    assert cat.lacks(ddp, "config") and cat.lacks(ddp, "encoder")
    for present in ("module", "no_sync", "parameters", "train", "require_backward_grad_sync", "_private"):
        assert not cat.lacks(ddp, present), present
    assert not cat.lacks("torch.nn.Module", "config")  # a module's own attributes are its subclasses' business


def test_a_read_guarded_within_its_statement_raises_nothing() -> None:
    """`model.embeddings if hasattr(model, "embeddings") else model.module.embeddings` (dynamic-tinybert's
    `num_h_layers = model.config.num_hidden_layers if hasattr(model, "config") else ...`): the wrapper's run goes
    the other way, and on."""
    for guarded in ('model.embeddings if hasattr(model, "embeddings") else model.module.embeddings',
                    'hasattr(model, "embeddings") and model.embeddings or model.module.embeddings'):
        text = SCRIPT.replace("""        if isinstance(model, torch.nn.DataParallel):
            embeds = model.module.embeddings(batch)
        else:
            embeds = model.embeddings(batch)
""", f"""        table = {guarded}
        embeds = table(batch)
""")
        assert codes(text) == ["GL006"], guarded
