"""``toolmend demo``: real broken histories, real SDKs, a strict local provider, before and after.

The demo starts a :class:`~toolmend.testing.StrictProviderServer` on 127.0.0.1 and sends each
scenario's history through the SDK a user of that provider would use (``openai`` for OpenAI,
DeepSeek, Mistral and chat-template servers, ``anthropic`` for Claude, ``google-genai`` for
Gemini, ``litellm`` for a gateway in front of them): first as it is, which the emulated
provider rejects with its real HTTP 400, then through toolmend, which it accepts. It prints one
table row per scenario and exits 0 only when every "with toolmend" request was accepted. Nothing
leaves the machine; no API key is needed.

The scenarios are the four bug reports toolmend was founded on (their histories are
``examples/histories/seed00N_*.json``; ``docs/design.md`` tells their stories) and a few shapes
every agent framework produces sooner or later.

"With toolmend" is a :data:`Hook`: a function that gets the scenario, the send function and the
broken history and returns what the provider answered plus the changes toolmend made. The
default, :func:`patch_hook`, sends the broken history itself through the SDK patched by
``toolmend.integrations.patch`` (the hook a legacy app switches on with one call or with
``toolmend-run``); :func:`sanitize_hook` calls :func:`toolmend.repair` right before the SDK
call instead; :func:`litellm_hook` puts toolmend's LiteLLM callback in ``litellm.callbacks``
for the call (Claude Code's ``/v1/messages`` request, which LiteLLM translates for an OpenAI
deployment, served in process by ``litellm.anthropic_messages`` as the proxy serves it).

The SDKs are imported inside the send functions only, so ``import toolmend`` never loads them;
a missing SDK turns its rows into a ``pip install 'toolmend[demo]'`` hint, not a traceback.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import shutil
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO

from ._api import repair
from ._report import Change
from .formats import names as format_names
from .profiles import PROFILES
from .testing import Reply, StrictProviderServer

__all__ = [
    "SCENARIOS",
    "Hook",
    "Outcome",
    "Scenario",
    "litellm_hook",
    "main",
    "patch_hook",
    "run",
    "sanitize_hook",
]

Send = Callable[[Any], str]
"""Sends one history through the scenario's SDK; returns a short summary of the reply, or
raises the SDK's own error."""

Hook = Callable[["Scenario", Send, Any], "tuple[str, Sequence[Change]]"]
"""How "with toolmend" runs: ``hook(scenario, send, history) -> (reply summary, changes)``."""

SDK_MODULES = {
    "openai": "openai",
    "anthropic": "anthropic",
    "google-genai": "google.genai",
    "litellm": "litellm",
}
"""SDK (distribution) name -> the module the demo imports."""

MODELS = {
    "openai": "gpt-4.1",
    "openai-responses": "gpt-4.1",
    "deepseek": "deepseek-chat",
    "mistral": "mistral-large-latest",
    "hf-template-strict": "google/gemma-2-9b-it",
    "anthropic": "claude-sonnet-4-6",
    "gemini": "gemini-2.5-flash",
}


def sanitize_hook(scenario: Scenario, send: Send, history: Any) -> tuple[str, Sequence[Change]]:
    """``toolmend.repair`` on the history, then the same SDK call (no SDK hook needed)."""
    result = repair(history, provider=scenario.provider, format=scenario.format)
    return send(result.messages), result.changes


def patch_hook(scenario: Scenario, send: Send, history: Any) -> tuple[str, Sequence[Change]]:
    """The default "with toolmend": the SDK patched by ``toolmend.integrations.patch`` for the
    call, the caller's code unchanged. The changes shown are what that repair changed (the patch
    itself only logs them), found by repairing the same history the same way."""
    # the hooks live in toolmend.integrations (needs wrapt, from the [demo] extra)
    sdk_patch = importlib.import_module("toolmend.integrations.patch")

    provider = scenario.provider if scenario.sdk == "openai" else None
    sdk_patch.patch(provider=provider, on_loop="off")
    try:
        reply = send(history)
    finally:
        sdk_patch.unpatch()
    return reply, repair(history, provider=scenario.provider, format=scenario.format).changes


