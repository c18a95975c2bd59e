"""Every fixture yields exactly the findings (line, code, certainty) its `# expect:` comments name."""

from __future__ import annotations

import pytest

from support import FIXTURES, found_findings, load_fixtures, load_notebook_fixtures, parse_expected_findings

FIXTURE_LIST = load_fixtures()
NOTEBOOK_LIST = load_notebook_fixtures()


def test_fixture_corpus_is_big_enough() -> None:
    codes = ["GL001", "GL002", "GL003", "GL004", "GL005"]
    buggy = {c: [f for f in FIXTURE_LIST if any(code == c for _, code in f.expected)] for c in codes}
    assert len(FIXTURE_LIST) >= 40
    for code, files in buggy.items():
        assert len(files) >= 4, f"{code} has only {len(files)} buggy fixtures"
    for theme in ("missing_zero_grad", "zero_grad_before_step", "unscaled_accumulated_loss", "accumulation_off_by_one", "cross_model_grad_leak"):
        clean = [f for f in FIXTURE_LIST if f.path.parent.name == theme and not f.expected]
        assert len(clean) >= 4, f"{theme} has only {len(clean)} correct fixtures"


@pytest.mark.parametrize("fixture", FIXTURE_LIST, ids=lambda f: f.id)
def test_fixture_diagnostics(fixture, fixture_file_diagnostics) -> None:  # type: ignore[no-untyped-def]
    diagnostics = fixture_file_diagnostics[str(fixture.path)]  # check_file, made once for the session
    assert not [d for d in diagnostics if d.code == "GL000"], diagnostics
    expected = parse_expected_findings(fixture.path.read_text(encoding="utf-8"))
    assert found_findings(diagnostics) == expected, "\n".join(f"{d.line}: {d.code} ({d.certainty.value}) {d.message}" for d in diagnostics)


@pytest.mark.parametrize("fixture", [f for f in FIXTURE_LIST if f.expected], ids=lambda f: f.id)
def test_messages_name_the_users_objects(fixture, fixture_file_diagnostics) -> None:  # type: ignore[no-untyped-def]
    source = fixture.path.read_text(encoding="utf-8").splitlines()
    for d in fixture_file_diagnostics[str(fixture.path)]:
        if d.notice:
            continue  # about the analysis (GL099, anchored at the top of the file), not the code
        line = source[d.line - 1]
        # the message quotes code that really is on the anchored line (the call, the clear, the test)
        quoted = [q for q in d.message.split("`")[1::2]]
        assert any(q.split("(")[0].strip() and q.split("(")[0].strip() in line for q in quoted), (d.message, line)
        assert d.help and d.help.endswith(".")


def test_fixtures_directory_exists() -> None:
    assert FIXTURES.is_dir()


def test_notebook_fixtures_hold_buggy_and_correct_notebooks() -> None:
    assert [f for f in NOTEBOOK_LIST if f.expected] and [f for f in NOTEBOOK_LIST if not f.expected]


@pytest.mark.parametrize("fixture", NOTEBOOK_LIST, ids=lambda f: f.id)
def test_notebook_fixture_diagnostics(fixture, fixture_file_diagnostics) -> None:  # type: ignore[no-untyped-def]
    diagnostics = fixture_file_diagnostics[str(fixture.path)]
    got = {(d.cell, d.line, d.code) for d in diagnostics}
    assert not [d for d in diagnostics if d.code == "GL000"], diagnostics
    assert got == set(fixture.expected), "\n".join(f"cell {d.cell}:{d.line}: {d.code} {d.message}" for d in diagnostics)


@pytest.mark.parametrize("fixture", [f for f in NOTEBOOK_LIST if f.expected], ids=lambda f: f.id)
def test_notebook_messages_name_the_users_objects(  # type: ignore[no-untyped-def]
        fixture, fixture_file_diagnostics) -> None:
    for d in fixture_file_diagnostics[str(fixture.path)]:
        assert d.cell is not None
        line = fixture.sources[d.cell - 1].split("\n")[d.line - 1]
        quoted = d.message.split("`")[1::2]
        assert any(q.split("(")[0].strip() and q.split("(")[0].strip() in line for q in quoted), (d.message, line)
        # the anchored column is where the quoted code starts in the cell
        assert line[d.column - 1:].startswith(quoted[0].split("(")[0]), (d.column, line, d.message)


def test_every_rule_has_a_fixture_directory_named_after_it() -> None:
    from support import RULES_DIR

    rule_names = {doc.stem.split("-", 1)[1].replace("-", "_") for doc in RULES_DIR.glob("GL0*.md")}
    directories = {d.name for d in FIXTURES.iterdir() if d.is_dir()}
    assert rule_names <= directories
    assert directories - rule_names == {"correct_idioms", "seeds", "notebooks"}
