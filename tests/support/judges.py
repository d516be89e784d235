"""Judges nobody in this project wrote: what a repaired history must get past outside toolmend.

Every test elsewhere judges a repair with toolmend's own rules, so a rule toolmend lacks can
never fail one. These judges are real components, run locally with no network:

* :func:`mistral_error`: ``mistral-common``'s request validator in serving mode, the check
  Mistral's own servers and vLLM's Mistral tokenizer run on every request.
* :func:`template_error`: real chat templates (``tests/data/chat_templates``, sources and
  licenses in ``SOURCES.txt`` there) rendered the way ``transformers.apply_chat_template``
  renders them: a sandboxed jinja2 environment with ``trim_blocks`` and ``lstrip_blocks``, the
  loop-controls extension, ``raise_exception``, ``tojson`` and ``strftime_now``,
  ``add_generation_prompt=True`` and the tools passed.
* :func:`litellm_error`: LiteLLM's own converters from OpenAI-shaped messages to Anthropic
  Messages, Bedrock Converse and Gemini contents; the converted history must then pass
  toolmend's native profile for that provider.

Each returns None when the judge accepts the history, else its error text.
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
from datetime import datetime
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no network at import

import toolmend

TEMPLATE_DIR = Path(__file__).resolve().parents[1] / "data" / "chat_templates"

TEMPLATES: dict[str, tuple[str, ...]] = {
    "hf__google-gemma-3-it.jinja": (
        "google/gemma-3-4b-it",
        "google/gemma-3-27b-it",
        "gemma3",
        "gemma3:4b",
    ),
    "llamacpp__ByteDance-Seed-OSS.jinja": ("ByteDance-Seed/Seed-OSS-36B-Instruct",),
    "llamacpp__CohereForAI-c4ai-command-r7b-12-2024-tool_use.jinja": (
        "CohereForAI/c4ai-command-r7b-12-2024",
        "command-r7b",
    ),
    "llamacpp__Mistral-Small-3.2-24B-Instruct-2506.jinja": (
        "mistralai/Mistral-Small-3.2-24B-Instruct-2506",
        "mistral-small3.2",
        "mistral-small3.2:24b",
    ),
    "llamacpp__NVIDIA-Nemotron-Nano-v2.jinja": (
        "nvidia/NVIDIA-Nemotron-Nano-9B-v2",
        "nemotron-nano-9b-v2",
    ),
    "llamacpp__NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use.jinja": (
        "NousResearch/Hermes-2-Pro-Llama-3-8B",
    ),
    "llamacpp__NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja": (
        "NousResearch/Hermes-3-Llama-3.1-8B",
        "hermes3",
        "hermes3:8b",
    ),
    "llamacpp__Qwen-Qwen2.5-7B-Instruct.jinja": (
        "Qwen/Qwen2.5-7B-Instruct",
        "qwen2.5",
        "qwen2.5:7b",
    ),
    "llamacpp__Qwen-Qwen3-0.6B.jinja": ("Qwen/Qwen3-0.6B", "Qwen/Qwen3-8B", "qwen3", "qwen3:0.6b"),
    "llamacpp__deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja": (
        "deepseek-ai/DeepSeek-R1-Distill-Qwen-32B",
        "deepseek-r1:32b",
    ),
    "llamacpp__deepseek-ai-DeepSeek-V3.1.jinja": ("deepseek-ai/DeepSeek-V3.1", "deepseek-v3.1"),
    "llamacpp__google-gemma-2-2b-it.jinja": (
        "google/gemma-2-2b-it",
        "google/gemma-2-9b-it",
        "gemma2",
        "gemma2:2b",
    ),
    "llamacpp__ibm-granite-granite-3.3-2B-Instruct.jinja": (
        "ibm-granite/granite-3.3-2b-instruct",
        "granite3.3",
        "granite3.3:2b",
    ),
    "llamacpp__meetkai-functionary-medium-v3.2.jinja": ("meetkai/functionary-medium-v3.2",),
    "llamacpp__meta-llama-Llama-3.1-8B-Instruct.jinja": (
        "meta-llama/Llama-3.1-8B-Instruct",
        "meta-llama/Meta-Llama-3.1-8B-Instruct",
        "llama3.1",
        "llama3.1:8b",
    ),
    "llamacpp__meta-llama-Llama-3.2-3B-Instruct.jinja": (
        "meta-llama/Llama-3.2-3B-Instruct",
        "llama3.2",
        "llama3.2:3b",
    ),
    "llamacpp__microsoft-Phi-3.5-mini-instruct.jinja": (
        "microsoft/Phi-3.5-mini-instruct",
        "phi3.5",
    ),
    "llamacpp__mistralai-Mistral-Nemo-Instruct-2407.jinja": (
        "mistralai/Mistral-Nemo-Instruct-2407",
        "mistral-nemo",
        "mistral-nemo:12b",
    ),
    "llamacpp__moonshotai-Kimi-K2.jinja": ("moonshotai/Kimi-K2-Instruct", "kimi-k2"),
    "llamacpp__openai-gpt-oss-120b.jinja": (
        "openai/gpt-oss-120b",
        "openai/gpt-oss-20b",
        "gpt-oss",
        "gpt-oss:20b",
    ),
    "llamacpp__unsloth-mistral-Devstral-Small-2507.jinja": (
        "mistralai/Devstral-Small-2507",
        "unsloth/Devstral-Small-2507",
        "devstral",
        "devstral:24b",
    ),
    "vllm__tool_chat_template_deepseekv3.jinja": ("deepseek-ai/DeepSeek-V3", "deepseek-v3"),
    "vllm__tool_chat_template_gemma3_pythonic.jinja": ("google/gemma-3-27b-it", "gemma3:27b"),
    "vllm__tool_chat_template_granite.jinja": (
        "ibm-granite/granite-3.0-8b-instruct",
        "granite3-dense:8b",
    ),
    "vllm__tool_chat_template_hermes.jinja": ("NousResearch/Hermes-2-Pro-Mistral-7B",),
    "vllm__tool_chat_template_llama3.1_json.jinja": (
        "meta-llama/Llama-3.3-70B-Instruct",
        "llama3.3",
    ),
    "vllm__tool_chat_template_llama3.2_pythonic.jinja": (
        "meta-llama/Llama-3.2-1B-Instruct",
        "llama3.2:1b",
    ),
    "vllm__tool_chat_template_mistral.jinja": (
        "mistralai/Mistral-7B-Instruct-v0.3",
        "mistral",
        "mistral:7b",
    ),
}
"""Each template shipped as test data -> the names a user passes for the models it serves
(Hugging Face repo ids, Ollama tags; for vLLM's example templates, the models of the family
it was written for), the first the one it is judged with. The profile its repairs must render
is the one :func:`toolmend.request_profile` picks for a server and that model."""

ARGUMENT_OBJECTS = frozenset({"llamacpp__ByteDance-Seed-OSS.jinja"})
"""Templates that read a call's ``arguments`` as a mapping: vLLM (``chat_utils``) and
llama.cpp parse the JSON text into an object before rendering, and the judge does the same for
these (transformers itself passes the text on)."""

SERVERS = ("vllm", "llama.cpp", "ollama", "tgi")
"""The self-hosted servers a template is judged behind (those toolmend knows as names)."""


def known_servers() -> tuple[str, ...]:
    """The :data:`SERVERS` toolmend knows as provider names."""
    from toolmend.profiles import profile_names

    names = set(profile_names())
    return tuple(server for server in SERVERS if server in names)


def template_provider(name: str, server: str = "vllm") -> str:
    """The profile a request for template ``name``'s model meets behind ``server``."""
    from toolmend._routing import request_profile

    return request_profile(server, model=TEMPLATES[name][0])


