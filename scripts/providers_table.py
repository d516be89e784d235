"""Render the generated tables of docs/providers.md from toolmend's own data.

The providers page shows five tables that must never disagree with the code: the vendors and
servers (``provider=`` names and the profile of each API they serve), the profiles
(``provider=`` names, aliases, the histories each judges, how it pairs results, its call-id
rules), every provider rule with its evidence, the base-URL host table and the model-family
table the hooks route by. They are rendered here from the profile registry and the routing
tables and written between ``<!-- BEGIN GENERATED: name -->`` and ``<!-- END GENERATED: name
-->`` markers; the prose around them is hand-written.

    python scripts/providers_table.py            # rewrite docs/providers.md
    python scripts/providers_table.py --check    # exit 1 when docs/providers.md is stale

``tests/test_docs.py`` runs the same check, so a profile change that is not reflected in the
page fails the suite.
"""

from __future__ import annotations

import argparse
import importlib
import re
import sys
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

import toolmend

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "providers.md"


def _module(name: str) -> ModuleType:
    """``toolmend._<name>``, or ``toolmend.<name>`` before the implementation modules were
    made private: the script reads the same data either way."""
    try:
        return importlib.import_module(f"toolmend._{name}")
    except ModuleNotFoundError:
        return importlib.import_module(f"toolmend.{name}")


# One short history per format, enough for ``toolmend.check`` to say whether a profile judges
# that format at all (a profile without rules for a format raises InvalidHistoryError).
_SAMPLES: tuple[tuple[str, str, list[dict[str, Any]]], ...] = (
    ("openai", "Chat Completions messages", [{"role": "user", "content": "Hi"}]),
    (
        "openai-responses",
        "Responses `input` items",
        [{"type": "message", "role": "user", "content": "Hi"}],
    ),
    (
        "anthropic",
        "Anthropic messages",
        [{"role": "user", "content": [{"type": "text", "text": "Hi"}]}],
    ),
    ("gemini", "Gemini `contents`", [{"role": "user", "parts": [{"text": "Hi"}]}]),
    ("bedrock", "Bedrock Converse messages", [{"role": "user", "content": [{"text": "Hi"}]}]),
)

_PAIRING = {
    "adjacent": "in the block of tool messages right after the call, by id",
    "count": "in the block right after the call, counted (ids not compared)",
    "latest": "answering the latest assistant message's ids, counted at the next one",
    "ordered": "anywhere after the call, by id",
    "none": "not checked",
}
_BLOCK_PAIRING = {
    "turns": "in the leading run of the next turn (same-role messages merged)",
    "contents": "the next Content: one named `functionResponse` per call, nothing else",
    "converse": "the next message: one `toolResult` per call, nothing else",
}


def _cell(text: str) -> str:
    """A table cell: pipes escaped, links made clickable, no line breaks."""
    text = " ".join(text.split()).replace("|", "\\|")
    return re.sub(r"https?://[^\s)>]+[^\s)>.,;]", lambda m: f"<{m.group(0)}>", text)


def _table(header: Iterable[str], rows: Iterable[Iterable[str]]) -> str:
    head = list(header)
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def _judges(name: str) -> list[str]:
    profile = _module("profiles").PROFILES[name]  # the profile itself: a vendor name would derive
    judged = []
    for fmt, label, sample in _SAMPLES:
        try:
            toolmend.check(sample, provider=profile, format=fmt)
        except toolmend.InvalidHistoryError:
            continue
        judged.append(label)
    return judged


def _call_ids(profile: Any) -> str:
    parts = []
    if profile.call_id_pattern:
        parts.append(f"match `{profile.call_id_pattern}`")
    if profile.call_id_max_length:
        parts.append(f"at most {profile.call_id_max_length} characters")
    parts.append("unique in the request" if profile.call_id_scope == "request" else "")
    return "; ".join(part for part in parts if part) or "any"


def profiles_table() -> str:
    """One row per profile: its names, the histories it judges, how results pair, its ids."""
    profiles: Mapping[str, Any] = _module("profiles").PROFILES
    rows = []
    for name, profile in profiles.items():
        pairing = _PAIRING[profile.pairing]
        if profile.block_pairing:
            pairing = f"OpenAI-shaped: {pairing}; native: {_BLOCK_PAIRING[profile.block_pairing]}"
        rows.append(
            [
                f"`{name}`",
                ", ".join(f"`{alias}`" for alias in profile.aliases) or "—",
                _cell(", ".join(_judges(name))),
                _cell(pairing),
                _cell(_call_ids(profile)),
                str(len({check.rule for check in profile.checks.values()})),
                str(len({check.rule for check in profile.strict_checks.values()})),
            ]
        )
    header = ["`provider=`", "aliases", "judges", "a result must be", "call ids"]
    return _table([*header, "rules run", "recorded only"], rows)


