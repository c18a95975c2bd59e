"""Each rule's own VALID/INVALID snippets (Fixit style), over the whole registry."""

from __future__ import annotations

import textwrap

import pytest

from gradcheck_lint import check_source
from gradcheck_lint.registry import all_rules

CASES = []
for code, rule in all_rules().items():
    for i, src in enumerate(rule.VALID):
        CASES.append(pytest.param(code, src, False, id=f"{code}-valid-{i}"))
    for i, src in enumerate(rule.INVALID):
        CASES.append(pytest.param(code, src, True, id=f"{code}-invalid-{i}"))


@pytest.mark.parametrize("code,source,should_fire", CASES)
def test_rule_case(code: str, source: str, should_fire: bool) -> None:
    diagnostics = check_source(textwrap.dedent(source), "case.py")
    codes = {d.code for d in diagnostics}
    if should_fire:
        assert codes == {code}, diagnostics
    else:
        assert codes == set(), diagnostics


def test_every_rule_has_cases_both_ways() -> None:
    for code, rule in all_rules().items():
        assert rule.VALID and rule.INVALID, code