def litellm_hook(scenario: Scenario, send: Send, history: Any) -> tuple[str, Sequence[Change]]:
    """toolmend's LiteLLM callback in ``litellm.callbacks`` for the call (the proxy's
    ``callbacks: toolmend.integrations.litellm.proxy_handler``), removed after. The changes
    shown are what its first pass changed, found by repairing the same history the same way
    (an Anthropic-shaped history bound for another provider is repaired with Anthropic's rules,
    which LiteLLM's translation needs)."""
    import litellm

    hook = importlib.import_module("toolmend.integrations.litellm")
    saved = list(litellm.callbacks)
    litellm.callbacks = [hook.ToolMend(on_loop="off")]
    try:
        reply = send(history)
    finally:
        litellm.callbacks = saved
        hook.uninstall()
    return reply, repair(history, provider="anthropic", format=scenario.format).changes


@dataclass(frozen=True)
class Scenario:
    """One broken history, the SDK and provider it goes to, and how toolmend is applied."""

    title: str
    sdk: str
    """``"openai"``, ``"anthropic"``, ``"google-genai"`` or ``"litellm"``."""
    api: str
    """The server route: ``"chat"``, ``"responses"``, ``"messages"`` or ``"gemini"``."""
    provider: str
    format: str
    history: Callable[[], list[Any]]
    """Builds the broken history (fresh each time)."""
    hook: Hook = patch_hook
    source: str = ""
    """Where the shape was seen."""


@dataclass(frozen=True)
class Outcome:
    """What the provider answered: accepted (200) or the error it raised."""

    accepted: bool
    status: int | None
    text: str

    def short(self) -> str:
        """``"<status> <text>"``, or the text alone when there was no HTTP status."""
        return f"{self.status} {self.text}" if self.status else self.text


@dataclass
class Row:
    """One line of the table: a scenario and what happened without and with toolmend."""

    scenario: Scenario
    without: Outcome | None = None
    with_: Outcome | None = None
    changes: list[Change] = field(default_factory=list)
    skipped: str = ""

    @property
    def fixed(self) -> bool:
        """Whether the provider accepted the history with toolmend."""
        return not self.skipped and self.with_ is not None and self.with_.accepted


# --- the scenarios ----------------------------------------------------------------------------


def _call(call_id: str, name: str, arguments: str = "{}") -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def _seed_000() -> list[Any]:
    # Spring AI + DeepSeek: the stored assistant turn lost its tool_calls while the tool
    # response was kept; every later request fails.
    return [
        {"role": "system", "content": "You are a voice assistant."},
        {"role": "user", "content": "What's the weather in Paris?"},
        {"role": "assistant", "content": "Let me check."},
        {"role": "tool", "tool_call_id": "call_0_8d3f", "content": '{"temp_c": 21}'},
        {"role": "assistant", "content": "It is 21 C in Paris."},
        {"role": "user", "content": "And in Oslo?"},
    ]


def _seed_001() -> list[Any]:
    # Context compression kept the tail, which starts inside a tool round.
    return [
        {"role": "system", "content": "You are a coding assistant."},
        {"role": "tool", "tool_call_id": "call_sG1kQ2", "content": "src/app.py\nsrc/util.py"},
        {"role": "assistant", "content": "There are two Python files."},
        {"role": "user", "content": "Open the first one."},
    ]


def _seed_002_anthropic() -> list[Any]:
    # A converter merges consecutive user messages; the user's follow-up landed between the
    # two results, so the second result no longer opens the turn.
    return [
        {"role": "user", "content": "Is index.html committed?"},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "I'll check git."},
                {"type": "tool_use", "id": "toolu_01St", "name": "git_status", "input": {}},
                {"type": "tool_use", "id": "toolu_01Lg", "name": "git_log", "input": {"n": 3}},
            ],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_01St", "content": "clean"}],
        },
        {"role": "user", "content": "Check the diff too, please."},
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_01Lg", "content": "a1b2 fix"}
            ],
        },
    ]


