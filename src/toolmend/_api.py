"""The public functions: thin shells over read -> judge -> plan -> apply.

``check`` reads and judges; ``repair`` also plans and applies when something is wrong;
``sanitize`` is ``repair(...).messages``. A valid history costs one read and one judging pass,
and comes back as the very same object.
"""

from __future__ import annotations

import dataclasses
import functools
import heapq
import itertools
import logging
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal, overload

from ._edits import Plan
from ._escape import log as _log_text
from ._findings import Pending, check_texts
from ._inline import walk_mend, walk_report, walks
from ._jsontext import NonFiniteNumberError, UnwritableValueError, locate
from ._plan_messages import quick_plan
from ._policy import Mode, Policy, as_policy
from ._quickmend import (
    mended_range,
    names_report,
    quick_mend,
    quick_names,
    rewrite_stretch,
    stretch_report,
)
from ._repair import plan_repair
from ._report import (
    Builder,
    Change,
    InvalidHistoryError,
    InvalidMessageError,
    Problem,
    Repair,
    ToolChainError,
    deferred_field,
    logger,
)
from ._routing import derived_profile
from ._rules import judge
from ._skeleton import RequestIds, Skeleton
from ._walks import walk_adjacent, walks_adjacent
from ._walks import walk_report as walk_report_adjacent
from .formats import Format, detect, get
from .profiles import Profile, get_profile

__all__ = [
    "Damage",
    "Mended",
    "Named",
    "Stretch",
    "check",
    "damage_in",
    "find_damage",
    "format_of",
    "mend_damage",
    "profile_for",
    "read_history",
    "repair",
    "result_reader",
    "sanitize",
]


def format_of(messages: Any, format: str | None = None) -> Format:
    """The format of ``messages``: the named one, or the one detected.

    Raises :class:`toolmend.InvalidHistoryError` for something that is not a list of messages.
    """
    if isinstance(messages, str):
        module = get(format) if format is not None else detect(messages)
        if not module.text_input and not module.other_shapes:
            raise InvalidHistoryError(f"a bare string is not a {module.name!r} history")
        return module
    if not isinstance(messages, (list, tuple)):
        # Gemini also takes one Content or Part as ``contents``: a format with ``normalize``.
        found: Format | None
        try:
            found = get(format) if format is not None else detect([messages])
        except InvalidMessageError:  # not even one message: say what the argument should be
            found = None
        if found is None or not found.other_shapes:
            raise InvalidHistoryError(
                f"messages must be a list of messages, got {type(messages).__name__}"
            ) from None
        return found
    return get(format) if format is not None else detect(messages)


def profile_for(
    provider: str | Profile | None, module: Format, model: str | None = None
) -> Profile:
    """The profile that judges a history of ``module``'s format for ``provider`` and ``model``.

    A vendor or server name (``"deepseek"``, ``"vllm"``) is derived
    (:func:`toolmend._routing.derived_profile`): the format picks the vendor's API (Responses
    items go to its ``/v1/responses``), the model the variant. Left out, the provider is the
    format's own (a Responses ``input`` goes to ``openai-responses``): Chat Completions rules
    would pair a Responses history's parallel calls and outputs by adjacency and reorder a valid
    history. For the same reason a profile with chat pairing named outright for a Responses
    history is an error, not a silent reorder."""
    if isinstance(provider, Profile):
        profile = provider
    elif isinstance(provider, str) or provider is None:
        chosen = module.native_provider if provider is None else provider
        profile = _derived(chosen, module.native_provider, model if type(model) is str else None)
    else:
        profile = get_profile(provider)  # not a name: its error says so
    required = module.required_pairing
    if required is not None and profile.pairing != required:
        raise InvalidHistoryError(
            f"the {profile.name!r} profile judges Chat Completions messages, not an "
            f"{module.name!r} input: pick provider={module.native_provider!r} (or leave it out)"
        )
    return profile


@functools.lru_cache(maxsize=2048)
def _derived(provider: str, native: str, model: str | None) -> Profile:
    """The derived profile itself, cached: a hook pays one look-up per request."""
    return get_profile(derived_profile(provider, native, model=model))


def sequence_of(module: Format, messages: Any) -> Sequence[Any]:
    """The list the format reads: ``messages`` itself, or the format's ``normalize``-d view of
    it (Gemini's other ``contents`` shapes; a list of Contents comes back as it is)."""
    if not module.other_shapes:
        return messages  # type: ignore[no-any-return]
    return module.normalize(messages)


def read_history(messages: Any, format: str | None = None) -> tuple[Format, Skeleton]:
    """The format of ``messages`` and the skeleton it read.

    Raises :class:`toolmend.InvalidHistoryError` for something that is not a list of messages,
    and :class:`toolmend.InvalidMessageError` naming the index of a message it cannot read.
    """
    module = format_of(messages, format)
    return module, module.read(sequence_of(module, messages))


def _ranges(
    module: Format,
    messages: Sequence[Any],
    profile: Profile,
    policy: Policy | None = None,
    vouched_against: bool = False,
) -> list[tuple[int, int]]:
    """The ranges of ``messages`` to read and judge: none when the format's one-pass test
    vouches for the whole history (unless ``vouched_against``: it was asked and could not),
    the damaged ranges when it can tell them (see ``Format.dirty_spans``), else the whole
    history."""
    if not vouched_against and module.quick_valid(messages, profile):
        return []  # the common case: one tight pass that builds nothing
    if policy is None or policy.frontier != "keep":
        spans = module.dirty_spans(messages, profile)
        if spans is not None:
            return spans
    return [(0, len(messages))]


