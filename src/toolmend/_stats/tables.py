"""The counts of :mod:`toolmend._stats.logs` as plain-text tables, and as a JSON summary.

The text is meant for a terminal or an issue: aligned columns, one section per kind of line,
a section with nothing to count says so in one line. The JSON summary holds the same numbers
for a script (a dashboard, a CI check).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .._escape import terminal
from .logs import FAILURE_REASONS, HOOK_COLUMNS, Stats, Table

__all__ = ["ALL", "HOW_TO_LOG", "REPORT_HINT", "error_rows", "render_text", "summary"]

HOW_TO_LOG = (
    "to see them, set TOOLMEND_LOG=info in the environment of the app or the LiteLLM Proxy "
    "(or let logger 'toolmend' through at INFO in your logging setup): docs/observability.md"
)
"""What ``stats`` says when a log holds no toolmend line."""

REPORT_HINT = (
    "a 'flattened' rescue is an error toolmend has no rule for: docs/observability.md says how "
    "to report it"
)
"""What ``stats`` says under the provider errors of the rescues."""

ALL = "(all)"
"""The code column of a provider's total row (no change code has parentheses)."""


def _grid(head: Sequence[str], rows: Sequence[Sequence[object]]) -> list[str]:
    """``rows`` under ``head``, aligned: text columns to the left, numbers to the right."""
    cells = [[str(value) for value in row] for row in rows]
    numeric = [all(isinstance(row[n], int) for row in rows) for n in range(len(head))]
    widths = [max(len(text) for text in column) for column in zip(head, *cells, strict=False)]
    out = []
    for row in [list(head), *cells]:
        parts = [
            text.rjust(width) if numeric[n] else text.ljust(width)
            for n, (text, width) in enumerate(zip(row, widths, strict=True))
        ]
        out.append("  " + "  ".join(parts).rstrip())
    return out


def table_rows(table: Table) -> list[tuple[str, str, int, int]]:
    """Each provider's total row, then its codes."""
    rows: list[tuple[str, str, int, int]] = []
    for provider in sorted(table.requests):
        rows.append((provider, ALL, table.requests[provider], table.items[provider]))
        rows += [row for row in table.rows() if row[0] == provider]
    return rows


def _section(
    title: str, table: Table, code: str, count: str, none: str, unit: str = "request"
) -> list[str]:
    if not table.total_requests:
        return [f"{title}: {none}"]
    out = [
        f"{title}: {_plural(table.total_requests, unit)}, "
        f"{_plural(table.total_items, count.rstrip('s'))}"
    ]
    out += _grid(("provider", code, unit + "s", count), table_rows(table))
    return out


def _plural(number: int, noun: str) -> str:
    return f"{number} {noun}" if number == 1 else f"{number} {noun}s"


def render_text(stats: Stats) -> str:
    """The report ``toolmend stats`` prints."""
    files = terminal(", ".join(stats.files))  # a file name may hold anything
    out = [
        f"toolmend stats: {files}: {_plural(stats.lines, 'line')}, "
        f"{stats.toolmend_lines} from toolmend"
    ]
    if not stats.toolmend_lines:
        out.append(
            "no toolmend log lines found: toolmend writes one line per request it repairs, on "
            "logger 'toolmend' (repairs at INFO, problems and failures at WARNING and above)"
        )
        out.append(HOW_TO_LOG)
        return "\n".join(out) + "\n"
    out.append("")
    out += _section("Repaired", stats.repaired, "change code", "changes", "none")
    out.append("")
    out += _section("Problems left", stats.problems_left, "problem code", "problems", "none")
    out.append("")
    out += _section("Loop guard", stats.loops, "finding", "findings", "nothing found")
    out.append("")
    if stats.total_failures:
        out.append(
            f"Sent unrepaired: {_plural(stats.total_failures, 'request')} (toolmend failed and "
            "the original went out, could not read the history, or the request was over the "
            "hook's budget)"
        )
        hooks = sorted({hook for hook, _ in stats.failures})
        rows = [
            (hook, *(stats.failures[hook, reason] for reason in FAILURE_REASONS)) for hook in hooks
        ]
        out += _grid(("hook", "failed", "unreadable", "over budget"), rows)
    else:
        out.append("Sent unrepaired: none")
    if stats.hooks:
        out.append("")
        out.append("By hook (requests):")
        by_hook: list[tuple[object, ...]] = [
            (hook, *(stats.hooks[hook][column] for column in HOOK_COLUMNS))
            for hook in sorted(stats.hooks)
        ]
        out += _grid(("hook", "repaired", "problems left", "loop", "failed open"), by_hook)
    if stats.healed.total_requests or stats.stored_problems.total_requests:
        out.append("")
        out += _section(
            "Stored histories healed (not requests)",
            stats.healed,
            "change code",
            "changes",
            "none",
            unit="heal",
        )
        if stats.stored_problems.total_requests:
            out.append("")
            out += _section(
                "Stored histories with problems left",
                stats.stored_problems,
                "problem code",
                "problems",
                "none",
                unit="store",
            )
    if stats.total_rescues:
        out.append("")
        out += _rescues(stats)
    if stats.refused:
        out.append("")
        out.append("Messages a LangChain history store refused:")
        out += _grid(("hook", "messages"), sorted(stats.refused.items()))
    if stats.errors:
        out.append("")
        out.append("Other toolmend errors (see the log for their tracebacks):")
        out += _grid(("error", "count"), sorted(stats.errors.items()))
    return "\n".join(out) + "\n"


