"""The histories ``toolmend show`` is tested on: the bundled examples (the founding bug reports
and friends), the demo's scenarios, and one Bedrock Converse history, so every JSON format the
command reads is covered; plus a long damaged history for the 5,000-message page."""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toolmend import formats, get_profile
from toolmend._demo import SCENARIOS, Scenario

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "histories"

EXAMPLE_PROVIDERS = {
    "seed000_deepseek_dangling_tool": "deepseek",
    "seed001_trimmed_tool_group": "openai",
    "seed002_results_for_template_without_tool_role": "hf-template-strict",
    "seed003_gemini_opaque_function_response_name": "gemini",
    "gemini_contents_opaque_names": "gemini",
    "interleaved_user_message": "openai",
    "responses_orphan_output": "openai-responses",
}
"""Each bundled example and the provider it breaks."""


@dataclass(frozen=True)
class Case:
    name: str
    """The golden file's name."""
    provider: str
    history: Any
    """The history (a request body for the examples that are stored as one)."""
    path: Path | None = None
    """The bundled file, for the cases the command reads from disk."""


def bedrock_history() -> list[dict[str, Any]]:
    """A Converse history: the user typed between a ``toolUse`` and its ``toolResult``."""
    return [
        {"role": "user", "content": [{"text": "Weather in Paris?"}]},
        {
            "role": "assistant",
            "content": [
                {"text": "Checking."},
                {
                    "toolUse": {
                        "toolUseId": "tooluse_p1",
                        "name": "get_weather",
                        "input": {"city": "Paris"},
                    }
                },
            ],
        },
        {"role": "user", "content": [{"text": "Hurry, please."}]},
        {
            "role": "user",
            "content": [{"toolResult": {"toolUseId": "tooluse_p1", "content": [{"text": "21 C"}]}}],
        },
    ]


def _slug(title: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", title.lower()).strip("_")


def _judged_by(scenario: Scenario) -> str:
    """The profile a demo history is shown under: its provider's, unless that profile cannot
    read the history's format (Claude Code's Anthropic messages, sent on to GPT by LiteLLM, are
    held to the Anthropic rules, as the LiteLLM callback holds them: ``route_profile`` in
    ``integrations/litellm_routes.py``); then the format's own provider's."""
    shape = formats.get(scenario.format)
    if get_profile(scenario.provider).block_pairing != shape.block_pairing:
        return get_profile(shape.native_provider).name
    return scenario.provider


def cases() -> list[Case]:
    """Every case, examples first."""
    found = [
        Case(path.stem, EXAMPLE_PROVIDERS[path.stem], json.loads(path.read_text()), path)
        for path in sorted(EXAMPLES.glob("*.json"))
        if path.stem in EXAMPLE_PROVIDERS
    ]
    found += [
        Case(f"demo_{_slug(scenario.title)}", _judged_by(scenario), scenario.history())
        for scenario in SCENARIOS
    ]
    found.append(Case("bedrock_user_typed_between", "bedrock", bedrock_history()))
    return found


def history_of(document: Any) -> Any:
    """The history inside a bundled file (a list, or a request body)."""
    if isinstance(document, dict):
        return next(document[key] for key in ("messages", "contents", "input") if key in document)
    return document


def long_history(length: int = 5000, seed: int = 7) -> list[dict[str, Any]]:
    """A long agent session (OpenAI chat) with some damage every 25 turns: a call left without
    a result, a user message between results, a result of a call not in the history."""
    chance = random.Random(seed)
    out: list[dict[str, Any]] = [{"role": "system", "content": "You are an agent."}]
    turn = 0
    while len(out) < length:
        turn += 1
        out.append({"role": "user", "content": f"Question {turn}: check <b>item</b> {turn}"})
        ids = [f"call_{turn}_{n}" for n in range(chance.randint(1, 3))]
        calls = [
            {"id": i, "type": "function", "function": {"name": f"tool_{n}", "arguments": "{}"}}
            for n, i in enumerate(ids)
        ]
        out.append({"role": "assistant", "content": None, "tool_calls": calls})
        results: list[dict[str, Any]] = [
            {"role": "tool", "tool_call_id": i, "content": f"result {i}"} for i in ids
        ]
        damage = turn % 25
        if damage == 3:
            results.pop()
        elif damage == 7:
            results.insert(min(1, len(results)), {"role": "user", "content": "still there?"})
        elif damage == 11:
            results.append({"role": "tool", "tool_call_id": "call_gone", "content": "orphan"})
        out.extend(results)
        out.append({"role": "assistant", "content": f"Answer {turn}."})
    return out[:length]
