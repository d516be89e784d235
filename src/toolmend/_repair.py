"""Plan a repair: skeleton + profile + policy -> a :class:`~toolmend._edits.Plan` and the changes.

The planner runs only when :mod:`toolmend._rules` found a problem. It pairs every result with
its call through :mod:`toolmend._pairing`, then hands the state to the planner of the
skeleton's layout:

* :mod:`toolmend._plan_messages`: OpenAI chat messages, a result a message of its own (and,
  through :mod:`toolmend._repair_items`, Responses items);
* :mod:`toolmend._block_repair`: Anthropic, Gemini and Bedrock, calls and results as blocks.

Both share :mod:`toolmend._planstate` (the state) and :mod:`toolmend._plan_ids` (ids and names).
A history with nothing to send (``empty_history``) is left as it is: nothing a repair could
add would be real.
:func:`pair_results` gives the pairing alone, for :mod:`toolmend._trim` and ``toolmend show``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ._block_repair import plan_blocks
from ._edits import Keep, Plan
from ._pairing import match
from ._plan_messages import plan_messages
from ._planstate import ASSISTANT_BRIDGE_TEXT, USER_BRIDGE_TEXT, CallRef, PlanState, ResultRef
from ._policy import Policy
from ._report import Change
from ._skeleton import BLOCKS, Skeleton
from .profiles import Profile, get_profile

__all__ = ["ASSISTANT_BRIDGE_TEXT", "USER_BRIDGE_TEXT", "Pairing", "pair_results", "plan_repair"]


def plan_repair(
    skeleton: Skeleton,
    profile: Profile,
    policy: Policy,
    result_text: Callable[[int, int], str | None],
    problem_codes: set[str],
) -> tuple[Plan, list[Change]]:
    """The plan that makes ``skeleton`` pass ``profile``, and the changes it makes."""
    state = PlanState(skeleton, profile, policy, result_text)
    if "empty_history" in problem_codes:
        # nothing to send (system messages only): nothing a repair could add would be real,
        # so the history stays as it is and the problem stays in ``problems_left``
        state.plan.items.extend(Keep(index) for index in range(len(skeleton.kinds)))
        return state.plan, state.changes
    if skeleton.layout == BLOCKS:
        plan_blocks(state, problem_codes)
    else:
        plan_messages(state, problem_codes)
    state.changes.sort(key=lambda change: change.index)
    return state.plan, state.changes


@dataclass(frozen=True)
class Pairing:
    """Which call each result answers, as the planners decide it (see :func:`pair_results`)."""

    answer: dict[CallRef, ResultRef]
    """(calling message, call slot) -> (message, result slot) of the result that answers it."""
    duplicates: frozenset[ResultRef]
    """Second results for an answered call (stubs, empty ones and exact copies)."""
    orphans: tuple[ResultRef, ...]
    """Results that answer no call in the history."""
    duplicate_of: dict[ResultRef, CallRef] = field(default_factory=dict)
    """Each duplicate after its call -> the call whose result it repeats."""


def pair_results(
    skeleton: Skeleton,
    result_text: Callable[[int, int], str | None],
    policy: Policy | None = None,
) -> Pairing:
    """The pairing alone, for callers that only need to know which messages belong together
    (:mod:`toolmend._trim`, ``toolmend show``): the engine the planners use, same results."""
    state = PlanState(skeleton, get_profile("openai"), policy or Policy(), result_text)
    match(state)
    duplicate_of = {
        ref: call_ref for ref, call_ref in state.duplicate_of.items() if call_ref[0] < ref[0]
    }
    return Pairing(
        dict(state.answer), frozenset(state.duplicates), tuple(state.orphans), duplicate_of
    )