def _seed_002_template() -> list[Any]:
    # The same session for a chat template without a tool role (Gemma): roles must alternate,
    # and merging must keep both tool results.
    return [
        {"role": "user", "content": "Is index.html committed?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [_call("call_st", "git_status"), _call("call_lg", "git_log")],
        },
        {"role": "tool", "tool_call_id": "call_st", "content": "clean"},
        {"role": "tool", "tool_call_id": "call_lg", "content": "a1b2 fix"},
        {"role": "user", "content": "Check the diff too, please."},
    ]


def _seed_003() -> list[Any]:
    # A framework put the call id where Gemini wants the function name.
    return [
        {"role": "user", "parts": [{"text": "What's the weather in Paris?"}]},
        {
            "role": "model",
            "parts": [{"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}}],
        },
        {
            "role": "user",
            "parts": [
                {
                    "functionResponse": {
                        "name": "call_8f2a61c0",
                        "response": {"result": {"temp_c": 21}},
                    }
                }
            ],
        },
    ]


def _user_typed_while_tool_ran() -> list[Any]:
    return [
        {"role": "user", "content": "Run the test suite."},
        {"role": "assistant", "content": None, "tool_calls": [_call("call_Tq9", "run_tests")]},
        {"role": "user", "content": "Only the fast ones, please."},
        {"role": "tool", "tool_call_id": "call_Tq9", "content": "41 passed, 1 failed"},
    ]


def _parallel_batch_cut_short() -> list[Any]:
    return [
        {"role": "user", "content": "Weather in Paris, Oslo and Rome?"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                _call("Xa81kPq2m", "get_weather", '{"city": "Paris"}'),
                _call("Ya72jOq1n", "get_weather", '{"city": "Oslo"}'),
                _call("Za63iNp0o", "get_weather", '{"city": "Rome"}'),
            ],
        },
        {"role": "tool", "tool_call_id": "Xa81kPq2m", "content": "21 C"},
        {"role": "tool", "tool_call_id": "Ya72jOq1n", "content": "12 C"},
        {"role": "user", "content": "Stop, that's enough."},
    ]


def _responses_interrupted_call() -> list[Any]:
    return [
        {"role": "user", "content": "Book a table for two at 8."},
        {
            "type": "function_call",
            "call_id": "call_bk7Hs2",
            "name": "book_table",
            "arguments": '{"people": 2, "time": "20:00"}',
        },
        {"role": "user", "content": "Actually, make it 7."},
    ]


def _claude_code_interrupted() -> list[Any]:
    # Claude Code stopped mid-tool: the user interrupted a call (no result was stored), typed
    # while two tools ran (the text landed before their results), and a result of a call that
    # was compacted away stayed behind.
    return [
        {"role": "user", "content": "Fix the failing test."},
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "toolu_01Rd", "name": "Read", "input": {"p": "t.py"}},
                {"type": "tool_use", "id": "toolu_01Gr", "name": "Grep", "input": {"q": "add"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Check conftest.py too."},
                {"type": "tool_result", "tool_use_id": "toolu_01Rd", "content": "assert 2+2 == 5"},
                {"type": "tool_result", "tool_use_id": "toolu_01Gr", "content": "t.py:1"},
            ],
        },
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "toolu_01Sh", "name": "Bash", "input": {}}],
        },
        {"role": "user", "content": [{"type": "text", "text": "[Request interrupted by user]"}]},
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_01Old", "content": "stale"},
                {"type": "text", "text": "Just fix the expectation."},
            ],
        },
    ]


