"""The naming conventions are one table (`apimodels/naming/conventions.toml`): the code holds no regular
expression of names of its own, asks only for ideas the table has, and the table has no idea nobody asks for."""

from __future__ import annotations

import ast
import re

import pytest

from gradcheck_lint.analysis.conventions import convention, conventions, parse_conventions
from support import ROOT

PACKAGE = ROOT / "gradcheck_lint"

# The regular expressions of the package that read syntax, not names: comments, import lines, globs,
# notebook magics, rule codes, the catalogue's own name patterns. Any other one is a naming convention
# and belongs in the table.
SYNTAX = {
    "fixes.py": {"_NEWLINE", "_NUMBER"},
    "suppressions.py": {"_MAYBE", "_GRADLINT", "_NOQA", "_BARE_NOQA", "_SEPARATORS", "_OWN_CODE"},
    "add_noqa.py": {"_MAGIC"},
    "globs.py": {"regex", "<return>"},  # glob patterns translated, one regex for a list of them
    "sources.py": {"_COOKIE", "_LEGACY_NAMES"},  # ... and the keywords that were names before Python 3.7
    "project/index.py": {"_FROM", "_IMPORT", "_CLASS_BASES"},
    "project/callers.py": {"_FILE_LINE", "_IMPORT_LINE", "word"},
    "project/caller_gates.py": {"needle"},
    # a script's entry; a word of a project file's text; a config, script or document line that sets a field to
    # one, the field there, spelt with dashes, or as a command-line option (syntax of those files, built per field)
    "project/project_calls.py": {"_ENTRY", "needle"},
    "project/setting_values.py": {"setting", "named", "dashed", "<return>"},  # <return>: any spelling of an option
    # words, `def`/`class` statements, a script's entry, a lookup by a computed name (its receivers: the table's)
    "project/reachability.py": {"_WORD", "_DEF", "_CLASS", "_TOP_DEF", "_COMMENT_LINE", "_ATTRIBUTE", "_BARE", "_STRING", "_DOC_CODE", "_ENTRY", "_DYNAMIC", "_ATTRIBUTE_HOOK", "launched"},  # a call of one named method (`.update(`) in a project file's text  # `path.py:12` in messages; a project file naming a module
    # a Python file that starts processes, a continued shell line, the words of a launch, an import by a computed name;
    # the launchers' and settings' patterns, read from
    # their data file (`project/launchers.toml`: commands and configuration syntax, no names)
    "project/launches.py": {"_STARTS_PROCESSES", "_CONTINUED", "_CONTINUED_LINE", "_LAUNCH_WORDS",
                             "launchers", "single", "settings"},
    "registry.py": {"_CODE"},
    "cache.py": {"_BUCKET"},
    "notebooks.py": {"_HELP_AFTER", "_CELL_MAGIC", "_AT_LINE"},
    "analysis/apimodels/__init__.py": {"<return>"},
    "analysis/apimodels/schema.py": {"_NAME", "_REF_PART", "pattern"},
    "analysis/conventions.py": {"compiled"},
    "analysis/counters.py": {"_SELF_CALL"},
    "analysis/syntax.py": {"_SPACE_AFTER_OPEN", "_SPACE_BEFORE_CLOSE"},
    "analysis/release_tests.py": {"_RELEASE"},  # the digits of a release literal (`"1.10.0a0"`)
    "checks/gl003_unscaled_accumulated_loss.py": {"_IDENT"},
    # _SELF_STORE: `self.x +=` / `.append(` text; _BETWEEN: what may stand between a word and its call's `(`: syntax
    "prefilter.py": {"<return>", "imports", "_SELF_STORE", "_BETWEEN"},
}
_INLINE = {"search", "match", "fullmatch"}  # `re.search(r"...", text)`: a pattern written where it is used


def _compiled_patterns() -> set[tuple[str, str]]:
    """(file, the name a `re.compile` call is bound to) for every one in the package."""
    found: set[tuple[str, str]] = set()
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE).as_posix()
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, (ast.Assign, ast.Return)) and node.value is not None:
                for call in ast.walk(node.value):
                    if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "compile" \
                            and isinstance(call.func.value, ast.Name) and call.func.value.id == "re":
                        target = node.targets[0] if isinstance(node, ast.Assign) else None
                        found.add((rel, target.id if isinstance(target, ast.Name) else "<return>"))
    return found


def _inline_name_patterns() -> list[str]:
    """`re.search(r"(?i)start|resume", name)`: a literal pattern searched where it is written, case-blind
    (a name's spelling), outside the table."""
    out = []
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE).as_posix()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _INLINE \
                    and isinstance(node.func.value, ast.Name) and node.func.value.id == "re" and node.args \
                    and isinstance(node.args[0], ast.Constant) and str(node.args[0].value).startswith("(?i)"):
                out.append(f"{rel}:{node.lineno}")
    return out


def test_no_naming_regex_lives_outside_the_table() -> None:
    allowed = {(f, name) for f, names in SYNTAX.items() for name in names}
    stray = sorted(_compiled_patterns() - allowed)
    assert not stray, f"regular expressions outside the conventions table (a naming one is a row of it): {stray}"
    assert not _inline_name_patterns()


def test_every_idea_asked_for_is_in_the_table_and_every_row_is_asked_for() -> None:
    asked: set[str] = set()
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "convention" \
                    and node.args and isinstance(node.args[0], ast.Constant):
                asked.add(str(node.args[0].value))
    assert asked <= set(conventions()), sorted(asked - set(conventions()))
    assert set(conventions()) <= asked, f"rows nobody asks for: {sorted(set(conventions()) - asked)}"


def test_rows_mean_what_their_notes_say() -> None:
    assert convention("optimizer").search("g_optim") and not convention("optimizer").search("model")
    assert convention("model").search("netD") and not convention("model").search("detach")
    assert convention("scheduler").search("lr_scheduler")
    with pytest.raises(KeyError, match="no naming convention 'optimiser'"):
        convention("optimiser")


@pytest.mark.parametrize(
    "rows,message",
    [
        ({"convention": [{"idea": "a", "pattern": "x"}, {"idea": "a", "pattern": "y"}]}, "a second row for the idea 'a'"),
        ({"convention": [{"idea": "a", "pattern": "("}]}, "is not a regular expression"),
        ({"convention": [{"idea": "a", "pattern": "x", "flags": "i"}]}, "nothing else"),
        ({"convention": [{"idea": "a b", "pattern": "x"}]}, "an identifier"),
        ({"rows": []}, r"\[\[convention\]\] rows only"),
    ],
)
def test_a_bad_row_is_refused_naming_it(rows: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_conventions(rows, "t.toml")


def test_no_pattern_is_written_twice() -> None:
    spellings: dict[str, str] = {}
    for idea, row in conventions().items():
        text = re.sub(r"^\(\?i\)", "", row.pattern.pattern)
        assert text not in spellings, f"{idea} spells the same names as {spellings.get(text)}"
        spellings[text] = idea
