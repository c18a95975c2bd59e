"""The `--format json` output: a list of diagnostic objects."""

from __future__ import annotations

import json
from collections.abc import Sequence

from ..diagnostics import Diagnostic


def render_json(diagnostics: Sequence[Diagnostic]) -> str:
    """Render the diagnostics as a JSON list (see `Diagnostic.to_json`)."""
    return json.dumps([d.to_json() for d in diagnostics], indent=2)
