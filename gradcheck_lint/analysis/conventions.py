"""Naming conventions, as data: the rows of `apimodels/naming/conventions.toml`, one per idea.

A name's spelling is the weakest evidence the analysis uses (qualified names and the API models come
first), and every spelling it trusts is a row of that table: the code asks for an idea
(`convention("optimizer")`) and holds no regular expression of names of its own.
"""

from __future__ import annotations

import functools
import os
import re
import sys
from dataclasses import dataclass

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "apimodels", "naming", "conventions.toml")
_FIELDS = {"idea", "pattern", "note"}


@dataclass(frozen=True, slots=True)
class Convention:
    """One idea and the names that, by their spelling, suggest it."""

    idea: str
    pattern: re.Pattern[str]
    note: str


def parse_conventions(data: dict[str, object], origin: str) -> dict[str, Convention]:
    """Validate the `[[convention]]` rows of a parsed table: known fields, one row per idea, patterns that compile.

    Raises:
        ValueError: naming `origin`, the row and the field.
    """
    rows = data.get("convention", [])
    if set(data) - {"convention"} or not isinstance(rows, list):
        raise ValueError(f"{origin}: the table holds [[convention]] rows only")
    out: dict[str, Convention] = {}
    for i, row in enumerate(rows):
        where = f"{origin}: convention #{i + 1}"
        if not isinstance(row, dict) or set(row) - _FIELDS or not {"idea", "pattern"} <= set(row):
            raise ValueError(f"{where}: give `idea` and `pattern` (and a `note`), nothing else")
        idea, pattern, note = row["idea"], row["pattern"], row.get("note", "")
        if not (isinstance(idea, str) and idea.isidentifier() and isinstance(pattern, str) and isinstance(note, str)):
            raise ValueError(f"{where}: `idea` is an identifier, `pattern` and `note` are strings")
        if idea in out:
            raise ValueError(f"{where}: a second row for the idea {idea!r} (one spelling per idea)")
        try:
            compiled = re.compile(pattern)
        except re.error as exc:
            raise ValueError(f"{where}: the pattern of {idea!r} is not a regular expression: {exc}") from exc
        out[idea] = Convention(idea, compiled, note)
    return out


@functools.lru_cache(maxsize=1)
def conventions() -> dict[str, Convention]:
    """The table's rows by idea, read once."""
    with open(PATH, "rb") as fh:
        return parse_conventions(tomllib.load(fh), "gradcheck_lint/analysis/apimodels/naming/conventions.toml")


def convention(idea: str) -> re.Pattern[str]:
    """The pattern of the names that suggest `idea`.

    Raises:
        KeyError: the table has no row for `idea`.
    """
    found = conventions().get(idea)
    if found is None:
        raise KeyError(f"no naming convention {idea!r} in {PATH}; ideas: {', '.join(sorted(conventions()))}")
    return found.pattern
