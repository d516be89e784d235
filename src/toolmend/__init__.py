"""toolmend: keep the tool calls and tool results of an LLM chat history in the shape each
provider accepts.

>>> import toolmend
>>> history = [{"role": "user", "content": "Weather?"},
...            {"role": "assistant", "content": None, "tool_calls": [{"id": "call_1",
...             "type": "function", "function": {"name": "weather", "arguments": "{}"}}]},
...            {"role": "user", "content": "Are you there?"},
...            {"role": "tool", "tool_call_id": "call_1", "content": "21 C"}]
>>> [problem.code for problem in toolmend.check(history)]
['missing_result', 'orphan_result']
>>> [message["role"] for message in toolmend.sanitize(history)]
['user', 'assistant', 'tool', 'user']

The public API is what this package exports, plus :mod:`toolmend.formats` (the format registry),
:mod:`toolmend.testing` (the strict provider server and its pytest plugin) and
:mod:`toolmend.integrations` (the hooks). Modules whose names start with an underscore are the
implementation and may change in any release.
"""

from ._api import check, repair, sanitize
from ._loops import detect_loops
from ._policy import PLACEHOLDER_TEXT, Mode, Policy
from ._report import (
    Change,
    InvalidHistoryError,
    InvalidMessageError,
    Problem,
    Repair,
    ToolChainError,
    ToolLoopError,
    ToolMendError,
    ToolmendError,
    TrimError,
    UnknownNameError,
)
from ._rescue import Rescue, rescue
from ._routing import provider_for_host, provider_for_model, request_profile
from ._trim import align_cut, atomic_groups, merge_consecutive, trim
from ._version import VERSION
from .profiles import Profile, get_profile

__all__ = [
    "PLACEHOLDER_TEXT",
    "Change",
    "InvalidHistoryError",
    "InvalidMessageError",
    "Mode",
    "Policy",
    "Problem",
    "Profile",
    "Repair",
    "Rescue",
    "ToolChainError",
    "ToolLoopError",
    "ToolMendError",
    "ToolmendError",
    "TrimError",
    "UnknownNameError",
    "align_cut",
    "atomic_groups",
    "check",
    "detect_loops",
    "get_profile",
    "merge_consecutive",
    "provider_for_host",
    "provider_for_model",
    "repair",
    "request_profile",
    "rescue",
    "sanitize",
    "trim",
]


__version__ = VERSION

for _name in __all__:
    _obj = globals()[_name]
    if isinstance(_obj, type) or callable(_obj):
        _obj.__module__ = "toolmend"
del _name, _obj, VERSION
