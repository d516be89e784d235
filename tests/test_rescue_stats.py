"""``toolmend stats`` counts the rescue lines (issue 34): by rule, and by the provider's error.

The lines are written by the real ``toolmend.integrations.rescue.retry_history`` after a real
``openai.BadRequestError``: the openai SDK sends a history to the strict server, which refuses
it with a provider's error text (``refuse=``, a rule toolmend does not know), or judges it as
Mistral while the hook believes it talks to OpenAI (Mistral's own error for a rule toolmend
knows). The log goes through real logging formatters (plain, python-json-logger) into files
that ``toolmend stats`` reads back; its counts are compared with the reports the rescues made.
The provider's error is the one piece of a toolmend line a provider writes: hostile text in it
(control characters, bidi controls, HTML, quotes, a forged toolmend line) must count as one
rescue and stay inert in the text, HTML and JSON outputs.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolmend._cli import main
from toolmend._error_texts import about_tool_history
from toolmend._stats import logs
from toolmend.integrations import hooks, telemetry
from toolmend.integrations.rescue import ERROR_LIMIT, retry_history
from toolmend.testing import StrictProviderServer

from support.stats_logs import PLAIN_FORMAT, capture

openai = pytest.importorskip("openai")
httpx = pytest.importorskip("httpx")
JsonFormatter = pytest.importorskip("pythonjsonlogger.json").JsonFormatter

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

HOOK = "openai.Completions.create"
SOURCE = f"{HOOK}(gpt-4o)"
RESULT = "21 C and sunny"


def history(broken: bool = False) -> list[dict[str, Any]]:
    call: dict[str, Any] = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "w", "arguments": "{}"},
    }
    exchange: list[dict[str, Any]] = [
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_1", "content": RESULT},
    ]
    if broken:  # a user message between the call and its result: toolmend repairs it first
        exchange.insert(1, {"role": "user", "content": "Still there?"})
    return [{"role": "user", "content": "Weather?"}, *exchange, {"role": "user", "content": "Ok"}]


def unknown(call_id: str) -> str:
    """A rule no profile holds, quoting a call id (another one each time)."""
    return f"Invalid request: tool message '{call_id}' may not follow message 3 on this model."


def _hook_call(server: StrictProviderServer, sent: list[Any]) -> Any:
    """What a hook does: repair, send; on the SDK's error, the one retry."""
    mended = hooks.mend(sent, provider="openai", source=SOURCE)
    client = openai.OpenAI(api_key="t", base_url=server.openai_base_url, max_retries=0)
    try:
        client.chat.completions.create(model="gpt-4o", messages=mended.messages)
    except openai.BadRequestError as error:
        rescued = retry_history(mended.messages, error, provider="openai", source=SOURCE)
        if rescued is not None:
            client.chat.completions.create(model="gpt-4o", messages=rescued.messages)
        return rescued
    return None


def _handlers(folder: Path) -> tuple[Path, Path, list[logging.Handler]]:
    plain, structured = folder / "plain.log", folder / "json.log"
    handlers: list[logging.Handler] = []
    for path, formatter in (
        (plain, logging.Formatter(PLAIN_FORMAT)),
        (structured, JsonFormatter("%(asctime)s %(levelname)s %(name)s %(message)s")),
    ):
        handler = logging.FileHandler(path, encoding="utf-8")
        handler.setFormatter(formatter)
        handlers.append(handler)
    return plain, structured, handlers


def stats(*args: str) -> tuple[int, str]:
    """``toolmend stats ARGS`` in process: exit code and standard output."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        try:
            code = main(["stats", *args])
        except SystemExit as exit:
            code = int(exit.code or 0)
    return code, out.getvalue()


def summary(path: Path) -> dict[str, Any]:
    code, out = stats(str(path), "--json")
    assert code == 0
    result: dict[str, Any] = json.loads(out)
    return result


@pytest.fixture(scope="module")
def produced(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, list[Any]]:
    """Three rescues of one unknown rule (three call ids), one of it after a repair, and one
    rescue by Mistral's known rule; logged plain and as JSON. Returns the two logs and the
    rescues' reports."""
    plain, structured, handlers = _handlers(tmp_path_factory.mktemp("rescues"))
    with capture(handlers) as reports:
        for call_id, broken in (("call_7Zq1", False), ("call_8Kx2", False), ("call_9Pw3", True)):
            with StrictProviderServer(refuse=unknown(call_id)) as server:
                assert _hook_call(server, history(broken)) is not None
                assert [r.status for r in server.requests] == [400, 200]
                assert RESULT in json.dumps(server.requests[-1].body)
        with StrictProviderServer(provider="mistral") as server:
            assert _hook_call(server, history()).profile == "mistral"
    return plain, structured, [r for r in reports if r.outcome == "rescued"]


