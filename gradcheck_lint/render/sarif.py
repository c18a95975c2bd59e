"""SARIF 2.1.0 for GitHub code scanning and other SARIF viewers."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from .. import __version__
from ..diagnostics import Diagnostic, RelatedLocation, Severity
from ..registry import (
    PARSE_ERROR_CODE,
    PARSE_ERROR_DESCRIPTION,
    PARSE_ERROR_HELP,
    PARSE_ERROR_NAME,
    PARSE_ERROR_SUMMARY,
    catalogue,
)
from ..rule_docs import doc_section, read_doc
from .location import relative_to
from .source import SourceLines

# The `id` of the OASIS schema (errata 01) that the output validates against.
SARIF_SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
SARIF_VERSION = "2.1.0"
SRCROOT = "%SRCROOT%"
# The package has no project home page yet; its registry page is the one stable address.
INFORMATION_URI = "https://pypi.org/project/gradcheck-lint/"
FINGERPRINT_KEY = "gradlint/v1"


@dataclass(frozen=True, slots=True)
class RuleInfo:
    """What SARIF says about one code, registered rule or GL000."""

    code: str
    name: str
    summary: str
    severity: Severity


def rule_infos() -> list[RuleInfo]:
    """Every code the tool can report, GL000 first; a result's `ruleIndex` indexes this list."""
    parse_error = RuleInfo(PARSE_ERROR_CODE, PARSE_ERROR_NAME, PARSE_ERROR_SUMMARY, Severity.ERROR)
    return [parse_error, *(RuleInfo(c, r.name, r.summary, r.severity) for c, r in catalogue().items())]


def _level(severity: Severity) -> str:
    return {Severity.WARNING: "warning", Severity.NOTE: "note"}.get(severity, "error")


def _unwrap(markdown: str) -> str:
    """Join the hard-wrapped lines of each paragraph: viewers wrap plain text themselves."""
    return "\n\n".join(" ".join(p.split("\n")) for p in markdown.split("\n\n"))


def _descriptor(rule: RuleInfo) -> dict[str, Any]:
    doc = read_doc(rule.code)
    if doc is not None:
        full = _unwrap(doc_section(doc, "What it does") or rule.summary)
        help_markdown = doc.strip()
    elif rule.code == PARSE_ERROR_CODE:
        full = PARSE_ERROR_DESCRIPTION
        help_markdown = f"# {rule.code}: {rule.name}\n\n{full}\n\nTo fix it, {PARSE_ERROR_HELP}"
    else:
        full = rule.summary
        help_markdown = f"# {rule.code}: {rule.name}\n\n{full}"
    # The rule documents are light Markdown that reads well as plain text too.
    help_text = help_markdown
    return {
        "id": rule.code,
        "name": rule.name,
        "shortDescription": {"text": rule.summary},
        "fullDescription": {"text": full},
        "help": {"text": help_text, "markdown": help_markdown},
        "defaultConfiguration": {"level": _level(rule.severity)},
        "properties": {"tags": ["correctness", "pytorch"]},
    }


def artifact_location(path: str, root: str) -> dict[str, str]:
    """Return a percent-encoded URI for `path`: relative to %SRCROOT% inside `root`, else absolute `file:`."""
    rel = relative_to(path, root)
    if rel is None:
        return {"uri": Path(os.path.abspath(path)).as_uri()}
    # quote() encodes spaces, non-ASCII (as UTF-8), `%`, `#`, `?` and `:` (which would read as a scheme).
    return {"uri": quote(rel, safe="/"), "uriBaseId": SRCROOT}


def root_uri(root: str) -> str:
    """Return the `file:` URI of `root`, ending in `/` as SARIF requires of a base URI."""
    uri = Path(os.path.abspath(root)).as_uri()
    return uri if uri.endswith("/") else uri + "/"


def _physical_location(d: Diagnostic, root: str) -> dict[str, Any]:
    s = d.span
    return {
        "physicalLocation": {
            "artifactLocation": artifact_location(d.path, root),
            "region": {"startLine": s.line, "startColumn": s.column, "endLine": s.end_line, "endColumn": s.end_column},
        }
    }


