"""`[tool.gradlint]` in pyproject.toml, end to end: discovery, selection, per-file ignores, excludes, errors."""

from __future__ import annotations

import dataclasses
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gradcheck_lint import check_file, check_paths, check_source
from gradcheck_lint.config import DEFAULT_EXCLUDE, ConfigError, Settings, load_settings, parse_table, resolve
from gradcheck_lint.globs import GlobSet
from gradcheck_lint.registry import Selection
from support import BUGGY, ROOT, UNSCALED, gradlint, invoke, reported, write

CLEAN = BUGGY + "    opt.zero_grad()\n"


def project(tmp_path: Path, config: str, files: dict[str, str]) -> Path:
    """A project directory with `pyproject.toml` holding `config` and the given files."""
    root = tmp_path / "proj"
    write(root, {"pyproject.toml": config, **files})
    return root


# --- discovery -------------------------------------------------------------------------------------


def test_config_is_found_walking_up_from_the_checked_file(tmp_path: Path) -> None:
    root = project(tmp_path, '[tool.gradlint]\nignore = ["GL001"]\n', {"src/deep/train.py": BUGGY})
    target = root / "src" / "deep" / "train.py"
    res = gradlint(str(target), cwd=tmp_path)  # the cwd is outside the project
    assert res.returncode == 0, res.stdout + res.stderr
    assert "All checks passed (1 file checked)" in res.stdout
    res = gradlint("--isolated", "--format", "json", str(target), cwd=tmp_path)
    assert res.returncode == 1
    assert reported(res, root) == [("src/deep/train.py", 6, "GL001")]


def test_pyproject_without_a_gradlint_table_is_passed_over(tmp_path: Path) -> None:
    root = project(tmp_path, '[tool.gradlint]\nignore = ["GL001"]\n', {
        "sub/pyproject.toml": '[project]\nname = "sub"\n\n[tool.black]\nline-length = 100\n',
        "sub/train.py": BUGGY,
    })
    assert invoke(str(root / "sub" / "train.py")).exit_code == 0


def test_the_nearest_gradlint_table_wins(tmp_path: Path) -> None:
    root = project(tmp_path, '[tool.gradlint]\nignore = ["GL001"]\n', {
        "sub/pyproject.toml": '[tool.gradlint]\nselect = ["GL001"]\n',
        "sub/train.py": BUGGY,
        "other/train.py": BUGGY,
    })
    assert invoke("--format", "json", str(root / "sub")).exit_code == 1
    assert invoke(str(root / "other")).exit_code == 0


def test_search_starts_at_the_common_parent_of_the_paths(tmp_path: Path) -> None:
    root = project(tmp_path, '[tool.gradlint]\nignore = ["GL001"]\n', {"a/train.py": BUGGY, "b/train.py": BUGGY})
    res = invoke(str(root / "a" / "train.py"), str(root / "b" / "train.py"))
    assert res.exit_code == 0, res.stdout
    assert "2 files checked" in res.stdout


def test_relative_paths_search_from_the_working_directory(tmp_path: Path) -> None:
    root = project(tmp_path, '[tool.gradlint]\nignore = ["GL001"]\n', {"src/train.py": BUGGY})
    assert gradlint("train.py", cwd=root / "src").returncode == 0
    assert gradlint(".", cwd=root / "src").returncode == 0


def test_config_option_names_the_file(tmp_path: Path) -> None:
    write(tmp_path, {"train.py": BUGGY, "settings/lint.toml": '[tool.gradlint]\nignore = ["GL001"]\n',
                     "settings/empty.toml": "[tool.other]\nx = 1\n"})
    train = str(tmp_path / "train.py")
    assert invoke(train).exit_code == 1
    assert invoke("--config", str(tmp_path / "settings" / "lint.toml"), train).exit_code == 0
    res = invoke("--config", str(tmp_path / "settings" / "empty.toml"), train)
    assert res.exit_code == 2 and "has no [tool.gradlint] table" in res.stderr
    res = invoke("--config", str(tmp_path / "missing.toml"), train)
    assert res.exit_code == 2 and "missing.toml: no such file" in res.stderr
    res = invoke("--config", str(tmp_path / "settings" / "lint.toml"), "--isolated", train)
    assert res.exit_code == 2 and "cannot be used together" in res.stderr


