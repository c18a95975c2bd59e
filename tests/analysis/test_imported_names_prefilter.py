"""The prefilter reads a package's `__init__.py` with the modules it takes the imported names from: a
script importing only a loss from a package whose other module trains is not analysed, one importing
the training helper is, however the names are imported."""

from __future__ import annotations

from pathlib import Path

from gradcheck_lint.config import Settings
from gradcheck_lint.engine import analyse_text, screened
from gradcheck_lint.project.index import index_for
from support import project_tree

PACKAGE = {
    "pkg/__init__.py": "from .losses import squared_error\nfrom .trainer import fit as fit\n",
    "pkg/losses.py": "def squared_error(out, y):\n    return ((out - y) ** 2).mean()\n",
    "pkg/trainer.py": """\
        def fit(model, opt, batches):
            for x, y in batches:
                loss = ((model(x) - y) ** 2).mean()
                loss.backward()
                opt.step()
    """,
}
LOOP = "\nfor x, y in batches:\n    out = model(x)\n    print(squared_error(out, y))\n"


def _lint(root: Path, script: str) -> tuple[bool, list[str]]:
    """(whether the prefilter lets the script through, its findings)."""
    path = root / "script.py"
    path.write_text(script)
    settings = Settings.default(root=str(root))
    passes = screened(script, str(path), settings) is None
    return passes, [d.code for d in analyse_text(script, str(path), settings).diagnostics]


def test_a_script_taking_only_the_loss_is_not_analysed(tmp_path: Path) -> None:
    root = project_tree(tmp_path, PACKAGE)
    assert _lint(root, "from pkg import squared_error\n" + LOOP) == (False, [])
    index = index_for(str(root / "script.py"), str(root))
    assert index is not None
    texts = [t for t, _ in index.imported_texts(str(root / "script.py"), "from pkg import squared_error\n")]
    assert texts == [(root / "pkg/__init__.py").read_text(), (root / "pkg/losses.py").read_text()]


def test_a_script_taking_the_training_helper_is(tmp_path: Path) -> None:
    root = project_tree(tmp_path, PACKAGE)
    call = ("import torch\n\nmodel = torch.nn.Linear(4, 1)\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
            "fit(model, opt, batches)\n")
    for imports in ("from pkg import fit\n", "from pkg import squared_error\nfrom pkg import fit\n",
                    "from pkg import squared_error, fit\n", "import pkg\n",
                    "from pkg import *\n", "from pkg.trainer import fit\n"):
        script = imports + call.replace("fit(", "pkg.fit(" if imports == "import pkg\n" else "fit(")
        passes, codes = _lint(root, script)
        assert passes and codes == ["GL001"], imports