def rules_table() -> str:
    """One row per provider rule: the problem codes it is reported as, the profiles that run it
    or only record it, how its error text is known, and where that text was seen."""
    profiles: Mapping[str, Any] = _module("profiles").PROFILES
    rules: dict[str, dict[str, Any]] = {}
    for name, profile in profiles.items():
        for enforced, checks in ((True, profile.checks), (False, profile.strict_checks)):
            for code, check in checks.items():
                entry = rules.setdefault(
                    check.rule, {"codes": set(), "run": [], "recorded": [], "checks": []}
                )
                entry["codes"].add(code)
                bucket = entry["run"] if enforced else entry["recorded"]
                if name not in bucket:
                    bucket.append(name)
                if check not in entry["checks"]:
                    entry["checks"].append(check)
    rows = []
    for rule, entry in sorted(rules.items()):
        checks = entry["checks"]
        statuses = sorted({check.status for check in checks})
        sources = list(dict.fromkeys(check.source for check in checks))
        rows.append(
            [
                f"`{rule}`",
                ", ".join(f"`{code}`" for code in sorted(entry["codes"])),
                ", ".join(entry["run"]) or "—",
                ", ".join(entry["recorded"]) or "—",
                ", ".join(statuses),
                _cell(" / ".join(sources)),
            ]
        )
    header = ["rule", "problem code", "run by", "recorded only by", "error text", "seen in"]
    return _table(header, rows)


def vendors_table() -> str:
    """One row per vendor or server: its names, the profile of its chat API and of its
    Responses API, whether the model's chat template picks the rules, and why."""
    vendors: Iterable[Any] = importlib.import_module("toolmend.profiles._vendors").VENDORS
    rows = []
    for vendor in vendors:
        chat = f"`{vendor.chat}`" + (" or the model's template" if vendor.server else "")
        rows.append(
            [
                f"`{vendor.name}`",
                ", ".join(f"`{alias}`" for alias in vendor.aliases) or "—",
                chat,
                f"`{vendor.responses}`" if vendor.responses else "— (an error)",
                _cell(vendor.why),
            ]
        )
    header = ["`provider=`", "aliases", "chat messages", "Responses items", "why"]
    return _table(header, rows)


def hosts_table() -> str:
    """The ``base_url`` host -> provider table the hooks use for OpenAI-compatible clients."""
    hosts: Iterable[tuple[str, str]] = _module("routing").HOSTS
    return _table(["`base_url` host", "provider"], [[f"`{h}`", p] for h, p in hosts])


def models_table() -> str:
    """The model-name prefix -> provider table for models only one provider serves."""
    families: Iterable[tuple[str, str]] = _module("routing").MODEL_FAMILIES
    return _table(["model name starts with", "provider"], [[f"`{m}`", p] for m, p in families])


TABLES: dict[str, Callable[[], str]] = {
    "vendors": vendors_table,
    "profiles": profiles_table,
    "rules": rules_table,
    "hosts": hosts_table,
    "models": models_table,
}


def render(page: str) -> str:
    """``page`` with every generated region replaced by the current table."""
    for name, make in TABLES.items():
        pattern = re.compile(
            rf"(<!-- BEGIN GENERATED: {name} [^\n]*-->\n).*?(<!-- END GENERATED: {name} -->)",
            re.DOTALL,
        )
        if not pattern.search(page):
            raise SystemExit(f"{PAGE}: no generated region named {name!r}")
        page = pattern.sub(_filler(make()), page)
    return page


def _filler(table: str) -> Callable[[re.Match[str]], str]:
    """The replacement for one region: its markers kept, the table between them."""
    return lambda match: f"{match.group(1)}{table}\n{match.group(2)}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the page is stale")
    args = parser.parse_args(argv)
    page = PAGE.read_text(encoding="utf-8")
    fresh = render(page)
    if args.check:
        if fresh != page:
            print(f"{PAGE} is stale: run python scripts/providers_table.py", file=sys.stderr)
            return 1
        return 0
    if fresh != page:
        PAGE.write_text(fresh, encoding="utf-8")
        print(f"rewrote {PAGE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