SCENARIOS: tuple[Scenario, ...] = (
    Scenario(
        "000 dangling tool response",
        "openai",
        "chat",
        "deepseek",
        "openai",
        _seed_000,
        source="Spring AI conversation store; examples/histories/seed000_*.json",
    ),
    Scenario(
        "001 starts at a tool message",
        "openai",
        "chat",
        "openai",
        "openai",
        _seed_001,
        source="context compression filter; examples/histories/seed001_*.json",
    ),
    Scenario(
        "002a Claude: merged user turns",
        "anthropic",
        "messages",
        "anthropic",
        "anthropic",
        _seed_002_anthropic,
        source="Claude converter merging user messages (bug report 002)",
    ),
    Scenario(
        "002b template without tool role",
        "openai",
        "chat",
        "hf-template-strict",
        "openai",
        _seed_002_template,
        source="chat template without a tool role; examples/histories/seed002_*.json",
    ),
    Scenario(
        "003 functionResponse named by id",
        "google-genai",
        "gemini",
        "gemini",
        "gemini",
        _seed_003,
        source="Gemini functionResponse.name; examples/histories/seed003_*.json",
    ),
    Scenario(
        "user typed while a tool ran",
        "openai",
        "chat",
        "openai",
        "openai",
        _user_typed_while_tool_ran,
    ),
    Scenario(
        "parallel batch cut short",
        "openai",
        "chat",
        "mistral",
        "openai",
        _parallel_batch_cut_short,
    ),
    Scenario(
        "Responses call cut off by user",
        "openai",
        "responses",
        "openai-responses",
        "openai-responses",
        _responses_interrupted_call,
    ),
    Scenario(
        "Claude Code via LiteLLM to GPT",
        "litellm",
        "messages",
        "openai",
        "anthropic",
        _claude_code_interrupted,
        hook=litellm_hook,
        source="Claude Code behind a LiteLLM proxy, /v1/messages routed to an OpenAI model",
    ),
)
"""Every scenario the demo runs, in table order."""


# --- sending through the SDKs -----------------------------------------------------------------


def _summary(text: str | None, calls: Sequence[str]) -> str:
    if calls:
        return "calls " + ", ".join(calls)
    return repr((text or "")[:40])


def _sender(scenario: Scenario, server: StrictProviderServer) -> Send:
    """The function that sends a history through ``scenario``'s SDK to ``server``."""
    base = server.base_url_for(scenario.provider)
    model = MODELS.get(scenario.provider, "model")
    if scenario.sdk == "litellm":  # the route LiteLLM translates to picks the rules it meets
        return _litellm_sender(scenario, server.openai_base_url, model)
    if scenario.sdk == "openai":
        import openai

        client = openai.OpenAI(api_key="demo", base_url=base + "/v1", max_retries=0)
        if scenario.api == "responses":

            def send_responses(history: Any) -> str:
                response = client.responses.create(model=model, input=history)
                return _summary(response.output_text, [])

            return send_responses

        def send_chat(history: Any) -> str:
            message = client.chat.completions.create(model=model, messages=history)
            return _summary(message.choices[0].message.content, [])

        return send_chat
    if scenario.sdk == "anthropic":
        import anthropic

        claude = anthropic.Anthropic(api_key="demo", base_url=base, max_retries=0)

        def send_messages(history: Any) -> str:
            message = claude.messages.create(model=model, max_tokens=512, messages=history)
            texts = [block.text for block in message.content if block.type == "text"]
            return _summary(" ".join(texts), [])

        return send_messages
    from google import genai
    from google.genai import types

    gemini = genai.Client(api_key="demo", http_options=types.HttpOptions(base_url=base))

    def send_contents(history: Any) -> str:
        response = gemini.models.generate_content(model=model, contents=history)
        return _summary(response.text, [])

    return send_contents


class _GatewayError(Exception):
    """A provider's error that LiteLLM passed on, with the provider's own status and text."""

    def __init__(self, status_code: int | None, message: str) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.message = message


def _provider_text(text: str) -> str:
    """The provider's message inside a LiteLLM error text (``...Exception - {json}``)."""
    try:
        body = json.loads(text[text.index("{") :])
    except ValueError:
        return text
    inner = body.get("error", body) if isinstance(body, dict) else None
    message = inner.get("message") if isinstance(inner, dict) else None
    return message if isinstance(message, str) else text


