"""The timeline as one self-contained HTML page: inline CSS and a few lines of inline script,
nothing fetched from anywhere (the page's Content-Security-Policy forbids it).

The page holds, top to bottom: a summary, the problems and the changes as lists linked to
their messages, then the timeline. With a repair the input and the repaired history stand side
by side, aligned like a diff: a message kept is beside itself, a dropped one has an empty
place with the change that dropped it, a new one has nothing beside it. Every call is joined
to its result by a line drawn in a gutter beside each side, and call and result carry the same
label; hovering either lights up both. Each message's full content is in a closed
``<details>``.

Everything is drawn server-side as static HTML and plain CSS, so a 5,000-message history
opens quickly: the link lines are short absolutely positioned borders in the gutter of each
row (no layout is measured by script), rows outside the window are skipped by the browser
(``content-visibility: auto``), and the full content of a message the repair kept as it was
is shown once, on the input side. The script only highlights links and filters rows, and the
page works without it.

Message content is untrusted: every piece of it is HTML-escaped, and the policy allows no
script but the page's own (by its hash), so a ``<script>`` in a message is shown, not run.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Sequence

from .._escape import html as escape
from .._report import Change, Problem
from .content import full_text
from .timeline import Line, Link, Row, Timeline, View, category

__all__ = ["BIG", "MAX_LANES", "render"]

MAX_LANES = 10
"""The most link lines drawn side by side in one gutter; further links keep their labels."""

_LANE = 9
"""Pixels between two lanes of a gutter."""

BIG = 400
"""Above this many lines the browser skips laying out the rows out of view
(``content-visibility``): quick to open, at the price of a scroll bar that settles while
scrolling."""

_SCRIPT = """
(function () {
  var lit = [], current = null;
  document.addEventListener("mouseover", function (event) {
    var target = event.target.closest ? event.target.closest("[data-k]") : null;
    var key = target ? target.getAttribute("data-k") : null;
    if (key === current) return;
    lit.forEach(function (el) { el.classList.remove("hl"); });
    lit = [];
    current = key;
    if (key) {
      lit = Array.prototype.slice.call(
        document.querySelectorAll('[data-k="' + CSS.escape(key) + '"]'));
      lit.forEach(function (el) { el.classList.add("hl"); });
    }
  });
  var only = document.getElementById("only");
  if (only) only.addEventListener("change", function () {
    document.body.classList.toggle("only", only.checked);
  });
})();
"""

_SCRIPT_HASH = base64.b64encode(hashlib.sha256(_SCRIPT.encode()).digest()).decode()

_POLICY = (
    "default-src 'none'; style-src 'unsafe-inline'; img-src data:; "
    f"script-src 'sha256-{_SCRIPT_HASH}'; base-uri 'none'; form-action 'none'"
)

_CSS = """
:root{--bg:#fff;--fg:#1f2328;--dim:#656d76;--line:#d0d7de;--soft:#f6f8fa;--bad:#cf222e;
--badbg:#ffebe9;--good:#1a7f37;--goodbg:#dafbe1;--warn:#9a6700;--warnbg:#fff8c5;--mono:ui-monospace,
SFMono-Regular,Menlo,Consolas,monospace}
@media (prefers-color-scheme:dark){:root{--bg:#0d1117;--fg:#e6edf3;--dim:#8d96a0;--line:#30363d;
--soft:#161b22;--bad:#ff7b72;--badbg:#3c1618;--good:#3fb950;--goodbg:#12261e;--warn:#d29922;
--warnbg:#2e2410}}
*{box-sizing:border-box}
body{margin:0;padding:16px 20px 40px;background:var(--bg);color:var(--fg);
font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif}
h1{font-size:18px;margin:0 0 4px}h2{font-size:15px;margin:18px 0 6px}
code,pre,.pv{font-family:var(--mono);font-size:12.5px}
.sum{color:var(--dim);margin:0 0 2px}.sum b{color:var(--fg)}
.bad{color:var(--bad)}.good{color:var(--good)}
table.list{border-collapse:collapse;width:100%;margin:4px 0}
table.list td,table.list th{border-top:1px solid var(--line);padding:3px 8px;text-align:left;
vertical-align:top}table.list th{color:var(--dim);font-weight:500}
a{color:inherit}
.bar{display:flex;gap:16px;align-items:center;margin:14px 0 6px;color:var(--dim)}
.heads{position:sticky;top:0;z-index:3;background:var(--bg);border-bottom:1px solid var(--line)}
.ln,.heads{display:grid;grid-template-columns:var(--gb) minmax(0,1fr)}
.two .ln,.two .heads{grid-template-columns:var(--gb) minmax(0,1fr) var(--ga) minmax(0,1fr)}
.heads div{padding:6px 8px;font-weight:600}
.big .ln{content-visibility:auto;contain-intrinsic-size:auto 34px}
body.only .ln:not(.hot){display:none}
.g{position:relative;min-height:100%}
.g i{position:absolute;display:block;pointer-events:none;border-color:var(--c)}
.g i.pm{top:0;bottom:0;width:0;border-left:2px solid var(--c)}
.g i.ps{top:15px;bottom:0;right:0;border-left:2px solid var(--c);border-top:2px solid var(--c);
border-top-left-radius:6px}
.g i.pe{top:0;height:16px;right:0;border-left:2px solid var(--c);border-bottom:2px solid var(--c);
border-bottom-left-radius:6px}
.g i.pd{border-style:dashed}
.g i.hl{border-width:3px}
.m{min-width:0;padding:4px 8px;border-bottom:1px solid var(--line)}
.m.none{background:repeating-linear-gradient(135deg,transparent 0 6px,var(--soft) 6px 12px)}
.m.gap{color:var(--dim);background:var(--soft)}
.m.prob{background:var(--badbg)}
.m.chg{background:var(--warnbg)}
.m.new{background:var(--goodbg)}
.h{display:flex;gap:8px;align-items:baseline;min-width:0;line-height:22px}
.ix{color:var(--dim);font-family:var(--mono);font-size:12px;min-width:2.5em;text-align:right}
.was{color:var(--dim);font-family:var(--mono);font-size:11px;text-decoration:none}
.ro{font-weight:600;font-size:12.5px}
.r-user{color:#1a7f37}.r-assistant{color:#0969da}.r-tool{color:#8250df}.r-system{color:var(--dim)}
.r-other{color:#9a6700}
.pv{flex:1;min-width:0;white-space:nowrap;overflow:hidden;text-overflow:ellipsis}
.pv.empty{color:var(--dim);font-style:italic;font-family:inherit}
ul.lk{list-style:none;margin:0;padding:0 0 0 3.2em}
ul.lk li{font-size:12.5px;line-height:20px}
ul.lk li.hl{outline:2px solid var(--c);border-radius:3px}
ul.lk li.missing .lb,ul.lk li.orphan .lb{background:var(--bad)}
.lb{display:inline-block;min-width:1.7em;text-align:center;border-radius:4px;color:#fff;
background:var(--c);font:600 11px/16px var(--mono);padding:0 3px}
.lb.no{background:var(--bad)}
.flag{color:var(--bad);font-weight:700}
.pb,.cg{margin:3px 0 2px 3.2em;font-size:12.5px}
.pb b{color:var(--bad)}.pb q{display:block;color:var(--bad);font-family:var(--mono);
font-size:12px;quotes:none;white-space:pre-wrap;word-break:break-word}
.cg b{color:var(--warn)}.cat{display:inline-block;font-size:11px;font-weight:700;
text-transform:uppercase;letter-spacing:.03em;margin-right:6px;color:var(--dim)}
details{margin:2px 0 2px 3.2em}summary{cursor:pointer;color:var(--dim);font-size:12px}
pre{margin:4px 0;padding:6px 8px;background:var(--soft);border-radius:4px;white-space:pre-wrap;
word-break:break-word;max-height:420px;overflow:auto}
.k0{--c:#0969da}.k1{--c:#bf3989}.k2{--c:#1a7f37}.k3{--c:#bc4c00}.k4{--c:#8250df}
.k5{--c:#0a7ea4}.k6{--c:#9a6700}.k7{--c:#cf222e}
.legend{color:var(--dim);font-size:12.5px}
""" + "".join(f".g i.w{lane}{{left:{4 + lane * _LANE}px}}" for lane in range(MAX_LANES))


def render(view: View, *, source: str) -> str:
    """The page for ``view``, as text (UTF-8 when written).

    **Parameters:**

    * **view** - what :func:`toolmend._show.timeline.build` made.
    * **source** - the name to show for the history (the file name).
    """
    two = view.after is not None
    lines = view.lines if two else tuple(Line(row.index, None) for row in view.before.rows)
    before_pieces, before_lanes = _lanes(view.before, lines, "before")
    after_pieces, after_lanes = (
        _lanes(view.after, lines, "after") if view.after is not None else ({}, 0)
    )
    widths = f":root{{--gb:{_gutter(before_lanes)}px;--ga:{_gutter(after_lanes)}px}}"
    out = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{_POLICY}">',
        '<meta name="viewport" content="width=device-width,initial-scale=1">',
        f"<title>toolmend show: {escape(source)}</title>",
        f"<style>{_CSS}{widths}</style></head>",
        f'<body class="{"two" if two else "one"}{" big" if len(lines) > BIG else ""}">',
    ]
    out += _summary(view, source)
    out += _problem_list(view)
    out += _change_list(view)
    out.append('<div class="bar"><label><input type="checkbox" id="only"> only messages with a')
    out.append(" problem or a change</label>")
    out.append('<span class="legend">→ call · ← result · one label and colour per call; ')
    out.append("hover a label to light up both ends</span></div>")
    out.append('<div class="tl">')
    out += _heads(view)
    for number, line in enumerate(lines):
        out.append(_line(view, line, before_pieces.get(number, ()), after_pieces.get(number, ())))
    out.append("</div>")
    out.append(f"<script>{_SCRIPT}</script></body></html>")
    return "\n".join(out) + "\n"


# --- summary and lists ------------------------------------------------------------------------


def _summary(view: View, source: str) -> list[str]:
    before = view.before
    out = [f"<h1>toolmend show: {escape(source)}</h1>"]
    counts = (
        f"<b>{escape(before.format)}</b> history, <b>{len(before.rows)}</b> messages, "
        f"{_plural(before.count('call'), 'call')}, "
        f"{_plural(before.count('result'), 'result')}; provider "
        f"<b>{escape(view.provider)}</b>"
    )
    out.append(f'<p class="sum">{counts}</p>')
    problems = before.problems
    if problems:
        verdict = f'<span class="bad">{_plural(len(problems), "problem")}</span>'
    else:
        verdict = '<span class="good">the provider accepts this history</span>'
    if view.after is not None:
        left = view.after.problems
        verdict += (
            f"; the repair makes {_plural(len(view.changes), 'change')}, leaving "
            f"{len(view.after.rows)} messages and "
            + (
                f'<span class="bad">{_plural(len(left), "problem")}</span>'
                if left
                else '<span class="good">no problems</span>'
            )
        )
    elif view.fixed and problems:
        verdict += "; the repair changes nothing"
    out.append(f'<p class="sum" id="verdict">{verdict}</p>')
    return out


def _problem_list(view: View) -> list[str]:
    problems = view.before.problems
    if not problems:
        return []
    out = [
        f"<h2>Problems for {escape(view.provider)} ({len(problems)})</h2>",
        '<table class="list" id="problems"><tr><th>message</th><th>problem</th>'
        "<th>provider error</th></tr>",
    ]
    for problem in problems:
        out.append(
            f'<tr data-code="{escape(problem.code)}" data-index="{problem.index}">'
            f'<td><a href="#b{problem.index}">#{problem.index}</a></td>'
            f"<td>{_problem_name(problem)}</td><td><code>{escape(problem.provider_error)}</code>"
            "</td></tr>"
        )
    out.append("</table>")
    return out


def _change_list(view: View) -> list[str]:
    if view.after is None:
        return []
    out = [
        f"<h2>Changes ({len(view.changes)})</h2>",
        '<table class="list" id="changes"><tr><th>input</th><th>now</th><th>change</th>'
        "<th>detail</th></tr>",
    ]
    for number, change in enumerate(view.changes):
        at = view.shown_at[number]
        now = f'<a href="#a{at}">#{at}</a>' if at is not None else "—"
        out.append(
            f'<tr data-change="{number}" data-code="{escape(change.code)}" '
            f'data-index="{change.index}"><td><a href="#b{change.index}">#{change.index}</a></td>'
            f"<td>{now}</td><td>{_change_name(change)}</td><td>{escape(change.detail)}</td></tr>"
        )
    out.append("</table>")
    return out


def _heads(view: View) -> list[str]:
    before = view.before
    left = f"<div></div><div>input: {len(before.rows)} messages"
    left += f", {_plural(len(before.problems), 'problem')}</div>" if before.problems else "</div>"
    if view.after is None:
        return [f'<div class="heads">{left}</div>']
    after = view.after
    right = f"<div></div><div>repaired: {len(after.rows)} messages, "
    right += f"{_plural(len(view.changes), 'change')}"
    right += (
        f", {_plural(len(after.problems), 'problem')} left</div>" if after.problems else "</div>"
    )
    return [f'<div class="heads">{left}{right}</div>']


# --- one line of the timeline -----------------------------------------------------------------


def _line(
    view: View,
    line: Line,
    before_pieces: Sequence[tuple[int, str, str]],
    after_pieces: Sequence[tuple[int, str, str]],
) -> str:
    parts: list[str] = []
    hot = False
    parts.append(_gutter_html(before_pieces, "b"))
    if line.before is not None:
        row = view.before.rows[line.before]
        hot = hot or bool(row.problems)
        parts.append(_before_cell(view, row))
    else:
        parts.append('<div class="m none"></div>')
    if view.after is not None:
        parts.append(_gutter_html(after_pieces, "a"))
        if line.after is not None:
            row = view.after.rows[line.after]
            cell, changed = _after_cell(view, row)
            hot = hot or changed
            parts.append(cell)
        else:
            assert line.before is not None
            parts.append(_gap_cell(view, line.before))
            hot = True
    return f'<div class="ln{" hot" if hot else ""}">{"".join(parts)}</div>'


def _before_cell(view: View, row: Row) -> str:
    fate = view.fates[row.index][0] if view.after is not None else "kept"
    classes = "m prob" if row.problems else "m"
    out = [
        f'<div class="{classes}" id="b{row.index}" data-fate="{fate}">',
        _head(row, "b"),
        _links(row, "b"),
    ]
    for problem in row.problems:
        out.append(_problem(problem))
    out.append(_details(row))
    out.append("</div>")
    return "".join(out)


def _after_cell(view: View, row: Row) -> tuple[str, bool]:
    shown = view.changes_at(row.index)
    related = view.related.get(row.index, ())
    changed = bool(shown) or row.origin != "kept"
    if row.problems:
        classes = "m prob"
    elif row.origin in ("placeholder", "inserted"):
        classes = "m new"
    else:
        classes = "m chg" if changed else "m"
    source = " ".join(str(index) for index in row.source)
    about = f' data-changes="{" ".join(map(str, related))}"' if related else ""
    out = [
        f'<div class="{classes}" id="a{row.index}" data-origin="{escape(row.origin)}" '
        f'data-source="{source}"{about}>',
        _head(row, "a"),
        _links(row, "a"),
    ]
    for number in shown:
        out.append(_change(view.changes[number], number))
    if not shown and row.origin != "kept":
        # one pointer per code and input message, as the text view
        pointers = dict.fromkeys((view.changes[n].code, view.changes[n].index) for n in related)
        for code, index in pointers:
            out.append(
                f'<div class="cg">{escape(row.origin)}: see <a href="#b{index}">'
                f"{escape(code)} at input #{index}</a></div>"
            )
    for problem in row.problems:
        out.append(_problem(problem))
    if row.origin != "kept" or not row.source:  # a kept message is shown in full on the left
        out.append(_details(row))
    out.append("</div>")
    return "".join(out), changed


def _gap_cell(view: View, index: int) -> str:
    row = view.before.rows[index]
    fate, rows = view.fates[index]
    if not rows:
        where = escape(fate)
    else:
        where = "now " + ", ".join(f'<a href="#a{n}">#{n}</a>' for n in rows)
    out = [
        f'<div class="m gap" data-gap="{index}" data-fate="{fate}"><div class="h">'
        f'<span class="ix">·</span><span class="ro r-{escape(row.kind)}">{escape(row.role)}</span>'
        f"<span>input #{index}: {where}</span></div>"
    ]
    for number in view.changes_gone(index):
        out.append(_change(view.changes[number], number))
    out.append("</div>")
    return "".join(out)


def _head(row: Row, side: str) -> str:
    preview = (
        f'<span class="pv">{escape(row.preview)}</span>'
        if row.preview
        else '<span class="pv empty">(no text)</span>'
    )
    was = ""
    if side == "a" and row.origin == "kept" and row.source:
        was = f'<a class="was" href="#b{row.source[0]}">= input #{row.source[0]}</a>'
    elif side == "a":
        was = f'<span class="was">{escape(_was(row))}</span>'
    return (
        f'<div class="h"><span class="ix">{row.index}</span>{was}'
        f'<span class="ro r-{escape(row.kind)}">{escape(row.role)}</span>{preview}</div>'
    )


def _was(row: Row) -> str:
    if row.origin == "placeholder":
        return "new: placeholder result"
    if row.origin == "unknown":
        return "origin unknown"
    if not row.source:
        return f"new: {row.origin}"
    where = ", ".join(f"#{index}" for index in row.source)
    return f"from {where}" + ("" if row.origin == "kept" else f", {row.origin}")


def _links(row: Row, side: str) -> str:
    if not row.calls and not row.results:
        return ""
    items = []
    for call in row.calls:
        status = (
            '<span class="flag">NO RESULT</span>'
            if call.state == "missing"
            else f'result in <a href="#{side}{call.peer}">#{call.peer}</a>'
        )
        items.append(
            f"<li {_attrs(call)}>{_badge(call)} → call <code>{escape(call.name or '(no name)')}"
            f"</code> <code>{escape(_id(call.id))}</code> · {status}</li>"
        )
    for result in row.results:
        if result.state == "orphan":
            text = (
                f"← result for <code>{escape(_id(result.id))}</code> · "
                '<span class="flag">ORPHAN</span>: no call in the history answers to it'
            )
            if result.name:
                text += f" (named <code>{escape(result.name)}</code>)"
        else:
            name = result.call_name or result.name or "(no name)"
            text = f"← result of <code>{escape(name)}</code> <code>{escape(_id(result.id))}</code>"
            if result.name and result.name != result.call_name:
                text += f" · named <code>{escape(result.name)}</code>"
            call_at = f'<a href="#{side}{result.peer}">#{result.peer}</a>'
            if result.state == "duplicate":
                text += f' · <span class="flag">DUPLICATE</span>: the call in {call_at}'
                text += " was already answered"
            else:
                text += f" · call in {call_at}"
        items.append(f"<li {_attrs(result)}>{_badge(result)} {text}</li>")
    return f'<ul class="lk">{"".join(items)}</ul>'


def _attrs(link: Link) -> str:
    """The link's kind and state as classes, its id and label as data (for the highlight)."""
    kind = "call" if link.kind == "call" else "result"
    attrs = f'class="{kind} {link.state} {_colour(link.label)}" data-id="{escape(link.id or "")}"'
    if link.name:
        attrs += f' data-name="{escape(link.name)}"'
    if link.label:
        attrs += f' data-k="{link.label}"'
    return attrs


def _badge(link: Link) -> str:
    if not link.label:
        return '<b class="lb no">?</b>'
    return f'<b class="lb">{link.label}</b>'


def _id(link_id: str | None) -> str:
    return link_id if link_id is not None else "(no id)"


def _problem(problem: Problem) -> str:
    return (
        f'<div class="pb" data-code="{escape(problem.code)}">{_problem_name(problem)}: '
        f"{escape(problem.message)}<q>{escape(problem.provider_error)}</q></div>"
    )


def _problem_name(problem: Problem) -> str:
    rule = f" [{escape(problem.rule)}]" if problem.rule else ""
    ids = f" <code>{escape(', '.join(problem.ids))}</code>" if problem.ids else ""
    return f"<b>{escape(problem.code)}</b>{rule}{ids}"


def _change(change: Change, number: int) -> str:
    return (
        f'<div class="cg" data-change="{number}" data-code="{escape(change.code)}" '
        f'data-index="{change.index}">{_change_name(change)}: {escape(change.detail)}</div>'
    )


def _change_name(change: Change) -> str:
    ids = f" <code>{escape(', '.join(change.ids))}</code>" if change.ids else ""
    return (
        f'<span class="cat">{escape(category(change.code))}</span><b>{escape(change.code)}</b>{ids}'
    )


def _details(row: Row) -> str:
    return (
        "<details><summary>full message</summary>"
        f"<pre>{escape(full_text(row.message), quote=False)}</pre></details>"
    )


# --- the link lines ---------------------------------------------------------------------------


def _lanes(
    timeline: Timeline, lines: Sequence[Line], side: str
) -> tuple[dict[int, list[tuple[int, str, str]]], int]:
    """Per line, the pieces of link lines crossing it: (lane, piece, label), where a piece is
    ``ps`` (the link starts on this line), ``pm`` (passes it) or ``pe`` (ends on it); ``pd``
    draws a duplicate's link dashed. Links get the first lane free over their span."""
    line_of: dict[int, int] = {}
    for number, line in enumerate(lines):
        index = line.before if side == "before" else line.after
        if index is not None:
            line_of[index] = number
    spans: list[tuple[int, int, str, str]] = []
    for row in timeline.rows:
        for call in row.calls:
            if call.peer is not None and call.peer != row.index:
                ends = sorted((line_of[row.index], line_of[call.peer]))
                spans.append((ends[0], ends[1], call.label, ""))
        for result in row.results:
            if result.state == "duplicate" and result.peer is not None:
                ends = sorted((line_of[result.peer], line_of[row.index]))
                if ends[0] != ends[1]:
                    spans.append((ends[0], ends[1], result.label, " pd"))
    spans.sort(key=lambda span: (span[0], -span[1]))  # the longest outermost: fewer crossings
    lane_end: list[int] = []
    pieces: dict[int, list[tuple[int, str, str]]] = {}
    for low, high, name, style in spans:
        lane = next((n for n, end in enumerate(lane_end) if end < low), None)
        if lane is None:
            if len(lane_end) >= MAX_LANES:
                continue
            lane = len(lane_end)
            lane_end.append(high)
        else:
            lane_end[lane] = high
        pieces.setdefault(low, []).append((lane, "ps" + style, name))
        for number in range(low + 1, high):
            pieces.setdefault(number, []).append((lane, "pm" + style, name))
        pieces.setdefault(high, []).append((lane, "pe" + style, name))
    return pieces, len(lane_end)


def _gutter(lanes: int) -> int:
    return 10 + lanes * _LANE


def _gutter_html(pieces: Sequence[tuple[int, str, str]], side: str) -> str:
    drawn = "".join(
        f'<i class="{piece} {_colour(name)} w{lane}" data-k="{name}"></i>'
        for lane, piece, name in pieces
    )
    return f'<div class="g {side}">{drawn}</div>'


def _colour(name: str) -> str:
    number = 0
    for letter in name:
        number = number * 26 + ord(letter) - 64
    return f"k{number % 8}" if name else ""


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"
