"""With a pool, the parent answers the files the prefilter rules out and sends every other file to a
worker, also one whose own text calls no backward pass or step but whose imported helper does."""

from __future__ import annotations

import os
import sys
from functools import partial
from pathlib import Path

import pytest

from gradcheck_lint.cache import ResultCache
from gradcheck_lint.config import Settings
from gradcheck_lint.runner import _screen_path, lint_files
from support import BUGGY
from support import project_tree as _tree

HELPERS = """\
    def train_on(loss, optimizer):
        loss.backward()
        optimizer.step()
"""
# no `backward` or `step` anywhere in its bytes: only the helper it imports trains
SCRIPT = """\
    import torch
    from helpers import train_on

    model = torch.nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for x in range(10):
        train_on(model(torch.randn(2, 4)).sum(), opt)
"""
PLAIN = "import torch\n\n\ndef double(x):\n    return 2 * x\n"


def _project(tmp_path: Path) -> Path:
    files = {"helpers.py": HELPERS, "script.py": SCRIPT, "plain.py": PLAIN}
    files.update({f"dear{i}.py": BUGGY for i in range(3)})  # enough training files for a pool of two
    return _tree(tmp_path / "proj", files)


def test_the_screen_answers_only_what_the_prefilter_rules_out(tmp_path: Path) -> None:
    root = _project(tmp_path)
    settings = Settings.default(root=str(root))
    assert _screen_path(str(root / "script.py"), settings, keyed=False) is None  # it needs the analysis
    answered = _screen_path(str(root / "plain.py"), settings, keyed=True)
    assert answered is not None and answered[0].diagnostics == [] and answered[1] is not None


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="workers inherit the patched function only by fork")
def test_a_script_training_through_an_imported_helper_is_analysed_by_a_worker(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import gradcheck_lint.runner as runner

    root = _project(tmp_path)
    settings = Settings.default(root=str(root))
    files = sorted(str(p) for p in root.glob("*.py"))
    alone = lint_files(files, settings, jobs=1)
    real = runner.analyse_bytes
    log = tmp_path / "analysed"
    log.mkdir()

    def recording(data, path, settings):  # type: ignore[no-untyped-def]
        (log / f"{Path(path).name}.{os.getpid()}").write_text("")
        return real(data, path, settings)

    monkeypatch.setattr(runner, "analyse_bytes", recording)  # inherited by the forked workers
    pooled = lint_files(files, settings, jobs=2, cache=ResultCache(str(tmp_path / "cache")))
    assert pooled == alone and ("GL001", "script.py") in {(d.code, Path(d.path).name) for d in pooled}
    by = [p.name.rsplit(".", 1) for p in log.iterdir()]
    assert [pid for name, pid in by if name == "script.py"] != [str(os.getpid())]  # a worker analysed it
    assert "plain.py" not in {name for name, _ in by}  # answered by the screen, never analysed


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="workers inherit the patched function only by fork")
@pytest.mark.parametrize("unsafe", [False, True])
def test_the_workers_verify_the_fixes_the_listing_offers(tmp_path: Path, monkeypatch, unsafe: bool) -> None:  # type: ignore[no-untyped-def]
    """A listing marks `[*]` where --fix would fix: the worker that analysed a file checks its fixes and
    leaves the result in the cache, so the parent does not fix every file again after the pool is done."""
    import gradcheck_lint.fixes as fixes
    from gradcheck_lint.api import check_paths

    root = _project(tmp_path)
    settings = Settings.default(root=str(root))
    found, _ = check_paths([str(root)], settings, jobs=1)
    expected = fixes.verify_fixes(found, unsafe, settings)  # fixed in this process, no cache
    assert any(d.fix is not None for d in expected)
    cache = ResultCache(str(tmp_path / "cache"))
    pooled, _ = check_paths([str(root)], settings, jobs=2, cache=cache, verify=partial(fixes.verified_entry, unsafe))
    assert pooled == found

    def refuse(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise AssertionError("the parent fixed a file the workers had verified")

    monkeypatch.setattr(fixes, "fix_file", refuse)
    assert fixes.verify_fixes(pooled, unsafe, settings, cache) == expected


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="workers inherit what the parent built only by fork")
def test_the_workers_inherit_the_catalogue_and_tables_built_before_they_fork(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import gradcheck_lint.runner as runner
    from gradcheck_lint.analysis.apimodels import catalogue_for
    from gradcheck_lint.analysis.saved_tensors import saved_table
    from gradcheck_lint.prefilter import triggers_for

    root = _project(tmp_path)
    settings = Settings.default(root=str(root))
    files = sorted(str(p) for p in root.glob("*.py"))
    for cached in (catalogue_for, triggers_for, saved_table):
        cached.cache_clear()  # as in a fresh `gradlint` process
    real = runner.analyse_bytes
    log = tmp_path / "built"
    log.mkdir()

    def recording(data, path, settings):  # type: ignore[no-untyped-def]
        built = [f.cache_info().currsize for f in (catalogue_for, triggers_for, saved_table)]
        (log / f"{Path(path).name}.{os.getpid()}").write_text(" ".join(map(str, built)))
        return real(data, path, settings)

    monkeypatch.setattr(runner, "analyse_bytes", recording)  # inherited by the forked workers
    lint_files(files, settings, jobs=2)
    seen = {p.name: p.read_text() for p in log.iterdir() if not p.name.endswith(f".{os.getpid()}")}
    assert seen and all(built == "1 1 1" for built in seen.values())  # even a worker's first file found them built