def test_exclude_patterns_are_relative_to_the_config_directory(tmp_path: Path) -> None:
    root = project(tmp_path, '[tool.gradlint]\nextend-exclude = ["/src/gen", "*_scratch.py"]\n', {
        "src/gen/train.py": BUGGY,
        "src/model/gen/train.py": BUGGY,  # `/src/gen` is anchored: this one is not excluded
        "src/a_scratch.py": BUGGY,
        "src/deep/b_scratch.py": BUGGY,  # no slash: matches at any depth
    })
    res = gradlint("--format", "json", ".", cwd=root / "src")
    assert reported(res, root, cwd=root / "src") == [("src/model/gen/train.py", 6, "GL001")]


# --- selection -------------------------------------------------------------------------------------


def test_config_selection_reaches_the_rules(tmp_path: Path) -> None:
    root = project(tmp_path, '[tool.gradlint]\nselect = ["GL003"]\n', {"buggy.py": BUGGY, "unscaled.py": UNSCALED})
    res = gradlint("--format", "json", str(root))
    assert reported(res, root) == [("unscaled.py", 5, "GL003")]


def test_cli_select_replaces_the_config_selection(tmp_path: Path) -> None:
    root = project(tmp_path, '[tool.gradlint]\nselect = ["GL003"]\nignore = ["GL001"]\n',
                   {"buggy.py": BUGGY, "unscaled.py": UNSCALED})
    res = invoke("--format", "json", "--select", "GL001", str(root))
    assert reported(res, root) == [("buggy.py", 6, "GL001")]


def test_cli_ignore_and_extend_select_add_to_the_config(tmp_path: Path) -> None:
    root = project(tmp_path, '[tool.gradlint]\nselect = ["GL003"]\n', {"buggy.py": BUGGY, "unscaled.py": UNSCALED})
    assert reported(invoke("--format", "json", "--ignore", "GL003", str(root)), root) == []
    res = invoke("--format", "json", "--extend-select", "GL001", str(root))
    assert reported(res, root) == [("buggy.py", 6, "GL001"), ("unscaled.py", 5, "GL003")]


def test_more_specific_selector_wins_and_names_prefixes_and_all_work(tmp_path: Path) -> None:
    root = project(tmp_path, '[tool.gradlint]\nselect = ["ALL"]\nignore = ["GL00"]\nextend-select = ["unscaled-accumulated-loss"]\n',
                   {"buggy.py": BUGGY, "unscaled.py": UNSCALED})
    res = invoke("--format", "json", str(root))
    assert reported(res, root) == [("unscaled.py", 5, "GL003")]


def test_per_file_ignores(tmp_path: Path) -> None:
    config = """\
[tool.gradlint.per-file-ignores]
"tests/*.py" = ["GL001"]
"legacy/" = ["GL00"]
"*_gan.py" = ["missing-zero-grad"]
"!src/**" = ["GL003"]
"""
    root = project(tmp_path, config, {
        "tests/train.py": BUGGY,            # ignored by tests/*.py
        "tests/sub/train.py": BUGGY,        # `*` does not cross `/`: reported
        "legacy/old/train.py": BUGGY,       # everything below legacy/
        "src/train_gan.py": BUGGY,          # by basename, at any depth
        "src/train.py": BUGGY,
        "src/unscaled.py": UNSCALED,        # inside src/: the negated pattern does not apply
        "unscaled.py": UNSCALED,            # outside src/: GL003 ignored
    })
    res = gradlint("--format", "json", str(root))
    assert reported(res, root) == [
        ("src/train.py", 6, "GL001"), ("src/unscaled.py", 5, "GL003"), ("tests/sub/train.py", 6, "GL001"),
    ]


# --- exclusion -------------------------------------------------------------------------------------


