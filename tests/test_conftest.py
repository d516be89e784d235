"""The suite's conftest loads without pytest-xdist (``-p no:xdist -o addopts=``): its xdist
hook is optional."""

from __future__ import annotations

from _pytest.config import PytestPluginManager

import conftest


def test_the_conftest_needs_no_xdist() -> None:
    manager = PytestPluginManager()  # pytest's own hooks only, none of xdist's
    manager.register(conftest, name="suite-conftest")
    manager.check_pending()  # an unknown, non-optional pytest_* hook raises here
