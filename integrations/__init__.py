"""Hooks into the SDKs people already use: LiteLLM, LangChain, Google ADK, and the raw clients
(wrapt).

Each integration module imports only its own SDK, lazily, and goes through
:func:`toolmend.integrations.hooks.mend` so every hook repairs, logs and fails open the same way.
"""