def test_excluded_files_are_skipped_when_walking_checked_when_explicit_skipped_with_force_exclude(tmp_path: Path) -> None:
    root = project(tmp_path, '[tool.gradlint]\nextend-exclude = ["generated/", "scratch_*.py"]\n', {
        "generated/train.py": BUGGY, "scratch_train.py": BUGGY, "train.py": CLEAN,
    })
    walked = invoke("--format", "json", str(root))
    assert reported(walked, root) == []
    explicit = [str(root / "generated" / "train.py"), str(root / "scratch_train.py"), str(root / "train.py")]
    res = invoke("--format", "json", *explicit)
    assert reported(res, root) == [("generated/train.py", 6, "GL001"), ("scratch_train.py", 6, "GL001")]
    res = invoke("--force-exclude", *explicit)
    assert res.exit_code == 0 and "All checks passed (1 file checked)" in res.stdout
    res = invoke("--force-exclude", str(root / "generated"))  # an excluded directory given explicitly
    assert res.exit_code == 0 and "warning: no Python file" in res.stderr and "nothing was checked" in res.stderr


def test_exclude_replaces_the_defaults_extend_exclude_adds(tmp_path: Path) -> None:
    files = {"build/train.py": BUGGY, "venv/train.py": BUGGY, "notebooks/train.py": BUGGY, "src/train.py": BUGGY}
    root = project(tmp_path, '[tool.gradlint]\nextend-exclude = ["notebooks"]\n', files)
    assert reported(invoke("--format", "json", str(root)), root) == [("src/train.py", 6, "GL001")]
    (root / "pyproject.toml").write_text('[tool.gradlint]\nexclude = ["notebooks"]\n')
    res = invoke("--format", "json", str(root))
    assert reported(res, root) == [("build/train.py", 6, "GL001"), ("src/train.py", 6, "GL001"), ("venv/train.py", 6, "GL001")]
    (root / "pyproject.toml").write_text('[tool.gradlint]\nextend-exclude = ["!build"]\n')
    res = invoke("--format", "json", str(root))
    assert reported(res, root) == [("build/train.py", 6, "GL001"), ("notebooks/train.py", 6, "GL001"), ("src/train.py", 6, "GL001")]


def test_pre_commit_hook_passes_force_exclude(tmp_path: Path) -> None:
    """pre-commit passes every staged file explicitly; the hook must still honour `exclude`."""
    hooks = (ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8")
    entry = re.search(r"^\s*entry:\s*(.+)$", hooks, re.M)
    assert entry is not None
    args = entry.group(1).split()
    assert args[0] == "gradlint" and "--force-exclude" in args[1:]
    root = project(tmp_path, '[tool.gradlint]\nextend-exclude = ["vendored/"]\n', {"vendored/train.py": BUGGY, "train.py": CLEAN})
    res = gradlint(*args[1:], "vendored/train.py", "train.py", cwd=root)
    assert res.returncode == 0, res.stdout
    assert "All checks passed (1 file checked)" in res.stdout


# --- errors ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "config,expected",
    [
        ('[tool.gradlint]\nselct = ["GL001"]\n',
         ["unknown key 'selct'", "did you mean 'select'", "valid keys: select, extend-select, ignore, exclude, extend-exclude, per-file-ignores"]),
        ('[tool.gradlint]\nextend_select = ["GL100"]\n', ["unknown key 'extend_select'", "did you mean 'extend-select'"]),
        ('[tool.gradlint]\nselect = ["GL999"]\n',
         ["select: unknown rule selector 'GL999'", "GL001 (missing-zero-grad)", "GL101 (blanket-suppression)", "ALL"]),
        ('[tool.gradlint]\nignore = "GL001"\n', ["ignore must be a list of strings, not a string ('GL001')", 'write ["GL001"]']),
        ('[tool.gradlint]\nexclude = [1, 2]\n', ["exclude must be a list of strings, but it holds an integer (1)"]),
        ('[tool.gradlint]\nper-file-ignores = ["tests/*"]\n', ["per-file-ignores must be a table of pattern = [codes], not a list"]),
        ('[tool.gradlint.per-file-ignores]\n"tests/*" = ["GL0X"]\n', ["per-file-ignores 'tests/*': unknown rule selector 'GL0X'", "valid codes: GL001"]),
        ('[tool.gradlint.per-file-ignores]\n"tests/*" = "GL001"\n', ["per-file-ignores 'tests/*' must be a list of strings"]),
        ('[tool.gradlint]\nextend-exclude = [""]\n', ["extend-exclude: empty path pattern ''"]),
        ("[tool]\ngradlint = 3\n", ["[tool.gradlint] must be a table, not an integer (3)"]),
        ('[tool.gradlint]\nselect = ["GL000"]\n', ["GL000 cannot be selected or ignored"]),
        ("[tool.gradlint\nselect = 1\n", ["is not valid TOML"]),
    ],
    ids=["unknown-key", "snake-case-key", "unknown-code", "string-not-list", "ints", "pfi-not-table",
         "pfi-unknown-code", "pfi-string", "empty-pattern", "table-not-table", "gl000", "malformed-toml"],
)
def test_config_errors_exit_2_and_say_what_is_valid(tmp_path: Path, config: str, expected: list[str]) -> None:
    root = project(tmp_path, config, {"train.py": CLEAN})
    res = invoke(str(root / "train.py"))
    assert res.exit_code == 2, res.stdout
    assert res.stderr.startswith("gradlint: error: ") and str(root / "pyproject.toml") in res.stderr
    assert "Usage:" not in res.stderr  # a configuration error is not a command-line usage error
    for part in expected:
        assert part in res.stderr, res.stderr
    assert res.stdout == ""


