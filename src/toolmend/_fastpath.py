"""The hooks' fast path: vouch for a request in one pass, or send it down the full path.

A hook runs on every request, and nearly every request carries a valid history with no loop in
it. Without this module such a request would cost the hook two reads (the loop guard's walk
over the live run, then :func:`toolmend.repair`'s one-pass check) and a dozen layers of calls,
each paid in full: the SDK's own work between two requests pushes toolmend's code and data out
of the CPU caches, and there every step costs several times what it costs in a loop. One pass
that answers both questions keeps a hook's cost on a valid request to a single read (see
``docs/design.md``, "The hooks' fast path", and ``docs/benchmarks.md`` for the figures).

:func:`vouch` is a promise, never a verdict: it answers only when the full path would change
nothing and find nothing, and then hands over the live run for the loop guard; it answers None
whenever it is not sure (a format or profile without the one-pass reader, anything unusual in
the history), and the hook then takes the full path as before.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ._api import format_of, profile_for
from ._routing import derived_profile
from .formats import get
from .profiles import Profile

__all__ = ["LiveRun", "vouch"]

QuickLive = Callable[[Sequence[Any], Profile], "LiveRun | None"]

_RESOLVED: dict[tuple[str, str], tuple[Profile, QuickLive | None]] = {}
"""(provider name, format name) -> the profile and the format's ``quick_live``, as a hook names
them on every request, so the two names are resolved once, not on every call. Bounded by the
names toolmend knows (an unknown one raises before it is stored)."""


LiveRun = tuple[int, list[tuple[str, Any]]]
"""The tool rounds after the last user message, and each of their calls as (name, arguments)."""


def vouch(
    messages: Sequence[Any],
    *,
    provider: str | Profile,
    format: str | None = None,
    model: str | None = None,
) -> LiveRun | None:
    """The live run of ``messages`` when ``toolmend.repair(messages, provider=provider,
    format=format, model=model)`` would return ``messages`` itself and find no problem; None
    when the one pass cannot tell (take the full path).

    The loop guard takes the live run from here: :func:`toolmend._loops.quiet_live_run` tells
    when ``detect_loops(messages, format=format, live_only=True)`` would find nothing, and
    only a run it cannot vouch for (a tool called ``REPEAT`` times with the same arguments, a
    run of ``REPEAT_TOOL`` rounds or more) needs the guard itself.

    Raises what :func:`toolmend.repair` raises for an unknown provider or format name."""
    resolved = None
    if type(provider) is str and type(format) is str:
        if model is not None:  # the model's variant, by name: the table stays bounded
            provider = derived_profile(provider, get(format).native_provider, model=model)
        resolved = _RESOLVED.get((provider, format))
        if resolved is None:
            resolved = _RESOLVED[(provider, format)] = _resolve(provider, format, [])
    elif type(messages) is list:
        resolved = _resolve(provider, format, messages, model)
    if resolved is None or type(messages) is not list:
        return None  # not a list: the full path says what it is
    profile, quick_live = resolved
    return None if quick_live is None else quick_live(messages, profile)


def _resolve(
    provider: str | Profile, format: str | None, messages: Sequence[Any], model: str | None = None
) -> tuple[Profile, QuickLive | None]:
    """The profile and the format's ``quick_live`` (None for a format without one, or one that
    reads other shapes than the list it is given: ``normalize``)."""
    module = format_of(messages, format)
    profile = profile_for(provider, module, model)  # a vendor's follows the format, as repair's
    if module.other_shapes:
        return profile, None
    return profile, module.quick_live
