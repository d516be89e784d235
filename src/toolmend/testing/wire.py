"""The 200 answers of each API, as the real services spell them, plain and streamed (SSE).

One function pair per API: ``*_body`` builds the JSON document of a plain answer and
``*_stream`` the server-sent events of a streamed one, shaped so that the official SDKs parse
them into their own objects (``ChatCompletion``, ``Response``, ``Message``,
``GenerateContentResponse``) and their stream helpers assemble the same answer:

* OpenAI Chat Completions: ``chat.completion``; streamed as ``chat.completion.chunk`` objects
  in ``data:`` lines ending with ``data: [DONE]``.
* OpenAI Responses: a ``response`` object; streamed as typed events from ``response.created``
  through ``response.output_item.*``, ``response.output_text.*`` and
  ``response.function_call_arguments.*`` to ``response.completed``.
* Anthropic Messages: a ``message``; streamed as ``message_start``, ``content_block_start`` /
  ``_delta`` / ``_stop`` per block, ``message_delta`` and ``message_stop``.
* Gemini: a ``GenerateContentResponse``; ``streamGenerateContent`` sends several of them, as
  ``data:`` lines with ``?alt=sse`` or as one JSON array without it.
* Amazon Bedrock Converse: a ``ConverseResponse``; ``converse-stream`` sends ``messageStart``,
  ``contentBlockStart`` / ``Delta`` / ``Stop``, ``messageStop`` and ``metadata`` events in the
  AWS event stream binary framing (``application/vnd.amazon.eventstream``), not SSE.

Nothing here knows about problems or providers' rules; see :mod:`toolmend.testing.errors`.
"""

from __future__ import annotations

import binascii
import itertools
import json
import struct
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .replies import IdMaker, Reply

__all__ = [
    "Answer",
    "anthropic_body",
    "anthropic_stream",
    "chat_body",
    "chat_stream",
    "converse_body",
    "converse_stream",
    "event_stream_message",
    "gemini_body",
    "gemini_stream",
    "responses_body",
    "responses_stream",
    "sse_data",
    "sse_events",
]

Json = dict[str, Any]


@dataclass(frozen=True)
class Answer:
    """One accepted request's answer: the reply, with everything the wire shapes need."""

    reply: Reply
    model: str
    call_ids: tuple[str, ...]
    """One id per call of ``reply`` (empty strings for Gemini, whose calls have none)."""
    created: int
    prompt_tokens: int
    ids: IdMaker

    @property
    def completion_tokens(self) -> int:
        """A rough token count of the answer (4 characters a token), for ``usage`` fields."""
        size = len(self.reply.content or "") + sum(
            len(call.name) + len(json.dumps(dict(call.arguments))) for call in self.reply.calls
        )
        return max(1, size // 4)


def _arguments(answer: Answer, slot: int) -> str:
    return json.dumps(dict(answer.reply.calls[slot].arguments), ensure_ascii=False)


def _pieces(text: str) -> list[str]:
    """``text`` cut into up to three deltas at spaces, as a model streams it."""
    words = text.split(" ")
    if len(words) < 3:
        return [text] if text else []
    third = max(1, len(words) // 3)
    cuts = [0, third, 2 * third, len(words)]
    return [
        " ".join(words[a:b]) + (" " if b < len(words) else "")
        for a, b in itertools.pairwise(cuts)
        if a < b
    ]


def sse_data(objects: Sequence[Any], *, done: bool = False, newline: str = "\n") -> bytes:
    """``data: <json>`` events, optionally closed by ``data: [DONE]`` (OpenAI)."""
    end = newline * 2
    parts = [f"data: {json.dumps(obj, ensure_ascii=False)}{end}" for obj in objects]
    if done:
        parts.append(f"data: [DONE]{end}")
    return "".join(parts).encode("utf-8")


def sse_events(events: Sequence[Json]) -> bytes:
    """``event: <type>`` plus ``data: <json>`` events, the type taken from each object."""
    return "".join(
        f"event: {event['type']}\ndata: {json.dumps(event, ensure_ascii=False)}\n\n"
        for event in events
    ).encode("utf-8")


# --- OpenAI Chat Completions -------------------------------------------------------------------


def _chat_tool_calls(answer: Answer) -> list[Json]:
    return [
        {
            "id": answer.call_ids[slot],
            "type": "function",
            "function": {"name": call.name, "arguments": _arguments(answer, slot)},
        }
        for slot, call in enumerate(answer.reply.calls)
    ]


def _chat_usage(answer: Answer) -> Json:
    return {
        "prompt_tokens": answer.prompt_tokens,
        "completion_tokens": answer.completion_tokens,
        "total_tokens": answer.prompt_tokens + answer.completion_tokens,
    }


def chat_body(answer: Answer, completion_id: str) -> Json:
    """A ``chat.completion`` object."""
    message: Json = {"role": "assistant", "content": answer.reply.content, "refusal": None}
    if answer.reply.calls:
        message["tool_calls"] = _chat_tool_calls(answer)
    return {
        "id": completion_id,
        "object": "chat.completion",
        "created": answer.created,
        "model": answer.model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": "stop" if answer.reply.finished else "tool_calls",
            }
        ],
        "usage": _chat_usage(answer),
        # OpenAI and Groq send it; LiteLLM's Groq transformation reads it unconditionally
        "service_tier": "default",
        "system_fingerprint": "fp_toolmend",
    }