def test_bad_config_through_the_real_command(tmp_path: Path) -> None:
    root = project(tmp_path, "", {"train.py": CLEAN})
    (root / "pyproject.toml").write_bytes(b"[tool.gradlint]\nselect = ['GL\xff01']\n")
    res = gradlint("train.py", cwd=root)
    assert res.returncode == 2
    assert f"{root / 'pyproject.toml'} is not valid TOML: it is not UTF-8 text" in res.stderr
    assert "Traceback" not in res.stderr
    (root / "pyproject.toml").write_text("[tool.gradlint]\nselect = [\n")
    res = gradlint("train.py", cwd=root)
    assert res.returncode == 2 and "pyproject.toml is not valid TOML" in res.stderr and "Traceback" not in res.stderr


def test_malformed_pyproject_on_the_way_up_is_an_error(tmp_path: Path) -> None:
    """Whether it holds a [tool.gradlint] table cannot be known: say so rather than skip it silently."""
    root = project(tmp_path, "[project\n", {"train.py": CLEAN})
    res = invoke(str(root / "train.py"))
    assert res.exit_code == 2 and f"{root / 'pyproject.toml'} is not valid TOML" in res.stderr
    assert invoke("--isolated", str(root / "train.py")).exit_code == 0


def test_unknown_cli_selectors_are_usage_errors(tmp_path: Path) -> None:
    write(tmp_path, {"train.py": CLEAN})
    for option in ("--select", "--extend-select", "--ignore"):
        res = invoke("--isolated", option, "GL042", str(tmp_path / "train.py"))
        assert res.exit_code == 2
        assert f"{option}: unknown rule selector 'GL042'" in res.stderr and "GL100 (unused-suppression)" in res.stderr


# --- the settings value ----------------------------------------------------------------------------


