"""A strict local provider server: learn in CI, without API keys, whether a provider would
reject the histories your app sends.

:class:`StrictProviderServer` is a real HTTP server on 127.0.0.1 (an ephemeral port, a thread
of your test process, standard library only) that speaks the OpenAI Chat Completions, OpenAI
Responses, Anthropic Messages and Gemini ``generateContent`` APIs at their real paths, plain
and streamed. It judges every request's history with toolmend's profile of the provider it
emulates; a broken history gets HTTP 400 with that provider's own error body and exact error
text, a valid one gets 200 with a scripted reply (text, or tool calls with provider-shaped
ids), so agent loops run against it. Every request is recorded for assertions.

Usage
-----

.. code-block:: python

    import openai
    from toolmend.testing import Reply, StrictProviderServer

    with StrictProviderServer(provider="deepseek") as server:
        server.script([Reply.tool_calls(("get_weather", {"city": "Paris"})), Reply.text("Sunny")])
        client = openai.OpenAI(api_key="test", base_url=server.openai_base_url, max_retries=0)
        reply = client.chat.completions.create(model="deepseek-chat", messages=history)
        assert server.last_request.accepted, server.last_request.error

Point each SDK at the server:

* ``openai.OpenAI(base_url=server.openai_base_url)`` (also DeepSeek, Mistral, Groq and any
  OpenAI-compatible client; LiteLLM: ``api_base=server.openai_base_url``);
* ``anthropic.Anthropic(base_url=server.anthropic_base_url)``;
* ``genai.Client(api_key="test", http_options={"base_url": server.gemini_base_url})``
  (LiteLLM: ``api_base=server.base_url + "/v1beta"``).

The provider's rules come from, first to last: the ``X-Toolmend-Provider`` header of a request,
a provider name as the first path segment (:meth:`StrictProviderServer.base_url_for`), a
``provider/`` prefix of the request's ``model``, the server's ``provider=`` argument, a Chat
Completions model name only one provider serves (``deepseek-chat``, ``mistral-large-latest``),
and finally the route's own provider (OpenAI, Anthropic, Gemini). The variant then follows the
request as the service's checks do: a Gemini 3 model is judged with ``gemini-3`` (thought
signatures), an Anthropic request with ``thinking`` on with ``anthropic-thinking``
(``anthropic-thinking-no-prefill`` for a Claude model without prefill).

With pytest, the ``strict_provider`` fixture (installed with toolmend as a pytest plugin) hands
each test a running server; ``@pytest.mark.strict_provider(provider="mistral")`` picks the
provider, and ``strict_provider_factory("groq")`` starts more.

Configuration
-------------
Nothing to set. The server never touches the network beyond 127.0.0.1 and needs no API key
(SDKs want some string; any will do). LiteLLM fetches its model cost map at import unless
``LITELLM_LOCAL_MODEL_COST_MAP=True`` is set; set it in tests that must stay offline.
"""

from __future__ import annotations

from .replies import Reply, ToolCall
from .server import ROUTES, RecordedRequest, Refusal, Route, StrictProviderServer

__all__ = [
    "ROUTES",
    "RecordedRequest",
    "Refusal",
    "Reply",
    "Route",
    "StrictProviderServer",
    "ToolCall",
]