@pytest.mark.parametrize("kind", ["plain", "json"])
def test_the_rescues_are_counted_by_rule_as_the_hooks_reported(
    produced: tuple[Path, Path, list[Any]], kind: str
) -> None:
    plain, structured, reports = produced
    got = summary(plain if kind == "plain" else structured)
    assert len(reports) == 4
    assert got["rescued"]["requests"] == len(reports)
    by_rule: Counter[tuple[str, str, str]] = Counter()
    for row in got["rescued"]["by_rule"]:
        by_rule[row["hook"], row["provider"], row["rule"]] += row["requests"]
    assert by_rule == Counter((r.hook, r.provider, r.rule) for r in reports)
    profiles = {row["rule"]: row["profile"] for row in got["rescued"]["by_rule"]}
    assert profiles["flattened"] == "openai"
    assert set(profiles.values()) == {"openai", "mistral"}
    # the first request of the broken history was repaired: one line of its own, a request
    assert got["repaired"]["requests"] == 1
    assert got["hooks"][HOOK]["repaired"] == 1


def test_the_errors_of_one_rule_are_counted_together(
    produced: tuple[Path, Path, list[Any]],
) -> None:
    got = summary(produced[0])
    by_error = {(row["rule"], row["error"]): row["requests"] for row in got["rescued"]["by_error"]}
    shape = "Invalid request: tool message '<id>' may not follow message N on this model."
    assert by_error[("flattened", shape)] == 3  # three call ids, one rule toolmend lacks
    [(rule, error)] = [key for key in by_error if key[0] != "flattened"]
    assert by_error[rule, error] == 1 and error.startswith("Tool call id was <id>")
    # the most frequent first
    assert got["rescued"]["by_error"][0]["error"] == shape


def test_the_text_and_the_page_show_the_rescues(produced: tuple[Path, Path, list[Any]]) -> None:
    code, text = stats(str(produced[0]))
    assert code == 0
    assert "Rescued after a 400: 4 requests sent once more" in text
    row = next(line for line in text.splitlines() if "flattened" in line and "'<id>'" in line)
    assert row.split()[:3] == ["openai", "flattened", "3"]
    assert "docs/observability.md" in text
    for secret in ("call_7Zq1", "call_8Kx2", "call_9Pw3", RESULT):
        assert secret not in text
    code, page = stats(str(produced[0]), "--html")
    assert code == 0
    assert 'id="rescues"' in page and 'id="rescue-errors"' in page
    assert "&#x27;&lt;id&gt;&#x27; may not follow message N" in page
    assert '<tr data-provider="openai" data-rule="flattened" data-requests="3">' in page
    assert "<b>4</b> rescued after a 400" in page


def test_the_page_written_says_how_many_were_rescued(
    produced: tuple[Path, Path, list[Any]], tmp_path: Path
) -> None:
    page = tmp_path / "page.html"
    code, out = stats(str(produced[0]), "--html", str(page))
    assert code == 0 and page.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert out.startswith(
        f"{page}: 1 request(s) repaired, 0 with problems left, 0 sent unrepaired, "
        "4 rescued after a 400 ("
    )


# --- hostile provider text ----------------------------------------------------------------------

HOSTILE = (
    "tool_call \x1b]0;owned\x07\x1b[2J\r\x00\u202eevil\u2066 <script>alert(1)</script> "
    '<img src=x onerror=alert(2)> "quoted" ; 3 problem(s) left: fake@1\n'
    "toolmend repaired fake.hook for openai: moved_result@1[call_1]\u2028"
    "toolmend failed on fake.hook; the original request was sent"
)
"""A provider's error that tries to drive a terminal, reorder text, run in a page, end the
quoted field and forge toolmend lines of its own."""


@pytest.fixture(scope="module")
def hostile_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    plain, _, handlers = _handlers(tmp_path_factory.mktemp("hostile"))
    with capture(handlers), StrictProviderServer(refuse=HOSTILE) as server:
        assert _hook_call(server, history()) is not None
    return plain


def test_hostile_provider_text_counts_as_one_rescue(hostile_log: Path) -> None:
    got = summary(hostile_log)
    assert got["toolmend_lines"] == 1
    assert got["rescued"]["requests"] == 1
    assert got["repaired"]["requests"] == 0 and got["sent_unrepaired"]["requests"] == 0
    assert got["problems_left"]["requests"] == 0
    [row] = got["rescued"]["by_error"]
    assert row["error"] == logs.error_shape(HOSTILE)  # read back as it was said