def test_settings_are_one_frozen_value_with_a_stable_fingerprint(tmp_path: Path) -> None:
    config = '[tool.gradlint]\nselect = ["GL00", "GL100"]\nignore = ["GL004"]\n[tool.gradlint.per-file-ignores]\n"a/*" = ["GL001"]\n"b/*" = ["GL003", "GL002"]\n'
    reordered = '[tool.gradlint]\nignore = ["GL004"]\nselect = ["GL100", "GL00"]\n[tool.gradlint.per-file-ignores]\n"b/*" = ["GL002", "GL003"]\n"a/*" = ["GL001"]\n'
    first = project(tmp_path / "one", config, {})
    second = project(tmp_path / "two", reordered, {})
    s1 = load_settings([str(first)])
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(s1, "enabled", frozenset())  # noqa: B010 - the assignment is the point
    assert not hasattr(s1, "__dict__")  # slotted
    assert s1.enabled == {"GL001", "GL002", "GL003", "GL005", "GL006", "GL007", "GL008", "GL009", "GL100"}
    assert hash(s1) == hash(load_settings([str(first)]))
    # same settings, other spelling, same fingerprint (the root is part of it: patterns are relative to it; the
    # directories named, `trees`, are not: a file's cache key holds the project root they choose for it)
    moved = load_settings([str(second)])
    assert dataclasses.replace(moved, root=s1.root, config_file=s1.config_file, trees=s1.trees) == s1
    assert dataclasses.replace(moved, root=s1.root).fingerprint() == s1.fingerprint()
    # stable across processes (no hash randomisation)
    code = f"from gradcheck_lint.config import load_settings; print(load_settings([{str(first)!r}]).fingerprint())"
    outs = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60).stdout.strip() for _ in range(2)}
    assert outs == {s1.fingerprint()}
    # every field that changes results changes it
    changed = [
        s1.with_enabled({"GL001"}),
        dataclasses.replace(s1, exclude=("build",)),
        dataclasses.replace(s1, extend_exclude=("x",)),
        dataclasses.replace(s1, per_file_ignores=()),
        dataclasses.replace(s1, force_exclude=True),
        dataclasses.replace(s1, root=str(tmp_path)),
    ]
    assert len({s.fingerprint() for s in changed} | {s1.fingerprint()}) == len(changed) + 1


def test_api_takes_settings(tmp_path: Path) -> None:
    root = project(tmp_path, '[tool.gradlint.per-file-ignores]\n"tests/*" = ["GL001"]\n', {"tests/train.py": BUGGY, "train.py": BUGGY})
    configured = load_settings([str(root)])
    diags, files = check_paths([str(root)], configured)
    assert files == 2 and [(Path(d.path).name, d.code) for d in diags] == [("train.py", "GL001")]
    assert check_file(str(root / "tests" / "train.py"), settings=configured) == []
    assert [d.code for d in check_file(str(root / "tests" / "train.py"))] == ["GL001"]
    assert check_source(BUGGY, "train.py", codes=["GL003"]) == []
    assert [d.code for d in check_source(BUGGY, "train.py", settings=Settings.default().with_enabled({"GL001"}))] == ["GL001"]
    assert Settings.default().exclude == DEFAULT_EXCLUDE
    assert load_settings([str(root)], Selection(select=("GL003",))).enabled == {"GL003"}


def test_globs_follow_gitignore() -> None:
    root = "/r"
    cases = [
        ("build", "build", True, True), ("build", "a/b/build", True, True), ("build/", "build", False, False),
        ("/build", "a/build", True, False), ("src/*.py", "src/a.py", False, True), ("src/*.py", "src/x/a.py", False, False),
        ("src/**/a.py", "src/a.py", False, True), ("src/**/a.py", "src/x/y/a.py", False, True), ("**/gen", "x/gen", True, True),
        ("src/**", "src/x/y.py", False, True), ("src/**", "src", True, False), ("a?.py", "ab.py", False, True),
        ("[ab].py", "b.py", False, True), ("[!ab].py", "b.py", False, False), ("*.egg-info", "x/pkg.egg-info", True, True),
    ]
    for pattern, rel, is_dir, want in cases:
        assert GlobSet.of(root, (pattern,)).matches(f"{root}/{rel}", is_dir) is want, (pattern, rel)
    negated = GlobSet.of(root, ("*.py", "!keep.py"))
    assert negated.matches("/r/drop.py", False) and not negated.matches("/r/keep.py", False)
    assert GlobSet.of(root, ("gen/",)).matches_with_parents("/r/gen/x/y.py", False)
    assert not GlobSet.of(root, ("/gen",)).matches("/elsewhere/gen", True)  # anchored patterns stay inside the root
    assert GlobSet.of(root, ("gen",)).matches("/elsewhere/gen", True)


