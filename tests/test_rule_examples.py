"""Each rule's own VALID/INVALID snippets (Fixit style), over the whole registry."""

from __future__ import annotations

import textwrap

import pytest

from gradcheck_lint import check_source
from gradcheck_lint.config import resolve
from gradcheck_lint.registry import Selection, catalogue

CASES = []
for code, rule in catalogue().items():
    for i, src in enumerate(rule.VALID):
        CASES.append(pytest.param(code, src, False, id=f"{code}-valid-{i}"))
    for i, src in enumerate(rule.INVALID):
        CASES.append(pytest.param(code, src, True, id=f"{code}-invalid-{i}"))


@pytest.mark.parametrize("code,source,should_fire", CASES)
def test_rule_case(code: str, source: str, should_fire: bool) -> None:
    settings = resolve(None, Selection(extend_select=(code,)))  # the defaults plus this code (GL100 is off by default)
    diagnostics = check_source(textwrap.dedent(source), "case.py", settings=settings)
    codes = {d.code for d in diagnostics}
    if should_fire:
        assert codes == {code}, diagnostics
    else:
        assert codes == set(), diagnostics


def test_every_rule_has_cases_both_ways() -> None:
    for code, rule in catalogue().items():
        assert rule.VALID and rule.INVALID, code