def chat_stream(answer: Answer, completion_id: str, *, include_usage: bool = False) -> bytes:
    """The ``chat.completion.chunk`` events of the same answer, then ``data: [DONE]``."""

    def chunk(delta: Json, finish: str | None = None) -> Json:
        return {
            "id": completion_id,
            "object": "chat.completion.chunk",
            "created": answer.created,
            "model": answer.model,
            "system_fingerprint": "fp_toolmend",
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        }

    chunks = [chunk({"role": "assistant", "content": ""})]
    chunks += [chunk({"content": piece}) for piece in _pieces(answer.reply.content or "")]
    for slot, call in enumerate(answer.reply.calls):
        head = {
            "index": slot,
            "id": answer.call_ids[slot],
            "type": "function",
            "function": {"name": call.name, "arguments": ""},
        }
        chunks.append(chunk({"tool_calls": [head]}))
        arguments = {"index": slot, "function": {"arguments": _arguments(answer, slot)}}
        chunks.append(chunk({"tool_calls": [arguments]}))
    chunks.append(chunk({}, "stop" if answer.reply.finished else "tool_calls"))
    if include_usage:
        last = chunk({})
        last["choices"] = []
        last["usage"] = _chat_usage(answer)
        chunks.append(last)
    return sse_data(chunks, done=True)


# --- OpenAI Responses --------------------------------------------------------------------------


def _responses_items(answer: Answer) -> list[Json]:
    items: list[Json] = []
    if answer.reply.content is not None:
        items.append(
            {
                "type": "message",
                "id": answer.ids.hex("msg_"),
                "status": "completed",
                "role": "assistant",
                "content": [
                    {
                        "type": "output_text",
                        "text": answer.reply.content,
                        "annotations": [],
                        "logprobs": [],
                    }
                ],
            }
        )
    for slot, call in enumerate(answer.reply.calls):
        items.append(
            {
                "type": "function_call",
                "id": answer.ids.hex("fc_"),
                "call_id": answer.call_ids[slot],
                "name": call.name,
                "arguments": _arguments(answer, slot),
                "status": "completed",
            }
        )
    return items


def responses_body(answer: Answer, response_id: str, request: Mapping[str, Any]) -> Json:
    """A completed ``response`` object."""
    tools = request.get("tools")
    return {
        "id": response_id,
        "object": "response",
        "created_at": answer.created,
        "status": "completed",
        "background": False,
        "error": None,
        "incomplete_details": None,
        "instructions": request.get("instructions"),
        "max_output_tokens": request.get("max_output_tokens"),
        "model": answer.model,
        "output": _responses_items(answer),
        "parallel_tool_calls": True,
        "previous_response_id": request.get("previous_response_id"),
        "reasoning": {"effort": None, "summary": None},
        "store": bool(request.get("store", True)),
        "temperature": 1.0,
        "text": {"format": {"type": "text"}},
        "tool_choice": request.get("tool_choice", "auto"),
        "tools": tools if isinstance(tools, list) else [],
        "top_p": 1.0,
        "truncation": "disabled",
        "usage": {
            "input_tokens": answer.prompt_tokens,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": answer.completion_tokens,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": answer.prompt_tokens + answer.completion_tokens,
        },
        "user": None,
        "metadata": {},
    }


def _item_events(item: Json, output_index: int) -> Iterator[Json]:
    if item["type"] == "message":
        part = item["content"][0]
        text = part["text"]
        yield {
            "type": "response.output_item.added",
            "output_index": output_index,
            "item": {**item, "status": "in_progress", "content": []},
        }
        where = {"item_id": item["id"], "output_index": output_index, "content_index": 0}
        yield {
            "type": "response.content_part.added",
            **where,
            "part": {**part, "text": ""},
        }
        for piece in _pieces(text):
            yield {"type": "response.output_text.delta", **where, "delta": piece, "logprobs": []}
        yield {"type": "response.output_text.done", **where, "text": text, "logprobs": []}
        yield {"type": "response.content_part.done", **where, "part": part}
    else:
        yield {
            "type": "response.output_item.added",
            "output_index": output_index,
            "item": {**item, "status": "in_progress", "arguments": ""},
        }
        where = {"item_id": item["id"], "output_index": output_index}
        yield {
            "type": "response.function_call_arguments.delta",
            **where,
            "delta": item["arguments"],
        }
        yield {
            "type": "response.function_call_arguments.done",
            **where,
            "name": item["name"],
            "arguments": item["arguments"],
        }
    yield {"type": "response.output_item.done", "output_index": output_index, "item": item}