def error_rows(stats: Stats) -> list[tuple[str, str, int, str]]:
    """``(provider, rule, rescues, error)`` of each provider error behind a rescue, the most
    frequent first; the error as read (print it escaped for where it goes)."""
    return sorted(
        (
            (provider, rule, count, error)
            for (provider, rule, error), count in stats.rescue_errors.items()
        ),
        key=lambda row: (-row[2], row[0], row[1], row[3]),
    )


def _rescues(stats: Stats) -> list[str]:
    out = [
        f"Rescued after a 400: {_plural(stats.total_rescues, 'request')} sent once more "
        "(the provider refused the history's tool calls)"
    ]
    rows = [(*key, count) for key, count in sorted(stats.rescues.items())]
    out += _grid(("hook", "provider", "rule", "profile", "requests"), rows)
    out.append("")
    out.append("Provider errors behind the rescues (ids and numbers written <id> and N):")
    errors = [
        (provider, rule, count, terminal(error))
        for provider, rule, count, error in error_rows(stats)
    ]
    out += _grid(("provider", "rule", "requests", "error"), errors)
    out.append(REPORT_HINT)
    return out


def _table_json(table: Table, count: str) -> dict[str, Any]:
    return {
        "requests": table.total_requests,
        count: table.total_items,
        "by_provider": {
            provider: {
                "requests": table.requests[provider],
                count: table.items[provider],
                "codes": {
                    code: {"requests": requests, count: items}
                    for p, code, requests, items in table.rows()
                    if p == provider
                },
            }
            for provider in sorted(table.requests)
        },
    }


def summary(stats: Stats) -> dict[str, Any]:
    """The counts as plain JSON data (``toolmend stats --json``)."""
    return {
        "files": list(stats.files),
        "lines": stats.lines,
        "toolmend_lines": stats.toolmend_lines,
        "repaired": _table_json(stats.repaired, "changes"),
        "problems_left": _table_json(stats.problems_left, "problems"),
        "loops": _table_json(stats.loops, "findings"),
        "sent_unrepaired": {
            "requests": stats.total_failures,
            "by_hook": {
                hook: {reason: stats.failures[hook, reason] for reason in FAILURE_REASONS}
                for hook in sorted({hook for hook, _ in stats.failures})
            },
        },
        "hooks": {
            hook: {column: stats.hooks[hook][column] for column in HOOK_COLUMNS}
            for hook in sorted(stats.hooks)
        },
        "refused_by_history_store": dict(sorted(stats.refused.items())),
        # stored histories (an Agents SDK session, a LangGraph thread...), not requests: their
        # "requests" are heals
        "healed": _table_json(stats.healed, "changes"),
        "stored_problems_left": _table_json(stats.stored_problems, "problems"),
        "errors": dict(sorted(stats.errors.items())),
        # second requests, beside the first one's own line: by rule, and by the provider's error
        "rescued": {
            "requests": stats.total_rescues,
            "by_rule": [
                {
                    "hook": hook,
                    "provider": provider,
                    "rule": rule,
                    "profile": profile,
                    "requests": count,
                }
                for (hook, provider, rule, profile), count in sorted(stats.rescues.items())
            ],
            "by_error": [
                {"provider": provider, "rule": rule, "requests": count, "error": error}
                for provider, rule, count, error in error_rows(stats)
            ],
        },
    }
