"""A module whose top-level import names a module of the project that does not exist cannot be imported:
ImportError before any of its code runs (`project.unimportable`). NMTGMinor keeps trainers importing
`.trainer` and `onmt.train_utils.trainer` after that file was deleted (two certain false alarms, lockbox 18).
Such a file gets one GL099 notice, no findings; once the module appears, the cached result is stale. A module
a build step may make (compiled sources beside it, a generated name), an import under `try`, one of an
installed package, and `from . import x` decide nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from gradcheck_lint.cache import ResultCache
from gradcheck_lint.engine import FileReport, analyse_text
from support import project_tree

LOOP = """\
    import torch
    {imports}


    def train(model, loader):
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for x in loader:
            loss = model(x).mean()
            loss.backward()
            opt.step()
"""

BASE = {"onmt/__init__.py": "", "onmt/train_utils/__init__.py": ""}


def _report(path: Path) -> FileReport:
    return analyse_text(path.read_text(), str(path))


def _codes(root: Path, rel: str) -> list[tuple[str, int]]:
    return [(d.code, d.line) for d in _report(root / rel).diagnostics]


@pytest.mark.parametrize("imports", [
    "from .trainer import BaseTrainer",
    "from onmt.train_utils.trainer import BaseTrainer",
    "from ..train_utils.trainer import BaseTrainer",
    "import onmt.train_utils.trainer",
])
def test_a_module_importing_a_missing_module_of_the_project_is_not_checked(tmp_path: Path, imports: str) -> None:
    root = project_tree(tmp_path, {**BASE, "onmt/train_utils/gan.py": LOOP.format(imports=imports)})
    found = _codes(root, "onmt/train_utils/gan.py")
    assert found == [("GL099", 2)]
    (root / "onmt/train_utils/trainer.py").write_text("class BaseTrainer:\n    pass\n")
    assert ("GL001", 10) in _codes(root, "onmt/train_utils/gan.py")


@pytest.mark.parametrize(("imports", "more"), [
    ("from .trainer import BaseTrainer", {"onmt/train_utils/trainer.py": "class BaseTrainer:\n    pass\n"}),
    ("from .trainer import BaseTrainer", {"onmt/train_utils/trainer/__init__.py": "BaseTrainer = object\n"}),
    ("from .nms import nms", {"onmt/train_utils/nms.pyx": "# cython\n"}),  # built in place
    ("from .ops import roi", {"onmt/train_utils/roi_kernel.cu": "// cuda\n"}),  # CUDA sources beside it
    ("from ._version import version", {}),  # written by the build
    ("try:\n        from .trainer import BaseTrainer\n    except ImportError:\n        BaseTrainer = object", {}),
    ("from . import trainer", {}),  # a name the package's `__init__` may bind
    ("from torchtext.legacy.data import Field", {}),  # installed, not the project's
])
def test_what_may_exist_decides_nothing(tmp_path: Path, imports: str, more: dict[str, str]) -> None:
    root = project_tree(tmp_path, {**BASE, **more, "onmt/train_utils/gan.py": LOOP.format(imports=imports)})
    found = _codes(root, "onmt/train_utils/gan.py")
    assert [c for c, _ in found] == ["GL001"]


def test_the_cached_notice_is_dropped_once_the_module_appears(tmp_path: Path) -> None:
    root = project_tree(tmp_path / "p", {**BASE, "onmt/train_utils/gan.py": LOOP.format(
        imports="from .trainer import BaseTrainer")})
    cache = ResultCache(str(tmp_path / "cache"))
    report = _report(root / "onmt/train_utils/gan.py")
    cache.put("k", report.diagnostics, report.dependencies)
    assert cache.get("k") is not None
    (root / "onmt/train_utils/trainer.py").write_text("class BaseTrainer:\n    pass\n")
    assert cache.get("k") is None


# A folder of the project without `__init__.py` is a namespace package: it counts as the file's package only where
# the file imports another module it holds (YOLOv7-CB's `utils/`, lockbox 37): one missing module of it then cannot
# be imported; with no such import, another installed portion of the namespace may hold it.
NAMESPACE = {"utils/general.py": "def init_seeds(seed):\n    pass\n"}


@pytest.mark.parametrize(("imports", "expected"), [
    ("from utils.general import init_seeds\n    from utils.segment.loss import ComputeLoss", [("GL099", 3)]),
    ("import utils.general\n    from utils.segment.loss import ComputeLoss", [("GL099", 3)]),
    ("from utils.segment.loss import ComputeLoss", [("GL001", 10)]),  # nothing says `utils/` is its package
    ("from utils.general import init_seeds\n    from helpers.loss import ComputeLoss", [("GL001", 11)]),
])
def test_a_missing_module_of_a_namespace_folder_the_file_uses(tmp_path: Path, imports: str,
                                                               expected: list[tuple[str, int]]) -> None:
    root = project_tree(tmp_path, {**NAMESPACE, "train.py": LOOP.format(imports=imports)})
    assert _codes(root, "train.py") == expected


def test_the_namespace_module_once_there_is_read(tmp_path: Path) -> None:
    imports = "from utils.general import init_seeds\n    from utils.segment.loss import ComputeLoss"
    root = project_tree(tmp_path, {**NAMESPACE, "utils/segment/loss.py": "class ComputeLoss:\n    pass\n",
                                   "train.py": LOOP.format(imports=imports)})
    assert _codes(root, "train.py") == [("GL001", 11)]