def responses_stream(final: Json) -> bytes:
    """The typed events of a finished ``response`` (from :func:`responses_body`), from
    ``response.created`` to ``response.completed``."""
    started = {**final, "status": "in_progress", "output": [], "usage": None}
    events: list[Json] = [
        {"type": "response.created", "response": started},
        {"type": "response.in_progress", "response": started},
    ]
    for output_index, item in enumerate(final["output"]):
        events.extend(_item_events(item, output_index))
    events.append({"type": "response.completed", "response": final})
    for number, event in enumerate(events):
        event["sequence_number"] = number
    return sse_events(events)


# --- Anthropic Messages ------------------------------------------------------------------------


def _anthropic_blocks(answer: Answer) -> list[Json]:
    blocks: list[Json] = []
    if answer.reply.content is not None:
        blocks.append({"type": "text", "text": answer.reply.content})
    for slot, call in enumerate(answer.reply.calls):
        blocks.append(
            {
                "type": "tool_use",
                "id": answer.call_ids[slot],
                "name": call.name,
                "input": dict(call.arguments),
            }
        )
    return blocks


def _anthropic_usage(answer: Answer, output_tokens: int) -> Json:
    return {
        "input_tokens": answer.prompt_tokens,
        "output_tokens": output_tokens,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
    }


def anthropic_body(answer: Answer, message_id: str) -> Json:
    """A ``message`` object."""
    return {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": answer.model,
        "content": _anthropic_blocks(answer),
        "stop_reason": "end_turn" if answer.reply.finished else "tool_use",
        "stop_sequence": None,
        "usage": _anthropic_usage(answer, answer.completion_tokens),
    }


def anthropic_stream(answer: Answer, message_id: str) -> bytes:
    """``message_start`` ... ``message_stop`` for the same message."""
    start = anthropic_body(answer, message_id)
    start.update(content=[], stop_reason=None, usage=_anthropic_usage(answer, 1))
    events: list[Json] = [{"type": "message_start", "message": start}, {"type": "ping"}]
    for index, block in enumerate(_anthropic_blocks(answer)):
        if block["type"] == "text":
            events.append(
                {
                    "type": "content_block_start",
                    "index": index,
                    "content_block": {"type": "text", "text": ""},
                }
            )
            events += [
                {
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {"type": "text_delta", "text": piece},
                }
                for piece in _pieces(block["text"])
            ]
        else:
            events.append(
                {
                    "type": "content_block_start",
                    "index": index,
                    "content_block": {**block, "input": {}},
                }
            )
            events.append(
                {
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {
                        "type": "input_json_delta",
                        "partial_json": json.dumps(block["input"], ensure_ascii=False),
                    },
                }
            )
        events.append({"type": "content_block_stop", "index": index})
    events.append(
        {
            "type": "message_delta",
            "delta": {
                "stop_reason": "end_turn" if answer.reply.finished else "tool_use",
                "stop_sequence": None,
            },
            "usage": {"output_tokens": answer.completion_tokens},
        }
    )
    events.append({"type": "message_stop"})
    return sse_events(events)


# --- Gemini ------------------------------------------------------------------------------------

_SIGNED_MODELS = ("gemini-3", "gemini-flash-latest", "gemini-pro-latest")


def _gemini_parts(answer: Answer) -> list[Json]:
    parts: list[Json] = []
    if answer.reply.content is not None:
        parts.append({"text": answer.reply.content})
    signed = answer.model.startswith(_SIGNED_MODELS)
    for slot, call in enumerate(answer.reply.calls):
        part: Json = {"functionCall": {"name": call.name, "args": dict(call.arguments)}}
        if signed and slot == 0:
            # Gemini 3 returns an opaque signature on the first call of a step and wants it
            # back; an agent that stores the Content as received keeps it.
            part["thoughtSignature"] = answer.ids.signature()
        parts.append(part)
    return parts


