"""Locate and read the rule documents (`rules/GL00X-name.md`), shipped as package data."""

from __future__ import annotations

import re
from importlib import resources
from pathlib import Path


def docs_dir() -> Path | None:
    """The directory holding the rule documents: in the installed wheel, or in a source checkout."""
    try:
        packaged = resources.files("gradcheck_lint").joinpath("rule_docs")
        if packaged.is_dir():
            return Path(str(packaged))
    except (ModuleNotFoundError, FileNotFoundError):  # pragma: no cover
        pass
    checkout = Path(__file__).resolve().parent.parent / "rules"
    return checkout if checkout.is_dir() else None


def doc_path(code: str) -> Path | None:
    directory = docs_dir()
    if directory is None:
        return None
    matches = sorted(directory.glob(f"{code.upper()}-*.md"))
    return matches[0] if matches else None


def read_doc(code: str) -> str | None:
    path = doc_path(code)
    return path.read_text(encoding="utf-8") if path else None


def doc_section(doc: str, title: str) -> str | None:
    """Return the body of the `## title` section of a rule document, stripped, or None if absent."""
    match = re.search(rf"^## {re.escape(title)}[ \t]*\n(.*?)(?=^## |\Z)", doc, re.M | re.S)
    return match.group(1).strip() if match else None
