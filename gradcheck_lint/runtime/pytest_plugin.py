"""pytest plugin: a `grad_guard` fixture, and `--gradlint-guard` to run every test under the guard.

Registered through the `pytest11` entry point; importing it costs nothing (torch is imported only
when a guard is used).
"""

from __future__ import annotations

from typing import Any, Iterator

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("gradlint")
    group.addoption(
        "--gradlint-guard",
        action="store_true",
        default=False,
        help="run every test under gradcheck_lint's process-wide gradient-contract guard",
    )


def _fail_on(diagnostics: list[Any]) -> None:
    if diagnostics:
        text = "\n".join(f"{d.path}:{d.line}: {d.code} {d.message}" for d in diagnostics)
        pytest.fail(f"gradient contract broken:\n{text}", pytrace=False)


@pytest.fixture
def grad_guard() -> Iterator[Any]:
    """Record every optimizer step of the test under the guard; fail the test on a violation.

    The fixture's value is the guard: `grad_guard.report()` lists what it saw so far.
    """
    from gradcheck_lint.runtime.guard import guard

    g = guard(mode="record")
    g.start(process_wide=True)
    try:
        yield g
    finally:
        g.stop()
    _fail_on(g.report())


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    if not item.config.getoption("--gradlint-guard") or "grad_guard" in getattr(item, "fixturenames", ()):
        yield
        return
    from gradcheck_lint.runtime.guard import guard

    g = guard(mode="record")
    g.start(process_wide=True)
    try:
        outcome = yield
    finally:
        g.stop()
    if outcome.excinfo is None:
        _fail_on(g.report())
