"""LangChain: a chat message history that never stores a broken tool chain, and a v1 agent
middleware that repairs each model call. Two products, one import path:

:class:`ToolMendHistory` (:mod:`toolmend.integrations.langchain_history`)
    Wraps any ``BaseChatMessageHistory``: every write is validated (a tool result is stored
    only while its call is in the history and unanswered; :mod:`toolmend._appending` decides),
    every read repaired for the provider, with a :class:`Window` and compare-and-swap
    write-back; several writers on one session lose, duplicate and refuse nothing.
:class:`ToolMendMiddleware` (:mod:`toolmend.integrations.langchain_middleware`)
    An ``AgentMiddleware`` for ``langchain.agents.create_agent`` that repairs the messages of
    each model call for the model's provider (:func:`provider_for`).

Needs ``pip install 'toolmend[langchain]'`` (``langchain-core``; ``langchain`` for the
middleware). Importing this module is the opt-in: the wrapper subclasses LangChain's own base
class, so LangChain is imported when this module is.
"""

from __future__ import annotations

from .langchain_history import Rejected, ToolMendHistory, Window
from .langchain_middleware import MODEL_PROVIDERS, ToolMendMiddleware, provider_for

__all__ = [
    "MODEL_PROVIDERS",
    "Rejected",
    "ToolMendHistory",
    "ToolMendMiddleware",
    "Window",
    "provider_for",
]
