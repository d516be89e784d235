"""Faults injected inside toolmend, one per place a hook can fail: shared by test_fail_open.py
(the call must come out as without toolmend) and test_telemetry.py (it counts as failed_open).

Each fault is ``monkeypatch.setattr`` on toolmend's own functions; the SDKs stay real. The hooks
hold toolmend's functions from import time (so a shadowing ``toolmend`` namespace package cannot
break them at request time): :func:`patch_everywhere` replaces one in every module holding it."""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable
from typing import Any

import pytest

import toolmend
import toolmend._api
import toolmend._appending
import toolmend._fastpath
import toolmend.integrations.langchain_middleware as langchain_middleware
import toolmend.integrations.litellm as litellm_hook

from support.hook_entries import Hook

__all__ = [
    "FAULTS",
    "FULL_PATH_ONLY",
    "InjectedFaultError",
    "fault",
    "faults_for",
    "patch_everywhere",
    "raise_fault",
]


class InjectedFaultError(RuntimeError):
    """What every injected fault raises."""


def raise_fault(*args: Any, **kwargs: Any) -> Any:
    raise InjectedFaultError("injected fault inside toolmend")


def patch_everywhere(monkeypatch: pytest.MonkeyPatch, name: str, value: Any) -> None:
    """Replace ``toolmend.<name>`` with ``value`` there and in every toolmend module that
    imported it by name (the hooks hold it from import time); the strict server keeps its own."""
    real = getattr(toolmend, name)
    monkeypatch.setattr(toolmend, name, value)
    for module_name, module in list(sys.modules.items()):
        if module_name.startswith("toolmend.integrations.") and getattr(module, name, None) is real:
            monkeypatch.setattr(module, name, value)


def everywhere(name: str) -> Callable[[pytest.MonkeyPatch], None]:
    return lambda monkeypatch: patch_everywhere(monkeypatch, name, raise_fault)


def bad_log_line(monkeypatch: pytest.MonkeyPatch) -> None:
    """``repair`` works, but one of its changes cannot be written into the log line."""
    real = toolmend.repair

    def repair(*args: Any, **kwargs: Any) -> Any:
        bad = toolmend.Change("injected", 0, "", ids=(None,))  # type: ignore[arg-type]
        return dataclasses.replace(real(*args, **kwargs), changes=(bad,))

    patch_everywhere(monkeypatch, "repair", repair)


def fault(owner: Any, name: str) -> Callable[[pytest.MonkeyPatch], None]:
    return lambda monkeypatch: monkeypatch.setattr(owner, name, raise_fault)


FAULTS: dict[str, Callable[[pytest.MonkeyPatch], None]] = {
    # the core, as every hook reaches it through hooks.mend
    "vouch": fault(toolmend._fastpath, "vouch"),  # the fast path, first on every request
    "damage_in": fault(toolmend._api, "damage_in"),  # deep inside toolmend.repair
    "detect_loops": everywhere("detect_loops"),  # the loop guard, before repair
    "log_line": bad_log_line,  # building the "repaired" log line
    # each hook's own code around mend
    "request_profile": everywhere("request_profile"),  # reading the model (patch, agent)
    "profile_for": fault(litellm_hook, "profile_for"),  # reading the LiteLLM deployment
    "active": fault(litellm_hook, "_active"),  # the sync wrapper, before mend
    "provider_for": fault(langchain_middleware, "provider_for"),  # the middleware, before mend
    "frontier": fault(toolmend._appending, "waiting_calls"),  # the history wrapper's read
    "index": fault(toolmend._appending, "index_of"),  # the history wrapper's view of the store
    "judge": fault(toolmend._appending, "judge_appends"),  # the history wrapper's write screen
}


def faults_for(hook: Hook) -> list[str]:
    """The faults that reach ``hook``'s call path."""
    if hook.name.startswith("ToolMendHistory") and "write" in hook.name:
        return ["judge", "index"]
    found = ["vouch", "damage_in", "log_line"]
    if hook.loop_guard:
        found.append("detect_loops")
    found += {
        "litellm": ["profile_for"],
        "patch": ["request_profile"],
        "middleware": ["provider_for", "request_profile"],
        "history": ["frontier"],
    }[hook.family]
    if "active" in hook.before_mend:
        found.append("active")
    return found


FULL_PATH_ONLY = frozenset({"damage_in", "detect_loops", "log_line"})
"""Faults only the full path reaches: a valid request with no loop in it is vouched for by
``toolmend._fastpath`` and never gets there (in the formats with a one-pass reader)."""
