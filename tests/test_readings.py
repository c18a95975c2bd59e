"""Readings of issues 12 and 13, each as a small bug and (mostly) its correct twin under `tests/readings/`.

An audit of the two issues wrote these pairs to see each named reading work: a framework API of the
catalogue, a role decided by construction and use, an entry point or step function, a counter form, a loss
scaling case, GL007 beyond clips. Many of them had no test. Each bug must give exactly its findings (code
and line), each twin its own (none, but for `accel_nowin`, whose hand accumulation through a prepared model
is GL006 in both: only the division differs).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gradcheck_lint.api import check_file

HERE = Path(__file__).with_name("readings")

# name -> (findings of `<name>_bug.py`, findings of `<name>_ok.py`, or None when there is no twin)
READINGS: dict[str, tuple[list[str], list[str] | None]] = {
    # frameworks (issue 12's catalogue list)
    'accel_nowin': (['GL003@9', 'GL006@9'], ['GL006@9']),
    'accel_zero': (['GL002@11'], []),
    'apex': (['GL001@10'], []),
    'ds_boundary': (['GL002@9'], []),
    'fabric': (['GL001@11'], []),
    'fabric_accum': (['GL003@11'], []),
    'fsdp1': (['GL006@7'], []),
    'fsdp2': (['GL006@8'], []),
    'fsdp2b': (['GL006@8'], []),
    'lightning_clip': (['GL001@13'], []),
    'lightning_manual': (['GL001@12'], []),
    'lightning_manual_accum': (['GL003@11', 'GL004@12'], []),
    'mmengine': (['GL001@9'], []),
    'mmengine_up': (['GL010@8'], []),
    'pl_auto': (['GL010@9'], []),
    'lightning_auto_literal': (['GL010@8'], []),
    'timm': (['GL003@8'], []),
    'xla': (['GL001@8'], []),
    # roles decided by construction and use
    'buildopt': (['GL001@8'], []),
    'schedfree': (['GL001@8'], []),
    'selfopt': (['GL001@14'], []),
    'wrap': (['GL002@9'], []),
    # entry points and step functions
    'abstract': (['GL001@12'], []),
    'click': (['GL001@10'], []),
    'cprofile': (['GL001@9'], []),
    'cProfile_Profile': (['GL001@9'], []),
    'factory': (['GL001@6'], []),
    'factory2': (['GL001@6'], []),
    'factory3': (['GL002@6'], []),
    'fire': (['GL001@9'], []),
    'fire_Fire': (['GL001@9'], []),
    'hydra': (['GL001@10'], []),
    'main': (['GL001@9'], []),
    'modstep': (['GL001@11'], []),
    'mp_spawn': (['GL001@9'], []),
    'spawn': (['GL001@9'], []),
    'stepfn': (['GL001@7'], []),
    'typer': (['GL001@11'], []),
    'bzs': (['GL002@8'], []),
    # counters and phases
    'condenum': (['GL004@12'], []),
    'enumvar': (['GL004@11'], []),
    'gstep': (['GL004@16'], []),
    'preinc': (['GL004@12'], []),
    'rangeab': (['GL003@10'], []),
    'resume': (['GL004@15'], []),
    'tqdm3': (['GL003@9'], []),
    'tqdmenum': (['GL004@10'], []),
    'whilec': (['GL004@11'], []),
    'unk2': (['GL003@8'], []),
    'unk3': (['GL003@8'], []),
    'branches': (['GL003@50'], []),
    # loss scaling and decayed gradients
    'decay': (['GL001@7'], None),
    'logdiv': (['GL003@8'], []),
    'paren': (['GL003@7'], []),
    # GL007 beyond clips
    'a_clip': (['GL007@9'], []),
    'lognorm': (['GL007@9'], []),
    'noise': (['GL007@10'], []),
    'tn': (['GL007@9'], None),
}


def found(path: Path) -> list[str]:
    return sorted(f"{d.code}@{d.line}" for d in check_file(str(path)))


@pytest.mark.parametrize("name", sorted(READINGS))
def test_the_bug_is_found_and_its_twin_is_not(name: str) -> None:
    bug, ok = READINGS[name]
    assert found(HERE / f"{name}_bug.py") == bug
    if ok is not None:
        assert found(HERE / f"{name}_ok.py") == ok


def test_every_reading_file_is_listed() -> None:
    names = {p.name.rsplit("_", 1)[0] for p in HERE.glob("*.py")}
    assert names == set(READINGS)


def test_gradients_decayed_on_purpose_are_only_possibly_a_bug() -> None:
    (finding,) = check_file(str(HERE / "decay_bug.py"))
    assert finding.certainty.value == "possible" and "decayed" in finding.message
