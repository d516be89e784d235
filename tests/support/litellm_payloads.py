"""A LiteLLM logging callback for a LiteLLM Proxy under test: what the proxy's logging gets of
each request (the standard logging payload's guardrail part), one JSON line per request in
``payloads.jsonl`` next to this file.

The proxy tests copy this file into the proxy's folder as ``payloads.py`` and list
``payloads.handler`` among its callbacks (LiteLLM loads a custom callback module from the folder
of its config)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from litellm.integrations.custom_logger import CustomLogger

OUTPUT = "payloads.jsonl"


class Payloads(CustomLogger):
    """Appends ``event``, ``call_type``, ``guardrail_information`` and ``status_fields`` of each
    logged request's standard logging payload to :data:`OUTPUT`."""

    def _keep(self, event: str, kwargs: dict[str, Any]) -> None:
        payload = kwargs.get("standard_logging_object") or {}
        kept = {
            "event": event,
            "call_type": payload.get("call_type"),
            "guardrail_information": payload.get("guardrail_information"),
            "status_fields": payload.get("status_fields"),
        }
        with (Path(__file__).parent / OUTPUT).open("a") as out:
            out.write(json.dumps(kept, default=str) + "\n")

    async def async_log_success_event(
        self, kwargs: Any, response_obj: Any, start_time: Any, end_time: Any
    ) -> None:
        self._keep("success", kwargs)

    async def async_log_failure_event(
        self, kwargs: Any, response_obj: Any, start_time: Any, end_time: Any
    ) -> None:
        self._keep("failure", kwargs)


handler = Payloads()


def read(folder: Path) -> list[dict[str, Any]]:
    """The requests logged so far by the proxy whose folder is ``folder``."""
    path = folder / OUTPUT
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
