"""Runtime probe: check the gradient contract on a real run (needs the `runtime` extra: torch).

    from gradcheck_lint.runtime import guard
    with guard(model, optimizer, accumulation_steps=4):
        train()
"""

from __future__ import annotations

try:
    import torch  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised in a torch-less environment
    raise ImportError(
        "gradcheck_lint.runtime needs PyTorch. Install it first (e.g. `pip install torch`), or "
        "`pip install 'gradcheck-lint[runtime]'`. The static linter (`gradlint`) does not need it."
    ) from exc

from .equivalence import AccumulationReport, verify_accumulation
from .guard import GradientContractError, GradientContractWarning, disable, enable, enable_from_environment, guard

__all__ = [
    "guard", "enable", "disable", "enable_from_environment", "GradientContractError", "GradientContractWarning",
    "verify_accumulation", "AccumulationReport",
]