def _read_range(module: Format, messages: Sequence[Any], low: int, high: int) -> Skeleton:
    """The skeleton of ``messages[low:high]``, its indexes (and errors) those of ``messages``."""
    if (low, high) == (0, len(messages)):
        whole: Skeleton = module.read(messages)
        return whole
    try:
        skeleton: Skeleton = module.read(messages[low:high])
    except InvalidMessageError as error:
        raise error.shifted(low) from None
    skeleton.base = low
    skeleton.whole = False
    skeleton.ends = high == len(messages)
    skeleton.starts = low == 0
    return skeleton


def check(
    messages: Sequence[Any],
    *,
    provider: str | Profile | None = None,
    format: str | None = None,
    model: str | None = None,
) -> list[Problem]:
    """Every way ``messages`` breaks ``provider``'s tool-call rules, in message order.

    **Parameters:**

    * **messages** - the history, in any supported format.
    * **provider** - *(optional)* who serves the request: a vendor or server such as
      ``"deepseek"`` or ``"vllm"``, or a profile name (default: the history format's own
      provider, ``"openai"`` for chat messages). A vendor's profile follows the format (its
      Responses API for Responses items) and the model.
    * **format** - *(optional)* the format name; detected when left out.
    * **model** - *(optional)* the model the request goes to; it picks model-family rules
      (``deepseek-reasoner``, Gemini 3, a self-hosted model's chat template).

    **Returns:** a list of :class:`toolmend.Problem`, empty when the provider accepts it.

    >>> import toolmend
    >>> history = [{"role": "system", "content": "Be brief."},
    ...            {"role": "tool", "tool_call_id": "call_1", "content": "21 C"}]
    >>> [problem.code for problem in toolmend.check(history, provider="deepseek")]
    ['orphan_result']
    """
    module = format_of(messages, format)
    profile = profile_for(provider, module, model)
    messages = sequence_of(module, messages)
    problems: list[Problem] = []
    for damage in _damage_in(module, messages, profile, None, False):
        problems.extend(damage.problems)
    return problems


def repair(
    messages: Sequence[Any],
    *,
    provider: str | Profile | None = None,
    format: str | None = None,
    policy: Policy | Mode | str | None = None,
    model: str | None = None,
) -> Repair:
    """Repair ``messages`` for ``provider`` and report every change.

    **Parameters:**

    * **messages** - the history, in any supported format. Never mutated.
    * **provider** - *(optional)* who serves the request: a vendor or server, or a profile
      name (default: the history format's own provider, ``"openai"`` for chat messages); see
      :func:`toolmend.check`.
    * **format** - *(optional)* the format name; detected when left out.
    * **policy** - *(optional)* a :class:`toolmend.Policy` or ``"repair"`` (default),
      ``"strict"`` (raise :class:`toolmend.ToolChainError`) or ``"report"`` (change nothing).
    * **model** - *(optional)* the model the request goes to (model-family rules).

    **Returns:** a :class:`toolmend.Repair`; ``.messages`` is ``messages`` itself when nothing
    needed changing.

    >>> import toolmend
    >>> history = [{"role": "user", "content": "Weather in Paris?"},
    ...            {"role": "tool", "tool_call_id": "call_1", "content": "21 C"},
    ...            {"role": "user", "content": "And in Rome?"}]
    >>> fixed = toolmend.repair(history, provider="deepseek")
    >>> [change.code for change in fixed.changes], len(fixed.messages)
    (['dropped_orphan_result'], 2)
    """
    chosen = as_policy(policy)
    module = format_of(messages, format)
    profile = profile_for(provider, module, model)
    original, messages = messages, sequence_of(module, messages)
    if module.quick_valid(messages, profile):
        return Repair(original)  # the common case: one tight pass that builds nothing
    if chosen.mode is Mode.REPAIR and walks_adjacent(module, profile, chosen):
        # (Gemini, Bedrock, Anthropic, OpenAI, DeepSeek) the names filled and the common
        # damages mended in one walk
        walked = _walked_adjacent(module, messages, profile, chosen)
        if walked is not None:
            return walked
    return _ranged(module, messages, profile, chosen, original)