# --- the README's snippet --------------------------------------------------------------------------


def _readme_section(title: str) -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    m = re.search(rf"^## {re.escape(title)}\s*$(.*?)(?=^## |\Z)", text, re.M | re.S)
    assert m, title
    return m.group(1)


def test_readme_configuration_snippet_works(tmp_path: Path) -> None:
    blocks = re.findall(r"```toml\n(.*?)```", _readme_section("Configuration"), re.S)
    assert len(blocks) == 1
    root = project(tmp_path, blocks[0], {
        "src/train.py": BUGGY,
        "src/unscaled.py": UNSCALED,                                    # GL003: ignored everywhere
        "src/stale.py": CLEAN.replace("opt.step()", "opt.step()  # gradlint: ignore[GL001]"),
        "tests/test_train.py": BUGGY,                                   # per-file ignore
        "notebooks/exported.py": BUGGY,                                 # excluded
    })
    res = gradlint("--format", "json", ".", cwd=root)
    assert reported(res, root, cwd=root) == [("src/stale.py", 6, "GL100"), ("src/train.py", 6, "GL001")]
    assert json.loads(res.stdout)[0]["name"] == "unused-suppression"


# --- bad input never crashes -----------------------------------------------------------------------

_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=6,
)
_SELECTORS = st.lists(st.sampled_from(["GL001", "GL0", "ALL", "all", "x", "", " ", "GL000", "missing-zero-grad", "GL1"]), max_size=3)
_PATTERNS = st.text(st.sampled_from(list("ab/*?[]!\\^-. ")), max_size=8)


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.dictionaries(
    st.sampled_from(["select", "extend-select", "ignore", "exclude", "extend-exclude", "per-file-ignores", "other"]),
    _JSON | _SELECTORS | st.lists(_PATTERNS, max_size=3) | st.dictionaries(_PATTERNS, _SELECTORS | _JSON, max_size=3),
    max_size=4,
))
def test_any_table_is_accepted_or_refused_with_a_config_error(table: dict[str, object]) -> None:
    try:
        parsed = parse_table(table, "/p/pyproject.toml")
    except ConfigError as exc:
        assert str(exc).startswith("/p/pyproject.toml: [tool.gradlint]")
        return
    resolved = resolve(parsed)
    assert len(resolved.fingerprint()) == 64
    resolved.codes_for("/p/src/train.py")
    resolved.excluded_explicitly("/p/src/train.py", False)


@settings(max_examples=500, deadline=None, suppress_health_check=list(HealthCheck))
@given(_PATTERNS, st.text(st.sampled_from(list("ab/.-[]")), max_size=10))
def test_any_pattern_compiles_or_is_refused_and_matching_never_raises(pattern: str, path: str) -> None:
    try:
        GlobSet.of("/r", (pattern,)).matches_with_parents("/r/" + path, False)
    except ValueError as exc:
        assert "path pattern" in str(exc)


def test_name_patterns_matched_at_once_decide_as_one_by_one() -> None:
    """Unanchored patterns without `!` are matched as one regex; it decides as the patterns one by one."""
    from gradcheck_lint.globs import GlobSet

    patterns = (".git", "build/", "*.egg-info", "__pycache__", "gen_?.py", "[ab]*.txt")
    names = [".git", "build", "x.egg-info", "__pycache__", "gen_1.py", "gen_12.py", "a.txt", "c.txt", "src", "gitx"]
    globs = GlobSet.of("/root", patterns)
    for name in names:
        for is_dir in (True, False):
            assert globs.matches(f"/root/pkg/{name}", is_dir) == globs._decide(name, is_dir, True), (name, is_dir)
    assert globs.matches("/root/pkg/build", True) and not globs.matches("/root/pkg/build", False)
