"""LangChain: a v1 agent middleware that repairs the messages of each model call.

:class:`ToolMendMiddleware` is an ``AgentMiddleware`` for ``langchain.agents.create_agent``:
``wrap_model_call`` and ``awrap_model_call`` repair the messages of each model call for the
model's provider (:func:`provider_for` reads it from the chat model's class, and the model name
and base URL through :mod:`toolmend._routing`) and leave the agent state as it was.
``persist=True`` also writes the repair into the state before each model call
(``before_model``), so the checkpointed thread heals too. The loop guard reports, or raises
:class:`toolmend.ToolLoopError` with ``on_loop="raise"``, as in every other hook.

When the chat model raises the provider's HTTP 400 about the history's tool calls (the SDK's
own error: ``openai.BadRequestError`` and LangChain's subclasses of it from ``ChatOpenAI``,
``anthropic.BadRequestError`` from ``ChatAnthropic``, a ``ChatGoogleGenerativeAIError`` raised
from google-genai's ``ClientError``), the middleware calls the handler **once** more, with
``request.override(messages=...)`` holding the history :mod:`toolmend.integrations.rescue`
rewrote (a rule toolmend knows, or the tool exchanges written as text). Invoked, awaited or
streamed (``stream_mode="messages"``: the model's 400 comes before its first chunk), the agent
gets the retry's answer, or the retry's own error; the agent state keeps the messages as they
were. ``rescue=False`` (or ``TOOLMEND_RESCUE=0``, or the ``"report"`` and ``"strict"``
policies, which ask toolmend to change nothing on its own) re-raises the provider's error as it
came.

Every call goes through :func:`toolmend.integrations.hooks.mend`: a toolmend failure is logged
and the agent's messages go out as they are. Import it from
:mod:`toolmend.integrations.langchain`; it needs ``pip install 'toolmend[langchain]'``
(``langchain`` for its v1 agents).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

from toolmend import _routing as routing
from toolmend._policy import Policy
from toolmend._report import ToolChainError, ToolLoopError
from toolmend._routing import provider_for_model, request_profile

from . import budget as budgets
from . import telemetry
from .hooks import HookOptions, OnLoop, check_names, compatible_provider, mend
from .rescue import enabled, retry_history

if TYPE_CHECKING:
    from langchain.agents.middleware import AgentMiddleware, ModelRequest
else:
    try:
        from langchain.agents.middleware import AgentMiddleware
    except ImportError:

        class AgentMiddleware:
            """Stands in for LangChain's class when the ``langchain`` package is missing."""

            def __init__(self, *args: Any, **kwargs: Any) -> None:
                raise ImportError(
                    "ToolMendMiddleware needs LangChain v1 agents: "
                    "pip install 'toolmend[langchain]'"
                )


__all__ = ["MODEL_PROVIDERS", "ToolMendMiddleware", "provider_for"]

logger = logging.getLogger("toolmend")

FORMAT = "langchain"

MODEL_PROVIDERS: Mapping[str, str] = {
    "ChatOpenAI": "openai",
    "AzureChatOpenAI": "azure",
    "ChatDeepSeek": "deepseek",
    "ChatMistralAI": "mistral",
    "ChatGroq": "groq",
    "ChatAnthropic": "anthropic",
    "ChatAnthropicVertex": "anthropic",
    "ChatGoogleGenerativeAI": "gemini",
    "ChatVertexAI": "gemini",
    "ChatBedrockConverse": "bedrock",
    "ChatBedrock": "bedrock",
    "ChatHuggingFace": "hf-template",
}
"""Chat model class name (the class or one it derives from) -> the provider profile. A model
not listed is judged as ``"openai"``, the strictest about where results go."""