def _ranged(
    module: Format, messages: Sequence[Any], profile: Profile, chosen: Policy, original: Any
) -> Repair:
    """:func:`repair` past the one-pass check and the adjacent walk: the names scan, Mistral's
    walk, the one-pass names and ids repair, the ranges."""
    if profile.results_need_name and chosen.frontier != "keep":
        # the names a history bound for Gemini lacks outside its damaged ranges (if any):
        # filled by the scan that finds the ranges, the ranges mended on their own
        apart = _names_apart(module, messages, profile, chosen, original)
        if apart is not None:
            return apart
    # a cross-family target's names or ids on every message, nothing else: one pass lists them
    if chosen.mode is Mode.REPAIR and walks(module, profile, chosen):
        # (Mistral) every id rewritten and the common damages mended in one walk
        walked = _walked(module, messages, profile, chosen)
        if walked is not None:
            return walked
    quick = quick_mend(module, messages, profile, vouched_against=True)
    damaged = (
        None
        if quick is not None
        else damage_in(module, messages, profile, chosen, True, named=True)
    )
    if quick is None and damaged is None:
        return Repair(original)
    if chosen.mode is not Mode.REPAIR:
        problems = (
            tuple(quick[1]()[1])
            if quick is not None
            else tuple(problem for damage in damaged or () for problem in damage.problems)
        )
        if chosen.mode is Mode.STRICT:
            raise ToolChainError(problems=problems)
        return Repair(original, (), problems, problems)
    if quick is not None:
        # every message's names or ids: the report (a change and a problem or two a message)
        # is built when it is read (issue 32). Nothing is left: quick_mend answers only for a
        # history that passes every other rule, and writes the names and ids the profile wants
        # (tests/test_fastpath.py holds it to the full judge), so no judge runs on it again
        _log_structure(module, messages, quick[0])
        check_texts(profile)  # (a text that cannot be written fails here, not when read)
        return Repair._deferred(quick[0], True, quick[1])
    assert damaged is not None
    mended = mend_damage(module, messages, profile, chosen, damaged, parts_before=0, later=True)
    if mended.later is not None:
        # the report of the ranges mended in one walk, and of the stretches whose ids were
        # rewritten apart (Mistral), written when it is first read
        _log_structure(module, messages, mended.messages)
        check_texts(profile)
        return Repair._deferred(
            mended.messages, True, mended.later, _judged_later(module, mended.messages, profile)
        )
    problems = tuple(mended.problems)
    # no change made (nothing can mend an empty history): the input itself, as for a valid one
    repaired = mended.messages if mended.changes else messages
    _log_structure(module, messages, repaired)
    return Repair(
        repaired if mended.changes else original,
        tuple(mended.changes),
        problems,
        _judged_later(module, repaired, profile),
    )


def _walked(
    module: Format, messages: Sequence[Any], profile: Profile, policy: Policy
) -> Repair | None:
    """:func:`repair` of a history bound for Mistral in one walk
    (:func:`toolmend._inline.walk_mend`): the messages the other paths send, every call id
    rewritten and the common damages mended; the report written when it is first read, from
    the ids and the damage the walk met (:func:`toolmend._inline.walk_report`). None where the
    walk cannot tell."""
    walked = walk_mend(messages, profile, policy)
    if walked is None:
        return None
    repaired, events = walked

    def report(before: Sequence[Any], after: list[Any]) -> tuple[list[Change], list[Problem]]:
        """The changes and problems of the ids and of the damage the walk mended."""
        return walk_report(before, after, profile, events)

    return _walk_repair(module, messages, profile, repaired, report)


def _walked_adjacent(
    module: Format, messages: Sequence[Any], profile: Profile, policy: Policy
) -> Repair | None:
    """:func:`repair` of a history bound for Gemini, Bedrock, Anthropic, OpenAI or DeepSeek in
    one walk (:func:`toolmend._walks.walk_adjacent`): the messages the other paths send, the
    results' names filled and the common damages mended; the report written when it is first read,
    from the names and the damage the walk met (:func:`toolmend._walks.walk_report`). None
    where the walk cannot tell."""
    walked = walk_adjacent(messages, profile, policy)
    if walked is None:
        return None
    repaired, events = walked

    def report(before: Sequence[Any], after: list[Any]) -> tuple[list[Change], list[Problem]]:
        """The changes and problems of the names and of the damage the walk mended."""
        return walk_report_adjacent(before, profile, events)

    return _walk_repair(module, messages, profile, repaired, report)


def _walk_repair(
    module: Format,
    messages: Sequence[Any],
    profile: Profile,
    repaired: list[Any],
    report: Callable[[Sequence[Any], list[Any]], tuple[list[Change], list[Problem]]],
) -> Repair:
    """The :class:`Repair` of a one-walk repair (``repaired``), its report written on first
    read by ``report`` from the caller's list and the repaired one as they were handed over: a
    caller appends the model's reply to either before it reads the report (a slice each, a
    pointer copy that walks nothing: 0.002x ``json.dumps``; read as they are then, a walk's
    record of message indexes raised ``KeyError`` or ``StopIteration``). Nothing is left: every
    message a walk sends passed the one-pass check's rules as it went, the ids it made are
    unique and in the profile's form, and what it inserted (placeholders, bridges) breaks no
    rule where it goes (the agreement properties of ``tests/test_damaged_speed.py`` judge each
    walked repair), so no judge, and no hook's check of the repaired history, runs again."""
    _log_structure(module, messages, repaired)
    check_texts(profile)
    before, after = messages[:], repaired[:]
    return Repair._deferred(repaired, True, lambda: report(before, after))


