"""The counts of :mod:`toolmend._stats.logs` as one self-contained HTML page.

Inline CSS and an inline SVG chart, no script and nothing fetched (the page's
Content-Security-Policy forbids both). The chart has one bar per change code, its length the
changes made with that code, split by provider; every number is also in the tables below it,
which hold what ``toolmend stats`` prints. Everything read from a log (providers, hooks, codes,
file names) is HTML-escaped: a log line is untrusted text.
"""

from __future__ import annotations

from collections import Counter

from .._escape import html as escape
from .logs import FAILURE_REASONS, HOOK_COLUMNS, Stats, Table
from .tables import ALL, REPORT_HINT, error_rows, table_rows

__all__ = ["render"]

_POLICY = "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'"

_COLOURS = ("#0969da", "#bf3989", "#1a7f37", "#bc4c00", "#8250df", "#0a7ea4", "#9a6700", "#cf222e")

_CSS = """
:root{--bg:#fff;--fg:#1f2328;--dim:#656d76;--line:#d0d7de;--soft:#f6f8fa}
@media (prefers-color-scheme:dark){:root{--bg:#0d1117;--fg:#e6edf3;--dim:#8d96a0;
--line:#30363d;--soft:#161b22}}
body{margin:0;padding:16px 20px 40px;background:var(--bg);color:var(--fg);
font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;max-width:1000px}
h1{font-size:18px;margin:0 0 4px}h2{font-size:15px;margin:22px 0 6px}
.sum{color:var(--dim);margin:0 0 2px}.sum b{color:var(--fg)}
table{border-collapse:collapse;margin:4px 0}
td,th{border-top:1px solid var(--line);padding:3px 10px;text-align:left}
th{color:var(--dim);font-weight:500}td.n{text-align:right;font-variant-numeric:tabular-nums}
tr.total td{font-weight:600;background:var(--soft)}
code{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12.5px}
svg text{fill:var(--fg);font:12px ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
svg text.dim{fill:var(--dim)}
.legend span{display:inline-block;margin-right:14px}
.legend i{display:inline-block;width:11px;height:11px;border-radius:2px;margin-right:5px;
vertical-align:-1px}
.none{color:var(--dim)}
"""

_LABEL = 190
"""Pixels for the code names left of the bars."""
_BARS = 520
_ROW = 24


def render(stats: Stats) -> str:
    """The page for ``stats``, as text (UTF-8 when written)."""
    files = ", ".join(stats.files)
    out = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{_POLICY}">',
        '<meta name="viewport" content="width=device-width,initial-scale=1">',
        f"<title>toolmend stats: {escape(files)}</title>",
        f"<style>{_CSS}</style></head><body>",
        f"<h1>toolmend stats: {escape(files)}</h1>",
        f'<p class="sum" id="summary"><b>{stats.lines}</b> lines read, '
        f"<b>{stats.toolmend_lines}</b> from toolmend: "
        f"<b>{stats.repaired.total_requests}</b> requests repaired with "
        f"<b>{stats.repaired.total_items}</b> changes, "
        f"<b>{stats.problems_left.total_requests}</b> with problems left, "
        f"<b>{stats.loops.total_requests}</b> with a loop guard finding, "
        f"<b>{stats.total_failures}</b> sent unrepaired"
        + (f", <b>{stats.total_rescues}</b> rescued after a 400" if stats.total_rescues else "")
        + "</p>",
    ]
    if not stats.toolmend_lines:
        out.append(
            '<p id="empty">No toolmend log lines found: toolmend writes one line per request it '
            "repairs, on logger <code>toolmend</code>. To see them, set "
            "<code>TOOLMEND_LOG=info</code> in the environment of the app or the LiteLLM Proxy "
            "(docs/observability.md).</p>"
        )
    else:
        out += _chart(stats.repaired)
        out += _table("Repaired", "repaired", stats.repaired, "change code", "changes")
        out += _table("Problems left", "problems", stats.problems_left, "problem code", "problems")
        out += _table("Loop guard", "loops", stats.loops, "finding", "findings")
        out += _failures(stats)
        out += _hooks(stats)
        out += _rescues(stats)
        if stats.healed.total_requests:
            out += _table(
                "Stored histories healed (not requests)",
                "healed",
                stats.healed,
                "change code",
                "changes",
            )
        out += _counts(
            "Messages a LangChain history store refused", "refused", "hook", stats.refused
        )
        out += _counts("Other toolmend errors", "errors", "error", stats.errors)
    out.append("</body></html>")
    return "\n".join(out) + "\n"