_SPECIAL_TOKENS = {"bos_token": "<s>", "eos_token": "</s>", "pad_token": "<pad>"}

_environment: Any = None


def _jinja() -> Any:
    """The environment ``transformers`` compiles chat templates in (``_compile_jinja_template``
    in ``transformers/utils/chat_template_utils.py``), built once."""
    global _environment
    if _environment is None:
        from jinja2.exceptions import TemplateError
        from jinja2.ext import loopcontrols
        from jinja2.sandbox import ImmutableSandboxedEnvironment

        def raise_exception(message: str) -> None:
            raise TemplateError(message)

        def tojson(
            value: Any,
            ensure_ascii: bool = False,
            indent: int | None = None,
            separators: Any = None,
            sort_keys: bool = False,
        ) -> str:
            return json.dumps(
                value,
                ensure_ascii=ensure_ascii,
                indent=indent,
                separators=separators,
                sort_keys=sort_keys,
            )

        def strftime_now(format: str) -> str:
            return datetime.now().strftime(format)

        env = ImmutableSandboxedEnvironment(
            trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols]
        )
        env.filters["tojson"] = tojson
        env.globals["raise_exception"] = raise_exception
        env.globals["strftime_now"] = strftime_now
        _environment = env
    return _environment


_compiled: dict[str, Any] = {}


