"""The terminal timeline: one line per message, its calls and results, problems and changes
underneath.

Each call carries a label (``[A]``) and its result the same one, so a call can be followed to
its result by eye; a call with no result says ``NO RESULT``, a result with no call ``ORPHAN``.
Problems (``!!``) sit under the message they name, with the provider's own error text; in the
repaired timeline (``--fix``) every change (``**``) sits on the message it made, and a
message that was dropped or moved keeps a line where it was. Colour is only added when asked
for (the command asks when writing to a terminal and ``NO_COLOR`` is unset); without it the
output is plain text that can be pasted into an issue. Everything the history holds (ids,
names, roles, previews) and the error texts that quote it are shown through
:func:`toolmend._escape.terminal`: a control character (ESC, OSC, CR, NUL, a line break) or a
bidi control is printed escaped, never sent to the terminal.
"""

from __future__ import annotations

from collections.abc import Sequence

from .._escape import terminal
from .._report import Change, Problem
from .content import one_line
from .timeline import Line, Link, Row, Timeline, View, category

__all__ = ["render"]

_RESET = "\x1b[0m"
_ROLE_COLOURS = {"user": "32", "assistant": "34", "tool": "35", "system": "2", "other": "33"}
_CHANGE_COLOURS = {
    "moved": "33",
    "dropped": "31",
    "answered": "32",
    "added": "32",
    "renamed": "36",
    "re-id'd": "36",
    "merged": "35",
    "as text": "35",
    "edited": "33",
}