_LOOPS: list[asyncio.AbstractEventLoop] = []
"""The event loops of the LiteLLM senders, closed by :func:`run` when its scenarios are done."""


def _close_loops() -> None:
    """Cancel what LiteLLM left on each sender's loop (its logging task), then close it."""
    while _LOOPS:
        loop = _LOOPS.pop()
        pending = asyncio.all_tasks(loop)
        for task in pending:
            task.cancel()
        if pending:
            loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.close()


def _litellm_sender(scenario: Scenario, api_base: str, model: str) -> Send:
    """Sends an Anthropic-shaped history the way the LiteLLM proxy serves ``/v1/messages``:
    ``litellm.anthropic_messages`` to the deployment ``scenario.provider/model``."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # LiteLLM stays offline
    import litellm

    litellm.suppress_debug_info = True
    loop = asyncio.new_event_loop()  # one loop for every call: LiteLLM keeps a task on it
    _LOOPS.append(loop)

    def send_gateway(history: Any) -> str:
        call = litellm.anthropic_messages(
            model=f"{scenario.provider}/{model}",
            api_base=api_base,
            api_key="demo",
            max_tokens=512,
            messages=history,
        )
        try:
            reply: Any = loop.run_until_complete(call)  # a plain dict, not streamed
        except Exception as error:  # LiteLLM's error for the provider's: keep status and text
            status = getattr(error, "status_code", None)
            raise _GatewayError(status, _provider_text(str(error))) from error
        texts = [
            str(block.get("text", "")) for block in reply["content"] if block["type"] == "text"
        ]
        return _summary(" ".join(texts), [])

    return send_gateway


def _error_outcome(error: Exception) -> Outcome:
    """The status and provider message of an SDK error, read the way each SDK exposes them."""
    status = getattr(error, "status_code", None) or getattr(error, "code", None)
    body = getattr(error, "body", None)
    message: Any = None
    if isinstance(body, dict):
        inner = body.get("error", body)
        message = inner.get("message") if isinstance(inner, dict) else None
    if message is None:
        message = getattr(error, "message", None)
    if not isinstance(message, str) or not message:
        message = f"{type(error).__name__}: {error}"
    return Outcome(False, status if isinstance(status, int) else None, message.strip())


def _attempt(send: Send, history: Any) -> Outcome:
    try:
        return Outcome(True, 200, send(history))
    except Exception as error:  # the SDK's own error is the outcome being shown
        return _error_outcome(error)


def _importable(module: str) -> bool:
    parts = module.split(".")
    try:
        return all(
            importlib.util.find_spec(".".join(parts[: n + 1])) is not None
            for n in range(len(parts))
        )
    except (ImportError, ValueError):
        return False


def _missing(scenario: Scenario) -> str:
    """Why ``scenario`` cannot run here ("" when it can)."""
    if not _importable(SDK_MODULES[scenario.sdk]):
        return f"needs {scenario.sdk}"
    if scenario.format not in format_names():
        return f"format {scenario.format!r} not in this toolmend"
    if scenario.provider not in PROFILES:
        return f"profile {scenario.provider!r} not in this toolmend"
    return ""


def run(scenarios: Sequence[Scenario] = SCENARIOS) -> list[Row]:
    """Run ``scenarios`` against a fresh strict provider server; one :class:`Row` each."""
    rows = [Row(scenario, skipped=_missing(scenario)) for scenario in scenarios]
    try:
        _run_rows(rows)
    finally:
        _close_loops()
    return rows


def _run_rows(rows: list[Row]) -> None:
    with StrictProviderServer(default_reply=Reply.text("Done.")) as server:
        for row in rows:
            if row.skipped:
                continue
            scenario = row.scenario
            try:
                send = _sender(scenario, server)
            except ImportError:  # installed but broken: still a hint, not a traceback
                row.skipped = f"needs {scenario.sdk}"
                continue
            row.without = _attempt(send, scenario.history())
            changes: list[Change] = []

            def with_toolmend(
                history: Any,
                scenario: Scenario = scenario,
                send: Send = send,
                changes: list[Change] = changes,
            ) -> str:
                reply, made = scenario.hook(scenario, send, history)
                changes.extend(made)
                return reply

            row.with_ = _attempt(with_toolmend, scenario.history())
            row.changes = changes


# --- printing ---------------------------------------------------------------------------------


def _clip(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: max(0, width - 3)] + "..."


def _change_codes(changes: Sequence[Change]) -> str:
    counts: dict[str, int] = {}
    for change in changes:
        counts[change.code] = counts.get(change.code, 0) + 1
    return ", ".join(code + (f" x{n}" if n > 1 else "") for code, n in counts.items()) or "-"


def _cells(row: Row) -> list[str]:
    scenario = row.scenario
    if row.skipped:
        return [scenario.title, scenario.sdk, scenario.provider, "-", "skipped", row.skipped]
    assert row.without is not None and row.with_ is not None
    without = row.without.short() if not row.without.accepted else "200 (accepted as it is)"
    with_ = "200" if row.with_.accepted else str(row.with_.status or "error")
    changes = _change_codes(row.changes) if row.with_.accepted else row.with_.text
    return [scenario.title, scenario.sdk, scenario.provider, without, with_, changes]


def render(rows: Sequence[Row], *, width: int | None = None, verbose: bool = False) -> str:
    """The table (and, with ``verbose``, each row's full error and changes), in plain ASCII."""
    total = width or shutil.get_terminal_size((140, 24)).columns
    header = ["scenario", "SDK", "provider", "without toolmend", "with", "changes"]
    cells = [_cells(row) for row in rows]
    widths = [max(len(header[i]), *(len(c[i]) for c in cells)) for i in range(len(header))]
    room = max(40, total - sum(widths[:3]) - widths[4] - 2 * (len(header) - 1))
    widths[3] = min(widths[3], max(24, room - min(widths[5], room * 2 // 5)))
    widths[5] = min(widths[5], max(16, room - widths[3]))
    lines = [
        "  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)).rstrip(),
        "  ".join("-" * w for w in widths),
    ]
    for cell in cells:
        lines.append(
            "  ".join(_clip(c, w).ljust(w) for c, w in zip(cell, widths, strict=True)).rstrip()
        )
    fixed_count = sum(row.fixed for row in rows)
    lines.append("")
    lines.append(
        f"{fixed_count}/{len(rows)} accepted with toolmend "
        "(the same broken history, sent through toolmend's hook for its SDK: the SDK patched by "
        "toolmend.integrations.patch, or toolmend's LiteLLM callback)."
    )
    missing = sorted({r.scenario.sdk for r in rows if r.skipped.startswith("needs ")})
    if missing:
        lines.append(
            f"Missing SDK(s): {', '.join(missing)}. Install them with: pip install 'toolmend[demo]'"
        )
    if verbose:
        for row in rows:
            if row.skipped or row.without is None or row.with_ is None:
                continue
            lines.append("")
            lines.append(f"{row.scenario.title} ({row.scenario.sdk} -> {row.scenario.provider})")
            if row.scenario.source:
                lines.append(f"  seen in:  {row.scenario.source}")
            lines.append(f"  without:  {row.without.short()}")
            lines.append(f"  with:     {row.with_.short()}")
            for change in row.changes:
                lines.append(f"  change:   {change}")
    elif fixed_count:
        lines.append("Run `toolmend demo -v` for the full provider errors and every change.")
    return "\n".join(lines)


def main(*, verbose: bool = False, stream: TextIO | None = None) -> int:
    """``toolmend demo [-v]``: run every scenario and print the table; 0 when all were fixed."""
    out = stream or sys.stdout
    rows = run()
    print(
        "toolmend demo: broken histories sent through the real SDKs to a strict local provider "
        "(127.0.0.1, no API key)\n",
        file=out,
    )
    print(render(rows, verbose=verbose), file=out)
    return 0 if rows and all(row.fixed for row in rows) else 1