def _chart(table: Table) -> list[str]:
    """One bar per change code, the most used first, split by provider."""
    if not table.total_requests:
        return []
    providers = sorted(table.requests)
    colour = {p: _COLOURS[n % len(_COLOURS)] for n, p in enumerate(providers)}
    per_code: Counter[str] = Counter()
    for (_, code), count in table.code_items.items():
        per_code[code] += count
    if not per_code:  # repaired lines whose codes could not be read: nothing to draw
        return []
    codes = sorted(per_code, key=lambda code: (-per_code[code], code))
    most = max(per_code.values())
    height = _ROW * len(codes) + 8
    width = _LABEL + _BARS + 60
    out = [
        "<h2>Changes by code and provider</h2>",
        '<p class="legend">'
        + "".join(
            f'<span><i style="background:{colour[p]}"></i>{escape(p)}</span>' for p in providers
        )
        + "</p>",
        f'<svg id="chart" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="changes by code and provider">',
    ]
    for row, code in enumerate(codes):
        y = 4 + row * _ROW
        out.append(f'<text x="{_LABEL - 8}" y="{y + 15}" text-anchor="end">{escape(code)}</text>')
        x = float(_LABEL)
        for provider in providers:
            changes = table.code_items.get((provider, code), 0)
            if not changes:
                continue
            requests = table.code_requests[provider, code]
            length = max(_BARS * changes / most, 1.0)
            tip = f"{code} for {provider}: {changes} change(s) in {requests} request(s)"
            out.append(
                f'<rect x="{x:.1f}" y="{y + 2}" width="{length:.1f}" height="{_ROW - 6}" '
                f'fill="{colour[provider]}" data-code="{escape(code)}" '
                f'data-provider="{escape(provider)}" data-changes="{changes}" '
                f'data-requests="{requests}"><title>{escape(tip)}</title></rect>'
            )
            x += length
        out.append(f'<text class="dim" x="{x + 6:.1f}" y="{y + 15}">{per_code[code]}</text>')
    out.append("</svg>")
    return out


def _table(title: str, ident: str, table: Table, code: str, count: str) -> list[str]:
    out = [f"<h2>{title} ({_plural(table.total_requests, 'request')})</h2>"]
    if not table.total_requests:
        return [*out, f'<p class="none" id="{ident}">none</p>']
    out.append(
        f'<table id="{ident}"><tr><th>provider</th><th>{code}</th><th>requests</th>'
        f"<th>{count}</th></tr>"
    )
    for provider, name, requests, items in table_rows(table):
        total = ' class="total"' if name == ALL else ""
        out.append(
            f'<tr{total} data-provider="{escape(provider)}" data-code="{escape(name)}" '
            f'data-requests="{requests}" data-count="{items}"><td>{escape(provider)}</td>'
            f'<td><code>{escape(name)}</code></td><td class="n">{requests}</td>'
            f'<td class="n">{items}</td></tr>'
        )
    out.append("</table>")
    return out