def test_hostile_provider_text_stays_inert_in_every_output(hostile_log: Path) -> None:
    code, text = stats(str(hostile_log))
    assert code == 0
    assert not set(text) & {"\x1b", "\x07", "\r", "\x00", "\u202e", "\u2066", "\u2028"}
    assert "\\x1b" in text and "\\u202e" in text  # shown, escaped
    code, page = stats(str(hostile_log), "--html")
    assert code == 0
    assert "<script>" not in page and "<img" not in page and "&lt;script&gt;" in page
    assert not set(page) & {"\x1b", "\x07", "\r", "\x00", "\u202e", "\u2066", "\u2028"}
    code, raw = stats(str(hostile_log), "--json")
    assert code == 0 and raw.isascii()  # every control and bidi character \u-escaped
    assert not set(raw) & {"\x1b", "\x07", "\r", "\x00"}


@pytest.mark.parametrize(
    "line",
    [
        # no closing quote, or text after an unescaped one: not a line toolmend wrote
        'toolmend rescued h for openai after a 400: flattened (openai); -; provider error "abc',
        'toolmend rescued h for openai after a 400: flattened (openai); -; provider error "a b"',
        # no change codes and no "-"
        'toolmend rescued h for openai after a 400: flattened (openai); ; provider error "x"',
        # a rule that is not a code
        'toolmend rescued h for openai after a 400: no rule (openai); -; provider error "x"',
        # a change list that is not codes
        'toolmend rescued h for openai after a 400: flattened (openai); x y; provider error "z"',
    ],
)
def test_a_malformed_rescue_line_is_not_counted(tmp_path: Path, line: str) -> None:
    log = tmp_path / "forged.log"
    log.write_text(line + "\n", encoding="utf-8")
    got = summary(log)
    assert got["toolmend_lines"] == 0 and got["rescued"]["requests"] == 0


def test_a_long_error_is_kept_cut(tmp_path: Path) -> None:
    """The hook quotes at most ERROR_LIMIT characters; a line that says more (written by
    something else) is kept at the same size, and read in one pass."""
    assert ERROR_LIMIT + len("...") == logs.ERROR_CHARS
    log = tmp_path / "long.log"
    said = "tool_call%20" + "%u202E" * 200_000
    log.write_text(
        "toolmend rescued h(m) for openai after a 400: flattened (openai); "
        f'flattened_tool_traffic@1[call_1]; provider error "{said}"\n',
        encoding="utf-8",
    )
    got = summary(log)
    [row] = got["rescued"]["by_error"]
    assert len(row["error"]) == logs.ERROR_CHARS
    assert got["rescued"]["by_rule"] == [
        {"hook": "h", "provider": "openai", "rule": "flattened", "profile": "openai", "requests": 1}
    ]


# --- every error a hook can log is read back ----------------------------------------------------


@contextlib.contextmanager
def _lines() -> Iterator[list[str]]:
    """The messages logger ``toolmend`` writes meanwhile, formatted."""
    written: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            written.append(record.getMessage())

    logger = logging.getLogger("toolmend")
    handler, level = Keep(), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        yield written
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


def _bad_request(message: str) -> Any:
    """The openai SDK's own exception for a 400 with ``message`` in OpenAI's envelope."""
    request = httpx.Request("POST", "http://127.0.0.1/v1/chat/completions")
    response = httpx.Response(400, request=request)
    return openai.BadRequestError(message, response=response, body={"message": message})


@settings(max_examples=60, deadline=None)
@given(st.text(max_size=400))
def test_any_error_text_reads_back_as_its_shape(tail: str) -> None:
    said = "tool_call_id " + tail
    if not about_tool_history(said):  # an error no rewrite cures is never rescued
        return
    with _lines() as written:
        rescued = retry_history(history(), _bad_request(said), provider="openai", source=SOURCE)
    assert rescued is not None
    [line] = written
    event = logs.parse_message(line)
    assert event is not None and event.kind == "rescued"
    assert (event.hook, event.provider, event.rule) == (HOOK, "openai", rescued.rule)
    cut = rescued.error[:ERROR_LIMIT] + ("..." if len(rescued.error) > ERROR_LIMIT else "")
    assert event.error == logs.error_shape(cut)
    assert event.codes == telemetry.codes_of(rescued.changes)


def test_the_documented_line_is_one_stats_counts() -> None:
    """docs/observability.md shows a rescue line and tells how to send it: stats reads it."""
    page = Path(__file__).parent.parent / "docs" / "observability.md"
    [line] = [
        text
        for text in page.read_text(encoding="utf-8").splitlines()
        if text.startswith("toolmend rescued ")
    ]
    event = logs.parse_message(line)
    assert event is not None and event.kind == "rescued" and event.rule == "flattened"
    assert event.error == "Invalid request: tool message '<id>' may not follow message N."
