"""Hooks into the SDKs people already use: LiteLLM, LangChain, Google ADK, and the raw clients
(wrapt).

Each integration module imports only its own SDK, lazily, and goes through
:func:`toolmend.integrations.hooks.mend` so every hook repairs, logs and fails open the same way.
"""

from .logswitch import log_from_env as _log_from_env

# TOOLMEND_LOG=info: every hook's lines on standard error when the app configured no logging
# (see toolmend.integrations.logswitch); a no-op when the variable is unset
_log_from_env()
