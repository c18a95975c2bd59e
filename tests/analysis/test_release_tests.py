"""Tests of a framework's installed release against an older one are decided by the catalogue's
`version_floor` (torch: 2.0). VL_adapter's trainers pick apex's AMP when `version.parse(torch.__version__) <
version.parse("1.6")` and report GL007 on apex's clipping in a branch no supported install runs; a test against
a release at or above the floor stays open, and so does a test that is not of a framework's release."""

import pytest

from gradcheck_lint.analysis.apimodels import ModelError, catalogue_for, parse_model_file
from support import lines_of

TRAINER = """
import torch
from packaging import version
{imports}
_use_native_amp = False
_use_apex = False

if {test}:
    from apex import amp
    _use_apex = True
else:
    _use_native_amp = True


class Trainer:
    def __init__(self, args, model, loader):
        self.args = args
        self.model = model
        self.loader = loader
        self.optim = torch.optim.AdamW(model.parameters())
        self.scaler = torch.cuda.amp.GradScaler()

    def train(self):
        for step_i, batch in enumerate(self.loader):
            loss = self.model(batch) / self.args.accum
            if self.args.fp16 and _use_native_amp:
                self.scaler.scale(loss).backward()
            elif self.args.fp16 and _use_apex:
                with amp.scale_loss(loss, self.optim) as scaled_loss:
                    scaled_loss.backward()
            else:
                loss.backward()
            if self.args.fp16 and _use_apex:
                torch.nn.utils.clip_grad_norm_(amp.master_params(self.optim), 1.0)
            if (step_i + 1) % self.args.accum == 0:
                if self.args.fp16 and _use_native_amp:
                    self.scaler.step(self.optim)
                    self.scaler.update()
                else:
                    self.optim.step()
                self.optim.zero_grad()
"""
APEX_CLIP = 35


def _gl007(test: str, imports: str = "") -> list[int]:
    return lines_of("GL007", TRAINER.format(test=test, imports=imports))


@pytest.mark.parametrize("test, imports", [
    ('version.parse(torch.__version__) < version.parse("1.6")', ""),
    ('version.parse("1.6") > version.parse(torch.__version__)', ""),
    ('float(torch.__version__[:3]) < 1.6', ""),
    ('tuple(map(int, torch.__version__.split(".")[:2])) < (1, 6)', ""),
    ('LooseVersion(th.__version__) <= LooseVersion("1.5.1")', "import torch as th\nfrom distutils.version import LooseVersion\n"),
    ('TORCH_VERSION < version.parse("1.6.0")', "TORCH_VERSION = version.parse(torch.__version__)\n"),
])
def test_a_branch_for_a_release_older_than_the_floor_is_dead(test: str, imports: str) -> None:
    assert _gl007(test, imports) == []


@pytest.mark.parametrize("test", [
    'version.parse(torch.__version__) < version.parse("2.1")',  # a release the floor does not rule out
    'version.parse(np.__version__) < version.parse("1.6")',  # no framework's release
    'args.old_torch',
])
def test_other_tests_stay_open(test: str) -> None:
    assert _gl007(test, "import numpy as np\n") == [APEX_CLIP]


def test_the_torch_model_file_names_its_floor_and_a_bad_floor_is_refused() -> None:
    assert catalogue_for(()).version_floor("torch") == (2, 0)
    assert catalogue_for(()).version_floor("numpy") == ()
    with pytest.raises(ModelError, match="version_floor"):
        parse_model_file({"packages": ["mylib"], "version_floor": "two"}, "pyproject.toml")
