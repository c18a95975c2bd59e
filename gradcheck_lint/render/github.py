"""GitHub Actions workflow commands (`::error file=...::message`): inline annotations on a pull request."""

from __future__ import annotations

from collections.abc import Sequence

from ..diagnostics import Diagnostic, Severity
from .location import workspace_path


def escape_data(text: str) -> str:
    """Escape a command's message the way the Actions runner unescapes it."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """Escape a command property value: as data, plus `:` and `,`, which delimit properties."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def _location_properties(d: Diagnostic, root: str) -> list[tuple[str, str]]:
    s = d.span
    return [
        ("file", workspace_path(d.path, root)),
        ("line", str(s.line)),
        ("col", str(s.column)),
        ("endLine", str(s.end_line)),
        ("endColumn", str(s.end_column)),
    ]


def github_command(d: Diagnostic, root: str) -> str:
    """Return the one workflow command that annotates `d`."""
    command = "notice" if d.possible or d.severity is Severity.NOTE else "warning" if d.severity is Severity.WARNING else "error"
    title = f"{d.code} ({d.name})" + (f" in cell {d.cell}" if d.cell is not None else "") + (", possible" if d.possible else "")
    props = [*_location_properties(d, root), ("title", title)]
    rendered = ",".join(f"{key}={escape_property(value)}" for key, value in props)
    message = f"{d.message}\nhelp: {d.help}"
    return f"::{command} {rendered}::{escape_data(message)}"


def render_github(diagnostics: Sequence[Diagnostic], root: str) -> str:
    """Render one workflow command per diagnostic, paths relative to `root` (the workspace)."""
    return "\n".join(github_command(d, root) for d in diagnostics)
