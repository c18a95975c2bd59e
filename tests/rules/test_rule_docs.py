"""The rule documents are the contract: their examples must lint exactly as they say."""

from __future__ import annotations

import re

import pytest

from gradcheck_lint import check_source
from gradcheck_lint.config import Settings, resolve
from gradcheck_lint.fixes import fix_source
from gradcheck_lint.registry import Selection, all_rules, catalogue
from support import ROOT, RULES_DIR

SECTIONS = ["What it does", "Why is this bad?", "Example", "Use instead", "Runtime check", "Known problems", "Fix safety", "References"]


def _doc(code: str) -> str:
    matches = sorted(RULES_DIR.glob(f"{code}-*.md"))
    assert len(matches) == 1, f"{code}: expected one document, found {matches}"
    return matches[0].read_text(encoding="utf-8")


def _section(doc: str, title: str) -> str:
    m = re.search(rf"^## {re.escape(title)}\s*$(.*?)(?=^## |\Z)", doc, re.M | re.S)
    assert m, f"missing section {title!r}"
    return m.group(1)


def _selecting(code: str) -> Settings:
    """The default selection plus `code` (GL100 is off by default)."""
    return resolve(None, Selection(extend_select=(code,)))


def _code_block(section: str) -> str:
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)
    assert len(blocks) == 1, f"expected one python block, found {len(blocks)}"
    return blocks[0]


@pytest.mark.parametrize("code", list(catalogue()))
def test_document_structure(code: str) -> None:
    doc = _doc(code)
    name = catalogue()[code].name
    assert doc.startswith(f"# {code}: {name}"), doc.splitlines()[0]
    positions = [doc.index(f"## {s}") for s in SECTIONS]
    assert positions == sorted(positions), "sections out of order"
    assert "http" in _section(doc, "References")


@pytest.mark.parametrize("code", list(catalogue()))
def test_example_fires_exactly_this_rule(code: str) -> None:
    src = _code_block(_section(_doc(code), "Example"))
    codes = [d.code for d in check_source(src, f"{code}-example.py", settings=_selecting(code))]
    assert codes and set(codes) == {code}, codes


@pytest.mark.parametrize("code", list(catalogue()))
def test_use_instead_is_clean(code: str) -> None:
    src = _code_block(_section(_doc(code), "Use instead"))
    assert check_source(src, f"{code}-fixed.py", settings=_selecting(code)) == []


@pytest.mark.parametrize("code", list(all_rules()))
def test_fix_safety_tells_what_the_fix_does_to_the_example(code: str) -> None:
    """`--fix --unsafe-fixes` on the Example yields code that lints clean, and Fix safety names its applicability."""
    doc = _doc(code)
    src = _code_block(_section(doc, "Example"))
    safety = _section(doc, "Fix safety")
    result = fix_source(src, f"{code}-example.py", None, unsafe=True)
    if result.applied == 0:
        assert all(d.fix is None for d in result.before)
        assert "No automatic fix" in safety
        return
    assert result.after == () and check_source(result.text, f"{code}-example-fixed.py") == []
    said = re.search(r"Example above[^.]*?\b(safe|unsafe)\b", safety)
    assert said, "Fix safety does not say whether the Example's fix is safe"
    assert {d.fix.applicability.value for d in result.before if d.fix} == {said.group(1)}
    if 'exactly the "Use instead" code' in " ".join(safety.split()):
        assert result.text == _code_block(_section(doc, "Use instead"))


def test_one_document_per_rule() -> None:
    docs = sorted(p.name.split("-", 1)[0] for p in RULES_DIR.glob("GL*.md"))
    assert docs == list(catalogue())


def test_readme_rule_table_is_the_catalogue() -> None:
    """The README's rule table lists every code of the catalogue, with its name and document, in order."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| \[(GL\d{3})\]\(rules/(GL\d{3})-([a-z-]+)\.md\) \| ([a-z-]+) \|", readme, re.M)
    assert [(code, name) for code, _, _, name in rows] == [(c, cls.name) for c, cls in catalogue().items()]
    for code, doc_code, doc_name, name in rows:
        assert (doc_code, doc_name) == (code, name)
        assert (RULES_DIR / f"{code}-{name}.md").is_file()
