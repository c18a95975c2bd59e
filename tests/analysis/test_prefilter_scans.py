"""Searches made cheaper without changing an answer: the prefilter's import pattern and the project index's import
statements are searched from their literal with each match checked to start a line (`sources.at_line_starts`),
and a case-blind heuristic only in a text whose lowered form holds a run of letters every match spells (`Gated`)."""

from __future__ import annotations

import re
import sys

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gradcheck_lint.analysis.apimodels import catalogue_for
from gradcheck_lint.prefilter import _CASE_SAFE, Gated, LineStart, _case_blind_needle, triggers_for
from gradcheck_lint.project import index
from gradcheck_lint.sources import at_line_starts
from support import ROOT

TRIGGERS = triggers_for(catalogue_for())
# The import pattern as it was searched before: anchored at a line's start under re.MULTILINE.
ANCHORED = re.compile(rf"^[ \t]*{TRIGGERS.backward_imports.pattern.pattern}", re.MULTILINE)
IMPORT_PIECES = ("from torch.autograd import backward", "from torch.autograd import (", "grad, backward as bw)",
                 "from x import y", "x = 1; ", "# ", "\n", " ", "\t", "\\\n", "backward", "import ", "from ", "(", ")",
                 "manual_backward", "update_params", "xfrom a import backward", "\"\"\"from a import backward\"\"\"")
SCALER_PIECES = ("loss_scaler(", "LossScaler (", "LOSS_SCALER\n(", "lossſcaler(", "loſs_ſcaler(", "loss_scaler",
                 "ſcaler(", "amp_Loss_Scaler(", "İ", "ı", "K", "scaler(", "x", " ", "(", "\n", ")")


def test_the_two_searches_are_the_cheaper_kinds() -> None:
    assert isinstance(TRIGGERS.backward_imports, LineStart)
    assert not TRIGGERS.backward_imports.pattern.pattern.startswith("^")
    gated = [p for p in TRIGGERS.step_alternatives if isinstance(p, Gated)]
    assert [g.needle for g in gated] == ["caler"]  # `(?i)loss_?scaler`: `s` may be spelt `ſ`


@settings(derandomize=True, deadline=None, max_examples=600, suppress_health_check=list(HealthCheck))
@given(st.lists(st.sampled_from(IMPORT_PIECES), max_size=10).map("".join))
def test_imports_found_from_their_literal_are_those_found_at_line_starts(text: str) -> None:
    assert (TRIGGERS.backward_imports.search(text) is not None) == (ANCHORED.search(text) is not None)


def test_imports_found_alike_in_the_fixtures_and_the_package() -> None:
    files = sorted((ROOT / "fixtures").rglob("*.py")) + sorted((ROOT / "gradcheck_lint").rglob("*.py"))
    for path in files:
        text = path.read_text(encoding="utf-8", errors="surrogateescape")
        assert (TRIGGERS.backward_imports.search(text) is not None) == (ANCHORED.search(text) is not None), path
    text = "import torch\nx = 1; from torch.autograd import backward\n    from torch.autograd import (\n  grad,\n  backward)\n"
    assert TRIGGERS.backward_imports.search(text).start() == text.index("from torch.autograd import (")


@settings(derandomize=True, deadline=None, max_examples=600, suppress_health_check=list(HealthCheck))
@given(st.lists(st.sampled_from(SCALER_PIECES), max_size=8).map("".join))
def test_a_gated_heuristic_finds_what_it_finds_ungated(text: str) -> None:
    for gated in (p for kind in (TRIGGERS.backward_alternatives, TRIGGERS.step_alternatives) for p in kind
                  if isinstance(p, Gated)):
        assert (gated.search(text) is not None) == (gated.pattern.search(text) is not None)


def test_a_case_safe_character_matches_case_blind_only_what_lower_turns_into_it() -> None:
    every = "".join(chr(c) for c in range(sys.maxunicode + 1) if not 0xD800 <= c <= 0xDFFF)
    for char in sorted(_CASE_SAFE):
        assert {x.lower() for x in re.findall(f"(?i:{char})", every)} == {char.lower()}, char
    # and the two letters left out are left out for a reason
    assert re.fullmatch("(?i:s)", "ſ") and "ſ".lower() != "s"
    assert re.fullmatch("(?i:i)", "ı") and "ı".lower() != "i"


def test_the_needle_is_the_longest_run_every_match_spells() -> None:
    assert _case_blind_needle(re.compile(r"(?i)loss_?scaler$")) == "caler"
    assert _case_blind_needle(re.compile(r"(?i)^GradScaler$")) == "caler"  # `S` breaks the run: `grad` is shorter
    assert _case_blind_needle(re.compile(r"(?i)ab+cd")) == "ab"
    assert _case_blind_needle(re.compile(r"(?i)xy*zzz")) == "zzz"
    assert _case_blind_needle(re.compile(r"loss_?scaler$")) is None  # case-sensitive: the engine scans for it
    assert _case_blind_needle(re.compile(r"(?i)loss|scaler")) is None  # anything but runs: not read
    assert _case_blind_needle(re.compile(r"(?i)\bscaler")) is None
    assert _case_blind_needle(re.compile(r"(?i)s?")) is None


LINE_PIECES = ("from a import b", "from .x import (c, d", "import os, sys", "import a.b as c", "\n", " ", "\t", "# ",
               "x = 1; ", "re", "\\\n", "from", "import", ")", "#", "\x0c", "\r\n", "  from ..m import *")


def _imports_as_they_were_found(text: str) -> list[tuple[str | None, ...]]:
    from_ = re.compile(rf"^[ \t]*{index._FROM.pattern}", re.MULTILINE)
    import_ = re.compile(rf"^[ \t]*{index._IMPORT.pattern}", re.MULTILINE)
    return [m.groups() for m in from_.finditer(text)] + [m.groups() for m in import_.finditer(text)]


def _imports_found(text: str) -> list[tuple[str | None, ...]]:
    return [m.groups() for m in at_line_starts(index._FROM, text)] + [m.groups() for m in at_line_starts(index._IMPORT, text)]


@settings(derandomize=True, deadline=None, max_examples=600, suppress_health_check=list(HealthCheck))
@given(st.lists(st.sampled_from(LINE_PIECES), max_size=12).map("".join))
def test_import_statements_found_from_their_literal_are_those_found_at_line_starts(text: str) -> None:
    assert _imports_found(text) == _imports_as_they_were_found(text)


def test_import_statements_found_alike_in_the_fixtures_and_the_package() -> None:
    for path in sorted((ROOT / "fixtures").rglob("*.py")) + sorted((ROOT / "gradcheck_lint").rglob("*.py")):
        text = path.read_text(encoding="utf-8", errors="surrogateescape")
        assert _imports_found(text) == _imports_as_they_were_found(text), path
    assert not index._FROM.pattern.startswith("^") and not index._IMPORT.pattern.startswith("^")