def provider_for(model: Any) -> str:
    """The provider profile for a LangChain chat model (see :data:`MODEL_PROVIDERS`).

    The class decides; within it, the model name and settings pick the variant the provider's
    own checks use: ``deepseek-reasoner`` for that model, ``gemini-3`` for a Gemini 3 model,
    ``anthropic-thinking`` with extended thinking on. An OpenAI-compatible class gets the
    provider its base URL's host names (DeepSeek, Mistral, Groq, ...); at any other host (a
    local server, a gateway) the model decides
    (:func:`toolmend.integrations.hooks.compatible_provider`: its chat template's rules when
    toolmend knows them, else the one provider serving a model name such as ``devstral-*``).
    """
    model = getattr(model, "bound", model)  # a RunnableBinding (bind_tools)
    provider = "openai"
    for cls in type(model).__mro__:
        if cls.__name__ in MODEL_PROVIDERS:
            provider = MODEL_PROVIDERS[cls.__name__]
            break
    name = str(getattr(model, "model_name", None) or getattr(model, "model", None) or "")
    if provider in ("openai", "deepseek"):
        base = getattr(model, "openai_api_base", None) or getattr(model, "api_base", None)
        if base:  # what that base URL serves: its host's provider, else the model's
            provider = compatible_provider(routing.provider_for_base_url(base), name)
        else:
            provider = provider_for_model(name) or provider
    return request_profile(provider, model=name, thinking=getattr(model, "thinking", None))


class ToolMendMiddleware(AgentMiddleware):
    """Repairs the messages of every model call of a ``create_agent`` agent.

    **Parameters:**

    * **provider** - *(optional)* the provider profile; by default :func:`provider_for` the
      request's model.
    * **persist** - *(optional)* also write the repair into the agent state before each model
      call, so the checkpointed thread heals (default False: the state is left as it was).
      The state is repaired for ``provider`` (``"openai"`` when not given: the model is not
      known there); each call is still repaired for its model's provider.
    * **policy** - *(optional)* a :class:`toolmend.Policy`, ``"repair"`` (default),
      ``"strict"`` or ``"report"``.
    * **on_loop** - *(optional)* the loop guard: ``"warn"`` (default), ``"raise"``
      (:class:`toolmend.ToolLoopError` before the call is made) or ``"off"``.
    * **rescue** - *(optional)* after the provider's HTTP 400 about tool history, call the
      model once more with the history rewritten (:mod:`toolmend.integrations.rescue`;
      default True), under the ``repair`` policy only; ``False`` re-raises the provider's
      error as it came.

    >>> from langchain.agents import create_agent  # doctest: +SKIP
    >>> agent = create_agent(model, tools, middleware=[ToolMendMiddleware()])  # doctest: +SKIP
    """

    def __new__(cls, *args: Any, **kwargs: Any) -> ToolMendMiddleware:
        # LangChain adds a graph node for before_model when the class defines it, so only the
        # persisting variant does.
        persist = kwargs.get("persist", args[1] if len(args) > 1 else False)
        if persist and cls is ToolMendMiddleware:
            cls = _PersistingToolMendMiddleware
        return super().__new__(cls)

    def __init__(
        self,
        provider: str | None = None,
        persist: bool = False,
        policy: Policy | str | None = None,
        on_loop: OnLoop = "warn",
        rescue: bool = True,
    ) -> None:
        super().__init__()
        # an unknown provider or policy name fails here, not once per model call; a toolmend
        # bug is logged and the middleware built anyway (each model call fails open)
        check_names(provider=provider, policy=policy, source="ToolMendMiddleware")
        self.provider = provider
        self.persist = persist
        self.policy = policy
        self.on_loop = on_loop
        self.rescue = rescue

    @property
    def name(self) -> str:
        return "ToolMendMiddleware"

    def _request_messages(self, request: ModelRequest[Any]) -> list[Any] | None:
        """The repaired messages of ``request``, None when they need no change, or
        :data:`_UNMENDED` when toolmend failed (the error is logged and the call goes out as
        the agent made it, and is not rescued: a hook that fails open acts as if absent)."""
        try:
            return self._repaired_messages(request)
        except (ToolLoopError, ToolChainError):
            raise
        except Exception:
            logger.exception("toolmend failed on langchain.wrap_model_call; sent unchanged")
            telemetry.failed_open("langchain.wrap_model_call", self.provider)
            return _UNMENDED

    def _repaired_messages(self, request: ModelRequest[Any]) -> list[Any] | None:
        messages = request.messages
        if not messages:
            return None
        provider = self.provider or provider_for(request.model)
        options = HookOptions(provider=provider, policy=self.policy, on_loop=self.on_loop)
        mended = mend(
            messages,
            provider=provider,
            source="langchain.wrap_model_call",
            options=options,
            format=FORMAT,
        )
        if mended.failed:
            return _UNMENDED
        if mended.messages is messages:
            return None
        return list(mended.messages)

    def _retry(self, sent: ModelRequest[Any], error: Exception) -> ModelRequest[Any] | None:
        """The request to send once more after ``error`` refused ``sent``, or None: the caller
        re-raises ``error`` (not a 400 about tool history, rescue off, or toolmend failed)."""
        if not enabled(self.rescue) or not sent.messages:
            return None
        try:
            rescues = HookOptions(policy=self.policy, rescue=self.rescue).rescues
            provider = self.provider or provider_for(sent.model)
        except Exception:
            logger.exception("toolmend failed while rescuing langchain.wrap_model_call")
            return None
        rescued = retry_history(
            sent.messages,
            error,
            provider=provider,
            source="langchain.wrap_model_call",
            format=FORMAT,
            rescue_on=rescues,
        )
        return None if rescued is None else sent.override(messages=list(rescued.messages))

    def wrap_model_call(
        self, request: ModelRequest[Any], handler: Callable[[ModelRequest[Any]], Any]
    ) -> Any:
        """Send the request with its messages repaired; the agent state is not touched. After
        the provider's 400 about tool history, send it once more rescued (see the module)."""
        repaired = self._request_messages(request)
        sent = (
            request
            if repaired is None or repaired is _UNMENDED
            else request.override(messages=repaired)
        )
        try:
            return handler(sent)
        except Exception as error:
            retry = None if repaired is _UNMENDED else self._retry(sent, error)
            if retry is None:
                raise
        return handler(retry)

    async def awrap_model_call(
        self, request: ModelRequest[Any], handler: Callable[[ModelRequest[Any]], Awaitable[Any]]
    ) -> Any:
        """``wrap_model_call``, for ``ainvoke`` and ``astream``: a long history is repaired off
        the event loop, within the budget (:mod:`toolmend.integrations.budget`), and so is its
        rescue (past the budget the provider's error is raised)."""
        repaired = await budgets.run(
            request.messages or (),
            lambda: self._request_messages(request),
            lambda: _gave_up("langchain.wrap_model_call", self.provider),
            source="langchain.wrap_model_call",
        )
        sent = (
            request
            if repaired is None or repaired is _UNMENDED
            else request.override(messages=repaired)
        )
        try:
            return await handler(sent)
        except Exception as error:
            retry = None
            if enabled(self.rescue) and repaired is not _UNMENDED:
                retry = await budgets.run(
                    sent.messages or (),
                    functools.partial(self._retry, sent, error),
                    lambda: None,
                    source="langchain.wrap_model_call",
                )
            if retry is None:
                raise
        return await handler(retry)


