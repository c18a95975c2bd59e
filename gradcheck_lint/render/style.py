"""ANSI colour for the text outputs, and the decision whether to use it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

COLOR_MODES = ("auto", "always", "never")

RESET = "\x1b[0m"
BOLD = "1"
RED = "31"
YELLOW = "33"
BLUE = "34"
CYAN = "36"


def use_color(mode: str, isatty: bool, environ: Mapping[str, str]) -> bool:
    """Decide on colour: an explicit mode wins, then NO_COLOR, then FORCE_COLOR, then the terminal.

    `--color always|never` is the user's explicit choice and overrides the environment (as
    no-color.org asks). In `auto` mode a non-empty NO_COLOR disables colour and a non-empty
    FORCE_COLOR enables it (force-color.org), NO_COLOR winning when both are set, as CPython does;
    otherwise colour is used only on a terminal that is not `TERM=dumb`.
    """
    if mode == "always":
        return True
    if mode == "never":
        return False
    if environ.get("NO_COLOR"):
        return False
    if environ.get("FORCE_COLOR"):
        return True
    if environ.get("TERM") == "dumb":
        return False
    return isatty


@dataclass(frozen=True, slots=True)
class Style:
    """Paint text with SGR codes when enabled; otherwise return it unchanged."""

    enabled: bool = False

    def paint(self, text: str, *codes: str) -> str:
        """Wrap `text` in the SGR `codes` and a reset."""
        if not self.enabled or not text or not codes:
            return text
        return f"\x1b[{';'.join(codes)}m{text}{RESET}"