class _Paint:
    """ANSI colour when enabled, the text unchanged otherwise."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled

    def __call__(self, text: str, code: str) -> str:
        return f"\x1b[{code}m{text}{_RESET}" if self.enabled and text else text


def render(view: View, *, source: str, color: bool = False, width: int = 100) -> str:
    """The timeline of ``view`` as text (ending with a newline).

    **Parameters:**

    * **view** - what :func:`toolmend._show.timeline.build` made.
    * **source** - the name to show for the history (the file name).
    * **color** - *(optional)* add ANSI colours (default: plain text).
    * **width** - *(optional)* the line width previews are cut to fit (default 100).

    **Returns:** the text, ending with a newline.

    >>> from toolmend._show import text, timeline
    >>> history = [{"role": "user", "content": "Weather?"},
    ...            {"role": "tool", "tool_call_id": "call_1", "content": "21 C"}]
    >>> print(text.render(timeline.build(history, fix=True), source="h.json"), end="")
    h.json: openai history, 2 messages, 0 calls, 1 result
    1 problem for openai
    <BLANKLINE>
     #  role  content
     0  user  Weather?
     1  tool  21 C
              <- [?] result for call_1: ORPHAN, no call in the history answers to it
              !! orphan_result [OA-TOOL-ORPHAN] call_1: tool result without a calling ...
                 provider error: Invalid parameter: messages with role 'tool' must be a ...
    <BLANKLINE>
    after repair for openai: 2 messages, 1 change, no problems left
    <BLANKLINE>
     #  was  role  content
     0    0  user  Weather?
     1    1  user  [tool result call_1 (tool)]\\n21 C
                   ** as text: orphan_result_to_text (call_1): newest input: a result whose call ...
    """
    paint = _Paint(color)
    before = view.before
    out = [_heading(view, source, paint), ""]
    out += _listing(before, paint, width, index_width=_digits(view))
    for problem in before.general:
        out += _problem(problem, " " * 4, paint)
    if view.fixed and view.after is None and before.problems:
        out += ["", "the repair changes nothing: the problems above remain"]
    elif view.fixed and view.after is None:
        out += ["", f"nothing to repair: the {view.provider} profile accepts this history"]
    elif view.after is not None:
        out += ["", _after_heading(view, paint), ""]
        out += _after_listing(view, paint, width)
        for problem in view.after.general:
            out += _problem(problem, " " * 4, paint)
    elif before.problems:
        out += ["", "(add --fix to see the repaired history)"]
    return "\n".join(out) + "\n"


def _heading(view: View, source: str, paint: _Paint) -> str:
    before = view.before
    calls, results = before.count("call"), before.count("result")
    first = (
        f"{terminal(source)}: {before.format} history, {_plural(len(before.rows), 'message')}, "
        f"{_plural(calls, 'call')}, {_plural(results, 'result')}"
    )
    problems = before.problems
    if problems:
        second = paint(f"{_plural(len(problems), 'problem')} for {view.provider}", "1;31")
    else:
        second = paint(f"the {view.provider} profile accepts this history", "32")
    return f"{paint(first, '1')}\n{second}"


def _after_heading(view: View, paint: _Paint) -> str:
    after = view.after
    assert after is not None
    left = after.problems
    status = (
        paint(f"{_plural(len(left), 'problem')} left", "1;31")
        if left
        else paint("no problems left", "32")
    )
    text = (
        f"after repair for {view.provider}: {_plural(len(after.rows), 'message')}, "
        f"{_plural(len(view.changes), 'change')}, "
    )
    return paint(text, "1") + status


def _digits(view: View) -> int:
    longest = max(len(view.before.rows), len(view.after.rows) if view.after else 0, 1)
    return max(len(str(longest - 1)), 2)


def _role_width(rows: Sequence[Row]) -> int:
    return min(max((len(terminal(row.role)) for row in rows), default=4), 20)


def _listing(timeline: Timeline, paint: _Paint, width: int, *, index_width: int) -> list[str]:
    roles = _role_width(timeline.rows)
    indent = " " * (index_width + 2 + roles + 2)
    out = [paint(f"{'#':>{index_width}}  {'role':<{roles}}  content", "2")]
    for row in timeline.rows:
        number = f"{row.index:>{index_width}}"
        out.append(_row_line(number, len(number), row, roles, width, paint))
        out += _links(row, indent, paint)
        for problem in row.problems:
            out += _problem(problem, indent, paint)
    return out


def _after_listing(view: View, paint: _Paint, width: int) -> list[str]:
    after = view.after
    assert after is not None
    digits = _digits(view)
    was = {row.index: _was(row) for row in after.rows}
    was_width = max(3, *(len(text) for text in was.values()))
    roles = _role_width([*view.before.rows, *after.rows])
    prefix = digits + 2 + was_width + 2
    indent = " " * (prefix + roles + 2)
    out = [paint(f"{'#':>{digits}}  {'was':>{was_width}}  {'role':<{roles}}  content", "2")]
    placed = set()
    for line in view.lines:
        if line.after is None:
            assert line.before is not None
            out += _gap(view, line, digits, was_width, roles, indent, paint)
            placed.update(view.changes_gone(line.before))
            continue
        row = after.rows[line.after]
        number = f"{row.index:>{digits}}  {paint(f'{was[row.index]:>{was_width}}', '2')}"
        out.append(_row_line(number, digits + 2 + was_width, row, roles, width, paint))
        out += _links(row, indent, paint)
        shown = view.changes_at(row.index)
        placed.update(shown)
        for change_number in shown:
            out.append(_change(view.changes[change_number], indent, paint))
        if not shown and row.origin != "kept":
            # one pointer per code and input message: two moves out of one message are one
            # "see" (the changes themselves are listed where they sit)
            pointers = dict.fromkeys(
                (view.changes[n].code, view.changes[n].index)
                for n in view.related.get(row.index, ())
            )
            for code, index in pointers:
                out.append(indent + paint(f"** {row.origin}: see {code} at input #{index}", "33"))
        for problem in row.problems:
            out += _problem(problem, indent, paint)
    rest = [view.changes[n] for n in range(len(view.changes)) if n not in placed]
    for change in rest:
        out.append(_change(change, " " * 4, paint))
    return out


def _gap(
    view: View,
    line: Line,
    digits: int,
    was_width: int,
    roles: int,
    indent: str,
    paint: _Paint,
) -> list[str]:
    """The place an input message held in the repaired history, when it is no longer there."""
    assert line.before is not None
    row = view.before.rows[line.before]
    fate, rows = view.fates[line.before]
    where = "now " + ", ".join(f"#{n}" for n in rows) if rows else fate
    text = (
        f"{'-':>{digits}}  {paint(f'{row.index:>{was_width}}', '2')}  "
        f"{paint(f'{terminal(row.role):<{roles}}', '2')}  {paint(f'({where})', '2')}"
    )
    out = [text]
    for change_number in view.changes_gone(line.before):
        out.append(_change(view.changes[change_number], indent, paint))
    return out


def _was(row: Row) -> str:
    """Where a repaired row came from: the input index, ``+`` for a new message, or the
    indexes it joins (``2-4``)."""
    if row.origin == "unknown":
        return "?"
    if not row.source or row.origin == "placeholder":
        return "+"
    if len(row.source) == 1:
        return str(row.source[0])
    ordered = sorted(row.source)
    if ordered == list(range(ordered[0], ordered[-1] + 1)):
        return f"{ordered[0]}-{ordered[-1]}"
    return ",".join(str(index) for index in row.source)


def _row_line(
    number: str, number_width: int, row: Row, roles: int, width: int, paint: _Paint
) -> str:
    """The message's own line; ``number_width`` is how wide ``number`` shows, colour aside."""
    room = max(width - number_width - roles - 4, 12)
    preview = one_line(row.text, room) if row.text else paint("(no text)", "2")
    role = paint(f"{terminal(row.role):<{roles}}", _ROLE_COLOURS.get(row.kind, "0"))
    return f"{number}  {role}  {preview}".rstrip()