class _PersistingToolMendMiddleware(ToolMendMiddleware):
    """:class:`ToolMendMiddleware` with ``persist=True``: ``before_model`` heals the state."""

    def before_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        """Replace the state's messages with their repair, when they need one."""
        messages = state["messages"] if isinstance(state, Mapping) else state.messages
        if not messages:
            return None
        provider = self.provider or "openai"
        options = HookOptions(provider=provider, policy=self.policy, on_loop="off")
        mended = mend(
            messages,
            provider=provider,
            source="langchain.before_model",
            options=options,
            format=FORMAT,
            request=False,  # the agent's state: the request is counted in wrap_model_call
        )
        if mended.messages is messages:
            return None
        from langchain_core.messages import RemoveMessage
        from langgraph.graph.message import REMOVE_ALL_MESSAGES

        return {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), *mended.messages]}

    async def abefore_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        """``before_model``, for ``ainvoke`` (the repair does no I/O); a long history is
        repaired off the event loop, within the budget: past it the state is left as it is."""
        messages = state["messages"] if isinstance(state, Mapping) else state.messages
        return await budgets.run(
            messages or (),
            lambda: self.before_model(state, runtime),
            lambda: None,
            source="langchain.before_model",
        )


_UNMENDED: list[Any] = []
"""What :meth:`ToolMendMiddleware._request_messages` answers when toolmend failed (compared by
identity): the request goes out as the agent made it, and a 400 on it is not rescued."""


def _gave_up(source: str, provider: str | None) -> list[Any]:
    """The request goes out as the agent made it (:data:`_UNMENDED`): its repair ran past the
    budget."""
    telemetry.failed_open(source, provider, reason="time_budget")
    return _UNMENDED