def _names_apart(
    module: Format,
    messages: Sequence[Any],
    profile: Profile,
    policy: Policy,
    original: Any,
) -> Repair | None:
    """:func:`repair` of a damaged history under a profile whose results name their call's
    function (Gemini), from ``Format.named_spans``: the names outside the damaged ranges filled
    by the scan that finds the ranges, the ranges read, judged and mended on their own; the
    changes and problems in message order, as the ranges of :func:`damage_in` (a range whose
    only fault is the names filled by :func:`toolmend._quickmend.quick_names`) give them. The
    names' changes and problems are built when the report is first read
    (:meth:`toolmend.Repair._deferred`). None where the one pass cannot tell, or finds nothing
    (:func:`repair` then decides)."""
    found = module.named_spans(messages, profile)
    if found is None or not (found[0] or found[1]):
        return None
    spans, names, named = found
    built = names_report(profile, names) if names else None
    if names and built is None:
        return None
    damaged = list(_damage_in(module, messages, profile, policy, True, spans=spans, fused=True))

    def report(changes: Sequence[Change]) -> tuple[list[Change], list[Problem]]:
        """The names' changes and problems merged with the ranges', in message order."""
        named_changes, named_problems = built() if built is not None else ((), ())
        merged = list(heapq.merge(named_changes, changes, key=_change_index))
        problems: list[Problem] = []
        at, count = 0, len(named_problems)
        for damage in damaged:
            while at < count and named_problems[at].index < damage.low:
                problems.append(named_problems[at])
                at += 1
            problems.extend(damage.problems)
        problems.extend(named_problems[at:])
        return merged, problems

    if policy.mode is not Mode.REPAIR:
        problems = tuple(report(())[1])
        if policy.mode is Mode.STRICT:
            raise ToolChainError(problems=problems)
        return Repair(original, (), problems, problems)
    if not spans:
        # the names alone, as :func:`toolmend._quickmend.quick_mend` gives them: the scan found
        # nothing else wrong, and the names are those the profile wants (nothing left)
        _log_structure(module, messages, named)
        check_texts(profile)
        assert built is not None
        return Repair._deferred(named, True, built)
    source = named if names else messages
    mended = mend_damage(
        module, source, profile, policy, damaged, parts_before=0, whole=messages, later=True
    )
    if mended.whole or not (names or mended.changes or mended.later):
        repaired = mended.messages if mended.changes else messages
        _log_structure(module, messages, repaired)
        return Repair(
            repaired if mended.changes else original,
            tuple(mended.changes),
            tuple(mended.problems),
            _judged_later(module, repaired, profile),
        )
    _log_structure(module, messages, mended.messages)
    ranges_later = mended.later  # (the ranges' report, problems written when first read)
    range_changes = mended.changes

    def build() -> tuple[list[Change], list[Problem]]:
        return report(ranges_later()[0] if ranges_later is not None else range_changes)

    check_texts(profile)
    return Repair._deferred(
        mended.messages, True, build, _judged_later(module, mended.messages, profile)
    )


def _change_index(change: Change) -> int:
    return change.index


def _log_structure(module: Format, messages: Sequence[Any], repaired: Sequence[Any]) -> None:
    """The structure before and after a repair, at debug level under ``TOOLMEND_DEBUG``."""
    if _DEBUG and logger.isEnabledFor(logging.DEBUG):
        logger.debug("toolmend before: %s", _structure(module.read(messages)))
        logger.debug("toolmend after: %s", _structure(module.read(repaired)))


def _judged_later(
    module: Format, repaired: Sequence[Any], profile: Profile
) -> Callable[[], tuple[Problem, ...]]:
    """What ``repaired`` still breaks, judged when ``Repair.problems_left`` is first read."""

    def still_broken() -> tuple[Problem, ...]:
        return tuple(judge(module.read(repaired), profile))

    return still_broken


@dataclass(frozen=True)
class Damage:
    """One damaged range ``[low, high)`` of a history, read on its own, and its problems."""

    low: int
    high: int
    skeleton: Skeleton
    problems: list[Problem]


class Named:
    """One range ``[low, high)`` of a damaged history mended in one pass, not read, judged and
    planned: its only fault result names the profile wants (Gemini,
    :func:`toolmend._quickmend.quick_names`), results sent twice (:func:`_without_repeats`) or
    the common damages (:func:`toolmend._quickmend.mended_range`). ``messages`` is the range
    repaired, ``changes`` its changes, ``call_ids`` its calls' ids; ``problems`` what the
    judge finds in it, written on first read when given as a :class:`toolmend._findings.Pending`
    report (``deferred``: :func:`mend_damage` with ``later`` then leaves them to the report
    built when it is first read)."""

    __slots__ = ("_problems", "call_ids", "changes", "high", "low", "messages")

    def __init__(
        self,
        low: int,
        high: int,
        messages: list[Any],
        changes: list[Change],
        problems: list[Problem] | Pending,
        call_ids: set[str | None],
    ) -> None:
        self.low, self.high, self.messages, self.changes = low, high, messages, changes
        self._problems = problems
        self.call_ids = call_ids

    @property
    def deferred(self) -> bool:
        """Whether the problems are still to be written."""
        return type(self._problems) is not list

    @property
    def problems(self) -> list[Problem]:
        """What the judge of the whole history reports in the range, in message order."""
        found = self._problems
        if type(found) is list:
            return found
        built: list[Problem] = found.build()  # type: ignore[union-attr]
        self._problems = built
        return built


