"""The prefilter reads a file with the project modules it imports as one text joined by line breaks,
asked part by part with each module's answers kept: the same answers as the joined text, every time."""

from __future__ import annotations

import os
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gradcheck_lint import prefilter
from gradcheck_lint.analysis.apimodels import catalogue_for
from gradcheck_lint.config import Settings
from gradcheck_lint.engine import analyse_text
from gradcheck_lint.prefilter import Joined, triggers_for
from gradcheck_lint.project.index import index_for
from support import project_tree

TRIGGERS = triggers_for(catalogue_for())
TESTS = ("might_train", "trains_itself", "clips_and_steps", "syncs_backward", "keeps_in_hook", "defines_loss_hook")
# pieces of training code, and the characters a match may span a line break with
PIECES = ("loss.backward", "loss.backward()", "(", ")", "\\", "\n", " ", "\t", "opt.step", "opt.step()",
          "from torch.autograd import (", "grad, backward as bw)", "from torch.autograd import backward", "x",
          "def compute_loss(", "def training_step(", "accum", "zero_grad", "self.outputs.append(", "self.total +=",
          "clip_grad_norm_(", "model.no_sync()", "loss_scaler(", "scaler.step(", "# (", "import os\n")
PARTS = st.lists(st.lists(st.sampled_from(PIECES), max_size=8).map("".join), min_size=1, max_size=5)


def _answers(text: object) -> list[bool]:
    return [getattr(TRIGGERS, name)(text) for name in TESTS]


@settings(derandomize=True, deadline=None, max_examples=600, suppress_health_check=list(HealthCheck))
@given(PARTS)
def test_parts_answer_as_the_joined_text(parts: list[str]) -> None:
    memos: list[dict[object, bool] | None] = [None, *({} for _ in parts[1:])]
    expected = _answers("\n".join(parts))
    assert _answers(TRIGGERS.joined(parts, memos)) == expected
    assert _answers(TRIGGERS.joined(parts, memos)) == expected  # again, from the kept answers


def test_a_match_across_parts_reads_the_joined_text() -> None:
    crossing = [
        ["loss.backward", "(x)\nopt.step()"],  # the call's `(` in the next part
        ["loss.backward \\", "", "  (x)\nopt.step()"],  # past a blank part
        ["from torch.autograd import (grad,", " backward as bw)\nopt.step()"],  # an open parenthesis
        ["from torch.autograd import grad, \\", "backward\nopt.step()"],  # a backslash continuation
    ]
    for parts in crossing:
        text = TRIGGERS.joined(parts, [None] * len(parts))
        assert isinstance(text, str) and TRIGGERS.trains_itself("\n".join(parts))
        assert not any(TRIGGERS.trains_itself(p) for p in parts)
        assert TRIGGERS.trains_itself(text)
    parts = ["loss.backward()", "(x)\nopt.step()"]  # a part opening with `(` is read joined even without a crossing
    assert isinstance(TRIGGERS.joined(parts, [None, None]), str)
    assert isinstance(TRIGGERS.joined(["loss.backward()", "opt.step()\n"], [None, {}]), Joined)


def test_a_kept_answer_is_not_computed_again() -> None:
    calls: list[str] = []

    def test(part: str) -> bool:
        calls.append(part)
        return False

    joined = Joined(("own", "module"), (None, {}))
    assert not joined.any("key", test) and not joined.any("key", test)
    assert calls == ["own", "module", "own"]  # the file's own text is asked each time, the module once


def test_a_module_two_scripts_import_is_searched_once(tmp_path: Path) -> None:
    helper = "def run(loss, optimizer):\n    loss.backward()\n    optimizer.step()\n"
    script = "from helper import run\n\nfor x in range(3):\n    run(model(x), opt)\n"
    root = project_tree(tmp_path, {"helper.py": helper, "a.py": script, "b.py": script.replace("x", "y")})
    settings_ = Settings.default(root=str(root))
    first = analyse_text((root / "a.py").read_text(), str(root / "a.py"), settings_)
    index = index_for(str(root / "a.py"), str(root))
    assert index is not None
    kept = dict(index._probes[str(root / "helper.py")])
    assert kept  # the helper's answers are kept for the next file that imports it
    second = analyse_text((root / "b.py").read_text(), str(root / "b.py"), settings_)
    assert index._probes[str(root / "helper.py")] == kept  # asked nothing new of it
    assert [d.code for d in first.diagnostics] == [d.code for d in second.diagnostics] == ["GL001"]


@settings(derandomize=True, deadline=None, max_examples=300, suppress_health_check=list(HealthCheck))
@given(st.lists(st.sampled_from((*PIECES, "forward_backward_func", "LossScaler", "loss_scaler ", "amp_Loss_Scaler")),
                max_size=8).map("".join))
def test_the_heuristics_searched_apart_find_what_they_find_together(text: str) -> None:
    for together, apart in ((TRIGGERS.backward_patterns, TRIGGERS.backward_alternatives),
                            (TRIGGERS.step_patterns, TRIGGERS.step_alternatives)):
        assert together is not None and len(apart) == together.pattern.count("|") + 1
        assert (together.search(text) is not None) == any(p.search(text) is not None for p in apart)


def test_attribute_growth_is_searched_only_in_a_text_defining_an_automatic_hook() -> None:
    # `_SELF_STORE` is a pattern tried at every `self.`: the literal `def training_step(` is looked for first
    store = ("search", prefilter._SELF_STORE)
    plain: dict[object, bool] = {}
    text = Joined(("x = 1", "class A:\n    def forward(self):\n        self.outputs.append(x)\n"), (None, plain))
    assert not TRIGGERS.keeps_in_hook(text)
    assert store not in plain
    hooked: dict[object, bool] = {}
    text = Joined(("x = 1", "class A:\n    def training_step(self):\n        self.outputs.append(x)\n"), (None, hooked))
    assert TRIGGERS.keeps_in_hook(text)
    assert hooked[store] is True


def test_where_absolute_imports_are_looked_for_is_found_once_per_folder(tmp_path: Path, monkeypatch) -> None:
    files = {"pkg/__init__.py": "", **{f"pkg/m{i}.py": f"from pkg import m{i + 1}\n" for i in range(5)}}
    root = project_tree(tmp_path, files)
    index = index_for(str(root / "pkg" / "m0.py"), str(root))
    assert index is not None
    looked: list[str] = []
    isdir = os.path.isdir
    monkeypatch.setattr(os.path, "isdir", lambda d: looked.append(d) or isdir(d))
    for i in range(5):
        path = root / "pkg" / f"m{i}.py"
        assert [p for p, _ in index.imported_texts(str(path), path.read_text())] or i == 4
    # the root and its src/, once for each folder imports start from (the package's root, the script's folder),
    # not again for every module looked for
    assert len(looked) <= 4
