"""The `[tool.gradlint]` table of `pyproject.toml`, found as ruff finds its own, resolved to one `Settings`.

Keys: `select`, `extend-select`, `ignore` (codes, prefixes such as `GL00`, rule names, `ALL`),
`exclude`, `extend-exclude` (gitignore-style patterns relative to the config file's directory) and
`per-file-ignores` (pattern -> codes), `show-possible` (a boolean: report the findings that rest on an
assumption too, not only the certain ones). The nearest `pyproject.toml` with a `[tool.gradlint]` table,
walking up from the common parent of the checked paths, is used; `--config` names one, `--isolated`
ignores them all. Command-line selection is layered over the file's: `--select` replaces,
`--extend-select` adds, `--ignore` removes.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import hashlib
import json
import os
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from .analysis.apimodels import ModelError, ModelFile, parse_model_file
from .globs import GlobSet, compile_glob
from .registry import Selection, expand_selector, resolve_selection

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

PYPROJECT = "pyproject.toml"
TABLE = "[tool.gradlint]"
LIST_KEYS = ("select", "extend-select", "ignore", "exclude", "extend-exclude")
VALID_KEYS = (*LIST_KEYS, "per-file-ignores", "models", "show-possible")
# The built-in excludes (`exclude` replaces them, `extend-exclude` adds to them). Directories holding
# a `pyvenv.cfg` and what the walked directory's `.gitignore` ignores are skipped in any case.
DEFAULT_EXCLUDE = (
    ".eggs", ".env", ".git", ".gradlint_cache", ".hg", ".ipynb_checkpoints", ".mypy_cache", ".nox", ".pytest_cache", ".ruff_cache",
    ".svn", ".tox", ".venv", "__pycache__", "*.egg-info", "build", "dist", "env", "node_modules",
    "site-packages", "venv",
)


class ConfigError(ValueError):
    """A configuration that cannot be used; the message names the file (or option) and the key."""


@dataclass(frozen=True, slots=True)
class PerFileIgnore:
    """Codes left out for the files a pattern matches (a leading `!`: for the files it does not match)."""

    pattern: str
    codes: frozenset[str]


@dataclass(frozen=True, slots=True)
class FileConfig:
    """The validated `[tool.gradlint]` table of one file, selectors not yet resolved."""

    path: str
    selection: Selection = Selection()
    exclude: tuple[str, ...] | None = None
    extend_exclude: tuple[str, ...] = ()
    per_file_ignores: tuple[PerFileIgnore, ...] = ()
    models: str = ""  # the `[tool.gradlint.models]` table, validated, as canonical JSON ("" when absent)
    show_possible: bool = False

    @property
    def root(self) -> str:
        return os.path.dirname(os.path.abspath(self.path))


@functools.lru_cache(maxsize=64)
def _globset(root: str, patterns: tuple[str, ...]) -> GlobSet:
    """The compiled exclusion patterns of a root (asked once per file and directory of a walk)."""
    return GlobSet.of(root, patterns)


@dataclass(frozen=True, slots=True)
class Settings:
    """The effective configuration of one run: a frozen value, passed from the CLI to the engine."""

    enabled: frozenset[str]
    root: str  # absolute; patterns are relative to it (the config file's directory, or the cwd)
    exclude: tuple[str, ...] = DEFAULT_EXCLUDE
    extend_exclude: tuple[str, ...] = ()
    per_file_ignores: tuple[PerFileIgnore, ...] = ()
    force_exclude: bool = False
    config_file: str | None = None  # where it came from; not part of the fingerprint
    # The user's API models (`[tool.gradlint.models]`), as canonical JSON: `api_models()` parses them once.
    models: str = ""
    # Report `possible` findings (resting on an assumption) too; by default only `certain` ones are shown.
    # It changes what is shown, not what is analysed: not part of the fingerprint.
    show_possible: bool = False
    # The directories named on the command line (absolute): in a tree without a project marker, the top-most
    # one holding a file is its project root (`project.index.find_root`). What a file reports may depend on it:
    # the file's cache key holds the root chosen (`project_root`), so it is not part of the fingerprint.
    trees: tuple[str, ...] = ()

    def project_root(self, path: str) -> str:
        """The project root the analysis of the file at `path` reads its project from."""
        from .project.index import find_root

        return find_root(path, self.root, self.trees)

    def api_models(self) -> tuple[ModelFile, ...]:
        """The user's API model rows, which come before the built-in catalogue's."""
        return user_models(self.models, self.config_file or "pyproject.toml")

    @classmethod
    def default(cls, root: str | None = None) -> Settings:
        """The built-in settings: default codes, default excludes, patterns relative to `root` or the cwd."""
        return resolve(None, root=root)

    def with_enabled(self, codes: Iterable[str]) -> Settings:
        """A copy enabling exactly `codes`."""
        return dataclasses.replace(self, enabled=frozenset(codes))

    def codes_for(self, path: str) -> frozenset[str]:
        """The codes enabled for one file: the selection minus its per-file ignores."""
        dropped: set[str] = set()
        for entry in self.per_file_ignores:
            glob = compile_glob(entry.pattern)
            positive = GlobSet(os.path.abspath(self.root), (dataclasses.replace(glob, negated=False),))
            if positive.matches_with_parents(path, False) != glob.negated:
                dropped |= entry.codes
        return self.enabled - dropped

    def _excludes(self) -> GlobSet:
        return _globset(self.root, (*self.exclude, *self.extend_exclude))

    def excluded(self, path: str, is_dir: bool) -> bool:
        """Whether a path met while walking a directory is excluded (its parents were already walked)."""
        return self._excludes().matches(path, is_dir)

    def excluded_explicitly(self, path: str, is_dir: bool) -> bool:
        """Whether a path given on the command line is excluded, itself or through a directory above it."""
        return self._excludes().matches_with_parents(path, is_dir)

    def fingerprint(self) -> str:
        """A stable digest of everything that changes which files are checked and what they report."""
        payload = {
            "enabled": sorted(self.enabled),
            "root": self.root,
            "exclude": list(self.exclude),
            "extend_exclude": list(self.extend_exclude),
            "per_file_ignores": sorted([e.pattern, sorted(e.codes)] for e in self.per_file_ignores),
            "force_exclude": self.force_exclude,
            "models": self.models,
        }
        return hashlib.sha256(json.dumps(payload, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class PathOptions:
    """The command line's `--exclude` (replaces the configured excludes), `--extend-exclude` (adds to them)
    and `--per-file-ignores PATTERN:CODES` (adds to the configured table), as written."""

    exclude: tuple[str, ...] | None = None
    extend_exclude: tuple[str, ...] = ()
    per_file_ignores: tuple[str, ...] = ()

    def parsed_ignores(self) -> tuple[PerFileIgnore, ...]:
        """The `PATTERN:CODES` entries, validated.

        Raises:
            ConfigError: an entry without a colon, an unusable pattern, or an unknown code.
        """
        out = []
        for entry in self.per_file_ignores:
            pattern, colon, codes = entry.rpartition(":")
            where = f"--per-file-ignores {entry!r}"
            if not colon or not pattern.strip():
                raise ConfigError(f"{where}: write PATTERN:CODES, for example 'tests/*.py:GL001,GL003'")
            _check_patterns((pattern,), where)
            selectors = [c.strip() for c in codes.split(",") if c.strip()]
            if not selectors:
                raise ConfigError(f"{where}: no code after the colon")
            _check_selectors(selectors, where)
            out.append(PerFileIgnore(pattern, frozenset(c for sel in selectors for c in expand_selector(sel)[1])))
        return tuple(out)


def resolve(file_config: FileConfig | None, cli: Selection = Selection(), *, root: str | None = None,
            force_exclude: bool = False, paths: PathOptions = PathOptions(), show_possible: bool = False) -> Settings:
    """Layer the command line over a config file (or the defaults) into `Settings`.

    Command-line patterns are relative to the same directory as the configured ones (the configuration
    file's, else the current directory).

    Raises:
        ConfigError: a command-line selector matches no code, or a command-line pattern is unusable.
    """
    for option, values in (("--select", cli.select or ()), ("--extend-select", cli.extend_select), ("--ignore", cli.ignore)):
        _check_selectors(values, option)
    for option, patterns in (("--exclude", paths.exclude or ()), ("--extend-exclude", paths.extend_exclude)):
        _check_patterns(patterns, option)
    layers = [file_config.selection] if file_config else []
    base = root if root is not None else (file_config.root if file_config else os.getcwd())
    configured = file_config.exclude if file_config and file_config.exclude is not None else DEFAULT_EXCLUDE
    return Settings(
        enabled=resolve_selection([*layers, cli]),
        root=os.path.abspath(base),
        exclude=paths.exclude if paths.exclude is not None else configured,
        extend_exclude=(*(file_config.extend_exclude if file_config else ()), *paths.extend_exclude),
        per_file_ignores=(*(file_config.per_file_ignores if file_config else ()), *paths.parsed_ignores()),
        force_exclude=force_exclude,
        config_file=file_config.path if file_config else None,
        models=file_config.models if file_config else "",
        show_possible=show_possible or bool(file_config and file_config.show_possible),
    )


def load_settings(paths: Iterable[str], cli: Selection = Selection(), *, config: str | None = None,
                  isolated: bool = False, force_exclude: bool = False, path_options: PathOptions = PathOptions(),
                  show_possible: bool = False) -> Settings:
    """Find and read the configuration for `paths` and layer the command line over it.

    Raises:
        ConfigError: the config file is unreadable, not TOML, or holds an unknown key, a value of the
            wrong type or an unknown code; or a command-line selector matches no code.
    """
    if config is not None and isolated:
        raise ConfigError("--config and --isolated cannot be used together")
    file_config = None
    if config is not None:
        if not os.path.isfile(config):
            raise ConfigError(f"--config {config}: {'a directory, not a file' if os.path.isdir(config) else 'no such file'}")
        table = read_table(config)
        if table is None:
            raise ConfigError(f"--config {config}: the file has no {TABLE} table")
        file_config = parse_table(table, config)
    elif not isolated:
        file_config = discover(start_directory(paths))
    settings = resolve(file_config, cli, force_exclude=force_exclude, paths=path_options, show_possible=show_possible)
    return dataclasses.replace(settings, trees=tuple(os.path.abspath(p) for p in paths if os.path.isdir(p)))


def start_directory(paths: Iterable[str]) -> str:
    """Where the search for a config file starts: the common parent of the paths, or the cwd."""
    absolute = [os.path.abspath(p) for p in paths]
    if not absolute:
        return os.getcwd()
    try:
        common = os.path.commonpath(absolute)
    except ValueError:  # different drives
        return os.getcwd()
    return common if os.path.isdir(common) else os.path.dirname(common)


def discover(start: str) -> FileConfig | None:
    """The nearest `pyproject.toml` with a `[tool.gradlint]` table at or above `start`, parsed."""
    directory = os.path.abspath(start)
    while True:
        candidate = os.path.join(directory, PYPROJECT)
        if os.path.isfile(candidate):
            table = read_table(candidate)
            if table is not None:
                return parse_table(table, candidate)
        parent = os.path.dirname(directory)
        if parent == directory:
            return None
        directory = parent


def read_table(path: str) -> Mapping[str, Any] | None:
    """The `[tool.gradlint]` table of a TOML file, or None when it has none.

    Raises:
        ConfigError: the file cannot be read or is not valid TOML, or `tool.gradlint` is not a table.
    """
    try:
        with open(path, "rb") as fh:
            data = tomllib.loads(fh.read().decode("utf-8"))
    except OSError as exc:
        raise ConfigError(f"{path} cannot be read: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path} is not valid TOML: it is not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path} is not valid TOML: {exc}") from exc
    tool = data.get("tool")
    if not isinstance(tool, dict) or "gradlint" not in tool:
        return None
    table = tool["gradlint"]
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: {TABLE} must be a table, not {_describe(table)}")
    return table


def parse_table(table: Mapping[str, Any], path: str) -> FileConfig:
    """Validate a `[tool.gradlint]` table: known keys, lists of strings, known codes, usable patterns.

    Raises:
        ConfigError: naming the file, the key and the valid values.
    """
    where = f"{path}: {TABLE}"
    for key in table:
        if key not in VALID_KEYS:
            close = difflib.get_close_matches(key.replace("_", "-"), VALID_KEYS, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise ConfigError(f"{where} has an unknown key {key!r}{hint}; valid keys: {', '.join(VALID_KEYS)}")
    lists = {key: _strings(table[key], f"{where} {key}") for key in LIST_KEYS if key in table}
    for key in ("select", "extend-select", "ignore"):
        _check_selectors(lists.get(key, ()), f"{where} {key}")
    for key in ("exclude", "extend-exclude"):
        _check_patterns(lists.get(key, ()), f"{where} {key}")
    per_file: list[PerFileIgnore] = []
    raw = table.get("per-file-ignores", {})
    if not isinstance(raw, dict):
        raise ConfigError(f"{where} per-file-ignores must be a table of pattern = [codes], not {_describe(raw)}")
    for pattern, selectors in raw.items():
        key = f"{where} per-file-ignores {pattern!r}"
        _check_patterns((pattern,), key)
        codes = _strings(selectors, key)
        _check_selectors(codes, key)
        per_file.append(PerFileIgnore(pattern, frozenset(c for s in codes if s.strip() for c in expand_selector(s)[1])))
    models = ""
    if "models" in table:
        raw = table["models"]
        if not isinstance(raw, dict):
            raise ConfigError(f"{where} models must be a table of model rows ([[tool.gradlint.models.call]], ...), not {_describe(raw)}")
        try:
            parse_model_file(raw, f"{path}: [tool.gradlint.models]")
        except ModelError as exc:
            raise ConfigError(str(exc)) from exc
        models = json.dumps(raw, sort_keys=True, separators=(",", ":"))
    show_possible = table.get("show-possible", False)
    if not isinstance(show_possible, bool):
        raise ConfigError(f"{where} show-possible must be true or false, not {_describe(show_possible)}")
    return FileConfig(
        path=os.path.abspath(path),
        show_possible=show_possible,
        models=models,
        selection=Selection(lists.get("select"), lists.get("extend-select", ()), lists.get("ignore", ())),
        exclude=lists.get("exclude"),
        extend_exclude=lists.get("extend-exclude", ()),
        per_file_ignores=tuple(sorted(per_file, key=lambda e: e.pattern)),  # their order does not matter
    )


def _strings(value: Any, where: str) -> tuple[str, ...]:
    if not isinstance(value, list):
        example = f' (write ["{value}"])' if isinstance(value, str) else ""
        raise ConfigError(f"{where} must be a list of strings, not {_describe(value)}{example}")
    for item in value:
        if not isinstance(item, str):
            raise ConfigError(f"{where} must be a list of strings, but it holds {_describe(item)}")
    return tuple(value)


def _check_selectors(values: Iterable[str], where: str) -> None:
    for value in values:
        if value.strip():
            try:
                expand_selector(value)
            except ValueError as exc:
                raise ConfigError(f"{where}: {exc}") from exc


def _check_patterns(values: Iterable[str], where: str) -> None:
    for value in values:
        try:
            compile_glob(value)
        except ValueError as exc:
            raise ConfigError(f"{where}: {exc}") from exc


def _describe(value: Any) -> str:
    kinds = {bool: "a boolean", int: "an integer", float: "a number", str: "a string", list: "a list", dict: "a table"}
    kind = kinds.get(type(value), type(value).__name__)
    return f"{kind} ({value!r})" if isinstance(value, (bool, int, float, str)) else kind


@functools.lru_cache(maxsize=16)
def user_models(text: str, origin: str) -> tuple[ModelFile, ...]:
    """Parse the `[tool.gradlint.models]` table kept as JSON in the settings (validated when read)."""
    if not text:
        return ()
    return (parse_model_file(json.loads(text), f"{origin}: [tool.gradlint.models]"),)