def _related(r: RelatedLocation, index: int, root: str) -> dict[str, Any]:
    """A place in another file of the project the finding rests on (SARIF `relatedLocations`)."""
    s = r.span
    return {
        "id": index,
        "physicalLocation": {
            "artifactLocation": artifact_location(r.path, root),
            "region": {"startLine": s.line, "startColumn": s.column, "endLine": s.end_line, "endColumn": s.end_column},
        },
        "message": {"text": r.message},
    }


def fingerprint(code: str, uri: str, line_text: str, occurrence: int) -> str:
    """Hash what identifies a finding across edits: code, file, the line's text (whitespace-normalised).

    The line number is left out, so inserting lines above keeps the fingerprint; `occurrence`
    tells apart identical lines with the same code in one file, counted from the top.
    """
    normalised = " ".join(line_text.split())
    digest = hashlib.sha256("\0".join((code, uri, normalised)).encode("utf-8")).hexdigest()
    return f"{digest[:32]}:{occurrence}"


def render_sarif(diagnostics: Sequence[Diagnostic], root: str, sources: SourceLines | None = None) -> str:
    """Render one SARIF log with one run; paths relative to `root`, which is `%SRCROOT%`."""
    sources = sources or SourceLines()
    rules = rule_infos()
    index = {rule.code: i for i, rule in enumerate(rules)}
    seen: dict[tuple[str, str, str], int] = {}
    results: list[dict[str, Any]] = []
    notifications: list[dict[str, Any]] = []
    notices: list[dict[str, Any]] = []
    for d in diagnostics:
        location = _physical_location(d, root)
        uri = location["physicalLocation"]["artifactLocation"]["uri"]
        line_text = sources.line(d) or ""
        key = (d.code, uri, " ".join(line_text.split()))
        occurrence = seen[key] = seen.get(key, -1) + 1
        result: dict[str, Any] = {"ruleId": d.code}
        if d.code in index:
            result["ruleIndex"] = index[d.code]
        result.update({
            # a possible finding rests on an assumption: a note to review, not an error to fix
            "level": "note" if d.possible else _level(d.severity),
            "message": {"text": f"{d.message}\nhelp: {d.help}"},
            "locations": [location],
            **({"relatedLocations": [_related(r, i, root) for i, r in enumerate(d.related)]} if d.related else {}),
            "partialFingerprints": {FINGERPRINT_KEY: fingerprint(d.code, uri, line_text, occurrence)},
            "properties": {"certainty": d.certainty.value, **({"cell": d.cell} if d.cell is not None else {})},
        })
        if d.notice:  # part of the file was not analysed: a notification about the run, not a result
            notices.append({"level": "note", "message": {"text": f"{d.message}\nhelp: {d.help}"}, "locations": [location],
                            "descriptor": {"id": d.code}})
            continue
        results.append(result)
        if d.code == PARSE_ERROR_CODE:
            notifications.append({
                "level": "error",
                "message": {"text": d.message},
                "locations": [location],
                "associatedRule": {"id": d.code, "index": index[d.code]},
            })
    invocation: dict[str, Any] = {"executionSuccessful": not notifications}
    if notifications or notices:
        invocation["toolExecutionNotifications"] = notifications + notices
    log = {
        "$schema": SARIF_SCHEMA,
        "version": SARIF_VERSION,
        "runs": [{
            "tool": {"driver": {
                "name": "gradlint",
                "version": __version__,
                "semanticVersion": __version__,
                "informationUri": INFORMATION_URI,
                "rules": [_descriptor(rule) for rule in rules],
            }},
            "originalUriBaseIds": {SRCROOT: {"uri": root_uri(root)}},
            "invocations": [invocation],
            "columnKind": "unicodeCodePoints",
            "results": results,
        }],
    }
    return json.dumps(log, indent=2, ensure_ascii=False)
