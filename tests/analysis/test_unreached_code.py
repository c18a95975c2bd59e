"""Code nothing in the project runs (gradcheck_lint.project.reachability): a certain finding in a function
or method named nowhere else in the project rests on the assumption that it runs, and is possible
(lockbox 26's GBDT_TSF: graphs kept in two methods of an experiment class no script calls any more;
lockbox 14's `set_temperature`, lockbox 21's training loop never called, lockbox 23's trainer nobody builds)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gradcheck_lint.cache import ResultCache
from gradcheck_lint.config import Settings
from gradcheck_lint.diagnostics import Applicability, Diagnostic
from gradcheck_lint.runner import lint_files
from support import project_tree

EXP = """\
    import torch


    class Exp:
        def __init__(self, model, loader):
            self.model = model
            self.loader = loader
            self.opt = torch.optim.SGD(model.parameters(), lr=0.1)

        def train(self):
            for x in self.loader:
                self.opt.zero_grad()
                self.model(x).mean().backward()
                self.opt.step()

        def adapt(self):
            total = 0
            for x in self.loader:
                self.opt.zero_grad()
                loss = self.model(x).mean()
                loss.backward()
                self.opt.step()
                total += loss
            print(total)
"""
RUN = """\
    import torch
    from exp import Exp

    exp = Exp(torch.nn.Linear(4, 1), [torch.randn(2, 4)])
    exp.train()
{more}"""


def _lint(root: Path, cache: ResultCache | None = None) -> list[tuple[str, int, str, str]]:
    found: list[Diagnostic] = lint_files([str(root / "exp.py")], Settings.default(), cache=cache)
    return [(Path(d.path).name, d.line, d.code, d.certainty.value) for d in found]


def test_a_method_no_script_calls_keeps_its_finding_possible(tmp_path: Path) -> None:
    root = project_tree(tmp_path / "p", {"exp.py": EXP, "run.py": RUN.format(more="")})
    assert _lint(root) == [("exp.py", 23, "GL008", "possible")]
    [d] = lint_files([str(root / "exp.py")], Settings.default())
    assert any("nothing in the project calls" in a for a in d.assumptions)
    assert d.fix is not None and d.fix.applicability is Applicability.UNSAFE  # safe fixes are for certain findings


@pytest.mark.parametrize("more", ["exp.adapt()\n", "print(exp.adapt)\n"])
def test_a_method_a_script_names_keeps_its_finding_certain(tmp_path: Path, more: str) -> None:
    root = project_tree(tmp_path / "p", {"exp.py": EXP, "run.py": RUN.format(more=more)})
    assert _lint(root) == [("exp.py", 23, "GL008", "certain")]
    [d] = lint_files([str(root / "exp.py")], Settings.default())
    assert d.fix is not None and d.fix.applicability is Applicability.SAFE


@pytest.mark.parametrize("where", ["run.sh", "configs/exp.yaml", "notebooks/try.ipynb"])
def test_a_name_in_a_shell_script_config_or_notebook_counts(tmp_path: Path, where: str) -> None:
    text = {"run.sh": "python -c 'from exp import Exp; Exp(m, l).adapt()'\n", "configs/exp.yaml": "method: adapt\n",
            "notebooks/try.ipynb": '{"cells": [{"source": ["exp.adapt()\\n"]}]}'}[where]
    root = project_tree(tmp_path / "p", {"exp.py": EXP, "run.py": RUN.format(more=""), where: text})
    assert _lint(root) == [("exp.py", 23, "GL008", "certain")]


def test_a_project_that_looks_methods_up_by_name_keeps_them_certain(tmp_path: Path) -> None:
    more = "getattr(exp, 'train_' + 'x')()\n"
    root = project_tree(tmp_path / "p", {"exp.py": EXP, "run.py": RUN.format(more=more)})
    assert _lint(root) == [("exp.py", 23, "GL008", "certain")]


# 5yearsKim's `Unbuffered` stream (lockbox 42): an attribute hook forwarding what it is asked for makes up no name
# (`log.adapt` would have to be spelt for it to look `adapt` up); a lookup of another name still may.
FORWARDING = """\
    import sys


    class Unbuffered:
        def __init__(self, stream):
            self.stream = stream

        def __getattr__(self, attr):
            return getattr(self.stream, {name})
