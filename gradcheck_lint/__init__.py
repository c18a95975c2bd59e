"""gradcheck_lint: catch PyTorch gradient-accumulation bugs statically and at runtime."""

from .api import check_file, check_paths, check_source
from .diagnostics import Certainty, Diagnostic, Severity, Span

__version__ = "0.1.0"
__all__ = ["check_source", "check_file", "check_paths", "Diagnostic", "Span", "Severity", "Certainty", "__version__"]
