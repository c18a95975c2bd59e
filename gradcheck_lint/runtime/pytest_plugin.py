"""The pytest plugin's former module, for an installed copy whose `pytest11` entry point still names it
(installed before the plugin moved to `gradcheck_lint.pytest_plugin`, which imports without torch)."""

from gradcheck_lint.pytest_plugin import grad_guard, pytest_addoption, pytest_runtest_call

__all__ = ["grad_guard", "pytest_addoption", "pytest_runtest_call"]