"""


@pytest.mark.parametrize(("name", "certainty"), [("attr", "possible"), ("'ad' + attr", "certain")])
def test_an_attribute_hook_forwarding_its_name_looks_nothing_up(tmp_path: Path, name: str, certainty: str) -> None:
    files = {"exp.py": EXP, "run.py": RUN.format(more=""), "log.py": FORWARDING.format(name=name)}
    root = project_tree(tmp_path / "p", files)
    assert _lint(root) == [("exp.py", 23, "GL008", certainty)]


# And1210's diffusion trainers (lockbox 42): copies of a library module, each with its own `Trainer`, three of which no
# file of the project imports (the scripts import the class from the others: its name alone says nothing)
TRAINER_MODULE = """\
import torch


class Trainer:
    def __init__(self):
        self.model = torch.nn.Linear(4, 1)
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.1)

    def train(self):
        total = 0
        for x in [torch.randn(2, 4)] * 4:
            self.opt.zero_grad()
            loss = self.model(x).mean()
            loss.backward()
            self.opt.step()
            total += loss
        return total
"""
TRAIN_SCRIPT = "from trainer import Trainer\n\nTrainer().train()\n"


@pytest.mark.parametrize(("more", "certainty"), [
    ({}, "possible"),  # named in no other file: nothing of the project runs it
    ({"run2.py": "import old_trainer\n"}, "certain"),
    ({"docs/usage.md": "The older trainer is in `old_trainer`.\n"}, "certain"),
    ({"plugins.py": "import importlib\nmod = importlib.import_module(name)\n"}, "certain"),  # imports by a made name
    ({"requirements.txt": "importlib-metadata\n"}, "possible"),  # a package list imports nothing
])
def test_a_module_nothing_of_the_project_imports(tmp_path: Path, more: dict[str, str], certainty: str) -> None:
    files = {"old_trainer.py": TRAINER_MODULE, "trainer.py": TRAINER_MODULE, "run.py": TRAIN_SCRIPT, **more}
    root = project_tree(tmp_path / "p", files)
    found = lint_files([str(root / "old_trainer.py"), str(root / "trainer.py")], Settings.default())
    assert [(Path(d.path).name, d.line, d.code, d.certainty.value) for d in found] == [
        ("old_trainer.py", 16, "GL008", certainty), ("trainer.py", 16, "GL008", "certain")]
    if certainty == "possible":
        assert any("nothing in the project imports" in a for a in found[0].assumptions)


def test_a_script_of_top_level_code_nothing_imports_still_runs(tmp_path: Path) -> None:
    script = "import torch\n\nmodel = torch.nn.Linear(4, 1)\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n" \
             "total = 0\nfor x in [torch.randn(2, 4)] * 4:\n    opt.zero_grad()\n    loss = model(x).mean()\n" \
             "    loss.backward()\n    opt.step()\n    total += loss\n"
    root = project_tree(tmp_path / "p", {"old_loop.py": script, "run.py": TRAIN_SCRIPT, "trainer.py": TRAINER_MODULE})
    found = lint_files([str(root / "old_loop.py")], Settings.default())
    assert [(d.line, d.code, d.certainty.value) for d in found] == [(11, "GL008", "certain")]


def test_a_method_of_a_framework_class_may_be_a_hook(tmp_path: Path) -> None:
    text = EXP.replace("    import torch\n", "    import torch\n    from somewhere import BaseTrainer\n").replace(
        "class Exp:", "class Exp(BaseTrainer):")
    root = project_tree(tmp_path / "p", {"exp.py": text, "run.py": RUN.format(more="")})
    assert _lint(root) == [("exp.py", 24, "GL008", "certain")]


def test_a_base_class_of_the_project_is_read_for_the_name(tmp_path: Path) -> None:
    base = "class Base:\n    def run(self):\n        return self.adapt()\n"
    text = EXP.replace("    import torch\n", "    import torch\n    from base import Base\n").replace("class Exp:", "class Exp(Base):")
    root = project_tree(tmp_path / "p", {"exp.py": text, "base.py": base, "run.py": RUN.format(more="")})
    assert _lint(root) == [("exp.py", 24, "GL008", "certain")]
    root2 = project_tree(tmp_path / "q", {"exp.py": text, "base.py": "class Base:\n    pass\n", "run.py": RUN.format(more="")})
    assert _lint(root2) == [("exp.py", 24, "GL008", "possible")]


def test_module_level_code_always_runs(tmp_path: Path) -> None:
    script = """\
    import torch
    model = torch.nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    total = 0
    for x in [torch.randn(2, 4)]:
        opt.zero_grad()
        loss = model(x).mean()
        loss.backward()
        opt.step()
        total += loss
