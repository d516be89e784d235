"""The reference the fast paths are held to: the repair of a history read, judged and planned
whole, without the one-pass scans or their ranges."""

from __future__ import annotations

from typing import Any

import toolmend
from toolmend._repair import plan_repair
from toolmend._rules import judge
from toolmend.formats import Format
from toolmend.profiles import Profile


def whole_repair(
    module: Format, history: Any, profile: Profile, policy: toolmend.Policy
) -> tuple[Any, list[toolmend.Change]]:
    """The repaired history (``history`` itself when nothing is wrong) and its changes."""
    skeleton = module.read(history)
    problems = judge(skeleton, profile)
    if not problems:
        return history, []
    plan, changes = plan_repair(
        skeleton,
        profile,
        policy,
        lambda index, slot: module.result_text(history[index], slot),
        {problem.code for problem in problems},
    )
    return module.apply(history, plan), changes
