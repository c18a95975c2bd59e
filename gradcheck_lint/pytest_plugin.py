"""pytest plugin: a `grad_guard` fixture, and `--gradlint-guard` to run every test under the guard.

Registered through the `pytest11` entry point, so pytest imports it in every environment that has
gradcheck-lint installed: it lives outside `gradcheck_lint.runtime` (whose import needs torch and imports
it), and imports torch and the guard only when a guard is used.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("gradlint")
    group.addoption(
        "--gradlint-guard",
        action="store_true",
        default=False,
        help="run every test under gradcheck_lint's process-wide gradient-contract guard",
    )
    group.addoption(
        "--gradlint-guard-strict",
        action="store_true",
        default=False,
        help="make the guard (of --gradlint-guard and of the grad_guard fixture) strict: in-place rescaling "
        "is measured on every parameter of every device, at the price of device syncs",
    )


def _strict(config: pytest.Config) -> bool:
    return bool(config.getoption("--gradlint-guard-strict"))


def _failure(diagnostics: list[Any]) -> str | None:
    if not diagnostics:
        return None
    seen: dict[tuple[str, int, str], str] = {}
    for d in diagnostics:
        seen.setdefault((d.path, d.line, d.code), f"{d.path}:{d.line}: {d.code} {d.message}\n    help: {d.help}")
    return "gradient contract broken:\n" + "\n".join(seen.values())


@pytest.fixture
def grad_guard(request: pytest.FixtureRequest) -> Iterator[Any]:
    """Run the test under the process-wide guard (record mode); the test fails on a violation.

    The fixture's value is the guard: `grad_guard.report()` lists what it saw so far.
    """
    from gradcheck_lint.runtime.guard import guard

    g = guard(mode="record", strict=_strict(request.config))
    g.start(process_wide=True)
    try:
        yield g
    finally:
        g.stop()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    uses_fixture = "grad_guard" in getattr(item, "fixturenames", ())
    if uses_fixture:
        outcome = yield
        g = getattr(item, "funcargs", {}).get("grad_guard")
        message = _failure(g.report()) if g is not None and outcome.excinfo is None else None
        if message:
            outcome.force_exception(pytest.fail.Exception(message, pytrace=False))
        return
    if not (item.config.getoption("--gradlint-guard") or _strict(item.config)):
        yield
        return
    from gradcheck_lint.runtime.guard import guard

    g = guard(mode="record", strict=_strict(item.config))
    g.start(process_wide=True)
    try:
        outcome = yield
    finally:
        g.stop()
    message = _failure(g.report()) if outcome.excinfo is None else None
    if message:
        outcome.force_exception(pytest.fail.Exception(message, pytrace=False))
