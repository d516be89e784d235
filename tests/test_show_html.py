"""``toolmend show --html``: the page opened in a real headless browser.

The browser is Debian's chromium (``apt-get install chromium``), driven by playwright with
``executable_path``; no browser is downloaded (``playwright install`` is never run). Set
``TOOLMEND_CHROMIUM`` to use another chromium binary. Without one, these tests skip.

Every page must load without a console error (a blocked script or a violated
Content-Security-Policy is one), fetch nothing, show every message, mark every problem on its
message, and its two panes must differ exactly by the reported changes: a repaired message the
repair kept reads the same as its input, every other one is explained by a change, and every
change is marked exactly once.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import toolmend
from toolmend._cli import main

from support.browser import CHROMIUM, chromium, needs_chromium
from support.show_cases import EXAMPLES, ROOT, Case, cases, history_of, long_history

pytestmark = [
    needs_chromium,
    pytest.mark.slow,  # every test here starts chromium, or the screenshot script
]

CASES = cases()

_DOM = """(look) => {
  const kids = (el, cls) => Array.from(el.children).filter(c => c.classList.contains(cls));
  const head = el => {
    const h = kids(el, 'h')[0];
    return h.querySelector('.ro').textContent + '|' + h.querySelector('.pv').textContent;
  };
  const links = el => kids(el, 'lk').flatMap(ul => Array.from(ul.children)).map(
    li => [li.classList[0], li.dataset.id || '', li.dataset.name || ''].join('|'));
  const marks = el => kids(el, 'cg').filter(c => c.dataset.change !== undefined).map(
    c => Number(c.dataset.change));
  const problems = el => kids(el, 'pb').map(p => p.dataset.code);
  const cells = selector => Array.from(document.querySelectorAll(selector)).map(el => ({
    id: el.id, head: head(el), links: links(el), marks: marks(el), problems: problems(el),
    origin: el.dataset.origin || null, source: el.dataset.source ?? null,
    related: el.dataset.changes ? el.dataset.changes.split(' ').map(Number) : [],
    fate: el.dataset.fate || null, shown: look ? el.getBoundingClientRect().height > 0 : true}));
  return JSON.stringify({
    before: cells('.m[id^="b"]'),
    after: cells('.m[id^="a"]'),
    gaps: Array.from(document.querySelectorAll('.m.gap')).map(
      g => ({index: Number(g.dataset.gap), fate: g.dataset.fate, marks: marks(g)})),
    changes: Array.from(document.querySelectorAll('#changes tr[data-change]')).map(
      r => [r.dataset.code, Number(r.dataset.index)]),
    problems: Array.from(document.querySelectorAll('#problems tr[data-code]')).map(
      r => [r.dataset.code, Number(r.dataset.index)]),
  });
}"""


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    yield from chromium()


class Opened:
    """A page and what it did while loading."""

    def __init__(self, browser: Any, path: Path, *, look: bool = True) -> None:
        """Open ``path``; ``look`` also asks the layout of every message whether it is drawn
        (slow for a long page, whose rows out of view are skipped by design)."""
        self.errors: list[str] = []
        self.requests: list[str] = []
        self.page = browser.new_page(viewport={"width": 1400, "height": 900})
        self.page.on(
            "console",
            lambda message: self.errors.append(message.text) if message.type == "error" else None,
        )
        self.page.on("pageerror", lambda error: self.errors.append(str(error)))
        self.page.on("request", lambda request: self.requests.append(request.url))
        started = time.perf_counter()
        self.page.goto(path.as_uri(), wait_until="load")
        self.seconds = time.perf_counter() - started
        self.dom: dict[str, Any] = json.loads(self.page.evaluate(_DOM, look))
        self.uri = path.as_uri()

    def close(self) -> None:
        self.page.close()

    def assert_quiet(self) -> None:
        assert self.errors == []
        assert self.requests == [self.uri], "the page fetched something"


def _write_page(case: Case, folder: Path) -> Path:
    """The page for ``case``, written by the command from a file, as a user would."""
    source = case.path or folder / f"{case.name}.json"
    if case.path is None:
        source.write_text(json.dumps(case.history), encoding="utf-8")
    out = folder / f"{case.name}.html"
    assert main(["show", str(source), "-p", case.provider, "--html", str(out)]) in (0, 1)
    return out


def check_page(dom: dict[str, Any], history: Any, provider: str) -> None:
    """Every message shown, every problem marked, the panes differ exactly by the changes."""
    result = toolmend.repair(history, provider=provider)
    before = dom["before"]
    assert [cell["id"] for cell in before] == [f"b{n}" for n in range(len(history))]
    assert all(cell["shown"] for cell in before)
    marked = sorted((int(cell["id"][1:]), code) for cell in before for code in cell["problems"])
    assert marked == sorted((p.index, p.code) for p in result.problems if p.index < len(history))
    assert dom["problems"] == [[p.code, p.index] for p in result.problems]
    if not result.changes:
        assert dom["after"] == [] and dom["changes"] == []
        return
    after = dom["after"]
    assert [cell["id"] for cell in after] == [f"a{n}" for n in range(len(result.messages))]
    assert all(cell["shown"] for cell in after)
    assert dom["changes"] == [[change.code, change.index] for change in result.changes]
    marks = [n for cell in after for n in cell["marks"]] + [
        n for g in dom["gaps"] for n in g["marks"]
    ]
    assert sorted(marks) == list(range(len(result.changes))), "each change marked once"
    touched = {change.index for change in result.changes}
    for cell in after:
        if cell["origin"] == "kept":  # the input message itself: it reads the same
            source = before[int(cell["source"])]
            assert (cell["head"], cell["links"]) == (source["head"], source["links"]), cell
            assert not cell["marks"] or set(cell["related"]) >= set(cell["marks"])
        else:  # edited, new, merged, written as text: a change says why
            assert cell["related"], cell
    for index, cell in enumerate(before):
        if cell["fate"] in ("dropped", "moved"):
            assert index in touched, (index, cell["fate"])
    for gap in dom["gaps"]:
        if gap["fate"] == "dropped":
            assert gap["marks"], gap
    problems_left = sorted((int(c["id"][1:]), code) for c in after for code in c["problems"])
    assert problems_left == sorted((p.index, p.code) for p in result.problems_left)


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.name)
def test_the_page_of_each_scenario(browser: Any, case: Case, tmp_path: Path) -> None:
    opened = Opened(browser, _write_page(case, tmp_path))
    try:
        opened.assert_quiet()
        check_page(opened.dom, history_of(case.history), case.provider)
        assert opened.dom["after"], "every scenario is broken, so the page shows a repair"
    finally:
        opened.close()


def test_a_valid_history_has_one_pane(browser: Any, tmp_path: Path) -> None:
    source = tmp_path / "valid.json"
    source.write_text(
        json.dumps([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}])
    )
    out = tmp_path / "valid.html"
    assert main(["show", str(source), "--html", str(out)]) == 0
    opened = Opened(browser, out)
    try:
        opened.assert_quiet()
        check_page(opened.dom, json.loads(source.read_text()), "openai")
        assert "accepts this history" in opened.page.inner_text("#verdict")
    finally:
        opened.close()


def test_message_content_cannot_run_in_the_page(browser: Any, tmp_path: Path) -> None:
    attack = '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">'
    history = [
        {"role": "user", "content": attack},
        {
            "role": "assistant",
            "content": "</pre></details><script>window.__pwned = 3</script>",
            "tool_calls": [
                {
                    "id": "call_<b>1</b>",
                    "type": "function",
                    "function": {"name": "<svg onload=window.__pwned=4>", "arguments": attack},
                }
            ],
        },
        {"role": "<img src=x onerror=window.__pwned=5>", "content": "odd role"},
        {"role": "tool", "tool_call_id": "call_gone", "content": attack},
    ]
    source = tmp_path / "attack.json"
    source.write_text(json.dumps(history))
    out = tmp_path / "attack.html"
    assert main(["show", str(source), "--html", str(out)]) == 1
    opened = Opened(browser, out)
    try:
        opened.assert_quiet()
        page = opened.page
        assert page.evaluate("window.__pwned") is None
        assert page.evaluate("document.scripts.length") == 1
        assert page.evaluate("document.images.length") == 0
        assert page.inner_text("#b0 .pv") == attack
        page.click("#b1 summary")
        assert "window.__pwned = 3" in page.inner_text("#b1 pre")
        assert page.evaluate("window.__pwned") is None
    finally:
        opened.close()


def test_hovering_a_label_lights_up_the_call_and_its_result(browser: Any, tmp_path: Path) -> None:
    case = next(case for case in CASES if case.name == "interleaved_user_message")
    opened = Opened(browser, _write_page(case, tmp_path))
    try:
        page = opened.page
        page.hover('#b1 li[data-k="B"]')
        lit = page.evaluate(
            "Array.from(document.querySelectorAll('.hl')).map("
            "el => (el.closest('.m') ? el.closest('.m').id : 'gutter') + ':' + el.tagName)"
        )
        assert {"b1:LI", "b4:LI", "a1:LI", "a3:LI"} <= set(lit)
        assert any(item.endswith(":I") for item in lit), "the link line lights up too"
        lines = page.evaluate("document.querySelectorAll('.ln').length")
        page.check("#only")
        hot = page.evaluate(
            "Array.from(document.querySelectorAll('.ln')).filter(l => l.offsetHeight > 0).length"
        )
        assert 0 < hot < lines
    finally:
        opened.close()


def test_a_5000_message_history_opens_quickly_and_whole(
    browser: Any, tmp_path: Path, record_property: Any
) -> None:
    history = long_history(5000)
    source = tmp_path / "long.json"
    source.write_text(json.dumps(history))
    out = tmp_path / "long.html"
    started = time.perf_counter()
    assert main(["show", str(source), "--html", str(out)]) == 1
    written = time.perf_counter() - started
    opened = Opened(browser, out, look=False)
    try:
        opened.assert_quiet()
        check_page(opened.dom, history, "openai")
        size = out.stat().st_size
        record_property("page_bytes", size)
        record_property("write_seconds", round(written, 2))
        record_property("load_seconds", round(opened.seconds, 2))
        print(
            f"\n5,000 messages: page {size / 1e6:.1f} MB, written in {written:.1f} s, "
            f"loaded in {opened.seconds:.1f} s"
        )
        assert opened.seconds < 20 and written < 20  # generous: measured, not a benchmark
        page = opened.page
        assert page.evaluate("document.body.classList.contains('big')")
        for row in ("#b0", "#b2500", "#b4999", f"#a{len(opened.dom['after']) - 1}"):
            page.locator(row).scroll_into_view_if_needed()
            box = page.locator(row).bounding_box()
            assert box is not None and box["height"] > 10, row
    finally:
        opened.close()


def test_the_screenshot_script_draws_a_seed(tmp_path: Path) -> None:
    target = tmp_path / "seed.png"
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "show_screenshot.py"), "-o", str(target)],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "TOOLMEND_CHROMIUM": CHROMIUM},
    )
    assert done.returncode == 0, done.stderr
    assert target.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (ROOT / "examples" / "show-seed.png").exists()
    assert (EXAMPLES / "seed001_trimmed_tool_group.json").exists()