def _gemini_response(answer: Answer, response_id: str, parts: list[Json], last: bool) -> Json:
    candidate: Json = {"content": {"parts": parts, "role": "model"}, "index": 0}
    if last:
        candidate["finishReason"] = "STOP"
    usage: Json = {"promptTokenCount": answer.prompt_tokens}
    if last:
        usage["candidatesTokenCount"] = answer.completion_tokens
        usage["totalTokenCount"] = answer.prompt_tokens + answer.completion_tokens
    return {
        "candidates": [candidate],
        "usageMetadata": usage,
        "modelVersion": answer.model,
        "responseId": response_id,
    }


def gemini_body(answer: Answer, response_id: str) -> Json:
    """A ``GenerateContentResponse``."""
    return _gemini_response(answer, response_id, _gemini_parts(answer), last=True)


def gemini_stream(answer: Answer, response_id: str, *, sse: bool) -> bytes:
    """The chunks of ``streamGenerateContent``: SSE with ``alt=sse``, else a JSON array."""
    parts = _gemini_parts(answer)
    texts = _pieces(parts[0]["text"]) if parts and "text" in parts[0] else []
    calls = parts[1:] if texts else parts
    groups: list[list[Json]] = [[{"text": piece}] for piece in texts]
    if calls:
        groups.append(calls)
    if not groups:
        groups.append([{"text": ""}])
    chunks = [
        _gemini_response(answer, response_id, group, last=number == len(groups) - 1)
        for number, group in enumerate(groups)
    ]
    if sse:
        return sse_data(chunks, newline="\r\n")
    return json.dumps(chunks, ensure_ascii=False).encode("utf-8")


# --- Amazon Bedrock Converse -------------------------------------------------------------------


def _converse_blocks(answer: Answer) -> list[Json]:
    blocks: list[Json] = []
    if answer.reply.content is not None:
        blocks.append({"text": answer.reply.content})
    for slot, call in enumerate(answer.reply.calls):
        blocks.append(
            {
                "toolUse": {
                    "toolUseId": answer.call_ids[slot],
                    "name": call.name,
                    "input": dict(call.arguments),
                }
            }
        )
    return blocks


def _converse_usage(answer: Answer) -> Json:
    return {
        "inputTokens": answer.prompt_tokens,
        "outputTokens": answer.completion_tokens,
        "totalTokens": answer.prompt_tokens + answer.completion_tokens,
    }


def converse_body(answer: Answer) -> Json:
    """A ``ConverseResponse``."""
    return {
        "output": {"message": {"role": "assistant", "content": _converse_blocks(answer)}},
        "stopReason": "end_turn" if answer.reply.finished else "tool_use",
        "usage": _converse_usage(answer),
        "metrics": {"latencyMs": 1},
    }


def event_stream_message(event_type: str, payload: Json) -> bytes:
    """One message of the AWS event stream framing: prelude (total and header lengths, CRC32),
    string headers, the JSON payload, and the CRC32 of everything before it."""
    headers = b""
    for name, value in (
        (":event-type", event_type),
        (":content-type", "application/json"),
        (":message-type", "event"),
    ):
        raw_name, raw_value = name.encode(), value.encode()
        headers += bytes([len(raw_name)]) + raw_name + b"\x07"
        headers += struct.pack(">H", len(raw_value)) + raw_value
    body = json.dumps(payload, ensure_ascii=False).encode("utf-8")
    prelude = struct.pack(">II", 12 + len(headers) + len(body) + 4, len(headers))
    message = prelude + struct.pack(">I", binascii.crc32(prelude)) + headers + body
    return message + struct.pack(">I", binascii.crc32(message))


def converse_stream(answer: Answer) -> bytes:
    """The ``ConverseStream`` events of the same answer, event-stream framed."""
    events: list[tuple[str, Json]] = [("messageStart", {"role": "assistant"})]
    for index, block in enumerate(_converse_blocks(answer)):
        if "text" in block:
            events += [
                ("contentBlockDelta", {"contentBlockIndex": index, "delta": {"text": piece}})
                for piece in _pieces(block["text"]) or [""]
            ]
        else:
            use = block["toolUse"]
            start = {"toolUse": {"toolUseId": use["toolUseId"], "name": use["name"]}}
            arguments = json.dumps(use["input"], ensure_ascii=False)
            events.append(("contentBlockStart", {"contentBlockIndex": index, "start": start}))
            events.append(
                (
                    "contentBlockDelta",
                    {"contentBlockIndex": index, "delta": {"toolUse": {"input": arguments}}},
                )
            )
        events.append(("contentBlockStop", {"contentBlockIndex": index}))
    events.append(("messageStop", {"stopReason": converse_body(answer)["stopReason"]}))
    events.append(("metadata", {"usage": _converse_usage(answer), "metrics": {"latencyMs": 1}}))
    return b"".join(event_stream_message(kind, payload) for kind, payload in events)