class Stretch:
    """A sound range ``[low, high)`` of a damaged history between its damaged ranges, whose
    only fault is call ids outside the profile's form (Mistral): rewritten in one pass by
    :func:`mend_damage`, with the ids of ``request``, the whole request's rewrite shared with
    the damaged ranges (see :func:`toolmend._quickmend.rewrite_stretch`). Its ``problems``
    are built when first read."""

    __slots__ = ("_problems", "calls", "high", "low", "made", "request", "results")

    def __init__(
        self,
        low: int,
        high: int,
        calls: list[Any],
        results: list[int],
        part: list[Any],
        seeds: list[str],
        tails: list[str],
        request: RequestIds,
        profile: Profile,
    ) -> None:
        self.low, self.high, self.calls, self.results = low, high, calls, results
        self.made = (part, seeds, tails)  # (the stretch copied with each refused id's tail)
        self.request = request
        self._problems: list[Problem] | Profile = profile

    @property
    def edited(self) -> set[int]:
        """The indexes of the messages the rewrite changes (calls and their results)."""
        return {*self.calls[0::3], *self.results[0::2]}

    @property
    def problems(self) -> list[Problem]:
        """What the judge of the whole history reports in the stretch, in message order."""
        if isinstance(self._problems, Profile):
            self._problems = stretch_report(self._problems, self.calls, self.results, None)[1]
        return self._problems