def _failures(stats: Stats) -> list[str]:
    out = [f"<h2>Sent unrepaired ({_plural(stats.total_failures, 'request')})</h2>"]
    if not stats.total_failures:
        return [*out, '<p class="none" id="failures">none</p>']
    out.append(
        '<p class="sum">toolmend failed and the original went out, or it could not read the '
        "history (the caller's data), or the request was over the hook's budget</p>"
    )
    out.append(
        '<table id="failures"><tr><th>hook</th><th>failed</th><th>unreadable</th>'
        "<th>over budget</th></tr>"
    )
    for hook in sorted({hook for hook, _ in stats.failures}):
        failed, unreadable, over = (stats.failures[hook, reason] for reason in FAILURE_REASONS)
        out.append(
            f'<tr data-hook="{escape(hook)}" data-failed="{failed}" '
            f'data-unreadable="{unreadable}" data-over-budget="{over}">'
            f"<td><code>{escape(hook)}</code></td>"
            f'<td class="n">{failed}</td><td class="n">{unreadable}</td>'
            f'<td class="n">{over}</td></tr>'
        )
    out.append("</table>")
    return out


def _hooks(stats: Stats) -> list[str]:
    if not stats.hooks:
        return []
    head = "".join(f"<th>{column.replace('_', ' ')}</th>" for column in HOOK_COLUMNS)
    out = ["<h2>By hook (requests)</h2>", f'<table id="hooks"><tr><th>hook</th>{head}</tr>']
    for hook in sorted(stats.hooks):
        counts = stats.hooks[hook]
        data = " ".join(
            f'data-{column.replace("_", "-")}="{counts[column]}"' for column in HOOK_COLUMNS
        )
        cells = "".join(f'<td class="n">{counts[column]}</td>' for column in HOOK_COLUMNS)
        name = escape(hook)
        out.append(f'<tr data-hook="{name}" {data}><td><code>{name}</code></td>{cells}</tr>')
    out.append("</table>")
    return out


def _rescues(stats: Stats) -> list[str]:
    """The requests sent once more after a 400, by rule, and the provider errors behind them
    (text from the log: escaped like every other value)."""
    if not stats.total_rescues:
        return []
    out = [
        f"<h2>Rescued after a 400 ({_plural(stats.total_rescues, 'request')} sent once more)</h2>",
        '<table id="rescues"><tr><th>hook</th><th>provider</th><th>rule</th><th>profile</th>'
        "<th>requests</th></tr>",
    ]
    for (hook, provider, rule, profile), count in sorted(stats.rescues.items()):
        out.append(
            f'<tr data-hook="{escape(hook)}" data-provider="{escape(provider)}" '
            f'data-rule="{escape(rule)}" data-profile="{escape(profile)}" '
            f'data-requests="{count}"><td><code>{escape(hook)}</code></td>'
            f"<td>{escape(provider)}</td><td><code>{escape(rule)}</code></td>"
            f'<td>{escape(profile)}</td><td class="n">{count}</td></tr>'
        )
    out.append("</table>")
    out.append("<h2>Provider errors behind the rescues</h2>")
    out.append(
        '<table id="rescue-errors"><tr><th>provider</th><th>rule</th><th>requests</th>'
        "<th>error (ids and numbers written &lt;id&gt; and N)</th></tr>"
    )
    for provider, rule, count, error in error_rows(stats):
        out.append(
            f'<tr data-provider="{escape(provider)}" data-rule="{escape(rule)}" '
            f'data-requests="{count}"><td>{escape(provider)}</td>'
            f'<td><code>{escape(rule)}</code></td><td class="n">{count}</td>'
            f"<td><code>{escape(error)}</code></td></tr>"
        )
    out.append("</table>")
    out.append(f'<p class="sum">{escape(REPORT_HINT)}</p>')
    return out


def _counts(title: str, ident: str, name: str, counts: Counter[str]) -> list[str]:
    if not counts:
        return []
    out = [f"<h2>{title}</h2>", f'<table id="{ident}"><tr><th>{name}</th><th>count</th></tr>']
    for key, count in sorted(counts.items()):
        out.append(
            f'<tr data-name="{escape(key)}" data-count="{count}"><td>{escape(key)}</td>'
            f'<td class="n">{count}</td></tr>'
        )
    out.append("</table>")
    return out


def _plural(number: int, noun: str) -> str:
    return f"{number} {noun}" if number == 1 else f"{number} {noun}s"
