"""The strict server's Bedrock Converse route and its OAuth token stub, through real clients.

The Converse route is what LiteLLM's ``bedrock/converse/...`` models (and boto3's
``bedrock-runtime`` client) call: ``POST /model/{modelId}/converse`` and ``.../converse-stream``,
the stream in AWS's binary event-stream framing. ``POST .../token`` lets Google credentials
refresh offline (LiteLLM's ``vertex_ai``).
"""

from __future__ import annotations

import json
import urllib.parse
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from toolmend.testing import Reply, StrictProviderServer

from support.converse import converse_client

boto3 = pytest.importorskip("boto3")
botocore_exceptions = pytest.importorskip("botocore.exceptions")

MODEL = "anthropic.claude-3-5-sonnet-20240620-v1:0"
TOOLS = {
    "tools": [
        {
            "toolSpec": {
                "name": "get_weather",
                "inputSchema": {"json": {"type": "object", "properties": {}}},
            }
        }
    ]
}
ASKED = {
    "role": "assistant",
    "content": [{"toolUse": {"toolUseId": "tooluse_1", "name": "get_weather", "input": {}}}],
}


@pytest.fixture(scope="module")
def server() -> Iterator[StrictProviderServer]:
    with StrictProviderServer() as running:
        yield running


@pytest.fixture
def client(server: StrictProviderServer) -> Any:
    return converse_client(server)


def _valid() -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": [{"text": "Weather in Paris?"}]},
        ASKED,
        {
            "role": "user",
            "content": [{"toolResult": {"toolUseId": "tooluse_1", "content": [{"text": "21 C"}]}}],
        },
    ]


def test_converse_answers_a_valid_history(server: StrictProviderServer, client: Any) -> None:
    server.script([Reply.tool_calls(("get_weather", {"city": "Rome"}), text="Checking")])
    reply = client.converse(modelId=MODEL, messages=_valid(), toolConfig=TOOLS)
    blocks = reply["output"]["message"]["content"]
    assert blocks[0] == {"text": "Checking"}
    assert blocks[1]["toolUse"]["name"] == "get_weather"
    assert blocks[1]["toolUse"]["input"] == {"city": "Rome"}
    assert blocks[1]["toolUse"]["toolUseId"].startswith("tooluse_")
    assert reply["stopReason"] == "tool_use"
    last = server.last_request
    assert (last.api, last.provider, last.format, last.model) == (
        "converse",
        "bedrock",
        "bedrock",
        MODEL,
    )
    assert last.accepted and last.judged and not last.stream


def test_converse_stream_is_event_stream_framed(server: StrictProviderServer, client: Any) -> None:
    server.script([Reply.tool_calls(("get_weather", {"city": "Rome"}), text="One moment please")])
    reply = client.converse_stream(modelId=MODEL, messages=_valid(), toolConfig=TOOLS)
    events = list(reply["stream"])
    kinds = [next(iter(event)) for event in events]
    assert kinds[0] == "messageStart"
    assert kinds[-2:] == ["messageStop", "metadata"]
    text = "".join(
        e["contentBlockDelta"]["delta"].get("text", "") for e in events if "contentBlockDelta" in e
    )
    assert text == "One moment please"
    start = next(
        e["contentBlockStart"]["start"]["toolUse"] for e in events if "contentBlockStart" in e
    )
    assert start["name"] == "get_weather"
    arguments = next(
        e["contentBlockDelta"]["delta"]["toolUse"]["input"]
        for e in events
        if "toolUse" in e.get("contentBlockDelta", {}).get("delta", {})
    )
    assert json.loads(arguments) == {"city": "Rome"}
    assert events[-2]["messageStop"]["stopReason"] == "tool_use"
    assert server.last_request.stream


def test_converse_rejects_a_missing_result_like_bedrock(
    server: StrictProviderServer, client: Any
) -> None:
    broken = [*_valid()[:2], {"role": "user", "content": [{"text": "And tomorrow?"}]}]
    with pytest.raises(botocore_exceptions.ClientError) as raised:
        client.converse(modelId=MODEL, messages=broken, toolConfig=TOOLS)
    error = raised.value.response["Error"]
    assert error["Code"] == "ValidationException"
    assert error["Message"] == server.last_request.error
    assert server.last_request.status == 400
    assert server.last_request.problems[0].code == "missing_result"


def test_token_stub_answers_an_oauth_refresh_and_is_not_recorded(
    server: StrictProviderServer,
) -> None:
    server.clear()
    form = urllib.parse.urlencode({"grant_type": "refresh_token", "refresh_token": "r"})
    request = urllib.request.Request(server.base_url + "/token", data=form.encode())
    with urllib.request.urlopen(request) as reply:
        body = json.load(reply)
    assert body["access_token"] and body["token_type"] == "Bearer"
    assert body["expires_in"] > 0
    assert server.requests == []
