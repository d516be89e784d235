"""pytest plugin (entry point ``toolmend``): the ``strict_provider`` fixtures.

Installed with toolmend, so any project that has toolmend and pytest gets:

``strict_provider``
    A running :class:`~toolmend.testing.StrictProviderServer` for one test, stopped afterwards.
    Every route keeps its own provider unless the test is marked
    ``@pytest.mark.strict_provider(provider="deepseek")`` (the marker's keywords are the
    server's arguments: ``provider``, ``replies``, ``default_reply``, ``seed``, ``refuse`` (a rule
    toolmend does not know: :meth:`~toolmend.testing.StrictProviderServer.refuse`), ...).
``strict_provider_factory``
    A function ``(provider=None, **kwargs) -> StrictProviderServer`` that starts a server per
    call, for tests that need several providers at once; all are stopped after the test.

.. code-block:: python

    @pytest.mark.strict_provider(provider="deepseek")
    def test_agent_history_is_accepted(strict_provider):
        client = openai.OpenAI(api_key="test", base_url=strict_provider.openai_base_url)
        run_my_agent(client)
        assert all(r.accepted for r in strict_provider.requests)

The plugin module imports only toolmend and the standard library, so loading it costs nothing
for test suites that never use the fixtures.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from .server import StrictProviderServer

__all__ = ["pytest_configure", "strict_provider", "strict_provider_factory"]

MARKER = "strict_provider"


def pytest_configure(config: pytest.Config) -> None:
    """Register the marker, so ``--strict-markers`` suites accept it."""
    config.addinivalue_line(
        "markers",
        f"{MARKER}(provider=None, **kwargs): arguments of the StrictProviderServer that the "
        "strict_provider fixture starts",
    )


@pytest.fixture
def strict_provider(request: pytest.FixtureRequest) -> Iterator[StrictProviderServer]:
    """A running strict provider server for this test (see the module docstring)."""
    marker = request.node.get_closest_marker(MARKER)
    args: tuple[Any, ...] = marker.args if marker else ()
    kwargs: dict[str, Any] = dict(marker.kwargs) if marker else {}
    with StrictProviderServer(*args, **kwargs) as server:
        yield server


@pytest.fixture
def strict_provider_factory() -> Iterator[Callable[..., StrictProviderServer]]:
    """Start strict provider servers on demand; every one is stopped after the test."""
    started: list[StrictProviderServer] = []

    def start(provider: str | None = None, **kwargs: Any) -> StrictProviderServer:
        server = StrictProviderServer(provider, **kwargs).start()
        started.append(server)
        return server

    try:
        yield start
    finally:
        for server in started:
            server.stop()