@dataclass(frozen=True)
class Mended:
    """A history after toolmend had its say, and what it did: the one result type of the
    internal repair steps (:func:`mend_damage`, for :func:`toolmend.trim`) and of the hooks
    (``toolmend.integrations.hooks.mend``).

    ``messages`` is the history to send; ``changes`` and ``problems`` are the edits made and what
    the input broke (ids and codes, safe to log). A hook's result for a repair
    (:meth:`of_repair`) reads both through the :class:`toolmend.Repair` on first read: a
    repair that builds its report lazily (Mistral's ids, Gemini's names: a change and a
    problem or two a message) builds it only for a hook that logs, reports or records it."""

    messages: Any
    changes: Sequence[Change] = deferred_field("changes")
    parts: Sequence[tuple[Damage, Plan, list[Any]]] = ()
    """Each range's damage, plan and new messages (in range order), for callers that must
    follow where a message went (trim); empty from the hooks."""
    problems: Sequence[Problem] = deferred_field("problems")
    """The problems of the ranges mended, in order."""
    loops: tuple[Problem, ...] = ()
    """What the hooks' loop guard found (see :func:`toolmend.detect_loops`)."""
    left: tuple[Problem, ...] = ()
    """What the history the hooks send still breaks (empty after a successful repair; the
    problems found when nothing was changed)."""
    failed: bool = False
    """True when toolmend raised inside a hook and the original history went out unrepaired."""
    whole: bool = False
    """True when the ranges gave way to a repair of the whole history (:func:`mend_damage`)."""
    later: Builder | None = None
    """From :func:`mend_damage` with ``later``, where it rewrote a stretch's ids or left a
    range's problems unwritten, and changed something: the function that builds ``changes``
    and ``problems`` (both left empty), for a report built when it is first read
    (:meth:`toolmend.Repair._deferred`)."""

    @classmethod
    def of_repair(
        cls, repair: Repair, *, loops: tuple[Problem, ...] = (), left: tuple[Problem, ...] = ()
    ) -> Mended:
        """A hook's result for ``repair``: its messages; its ``changes`` and ``problems`` read
        from ``repair`` when first read (then kept, the same tuples as the repair's), so the
        repair's own report stays unbuilt until someone asks (:meth:`toolmend.Repair._deferred`).
        ``==``, ``repr`` and :func:`dataclasses.replace` read them, as for a result built
        eagerly."""
        made = object.__new__(cls)
        made.__dict__.update(
            messages=repair.messages,
            parts=(),
            loops=loops,
            left=left,
            failed=False,
            whole=False,
            later=None,
            _later=(lambda: (repair.changes, repair.problems), repair.changed),
        )
        return made

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled (and copied) as a result built eagerly (a repair's reader is no data)."""
        return (type(self), tuple(getattr(self, f.name) for f in dataclasses.fields(self)))


def find_damage(
    module: Format, messages: Sequence[Any], profile: Profile, policy: Policy | None = None
) -> list[Damage | Stretch]:
    """The damaged ranges of ``messages`` under ``profile`` (none when it is valid)."""
    return list(damage_in(module, messages, profile, policy) or ())


@overload
def damage_in(
    module: Format,
    messages: Sequence[Any],
    profile: Profile,
    policy: Policy | None = None,
    vouched_against: bool = False,
    *,
    named: Literal[False] = False,
) -> Iterator[Damage | Stretch] | None: ...
@overload
def damage_in(
    module: Format,
    messages: Sequence[Any],
    profile: Profile,
    policy: Policy | None = None,
    vouched_against: bool = False,
    *,
    named: Literal[True],
) -> Iterator[Damage | Named | Stretch] | None: ...
def damage_in(
    module: Format,
    messages: Sequence[Any],
    profile: Profile,
    policy: Policy | None = None,
    vouched_against: bool = False,
    *,
    named: bool = False,
) -> Iterator[Damage | Named | Stretch] | None:
    """:func:`find_damage` one range at a time, for :func:`mend_damage`; None when ``messages``
    is valid.

    A caller that mends each range as it comes and keeps no range's plan (``parts_before``)
    frees each range's skeleton and plan before the next: held to the end of a long damaged
    history, they would be most of what the garbage collector's young generations promote, and
    full collections of the caller's whole heap would follow.

    ``vouched_against``: the caller has run ``Format.quick_valid`` already and it could not
    vouch (so it is not run a second time).

    ``named`` (:func:`repair`): a range whose only fault is the result names the profile wants
    comes as :class:`Named`, filled in one pass: bound for Gemini, every range of an
    OpenAI-shaped history lacks them, and a damaged history's ranges read, judged and planned
    cost four to five times ``json.dumps`` (issue 32). For :func:`mend_damage` with
    ``parts_before=0`` only: a :class:`Named` range has no skeleton or plan."""
    quick = named and profile.results_need_name
    damaged: Iterator[Damage | Named | Stretch] = _damage_in(
        module, messages, profile, policy, vouched_against, quick, fused=named
    )
    first = next(damaged, None)
    return None if first is None else itertools.chain((first,), damaged)


def _damage_in(
    module: Format,
    messages: Sequence[Any],
    profile: Profile,
    policy: Policy | None,
    vouched_against: bool,
    quick: bool = False,
    spans: list[tuple[int, int]] | None = None,
    *,
    fused: bool = False,
) -> Iterator[Any]:
    if spans is None:
        spans = _ranges(module, messages, profile, policy, vouched_against)
        if spans != [(0, len(messages))]:
            request = module.request_id_fixes(messages, profile, spans)
            if request is not None:  # ids rewritten request-wide (Mistral)
                fast = policy if fused else None  # (ranges mended from their messages)
                yield from _with_stretches(module, messages, profile, spans, *request, fast)
                return
    # (a range whose only fault is a result sent twice: written without the full path)
    fused = fused and module.quick_plans and profile.pairing in ("adjacent", "count")
    for low, high in spans:
        if fused and low:  # (after the history's start: no rule on the opening applies)
            part = messages[low:high]
            repeats = module.repeated_results(part, profile)
            if repeats is not None:
                mended = _without_repeats(part, profile, low, repeats)
                if mended is not None:
                    yield mended
                    continue
            elif policy is not None and high < len(messages):
                # (before the history's end: no newest input to keep) the common damages,
                # judged and planned straight from the messages
                direct = mended_range(module, part, profile, policy, low)
                if direct is not None:
                    yield Named(low, high, *direct)
                    continue
        if quick:
            part = messages[low:high]
            named = quick_names(module, part, profile, low)
            if named is not None:
                call_ids = {call["id"] for message in part for call in _calls_of(message)}
                yield Named(low, high, *named, call_ids)
                continue
        skeleton = _read_range(module, messages, low, high)
        found = judge(skeleton, profile)
        if found:
            yield Damage(low, high, skeleton, found)


def _with_stretches(
    module: Format,
    messages: Sequence[Any],
    profile: Profile,
    ranges: list[tuple[int, int]],
    taken: set[str],
    stretches: list[tuple[int, int, list[Any], list[int], list[Any], list[str], list[str]]],
    policy: Policy | None = None,
) -> Iterator[Damage | Named | Stretch]:
    """:func:`_damage_in` for a profile whose call ids are rewritten request-wide (Mistral):
    the damaged ranges, each skeleton holding the request's id rewrite, and the sound
    stretches between them whose ids need rewriting, in history order (the order the whole
    history's planner makes the ids in). With ``policy`` (:func:`repair`), a range between
    the history's start and its end with only the common damages comes :class:`Named`,
    mended straight from its messages with the request's ids
    (:func:`toolmend._quickmend.mended_range`)."""
    request = RequestIds(taken)
    position = 0
    size = len(messages)
    for low, high in [*ranges, (size, size)]:
        while position < len(stretches) and stretches[position][0] < low:
            yield Stretch(*stretches[position], request, profile)
            position += 1
        if low == high:
            continue
        if policy is not None and low > 0 and high < size:
            part = messages[low:high]
            direct = mended_range(module, part, profile, policy, low, request=request)
            if direct is not None:
                yield Named(low, high, *direct)
                continue
        skeleton = _read_range(module, messages, low, high)
        skeleton.ids = request
        found = judge(skeleton, profile)
        if found:
            yield Damage(low, high, skeleton, found)


def _without_repeats(
    part: Sequence[Any], profile: Profile, low: int, repeats: list[tuple[int, str, int]]
) -> Named | None:
    """The range ``part`` (from message ``low``) mended of the results it repeats word for word
    (``Format.repeated_results``): what reading, judging and planning it gives, each repeat a
    ``duplicate_result`` (as the judge reports it; under counting pairing, each result past
    its block's count an ``orphan_result``) dropped (``dropped_duplicate_result``, as the
    planner drops a copy). None where the profile does not report repeats (the full path then
    leaves the range as it is)."""
    report = Pending(profile, low)  # (the problems written when first read)
    if profile.pairing == "count":  # (DeepSeek) the results past a block's count: orphans
        remaining = 0
        for index, message in enumerate(part):
            if message["role"] == "tool":
                if remaining <= 0:
                    report.add("orphan_result", index, "tool result without a pending call")
                remaining -= 1
            else:
                remaining = len(_calls_of(message))
    else:
        for index, call_id, first in repeats:
            report.add(
                "duplicate_result",
                index,
                "call answered twice",
                id=call_id,
                ids=(call_id,),
                first=first + low,
            )
    if not report.found:
        return None
    dropped = {index for index, _, _ in repeats}
    changes = [
        Change("dropped_duplicate_result", low + index, "second result for one call", (call_id,))
        for index, call_id, _ in repeats
    ]
    kept = [message for index, message in enumerate(part) if index not in dropped]
    call_ids: set[str | None] = {call["id"] for message in part for call in _calls_of(message)}
    return Named(low, low + len(part), kept, changes, report, call_ids)


def mend_damage(
    module: Format,
    messages: Sequence[Any],
    profile: Profile,
    policy: Policy,
    damaged: Iterable[Damage | Named | Stretch],
    *,
    parts_before: int | None = None,
    whole: Sequence[Any] | None = None,
    later: bool = False,
) -> Mended:
    """Plan and apply a repair of every damaged range; the rest is copied by slices.
    ``parts_before`` limits ``Mended.parts`` to the ranges that start before that index (None:
    every range). ``whole``: the history to repair whole where the ranges cannot tell
    (``messages`` itself unless given: ``messages`` may be it with names filled outside the
    ranges); ``Mended.whole`` then says so. ``later``: where a :class:`Stretch` had its ids
    rewritten (a change and a problem or two for nearly every message, which cost more than
    the rewrite), or a :class:`Named` range's problems are still to be written (a problem
    costs more than the rest of a small range's repair), and something changed, the changes
    and problems are left to ``Mended.later``."""
    history = messages if whole is None else whole
    repaired: list[Any] = []
    changes: list[Change] = []
    problems: list[Problem] = []
    parts = []
    position = 0
    dropped: list[set[str]] = []  # per range: the ids of the results it dropped
    called: list[Any] = []  # per range: the ids of its calls (or its skeleton's calls)
    # each stretch rewritten: where its report goes in ``changes`` and ``problems``, its new ids.
    # (It calls no id a range dropped a result of: a range drops only a result the scan found
    # no waiting call for, and the scan widened that range over every range calling its id.)
    stretches: list[tuple[int, int, Stretch, list[str]]] = []
    # with ``later``, each range whose problems are still to be written, in range order with
    # the stretches: where its problems go in ``problems``, and the range
    deferred: list[tuple[int, int, Stretch | Named, list[str]]] = []
    for damage in damaged:
        if type(damage) is Stretch:  # sound but for its call ids: rewritten in one pass
            repaired.extend(messages[position : damage.low])
            low, high = damage.low, damage.high
            rewritten, new_ids = rewrite_stretch(
                messages,
                profile,
                low,
                high,
                damage.calls,
                damage.results,
                damage.request,
                damage.made,
            )
            repaired.extend(rewritten)
            stretches.append((len(changes), len(problems), damage, new_ids))
            deferred.append(stretches[-1])
            position = high
            continue
        if type(damage) is Named:  # mended already, in one pass: copied in like a repair
            repaired.extend(messages[position : damage.low])
            repaired.extend(damage.messages)
            changes.extend(damage.changes)
            dropped.append({i for c in damage.changes if c.code in _DROPPING for i in c.ids})
            called.append(damage.call_ids)
            if later and damage.deferred:
                deferred.append((len(changes), len(problems), damage, []))
            else:
                problems.extend(damage.problems)
            position = damage.high
            continue
        assert type(damage) is Damage
        part = messages[damage.low : damage.high]
        try:
            codes = {problem.code for problem in damage.problems}
            reader = result_reader(module, part)
            # the common damages (a repeated result, a missing one, an orphan) planned in one
            # pass; anything else by the planner
            quick = (
                quick_plan(damage.skeleton, profile, policy, reader, codes)
                if module.quick_plans
                else None
            )
            plan, made = quick or plan_repair(damage.skeleton, profile, policy, reader, codes)
            applied: list[Any] = module.apply(part, plan)
        except NonFiniteNumberError:
            # a value to write as JSON holds NaN or Infinity, which no strict parser reads:
            # the range is left as it was (copied with the next slice), its problems stay
            if damage.skeleton.ids is not None:
                # (ids rewritten request-wide: the whole history is left as it was, so none
                # of its ids is rewritten either)
                return _mend_whole(module, history, profile, policy, parts_before)
            problems.extend(damage.problems)
            continue
        except UnwritableValueError as error:
            raise _unwritable(error, part, damage.low) from None
        if not damage.skeleton.whole and any(c.code == "restored_call_id" for c in made):
            # a call took the id of its result: a range cannot see whether the history uses
            # that id elsewhere, so the whole history decides
            return _mend_whole(module, history, profile, policy, parts_before)
        repaired.extend(messages[position : damage.low])
        repaired.extend(applied)
        changes.extend(made)
        dropped.append({i for c in made if c.code in _DROPPING for i in c.ids})
        called.append(damage.skeleton.calls)  # (made a set of ids only where it is needed)
        problems.extend(damage.problems)
        if parts_before is None or damage.low < parts_before:
            parts.append((damage, plan, applied))
        position = damage.high
    repaired.extend(messages[position:])
    if len(called) > 1 and any(dropped) and _answers_elsewhere(_call_ids(called), dropped):
        return _mend_whole(module, history, profile, policy, parts_before)
    if not deferred:
        return Mended(repaired, changes, parts, problems)

    def report() -> tuple[list[Change], list[Problem]]:
        """The ranges' changes and problems with each stretch's, and each deferred range's
        problems, in its place."""
        all_changes: list[Change] = []
        all_problems: list[Problem] = []
        done_changes = done_problems = 0
        for at_change, at_problem, part, new_ids in deferred:
            if isinstance(part, Named):
                made: Sequence[Change] = ()
                found: Sequence[Problem] = part.problems
            else:
                made, found = stretch_report(profile, part.calls, part.results, new_ids)
            all_changes += changes[done_changes:at_change]
            all_changes += made
            all_problems += problems[done_problems:at_problem]
            all_problems += found
            done_changes, done_problems = at_change, at_problem
        all_changes += changes[done_changes:]
        all_problems += problems[done_problems:]
        return all_changes, all_problems

    if later and (stretches or changes):  # (something changed: ``Repair.changed`` is True)
        return Mended(repaired, (), parts, (), later=report)
    built = report()
    return Mended(repaired, built[0], parts, built[1])


_DROPPING = frozenset(
    {"dropped_orphan_result", "dropped_duplicate_result", "orphan_result_to_text"}
)
"""The changes that take a result away from the call its id names."""


def _calls_of(message: Any) -> Any:
    """The ``tool_calls`` of a plain chat message (one :func:`quick_names` vouched for)."""
    return message.get("tool_calls") or () if message["role"] == "assistant" else ()


def _call_ids(called: list[Any]) -> list[set[str | None]]:
    """Each range's call ids: a :class:`Named` range's set as it is, a damaged range's read
    from its skeleton's calls."""
    return [
        ids if type(ids) is set else {c.id for found in ids.values() for c in found}
        for ids in called
    ]


def _answers_elsewhere(called: Sequence[set[str | None]], dropped: Sequence[set[str]]) -> bool:
    """Whether a range dropped a result whose id a call in another range has (``called`` and
    ``dropped`` hold each range's call ids and dropped result ids): a range cannot see that
    call (an id reused across turns, a result moved far from its call), so only the whole
    history can tell whether the result answers it. One pass over the ranges."""
    if len(called) < 2 or not any(dropped):
        return False
    ranges_calling: dict[str | None, int] = {}  # call id -> how many ranges have a call with it
    for ids in called:
        for call_id in ids:
            ranges_calling[call_id] = ranges_calling.get(call_id, 0) + 1
    return any(
        ranges_calling.get(result_id, 0) > (result_id in called[here])
        for here, ids in enumerate(dropped)
        for result_id in ids
    )


def _mend_whole(
    module: Format,
    messages: Sequence[Any],
    profile: Profile,
    policy: Policy,
    parts_before: int | None,
) -> Mended:
    """:func:`mend_damage` over the whole history as one range."""
    whole = _read_range(module, messages, 0, len(messages))
    everything = Damage(0, len(messages), whole, judge(whole, profile))
    mended = mend_damage(module, messages, profile, policy, [everything], parts_before=parts_before)
    return dataclasses.replace(mended, whole=True)


def _unwritable(error: UnwritableValueError, part: Sequence[Any], low: int) -> InvalidHistoryError:
    """The public error for a value a repair had to write as JSON and could not (a cycle,
    nesting too deep), naming the message and field that hold it."""
    found = locate(part, error.value)
    if found is None:
        return InvalidHistoryError(f"a value in the history cannot be used: {error.reason}")
    index, field = found
    return InvalidMessageError(low + index, field, f"JSON data ({error.reason})", error.value)


def result_reader(module: Format, part: Sequence[Any]) -> Callable[[int, int], str | None]:
    """How the planner reads a result's text (to tell a stub from a real result)."""

    def result_text(index: int, slot: int) -> str | None:
        text: str | None = module.result_text(part[index], slot)
        return text

    return result_text


def sanitize(
    messages: Sequence[Any],
    *,
    provider: str | Profile | None = None,
    format: str | None = None,
    policy: Policy | Mode | str | None = None,
    model: str | None = None,
) -> Any:
    """``repair(...).messages``: the history ``provider`` accepts, or the input itself if valid.

    >>> import toolmend
    >>> history = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    >>> toolmend.sanitize(history, provider="openai") is history
    True
    """
    return repair(messages, provider=provider, format=format, policy=policy, model=model).messages


_DEBUG = os.environ.get("TOOLMEND_DEBUG", "") not in ("", "0", "false", "no")


def _structure(skeleton: Skeleton) -> str:
    """The shape of a history on one line, never its content (like seed 002's
    DEBUG_MESSAGE_CONVERSION dump): the format and counts, then per message its index, role
    (``role/kind`` where they differ), the calls it makes (``name:id``) and the results it
    carries (``<id``, ``:name`` when the result states one). Roles, names and ids are the
    caller's: escaped by :func:`toolmend._escape.log`."""
    kinds, roles = skeleton.kinds, skeleton.roles
    shown = _log_text
    tally: dict[str, int] = {}
    for kind in kinds:
        tally[kind] = tally.get(kind, 0) + 1
    calls_made = sum(len(found) for found in skeleton.calls.values())
    results_carried = sum(len(found) for found in skeleton.results.values())
    by_kind = ", ".join(f"{kind} {count}" for kind, count in tally.items())
    parts = [
        f"{skeleton.format}, {len(kinds)} messages ({by_kind}), {calls_made} calls, "
        f"{results_carried} results:"
    ]
    for index, kind in enumerate(kinds):
        role = roles[index] if index < len(roles) else kind
        label = shown(str(role)) if role == kind else f"{shown(str(role))}/{kind}"
        details = [
            f"{shown(str(c.name))}:{shown(str(c.id))}" for c in skeleton.calls.get(index, ())
        ]
        details += [
            f"<{shown(str(r.id))}" + (f":{shown(str(r.name))}" if r.name else "")
            for r in skeleton.results.get(index, ())
        ]
        parts.append(f"{index}:{label}" + (f"[{','.join(details)}]" if details else ""))
    return " ".join(parts)
