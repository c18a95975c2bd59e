"""gradcheck_lint: catch PyTorch gradient-accumulation bugs statically and at runtime.

The static API (`check_source`, `check_file`, `check_paths`) is imported on first use, so that
`gradcheck_lint.runtime` and the pytest plugin do not pay for the parser.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"
__all__ = ["check_source", "check_file", "check_paths", "Settings", "load_settings", "Diagnostic", "Span", "Severity",
           "Certainty", "__version__"]

_LAZY = {
    "check_source": "api", "check_file": "api", "check_paths": "api", "Settings": "config", "load_settings": "config",
    "Diagnostic": "diagnostics", "Span": "diagnostics", "Severity": "diagnostics", "Certainty": "diagnostics",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'gradcheck_lint' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f"gradcheck_lint.{module}"), name)
    globals()[name] = value
    return value