def _tag(link: Link, paint: _Paint) -> str:
    if not link.label:
        return paint("[?]", "1;31")
    return paint(f"[{link.label}]", "1;36")


def _named(name: str | None, link_id: str | None) -> str:
    shown_id = terminal(link_id) if link_id is not None else "no id"
    return f"{terminal(name) if name else '(no name)'} ({shown_id})"


def _links(row: Row, indent: str, paint: _Paint) -> list[str]:
    out = []
    for call in row.calls:
        text = f"-> {_tag(call, paint)} call {_named(call.name, call.id)}"
        if call.state == "missing":
            text += ": " + paint("NO RESULT", "1;31")
        else:
            text += f", result in #{call.peer}"
        out.append(indent + text)
    for result in row.results:
        if result.state == "orphan":
            subject = terminal(result.id) if result.id is not None else "(no id)"
            text = f"<- {_tag(result, paint)} result for {subject}: "
            text += paint("ORPHAN", "1;31") + ", no call in the history answers to it"
            if result.name:
                text += f" (named {terminal(repr(result.name))})"
        else:
            name = result.call_name or result.name
            text = f"<- {_tag(result, paint)} result of {_named(name, result.id)}"
            if result.name and result.name != result.call_name:
                text += f", named {terminal(repr(result.name))}"
            if result.state == "duplicate":
                text += ": " + paint("DUPLICATE", "1;31") + f", the call in #{result.peer}"
                text += " was already answered"
            else:
                text += f", call in #{result.peer}"
        out.append(indent + text)
    return out


def _problem(problem: Problem, indent: str, paint: _Paint) -> list[str]:
    rule = f" [{problem.rule}]" if problem.rule else ""
    ids = f" {', '.join(map(terminal, problem.ids))}" if problem.ids else ""
    first = paint(f"!! {problem.code}{rule}{ids}", "1;31") + f": {terminal(problem.message)}"
    second = indent + "   " + paint(f"provider error: {terminal(problem.provider_error)}", "31")
    return [indent + first, second]


def _change(change: Change, indent: str, paint: _Paint) -> str:
    kind = category(change.code)
    ids = f" ({', '.join(map(terminal, change.ids))})" if change.ids else ""
    head = paint(f"** {kind}: {change.code}{ids}", _CHANGE_COLOURS.get(kind, "33"))
    return f"{indent}{head}: {terminal(change.detail)}"


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"
