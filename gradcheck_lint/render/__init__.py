"""Turn diagnostics into reports: text, JSON, SARIF, GitHub workflow commands, per-code statistics."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..diagnostics import Diagnostic
from .github import render_github
from .jsonout import render_json
from .sarif import render_sarif
from .source import SourceLines
from .statistics import count_codes, render_statistics_json
from .style import COLOR_MODES, Style, use_color
from .text import render_statistics_text, render_text

FORMATS = ("text", "json", "sarif", "github")

__all__ = [
    "COLOR_MODES", "FORMATS", "ReportOptions", "SourceLines", "Style", "render_github", "render_json",
    "render_report", "render_sarif", "render_text", "use_color",
]


@dataclass(frozen=True, slots=True)
class ReportOptions:
    """How to render one report; `root` is the directory that SARIF and GitHub paths are relative to."""

    format: str = "text"
    statistics: bool = False
    show_source: bool = False
    color: bool = False
    root: str = "."
    unsafe_fixes: bool = False  # show unsafe fixes as fixable (`[*]`)
    fixed: int | None = None  # fixes applied by this run (`--fix`)
    quiet: bool = False  # text: the diagnostics only, without the summary lines
    hidden: int = 0  # possible findings left out (shown with `--show-possible`)

    def __post_init__(self) -> None:
        if self.format not in FORMATS:
            raise ValueError(f"unknown format {self.format!r}; choose one of {', '.join(FORMATS)}")
        if self.statistics and self.format not in ("text", "json"):
            raise ValueError(f"--statistics works with --format text or json, not {self.format}")
        if self.show_source and (self.format != "text" or self.statistics):
            raise ValueError("--show-source works only with the text format and without --statistics")


def render_report(
    diagnostics: Sequence[Diagnostic], files: int, options: ReportOptions, sources: SourceLines | None = None
) -> str:
    """Render the whole report as one string (without a trailing newline)."""
    # Colour is for people reading a terminal: never inside JSON, SARIF or workflow commands.
    style = Style(options.color and options.format == "text")
    if options.statistics:
        counts = count_codes(diagnostics)
        return render_statistics_json(counts) if options.format == "json" else render_statistics_text(counts, files, style)
    if options.format == "json":
        return render_json(diagnostics)
    if options.format == "sarif":
        return render_sarif(diagnostics, options.root, sources)
    if options.format == "github":
        return render_github(diagnostics, options.root)
    return render_text(diagnostics, files, show_source=options.show_source, style=style, sources=sources,
                       unsafe_fixes=options.unsafe_fixes, fixed=options.fixed, quiet=options.quiet, hidden=options.hidden)
