"""Each rule's own VALID/INVALID snippets (Fixit style), over the whole registry: a valid snippet gives no
finding; an invalid one gives exactly one finding of its rule, at its `line` and certainty, and its fix
(safe or unsafe, as declared) turns it into exactly `fixed`, which the rule no longer flags."""

from __future__ import annotations

import textwrap

import pytest

from gradcheck_lint import check_source
from gradcheck_lint.config import resolve
from gradcheck_lint.fixes import fix_source
from gradcheck_lint.registry import Invalid, Selection, catalogue

VALID_CASES = [pytest.param(code, src, id=f"{code}-valid-{i}") for code, rule in catalogue().items() for i, src in enumerate(rule.VALID)]
INVALID_CASES = [pytest.param(code, case, id=f"{code}-invalid-{i}") for code, rule in catalogue().items() for i, case in enumerate(rule.INVALID)]


def _settings(code: str):  # type: ignore[no-untyped-def]
    return resolve(None, Selection(extend_select=(code,)))  # the defaults plus this code (GL100 is off by default)


@pytest.mark.parametrize("code,source", VALID_CASES)
def test_valid_case_is_silent(code: str, source: str) -> None:
    assert check_source(textwrap.dedent(source), "case.py", settings=_settings(code)) == []


@pytest.mark.parametrize("code,case", INVALID_CASES)
def test_invalid_case_is_flagged_on_its_line_and_fixed_as_declared(code: str, case: Invalid) -> None:
    source = textwrap.dedent(case.source)
    diagnostics = check_source(source, "case.py", settings=_settings(code))
    assert [(d.code, d.line, d.certainty.value) for d in diagnostics] == [(code, case.line, case.certainty)], diagnostics
    [d] = diagnostics
    assert (d.fix.applicability.value if d.fix else None) == case.fix
    if case.fix is None:
        assert case.fixed is None
        return
    fixed = fix_source(source, "case.py", [code], case.fix == "unsafe", _settings(code))
    assert fixed.text == case.fixed
    assert code not in {x.code for x in check_source(fixed.text, "case.py", settings=_settings(code))}
    if case.fix == "unsafe":  # never applied without --unsafe-fixes
        assert fix_source(source, "case.py", [code], False, _settings(code)).text == source


def test_every_rule_has_cases_both_ways() -> None:
    for code, rule in catalogue().items():
        assert rule.VALID and rule.INVALID, code
        assert all(isinstance(case, Invalid) for case in rule.INVALID), f"{code}: write INVALID cases as Invalid(source, line=...)"
