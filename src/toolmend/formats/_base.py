"""The format contract: everything toolmend knows about one wire shape of a history.

A format reads its native list into the format-neutral :class:`~toolmend._skeleton.Skeleton`
the rules and planners work on, writes a plan back in its own shape, and states the facts about
its shape that the rest of toolmend asks for (where results may lie, which provider takes it
natively, which role its assistant messages carry). Nothing outside ``toolmend.formats`` asks
which format a history is in; it asks the format.

Five methods are required (:meth:`Format.read`, :meth:`Format.apply`, :meth:`Format.claims`,
:meth:`Format.result_text`, :meth:`Format.call_arguments`). The others are one-pass shortcuts
over plain data; their defaults are the answer "cannot tell cheaply" (``None`` or ``False``),
which sends the caller down the full path: a read, a judgement and a plan. A format's shortcut
must agree with that full path wherever it answers; property tests hold every built-in
format's shortcuts to it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from .._edits import Plan
from .._report import InvalidHistoryError
from .._skeleton import Call, Skeleton
from ..profiles import Profile

__all__ = ["Format", "LiveRounds", "message_dict"]

LiveRounds = tuple[int, list[tuple[int, tuple[Call, ...]]]]
"""The live run of a history: the index after the last user message, and each tool round after
it as (message index, its calls)."""


class Format:
    """One wire shape of a history. Subclass it, set :attr:`name`, implement the five required
    methods, and register one instance with :func:`toolmend.formats.register`."""

    name: ClassVar[str]
    """The format's name (``"openai"``), as ``format=`` takes it."""

    native_provider: ClassVar[str] = "openai"
    """The provider profile whose API takes this shape: what :func:`toolmend.trim` keeps the
    pairing rules of, and the provider when none is given."""

    aliases: ClassVar[tuple[str, ...]] = ()
    """Other names ``format=`` accepts for this format."""

    exclusive: ClassVar[bool] = False
    """True when :meth:`claims` rests on the message's class, so its claim wins over look-alike
    claims of other formats during detection (LangChain messages)."""

    text_input: ClassVar[bool] = False
    """True when a bare string is a whole history of this format (one user message: the
    Responses ``input``); :meth:`read` then takes the string."""

    results_follow_calls: ClassVar[bool] = True
    """Whether a mended history puts all the results of a message's calls right after it (one
    message per result in chat, one message holding them all in the block layouts). False when
    a result may lie anywhere after its call (Responses items)."""

    positional_results: ClassVar[bool] = False
    """Whether a result may answer its call by position alone (Gemini's native function
    responses: the n-th response of a turn answers its n-th call)."""

    assistant_role: ClassVar[str] = "assistant"
    """The role the model's own messages carry (Gemini: ``"model"``)."""

    block_pairing: ClassVar[str | None] = None
    """For a block layout, the ``Profile.block_pairing`` family whose rules judge it (a
    provider takes its own block format only). None for the chat and item layouts."""

    required_pairing: ClassVar[str | None] = None
    """The ``Profile.pairing`` a profile must have to judge this format (Responses items need
    ``"ordered"``: chat pairing would pair parallel calls and outputs by adjacency)."""

    @property
    def other_shapes(self) -> bool:
        """Whether the SDK also takes other shapes than a list as the history: the format
        overrides :meth:`normalize`."""
        return type(self).normalize is not Format.normalize

    @property
    def merges(self) -> bool:
        """Whether :func:`toolmend.merge_consecutive` can merge this format: it overrides
        :meth:`merge_run`."""
        return type(self).merge_run is not Format.merge_run

    # --- required -----------------------------------------------------------------------------

    def read(self, messages: Sequence[Any], /) -> Skeleton:
        """Read the native list once into a skeleton, copying nothing. A message it cannot read
        raises :class:`toolmend.InvalidMessageError` naming its index and field."""
        raise NotImplementedError

    def apply(self, messages: Sequence[Any], plan: Plan, /) -> list[Any]:
        """The repaired list: the original object for every untouched message, a shallow copy
        for every edited one, new messages for invented items. Never mutates its input."""
        raise NotImplementedError

    def claims(self, message: Any, /) -> bool:
        """Whether one message shows a feature only this format has (used by detection)."""
        raise NotImplementedError

    def result_text(self, message: Any, slot: int, /) -> str | None:
        """The text of one tool result, for the planner's stub test (never logged)."""
        raise NotImplementedError

    def call_arguments(self, message: Any, slot: int, /) -> Any:
        """The arguments of one call (JSON text or an object), for the loop guard (never
        logged)."""
        raise NotImplementedError

    # --- shapes -------------------------------------------------------------------------------

    def normalize(self, messages: Any, /) -> Sequence[Any]:
        """The list :meth:`read` takes, from any other shape the SDK accepts as the history
        (Gemini: a string, a Part, a Content); a list already in shape comes back as it is.
        A format that overrides it has :attr:`other_shapes`."""
        return messages  # type: ignore[no-any-return]

    def merge_run(self, run: Sequence[Any], /) -> Any:
        """One message from a run of two or more consecutive same-role messages, losing no
        tool result (:func:`toolmend.merge_consecutive`); a format that does not override it
        is not merged."""
        raise NotImplementedError(f"the {self.name!r} format does not merge messages")

    def keeps_apart(self, role: Any, /) -> bool:
        """Whether a message with this role is never merged with its neighbours (OpenAI's
        ``tool`` messages: each answers one call id)."""
        return False

    # --- one-pass shortcuts (defaults: "cannot tell", the full path decides) ----------------

    def kind_of(self, message: Any, /) -> str | None:
        """The kind of one message from the message alone (``toolmend._skeleton`` kinds); None
        when the format cannot tell without reading its neighbours."""
        return None

    def live_rounds(self, messages: Sequence[Any], /) -> LiveRounds | None:
        """The live run for the loop guard, straight off plain data; None for anything unusual
        (the guard then reads the run)."""
        return None

    def group_spans(self, messages: Sequence[Any], /) -> list[tuple[int, int]] | None:
        """The ranges :func:`toolmend.trim` must keep or cut whole, from one pass; None when the
        pass cannot be sure (trim then reads and pairs)."""
        return None

    def quick_valid(self, messages: Sequence[Any], profile: Profile, /) -> bool:
        """True only when ``judge(read(messages), profile)`` would find nothing, from one tight
        pass that builds nothing per message; False sends the history down the full path."""
        return False

    def quick_live(
        self, messages: Sequence[Any], profile: Profile, /
    ) -> tuple[int, list[tuple[str, Any]]] | None:
        """:meth:`quick_valid`'s pass, also returning the live run for the loop guard: the
        number of tool rounds after the last user message (a round makes at least one call)
        and each of their calls as (name, arguments), round after round (forwards or
        backwards); None when it cannot vouch. See :func:`toolmend._loops.quiet_live_run`."""
        return None

    def dirty_spans(
        self, messages: Sequence[Any], profile: Profile, /
    ) -> list[tuple[int, int]] | None:
        """The ranges that need repair (empty when valid), each judged and repaired on its own
        with the result it would get inside the whole history; None when it cannot tell."""
        return None

    quick_plans: ClassVar[bool] = False
    """Whether the planner's one-pass plan of the common damages
    (:func:`toolmend._plan_messages.quick_plan`) may plan this format's ranges: its messages
    are applied item by item as the planner's (OpenAI chat)."""

    def repeated_results(
        self, part: Sequence[Any], profile: Profile, /
    ) -> list[tuple[int, str, int]] | None:
        """For a damaged range after the history's start: each result sent twice word for
        word, as (index, call id, index of the first), when that is the range's only fault;
        None otherwise (the range is read, judged and planned)."""
        return None

    def named_spans(
        self, messages: Sequence[Any], profile: Profile, /
    ) -> tuple[list[tuple[int, int]], list[tuple[int, str, str]]] | None:
        """For a profile whose results name their call's function: the ranges that need repair
        for anything else, and the results outside them whose only fault is the name, as
        (tool message index, call id, function name); None when it cannot tell."""
        return None

    def quick_fixes(
        self,
        messages: Sequence[Any],
        profile: Profile,
        /,
        *,
        opening: bool = True,
        vouched_against: bool = False,
    ) -> tuple[list[tuple[int, str, str]], list[Any], list[int], list[str]] | None:
        """The only edits the full path would make, when they are result names or call ids a
        cross-family target wants on a history that passes its other rules: (tool message
        index, call id, function name) to name; message index, slot and id of each call whose
        id to rewrite, flat (three items a call); tool message index and position of its call
        among those of each of their results, flat (two items a result); and the ids of the
        calls kept (a new id must differ from them and from the rewritten). None
        when it cannot tell (see :mod:`toolmend._quickmend`). ``opening=False``: ``messages``
        is a range after the history's start, judged without the rules on a conversation's
        opening. ``vouched_against``: :meth:`quick_valid` failed on ``messages``; a format may
        then answer None where a glance shows it failed on something else (the ranges repair
        such a history as the full path does)."""
        return None

    def request_id_fixes(
        self, messages: Sequence[Any], profile: Profile, spans: list[tuple[int, int]], /
    ) -> (
        tuple[
            set[str],
            list[tuple[int, int, list[Any], list[int], list[Any], list[str], list[str]]],
        ]
        | None
    ):
        """For a damaged history whose ranges are ``spans`` (from :meth:`dirty_spans`), when
        the profile's call ids are rewritten request-wide outside them (Mistral): every call id
        of the history, and each sound stretch between the ranges (low, high) with the calls
        whose id to rewrite (message index, slot, id, flat) and the results answering them
        (message index, the call's position among those calls, flat), then the stretch
        rewritten with each of those ids' tail (its last ``Profile.call_id_length``
        characters) as its new id, those ids and the tails (see
        :func:`toolmend._quickmend.rewrite_stretch`). None when the ranges hold every
        fault."""
        return None

    def __repr__(self) -> str:
        return f"<toolmend format {self.name!r}>"


def message_dict(message: Any) -> dict[str, Any]:
    """A message as a new dict (for the writers that build a message from others): a mapping
    copied, an SDK object dumped without its unset fields, a plain object's public attributes."""
    if isinstance(message, Mapping):
        return dict(message)
    dump = getattr(message, "model_dump", None)
    if callable(dump):
        dumped = dump(exclude_none=True)
        if isinstance(dumped, dict):
            return dumped
    attributes = getattr(message, "__dict__", None)
    if isinstance(attributes, dict):
        return {key: value for key, value in attributes.items() if not key.startswith("_")}
    raise InvalidHistoryError(f"cannot read a {type(message).__name__} as a message")