"""
    root = project_tree(tmp_path / "p", {"exp.py": script})
    assert _lint(root) == [("exp.py", 10, "GL008", "certain")]


def test_a_cached_result_is_checked_again_when_another_file_starts_calling(tmp_path: Path) -> None:
    root = project_tree(tmp_path / "p", {"exp.py": EXP, "run.py": RUN.format(more="")})
    cache = ResultCache(str(tmp_path / "cache"))
    assert _lint(root, cache) == [("exp.py", 23, "GL008", "possible")]
    (root / "run.py").write_text(RUN.format(more="exp.adapt()\n").replace("    ", ""))
    assert _lint(root, cache) == [("exp.py", 23, "GL008", "certain")]


def test_a_cached_certain_result_is_checked_again_when_the_only_caller_stops_calling(tmp_path: Path) -> None:
    root = project_tree(tmp_path / "p", {"exp.py": EXP, "run.py": RUN.format(more="exp.adapt()\n")})
    cache = ResultCache(str(tmp_path / "cache"))
    assert _lint(root, cache) == [("exp.py", 23, "GL008", "certain")]
    (root / "run.py").write_text(RUN.format(more="").replace("    ", ""))
    assert _lint(root, cache) == [("exp.py", 23, "GL008", "possible")]


def test_the_methods_of_a_class_nothing_builds_keep_their_findings_possible(tmp_path: Path) -> None:
    # `train` is a word every project uses, but no script names the class: nothing builds it
    run = "import torch\nprint(torch.__version__)\nmodel.train()\n"
    root = project_tree(tmp_path / "p", {"exp.py": EXP.replace("def adapt(self)", "def train_more(self)").replace(
        "        def train(self):", "        def train(self):\n            self.train_more()"), "run.py": run})
    assert [(c, v) for _, _, c, v in _lint(root)] == [("GL008", "possible")]
    root2 = project_tree(tmp_path / "q", {"exp.py": EXP.replace("def adapt(self)", "def train_more(self)").replace(
        "        def train(self):", "        def train(self):\n            self.train_more()"), "run.py": RUN.format(more="")})
    assert [(c, v) for _, _, c, v in _lint(root2)] == [("GL008", "certain")]


def test_a_project_that_runs_nothing_of_its_own_is_a_library_called_from_outside(tmp_path: Path) -> None:
    # no script, notebook or shell script: its functions are for others to call
    root = project_tree(tmp_path / "p", {"exp.py": EXP, "util.py": "import torch\n\nSCALE = torch.ones(1)\n"})
    assert _lint(root) == [("exp.py", 23, "GL008", "certain")]
    root2 = project_tree(tmp_path / "q", {"exp.py": EXP, "util.py": "import torch\n\nSCALE = torch.ones(1)\n",
                                          "train.sh": "python -m somewhere\n"})
    assert _lint(root2) == [("exp.py", 23, "GL008", "possible")]


SIBLING = """\
    import torch

    model = torch.nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)


    def train_score(loader):
        total = 0
        for x in loader:
            opt.zero_grad()
            loss = model(x).mean()
            loss.backward()
            opt.step()
            total += loss
        return total
{more}"""


def test_calls_of_a_sibling_scripts_own_copy_do_not_reach_this_one(tmp_path: Path) -> None:
    # three copies of a script, each with its own module-level `train_score`; two call theirs, the third never does
    calling = SIBLING.format(more="\n\n    print(train_score([torch.randn(2, 4)]))\n")
    root = project_tree(tmp_path / "p", {"a.py": SIBLING.format(more=""), "b.py": calling, "c.py": calling})
    found: list[Diagnostic] = lint_files([str(root / name) for name in ("a.py", "b.py")], Settings.default())
    assert sorted((Path(d.path).name, d.line, d.code, d.certainty.value) for d in found) == [
        ("a.py", 14, "GL008", "possible"), ("b.py", 14, "GL008", "certain")]


def test_a_copy_imported_by_name_from_another_file_is_reached(tmp_path: Path) -> None:
    root = project_tree(tmp_path / "p", {"a.py": SIBLING.format(more=""),
                                         "run.py": "from a import train_score\nimport torch\n"
                                                   "print(train_score([torch.randn(2, 4)]))\n"})
    found: list[Diagnostic] = lint_files([str(root / "a.py")], Settings.default())
    assert [(d.line, d.code, d.certainty.value) for d in found] == [(14, "GL008", "certain")]


# Lockbox 29 (after its opening): a `train4` whose only calls are commented out (UCSD's PC-DARTS search script), and a
# module-level `train` of an evaluation script whose training call is commented out, beside `model.train()`,
# `"train"` splits, and a vendored library that looks names up with `getattr` (DialogPretraining's evaluate_glue).
@pytest.mark.parametrize("more, reached", [
    ("\n    # print(train_score([torch.randn(2, 4)]))\n", False),  # a call commented out runs nothing
    ("\n    model.train_score = None\n    split = 'train_score'\n    '''train_score(doc)'''\n", False),
    ("\n    print(train_score([torch.randn(2, 4)]))\n", True),
])
def test_only_code_names_a_module_level_function(tmp_path: Path, more: str, reached: bool) -> None:
    root = project_tree(tmp_path / "p", {"a.py": SIBLING.format(more=more), "run.sh": "python a.py\n"})
    found: list[Diagnostic] = lint_files([str(root / "a.py")], Settings.default())
    assert [(d.line, d.code, d.certainty.value) for d in found] == [(14, "GL008", "certain" if reached else "possible")]


@pytest.mark.parametrize("readme, reached", [
    ("Run train_score to train.\n", False),  # prose runs nothing, nor does a log
    ("Usage:\n\n```python\nfrom a import train_score\ntrain_score(loader)\n```\n", True),  # an example is a call
    ("Call `train_score(loader)` once per epoch.\n", True),
])
def test_documentation_names_a_function_by_its_code_only(tmp_path: Path, readme: str, reached: bool) -> None:
    root = project_tree(tmp_path / "p", {"a.py": SIBLING.format(more=""), "run.sh": "python a.py\n",
                                         "README.md": readme, "log.txt": "train_score: 0.1\n"})
    found: list[Diagnostic] = lint_files([str(root / "a.py")], Settings.default())
    assert [(d.line, d.code, d.certainty.value) for d in found] == [(14, "GL008", "certain" if reached else "possible")]


@pytest.mark.parametrize("other, reached", [
    # a vendored library's own lookups by name never reach the script beside it
    ("def get(obj, name):\n    return getattr(obj, name)\n", False),
    # a file that names the script's module may look its functions up, or call them as attributes
    ("import a\n\ndef get(name):\n    return getattr(a, name)\n", True),
    ("import a\nimport torch\n\na.train_score([torch.randn(2, 4)])\n", True),
])
def test_lookups_by_name_reach_the_modules_they_name(tmp_path: Path, other: str, reached: bool) -> None:
    root = project_tree(tmp_path / "p", {"a.py": SIBLING.format(more=""), "lib/util.py": other,
                                         "run.sh": "python a.py\n"})
    found: list[Diagnostic] = lint_files([str(root / "a.py")], Settings.default())
    assert [(d.line, d.code, d.certainty.value) for d in found] == [(14, "GL008", "certain" if reached else "possible")]


# A function called only by the code a module runs when it is imported (`if __name__ != "__main__":`, an author's way
# of turning a call off), in a module no other file imports: that code never runs, and neither does the function
# (dowobeha's `train_seq2seq`, lockbox 44: two certain GL001 read false).
IMPORT_TIME = """\
    import sys

    import torch


    def train_old(data):
        model = torch.nn.Linear(4, 1)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        for x in data:
            loss = model(x).pow(2).mean()
            loss.backward()
            optimizer.step()


    def train_new(data):
        model = torch.nn.Linear(4, 1)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        for x in data:
            optimizer.zero_grad()
            model(x).pow(2).mean().backward()
            optimizer.step()


    if __name__ == "__main__":
        train_new([torch.randn(2, 4)] * 4)

    if __name__ {op} "__main__":
        train_old([torch.randn(2, 4)] * int(sys.argv[1]))
"""
IMPORT_TIME_STEP = 12


@pytest.mark.parametrize(("op", "more", "certainty"), [
    ("!=", {}, "possible"),  # runs only on import, and nothing imports the module
    ("!=", {"README.md": "Run `python seq2seq.py`.\n"}, "possible"),  # a launch runs it as a script
    ("!=", {"run.py": "import seq2seq\n"}, "certain"),  # imported: the block runs
    ("==", {}, "certain"),  # a second `__main__` block: runs as a script
])
def test_a_call_only_import_time_code_makes(tmp_path: Path, op: str, more: dict[str, str], certainty: str) -> None:
    root = project_tree(tmp_path / "p", {"seq2seq.py": IMPORT_TIME.format(op=op), **more})
    (root / ".git").mkdir()
    found = lint_files([str(root / "seq2seq.py")], Settings.default())
    assert [(d.line, d.code, d.certainty.value) for d in found if d.code == "GL001"] == [
        (IMPORT_TIME_STEP, "GL001", certainty)]