def render(name: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> str:
    """``messages`` rendered by template ``name`` as ``apply_chat_template`` would, with
    ``add_generation_prompt=True``; raises what the template raises."""
    template = _compiled.get(name)
    if template is None:
        template = _compiled[name] = _jinja().from_string(
            (TEMPLATE_DIR / name).read_text(encoding="utf-8")
        )
    messages = copy.deepcopy(messages)
    if name in ARGUMENT_OBJECTS:
        _parse_arguments(messages)
    text: str = template.render(
        messages=messages,
        tools=tools,
        documents=None,
        add_generation_prompt=True,
        **_SPECIAL_TOKENS,
    )
    return text


def _parse_arguments(messages: list[dict[str, Any]]) -> None:
    """Each call's JSON ``arguments`` text parsed into an object, in place, as the servers do
    (text that is not JSON stays text)."""
    for message in messages:
        for call in message.get("tool_calls") or () if isinstance(message, dict) else ():
            function = call.get("function") if isinstance(call, dict) else None
            if isinstance(function, dict) and isinstance(function.get("arguments"), str):
                with contextlib.suppress(ValueError):
                    function["arguments"] = json.loads(function["arguments"])


def tools_for(messages: list[Any]) -> list[dict[str, Any]]:
    """A tool definition for every function the history calls (the request's ``tools``)."""
    names: list[str] = []
    for message in messages:
        if not isinstance(message, dict):
            continue
        for call in message.get("tool_calls") or ():
            if not isinstance(call, dict):
                continue
            function = call.get("function")
            name = function.get("name") if isinstance(function, dict) else call.get("name")
            if isinstance(name, str) and name and name not in names:
                names.append(name)
    return [
        {
            "type": "function",
            "function": {
                "name": name,
                "description": f"the {name} tool",
                "parameters": {"type": "object", "properties": {}},
            },
        }
        for name in names or ["lookup"]
    ]


def template_error(name: str, messages: list[dict[str, Any]]) -> str | None:
    """None when template ``name`` renders ``messages`` (tools passed), else its error."""
    try:
        render(name, messages, tools_for(messages))
    except Exception as error:  # the judge's verdict, whatever it raised
        return f"{type(error).__name__}: {error}"
    return None


def mistral_error(messages: list[Any], *, checks_ids: bool = False) -> str | None:
    """None when mistral-common's validator (serving mode) accepts ``messages``.

    ``checks_ids`` picks the validator of the tokenizers before v13 (Mistral Small 3.2,
    Devstral Small 2507, Magistral), which wants 9-character alphanumeric call ids (issue 32,
    case 5); the v13 one takes any id."""
    from mistral_common.protocol.instruct.request import ChatCompletionRequest
    from mistral_common.protocol.instruct.validator import (
        MistralRequestValidatorV11,
        MistralRequestValidatorV13,
        ValidationMode,
    )

    try:
        request = ChatCompletionRequest(
            messages=copy.deepcopy(messages), tools=tools_for(messages), model="mistral-large"
        )
        validator = MistralRequestValidatorV11 if checks_ids else MistralRequestValidatorV13
        validator(ValidationMode.serving).validate_request(request)
    except Exception as error:  # the judge's verdict, whatever it raised
        return f"{type(error).__name__}: {error}"
    return None


LITELLM_TARGETS = ("anthropic", "bedrock", "gemini")
"""The providers LiteLLM converts OpenAI-shaped messages for, judged here."""


LITELLM_MODELS = {
    "anthropic": "claude-sonnet-4-5",
    "bedrock": "anthropic.claude-3-5-sonnet-20240620-v1:0",
    "gemini": "gemini-2.5-flash",
}
"""The model each target's conversion is made for when the caller names none."""


def litellm_convert(provider: str, messages: list[Any], model: str | None = None) -> list[Any]:
    """``messages`` as LiteLLM sends them to ``provider``'s ``model`` (its native history);
    raises what LiteLLM's converter raises."""
    messages = copy.deepcopy(messages)
    tools = tools_for(messages)
    model = model or LITELLM_MODELS[provider]
    if provider == "anthropic":
        from litellm.llms.anthropic.chat.transformation import AnthropicConfig

        body = AnthropicConfig().transform_request(
            model, messages, {"tools": tools, "max_tokens": 64}, {}, {}
        )
        converted: list[Any] = body["messages"]
        return converted
    if provider == "bedrock":
        from litellm.llms.bedrock.chat.converse_transformation import AmazonConverseConfig

        body = AmazonConverseConfig().transform_request(model, messages, {"tools": tools}, {}, {})
        converted = body["messages"]
        return converted
    if provider == "gemini":
        from litellm.llms.vertex_ai.gemini import transformation

        _, rest = transformation.transform_system_message(True, messages)
        converted = transformation.gemini_convert_messages_with_history(
            messages=rest, model=model, custom_llm_provider="gemini"
        )
        return converted
    raise ValueError(provider)


def litellm_error(provider: str, messages: list[Any], model: str | None = None) -> str | None:
    """None when LiteLLM converts ``messages`` for ``provider``'s ``model`` and toolmend's
    native profile for that provider and model finds nothing in the result; else the
    conversion error or the problems.

    The model picks the native rules as it does for a request (:func:`toolmend.request_profile`
    with the provider's own format): a Llama or Mistral model on Bedrock meets
    ``bedrock-tools-alone``, whose turns with ``toolUse`` blocks hold nothing else.
    """
    try:
        converted = litellm_convert(provider, messages, model)
    except Exception as error:  # the judge's verdict, whatever it raised
        return f"LiteLLM conversion: {type(error).__name__}: {error}"
    native = toolmend.request_profile(provider, format=provider, model=model)
    try:
        problems = toolmend.check(converted, provider=native, format=provider)
    except Exception as error:
        return f"native {provider} history unreadable: {type(error).__name__}: {error}"
    if problems:
        return "; ".join(f"{p.index}: {p.code}: {p.provider_error}" for p in problems)
    return None


def identical_calls(messages: list[Any]) -> bool:
    """Whether one assistant turn (consecutive assistant messages, which LiteLLM merges) makes
    two calls with the same name and arguments.

    LiteLLM's Gemini converter keeps only the first of those (``check_if_part_exists_in_parts``
    in ``litellm/llms/vertex_ai/gemini/transformation.py``), so the converted history has fewer
    calls than responses. Gemini itself takes repeated calls: that is LiteLLM's rule, not the
    provider's, and the Gemini judge leaves such histories out."""
    seen: set[tuple[Any, str]] = set()
    for message in messages:
        if not isinstance(message, dict) or message.get("role") != "assistant":
            seen = set()
            continue
        for call in message.get("tool_calls") or ():
            function = call.get("function") if isinstance(call, dict) else None
            if not isinstance(function, dict):
                continue
            arguments = function.get("arguments")
            if isinstance(arguments, str):
                with contextlib.suppress(ValueError):
                    arguments = json.loads(arguments)
            key = (function.get("name"), json.dumps(arguments, sort_keys=True, default=str))
            if key in seen:
                return True
            seen.add(key)
    return False
