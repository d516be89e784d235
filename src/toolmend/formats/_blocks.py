"""The one writer of the block layouts (Anthropic, Bedrock, Gemini), and their merge.

In these layouts calls and results are blocks inside messages, so a plan is written the same
way in all three: kept messages as they are or shallow-copied with their edits, new messages
built from blocks taken out of the originals, placeholders, bridges, messages written out as
text, and merged runs. What differs is only how one block reads and is written; a format's
:class:`BlockWriter` subclass says that, and this module does the rest.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

from .._edits import AsText, Blocks, Bridge, Keep, Merge, MessageEdit, Placeholder, Plan
from ._base import message_dict

__all__ = ["BlockWriter", "merge_block_run"]


class BlockWriter:
    """Writes one plan over one block-layout history (a new writer per :meth:`apply`, so a
    format may keep what it learns about the history's style on it)."""

    roles: ClassVar[Mapping[str, str]]
    """Message kind (``toolmend._skeleton`` kinds) -> the native role of a new message."""

    def __init__(self, messages: Sequence[Any]) -> None:
        self.messages = messages

    # --- what a format says -------------------------------------------------------------------

    def blocks(self, message: Any) -> list[Any]:
        """The blocks of one message, in order."""
        raise NotImplementedError

    def edited(self, message: Any, edit: MessageEdit) -> Any:
        """A shallow copy of ``message`` with ``edit`` applied; blocks copied only where
        changed."""
        raise NotImplementedError

    def edit_block(self, block: Any, slot: int, edit: MessageEdit) -> Any:
        """One block with the edit's changes for its slot (the block itself when none)."""
        raise NotImplementedError

    def placeholder(self, item: Placeholder) -> Any:
        """The result block that answers a call whose result is missing."""
        raise NotImplementedError

    def text(self, text: str) -> Any:
        """A text block."""
        raise NotImplementedError

    def message(self, role: str, blocks: list[Any]) -> Any:
        """A new message with this native role and these blocks."""
        raise NotImplementedError

    def line(self, block: Any) -> str | None:
        """One block written out as a line of text (for a turn that must be text only); None
        or ``""`` for a block with nothing to show."""
        raise NotImplementedError

    def bridge(self, role: str, text: str) -> Any:
        """A short message the plan adds to keep the turns in order."""
        return self.message(role, [self.text(text)])

    def gathered(self, new: Any, sources: list[Any]) -> Any:
        """The message a :class:`Blocks` item builds (``new``), given the input messages its
        blocks were all taken out of (``sources``, in order): a format that keeps a message's
        other keys (Anthropic) carries them over. By default ``new`` as it is."""
        return new

    # --- the shared writer --------------------------------------------------------------------

    def apply(self, plan: Plan) -> list[Any]:
        """Build the repaired list (see :class:`toolmend.formats.Format.apply`)."""
        messages, edits, roles = self.messages, plan.edits, self.roles
        out: list[Any] = []
        kept: set[int] | None = None
        for item in plan.items:
            if isinstance(item, Keep):
                edit = edits.get(item.index)
                message = messages[item.index]
                out.append(message if edit is None else self.edited(message, edit))
            elif isinstance(item, Blocks):
                blocks = [self._taken(edits, part) for part in item.parts]
                new = self.message(roles[item.role], blocks)
                if kept is None:
                    kept = {other.index for other in plan.items if isinstance(other, Keep)}
                emptied = sorted({part[0] for part in item.parts if isinstance(part, tuple)} - kept)
                if emptied:  # the messages its blocks left behind are gone: keep their keys
                    new = self.gathered(new, [messages[index] for index in emptied])
                out.append(new)
            elif isinstance(item, Placeholder):
                out.append(self.message("user", [self.placeholder(item)]))
            elif isinstance(item, Bridge):
                out.append(self.bridge(roles[item.role], item.text))
            elif isinstance(item, AsText):
                text = self._render(edits, item.item)
                out.append(self.message(roles[item.role], [self.text(text)]))
            else:
                assert isinstance(item, Merge), "calls are split for message layouts only"
                out.append(self._merged(edits, item))
        return out

    def _taken(self, edits: dict[int, MessageEdit], part: Any) -> Any:
        if isinstance(part, Placeholder):
            return self.placeholder(part)
        index, slot = part
        block = self.blocks(self.messages[index])[slot]
        edit = edits.get(index)
        return block if edit is None else self.edit_block(block, slot, edit)

    def _kept_blocks(self, edits: dict[int, MessageEdit], index: int) -> list[Any]:
        edit = edits.get(index)
        message = self.messages[index]
        return self.blocks(message if edit is None else self.edited(message, edit))

    def _render(self, edits: dict[int, MessageEdit], item: Keep | Placeholder) -> str:
        """A message's blocks written out as plain text, for text-only turns."""
        if isinstance(item, Placeholder):
            return f"[tool result {item.call_id} ({item.name or 'tool'})]\n{item.text}"
        lines = [self.line(block) for block in self._kept_blocks(edits, item.index)]
        return "\n".join(line for line in lines if line)

    def _merged(self, edits: dict[int, MessageEdit], item: Merge) -> Any:
        """One message holding every part's blocks in order."""
        blocks: list[Any] = []
        for part in item.parts:
            if isinstance(part, Keep):
                blocks.extend(self._kept_blocks(edits, part.index))
            elif isinstance(part, AsText):
                blocks.append(self.text(self._render(edits, part.item)))
            else:
                blocks.append(self.text(part.text))
        return self.message(self.roles.get(item.role, "user"), blocks)


def merge_block_run(
    run: Sequence[Any],
    key: str,
    is_result: Callable[[Mapping[str, Any]], bool],
    is_call: Callable[[Mapping[str, Any]], bool],
    *,
    text_blocks: bool,
) -> dict[str, Any]:
    """One message from a same-role run of a block layout: the run's blocks concatenated, its
    tool results first (the provider demands that results open a turn), then the other blocks
    in order, the calls last (they must close the turn). ``text_blocks``: string contents are
    allowed and a run of them is joined with a blank line (Anthropic)."""
    first = message_dict(run[0])
    contents = [message_dict(message).get(key) for message in run]
    if text_blocks and all(isinstance(c, str) or c is None for c in contents):
        texts = [c for c in contents if c]
        first[key] = "\n\n".join(texts) if texts else contents[0]
        return first
    blocks: list[Any] = []
    for content in contents:
        if isinstance(content, str):
            if content:
                blocks.append({"type": "text", "text": content})
        elif isinstance(content, (list, tuple)):
            blocks.extend(content)
    results = [b for b in blocks if isinstance(b, Mapping) and is_result(b)]
    calls = [b for b in blocks if isinstance(b, Mapping) and is_call(b)]
    moved = {id(b) for b in results} | {id(b) for b in calls}
    rest = [b for b in blocks if id(b) not in moved]
    first[key] = [*results, *rest, *calls]
    return first
