"""``toolmend stats --html``: the page opened in a real headless browser.

Like tests/test_show_html.py: Debian's chromium (``TOOLMEND_CHROMIUM`` for another binary),
driven by playwright with ``executable_path``; without one these tests skip. The page is made
by the command from a log that real hook calls wrote (tests/support/stats_logs.py), and must
load without a console error, fetch nothing, run no script, and show in its chart and tables
exactly the numbers of ``toolmend stats --json``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from toolmend._cli import main

from support.browser import chromium, needs_chromium
from support.stats_logs import SECRET_IDS, Produced, produce

ROOT = Path(__file__).resolve().parent.parent


pytestmark = [
    needs_chromium,
    pytest.mark.slow,  # every test here starts chromium
]

_DOM = """() => JSON.stringify({
  bars: Array.from(document.querySelectorAll('#chart rect')).map(r => ({
    code: r.dataset.code, provider: r.dataset.provider, changes: Number(r.dataset.changes),
    requests: Number(r.dataset.requests), width: r.getBoundingClientRect().width})),
  rows: Object.fromEntries(['repaired', 'problems', 'loops'].map(id => [id,
    Array.from(document.querySelectorAll('#' + id + ' tr[data-code]')).map(r => [
      r.dataset.provider, r.dataset.code, Number(r.dataset.requests), Number(r.dataset.count)])
  ])),
  failures: Array.from(document.querySelectorAll('#failures tr[data-hook]')).map(r => [
    r.dataset.hook, Number(r.dataset.failed), Number(r.dataset.unreadable)]),
  hooks: Array.from(document.querySelectorAll('#hooks tr[data-hook]')).map(r => [
    r.dataset.hook, Number(r.dataset.repaired), Number(r.dataset.problemsLeft),
    Number(r.dataset.loop), Number(r.dataset.failedOpen)]),
  scripts: document.scripts.length,
  text: document.body.innerText,
})"""


@pytest.fixture(scope="module")
def produced(tmp_path_factory: pytest.TempPathFactory) -> Produced:
    return produce(tmp_path_factory.mktemp("logs"))


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    yield from chromium()


def _open(browser: Any, path: Path) -> dict[str, Any]:
    """The page's DOM facts, after checking it loaded quietly and fetched nothing."""
    errors: list[str] = []
    requests: list[str] = []
    page = browser.new_page(viewport={"width": 1200, "height": 900})
    try:
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.on("request", lambda request: requests.append(request.url))
        page.goto(path.as_uri(), wait_until="load")
        dom: dict[str, Any] = json.loads(page.evaluate(_DOM))
        dom["pwned"] = page.evaluate("window.__pwned")
    finally:
        page.close()
    assert errors == []
    assert requests == [path.as_uri()], "the page fetched something"
    return dom


def _json(*files: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    assert main(["stats", *map(str, files), "--json"]) == 0
    result: dict[str, Any] = json.loads(capsys.readouterr().out)
    return result


def _table(part: dict[str, Any], count: str) -> list[list[Any]]:
    """A summary table as the page's rows: each provider's total, then its codes."""
    rows = []
    for provider, entry in part["by_provider"].items():
        rows.append([provider, "(all)", entry["requests"], entry[count]])
        rows += [[provider, c, e["requests"], e[count]] for c, e in entry["codes"].items()]
    return rows


def test_the_page_shows_the_numbers_of_the_summary(
    browser: Any, produced: Produced, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "stats.html"
    assert main(["stats", str(produced.plain), str(produced.json), "--html", str(out)]) == 0
    capsys.readouterr()
    summary = _json(produced.plain, produced.json, capsys=capsys)
    dom = _open(browser, out)
    assert dom["scripts"] == 0
    bars = {(b["provider"], b["code"]): (b["requests"], b["changes"]) for b in dom["bars"]}
    assert bars == {
        (provider, code): (entry["requests"], entry["changes"])
        for provider, by in summary["repaired"]["by_provider"].items()
        for code, entry in by["codes"].items()
    }
    assert all(bar["width"] > 0 for bar in dom["bars"]), "every bar is drawn"
    widest = max(dom["bars"], key=lambda bar: bar["width"])
    assert widest["changes"] == max(bar["changes"] for bar in dom["bars"])
    for ident, part, count in (
        ("repaired", "repaired", "changes"),
        ("problems", "problems_left", "problems"),
        ("loops", "loops", "findings"),
    ):
        assert sorted(dom["rows"][ident]) == sorted(_table(summary[part], count)), ident
    assert dom["failures"] == [
        [hook, entry["failed"], entry["unreadable"]]
        for hook, entry in summary["sent_unrepaired"]["by_hook"].items()
    ]
    assert dom["hooks"] == [
        [hook, c["repaired"], c["problems_left"], c["loop"], c["failed_open"]]
        for hook, c in summary["hooks"].items()
    ]
    for secret in SECRET_IDS:
        assert secret not in dom["text"] and secret not in out.read_text()


def test_what_the_log_says_cannot_run_in_the_page(browser: Any, tmp_path: Path) -> None:
    attack = "<script>window.__pwned=1</script>"
    log = tmp_path / "hostile.log"
    log.write_text(
        f"toolmend repaired {attack} for <img/src=x/onerror=window.__pwned=2>: "
        "moved_result@1[<svg/onload=window.__pwned=3>]\n"
        f"toolmend failed on {attack}; the original request was sent\n"
        f"toolmend loop guard on a.b for <style>body{{display:none}}</style>: repeated_call@3\n"
    )
    out = tmp_path / "hostile.html"
    assert main(["stats", str(log), "--html", str(out)]) == 0
    dom = _open(browser, out)
    assert dom["pwned"] is None and dom["scripts"] == 0
    assert attack in dom["text"]  # shown as text
    assert "<img/src=x/onerror=window.__pwned=2>" in dom["text"]
    assert "onload" not in dom["text"], "the ids in brackets are never shown"


def test_a_log_without_toolmend_lines_makes_a_page_that_says_so(
    browser: Any, tmp_path: Path
) -> None:
    log = tmp_path / "other.log"
    log.write_text("INFO app: started\n")
    out = tmp_path / "empty.html"
    assert main(["stats", str(log), "--html", str(out)]) == 0
    dom = _open(browser, out)
    assert "No toolmend log lines found" in dom["text"] and dom["bars"] == []
