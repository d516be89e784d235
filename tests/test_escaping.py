"""What toolmend writes that it did not make is escaped for where it goes (issue 30).

Ids, names, roles and model strings come from whoever sent the request. They must not end a
field, a list or a line of a log line (``toolmend stats`` would count what never happened), break
the proxy's response header (a CR/LF or NUL dropped the connection after the upstream call was
billed, ``call_中文`` gave a 500, 2,000 changes a header over 64 KB), or drive a terminal. And a
crafted log line must not stall ``toolmend stats``.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import sys
import time
import unicodedata
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import toolmend
from toolmend import _escape as escape
from toolmend._cli import main
from toolmend._stats import logs
from toolmend.integrations import hooks
from toolmend.testing import StrictProviderServer

from support import litellm_proxy
from support.stats_logs import PLAIN_FORMAT

# --- the escaping itself ------------------------------------------------------------------------

_CONTROL_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp", "Zs"})
_SEPARATORS = '%;@[],():{}"'


def _hostile_characters() -> str:
    """Every code point that is a control, format, surrogate or space character."""
    return "".join(
        chr(point)
        for point in range(sys.maxunicode + 1)
        if unicodedata.category(chr(point)) in _CONTROL_CATEGORIES
    )


def test_every_control_format_and_space_character_is_escaped_for_a_log() -> None:
    hostile = _hostile_characters() + _SEPARATORS
    written = escape.log(hostile)
    left = set(written) & set(hostile)
    assert left == {"%"}, "a character escaped for logs is still there"  # %: the escapes' own
    assert escape.unescape(written) == hostile


def test_a_header_value_is_printable_ascii() -> None:
    hostile = _hostile_characters() + _SEPARATORS + "call_中文\U0001f600"
    written = escape.header(hostile)
    assert all(0x21 <= ord(char) <= 0x7E for char in written)
    assert escape.unescape(written) == hostile


def test_readable_values_are_kept() -> None:
    for value in ("call_abc123", "toolu_01A-b.c/d", "call_中文", "fc_é"):
        assert escape.log(value) == value
    assert escape.header("call_abc123") == "call_abc123"


@given(st.text())
def test_the_escaping_is_reversible(text: str) -> None:
    assert escape.unescape(escape.log(text)) == text
    assert escape.unescape(escape.header(text)) == text
    assert escape.unescape(text) == text or "%" in text


@pytest.mark.parametrize(
    "text", ["\x1b]0;title\x07", "a\rb", "nul\x00", "line\nbreak", "\u202eevil", "\u2028x"]
)
def test_terminal_and_page_show_control_characters_escaped(text: str) -> None:
    assert not set(escape.terminal(text)) & set("\x1b\x07\r\x00\n\u202e\u2028")
    assert not set(escape.html(text)) & set("\x1b\x07\r\x00\u202e\u2028")  # a page breaks lines


# --- log lines -> toolmend stats ----------------------------------------------------------------


@contextlib.contextmanager
def logged() -> Iterator[list[str]]:
    """The lines logger ``toolmend`` writes meanwhile, formatted as plain logging does."""
    lines: list[str] = []
    formatter = logging.Formatter(PLAIN_FORMAT)

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            lines.append(formatter.format(record))

    handler = Collect(logging.INFO)
    logger = logging.getLogger("toolmend")
    saved = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        yield lines
    finally:
        logger.removeHandler(handler)
        logger.setLevel(saved)


def _user() -> dict[str, Any]:
    return {"role": "user", "content": "Weather in Paris?"}


def _result(call_id: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": "21 C"}


def _read(lines: list[str], tmp_path: Path) -> logs.Stats:
    """What ``toolmend stats`` reads from a log file holding ``lines``."""
    path = tmp_path / "app.log"
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return logs.read_files([str(path)])


FORGED_LINE = (
    "call_1\n2026-12-01 10:00:00,000 INFO toolmend: toolmend repaired litellm.completion for "
    "openai: fake_code@1\n2026-12-01 10:00:00,000 ERROR toolmend: toolmend failed on "
    "openai.chat.completions.create for openai; the original history was sent"
)
FORGED_LEFT = "call_1; 3 problem(s) left: invented_problem@1 invented_problem@2 invented_problem@3"


@pytest.mark.parametrize("call_id", [FORGED_LINE, FORGED_LEFT], ids=["newline", "problems-left"])
def test_an_id_cannot_forge_what_stats_counts(call_id: str, tmp_path: Path) -> None:
    """The issue's two forgeries, through the real hook function and logging: stats counts the
    one real change and nothing else."""
    with logged() as lines:
        mended = hooks.mend([_user(), _result(call_id), _user()], provider="openai", source="a.b")
    assert [c.code for c in mended.changes] == ["dropped_orphan_result"]
    assert len(lines) == 1 and "\n" not in lines[0]
    stats = _read(lines, tmp_path)
    assert stats.toolmend_lines == 1
    assert stats.repaired.rows() == [("openai", "dropped_orphan_result", 1, 1)]
    assert stats.problems_left.total_requests == 0 and stats.total_failures == 0
    assert set(stats.hooks) == {"a.b"}


def test_the_forged_lines_written_raw_count_as_nothing_forged() -> None:
    """Read on its own (a line an older writer left unescaped), the forged ``problems left``
    is not a well-formed line: nothing invented is counted."""
    line = f"toolmend repaired a.b for openai: dropped_orphan_result@1[{FORGED_LEFT}]"
    event = logs.parse_message(line)
    assert event is None or "invented_problem" not in event.left + event.codes


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    ids=st.lists(st.text(min_size=1, max_size=40), min_size=1, max_size=4, unique=True),
    model=st.text(max_size=30),
)
def test_any_id_and_model_parse_back_to_the_codes_written(ids: list[str], model: str) -> None:
    """For any ids and model text, the log line a hook writes holds no control character and
    parses back (the stats reader) to exactly the codes of the changes made."""
    history = [_user(), *(_result(call_id) for call_id in ids), _user()]  # (not the newest)
    with logged() as lines:
        mended = hooks.mend(history, provider="openai", source=f"litellm.acompletion({model})")
    assert mended.changes and len(lines) == 1
    line = lines[0]
    assert not any(unicodedata.category(char) in {"Cc", "Cf", "Zl", "Zp"} for char in line)
    event = logs.parse_message(line)
    assert event is not None, line
    assert event.hook == "litellm.acompletion" and event.provider == "openai"
    assert event.codes == tuple(change.code for change in mended.changes)
    assert event.left == tuple(problem.code for problem in mended.left)


@pytest.mark.parametrize(
    "line",
    [
        "toolmend repaired x for openai:" + " a@1[" * 16_000,
        "toolmend repaired x for openai: " + "a@1[b," * 16_000,
        "toolmend repaired x(" * 4_000,
        "toolmend rejected " * 4_500,
        "toolmend found 1 problem(s) in x(" * 2_500,
        "toolmend: patching " * 4_000,
        "toolmend failed on x(" * 4_000,
    ],
    ids=["open-brackets", "open-id-list", "sources", "rejected", "found", "patching", "failed"],
)
def test_a_crafted_line_is_read_in_linear_time(line: str) -> None:
    """The issue's line (``" a@1[" * 8000``: 4.8 s at 40k characters, growing 4x for 2x) and
    its kin, 80k characters each: read in well under a second (a few milliseconds)."""
    assert len(line) >= 70_000
    started = time.perf_counter()
    for _ in range(3):
        event = logs.parse_message(line)
    assert time.perf_counter() - started < 3.0
    assert event is None or not event.codes


def test_stats_prints_names_read_from_a_log_escaped(tmp_path: Path) -> None:
    line = "toolmend repaired a\x1b[2J\x07\u202e.b for open\u202eai\x1b[2J: moved_result@1[x]\n"
    log = tmp_path / "hostile.log"
    log.write_text(f"INFO toolmend: {line}", encoding="utf-8")
    for extra in ([], ["--json"], ["--html"]):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            assert main(["stats", str(log), *extra]) == 0
        text = out.getvalue()
        assert "moved_result" in text
        assert not set(text) & {"\x1b", "\x07", "\u202e"}, extra


# --- the terminal: show, check, repair ------------------------------------------------------------

HOSTILE_ID = "call_\x1b]0;owned\x07\r\x00\nX\u202eY"
HOSTILE_NAME = "get_\x1b[31mweather"


def _hostile_history(tmp_path: Path) -> Path:
    history = [
        {"role": "user", "content": "hi"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": HOSTILE_ID,
                    "type": "function",
                    "function": {"name": HOSTILE_NAME, "arguments": "{}"},
                }
            ],
        },
        {"role": "user\x1b[2J\u202e", "content": "next"},
        {"role": "tool", "tool_call_id": HOSTILE_ID + "2", "name": HOSTILE_NAME, "content": "x"},
    ]
    path = tmp_path / "hostile.json"
    path.write_text(json.dumps(history), encoding="utf-8")
    return path


def _run(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(list(args))
        except SystemExit as exit:
            code = int(exit.code or 0)
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize(
    "command", [["show"], ["show", "--fix"], ["check"], ["repair"]], ids=" ".join
)
def test_the_terminal_gets_no_control_character(command: list[str], tmp_path: Path) -> None:
    path = _hostile_history(tmp_path)
    code, out, err = _run(*command, str(path))
    printed = err if command == ["repair"] else out  # repair's stdout is the JSON history
    assert code in (0, 1), err
    assert not set(printed) & {"\x1b", "\x07", "\r", "\x00", "\u202e"}, printed
    assert "\\x1b" in printed  # shown, escaped
    for line in printed.splitlines():
        assert not line.startswith(("X", "Y")), line  # the id's line break did not break a line


C1_BIDI_ID = "call_\x9b2J\x9d0;owned\x9c\u202eY\u2028Z\u200b"
"""An id no JSON encoder escapes on its own (``ensure_ascii=False``): the C1 controls CSI, OSC
and ST (a terminal reads U+009B as ESC [), a bidi override, a line separator, a zero-width
space."""


@pytest.mark.parametrize(
    "command", [["check", "--json"], ["repair", "--json"], ["repair"]], ids=" ".join
)
def test_the_json_on_standard_output_holds_no_control_character(
    command: list[str], tmp_path: Path
) -> None:
    """What the CLI prints as JSON (the ``--json`` report, the repaired history without
    ``-o``) reaches a terminal too: the characters JSON leaves raw are written as ``\\uXXXX``
    escapes, which read back as the same strings."""
    history = [
        {"role": "user", "content": "hi"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": C1_BIDI_ID, "type": "function", "function": {"name": "f", "arguments": "{}"}}
            ],
        },
        {"role": "user", "content": "again"},  # the call has no result: answered by the repair
    ]
    path = tmp_path / "c1.json"
    path.write_text(json.dumps(history), encoding="utf-8")
    code, out, err = _run(*command, str(path))
    assert code in (0, 1), err
    assert not set(out) & {"\x9b", "\x9d", "\x9c", "\u202e", "\u2028", "\u200b"}, out
    assert C1_BIDI_ID in json.dumps(json.loads(out), ensure_ascii=False)


# --- strict JSON out -----------------------------------------------------------------------------


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")])
def test_arguments_json_cannot_write_are_left_and_reported(value: float) -> None:
    history = [
        _user(),
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "f", "arguments": {"a": value, "b": 1}},
                }
            ],
        },
        _result("call_1"),
    ]
    result = toolmend.repair(history, provider="openai")
    assert result.messages is history
    assert "normalized_tool_call" not in [change.code for change in result.changes]
    assert [problem.code for problem in result.problems_left] == ["arguments_not_string"]
    assert result.problems_left == tuple(toolmend.check(result.messages, provider="openai"))


def test_the_cli_reads_and_writes_strict_json(tmp_path: Path) -> None:
    path = tmp_path / "nan.json"
    path.write_text('[{"role": "user", "content": "hi", "x": NaN}]', encoding="utf-8")
    code, out, err = _run("repair", str(path))
    assert code == 2 and out == ""
    assert err == f"toolmend: {path}: not JSON: NaN is not a JSON value\n"


# --- the proxy header ------------------------------------------------------------------------------


def _header_ok(value: str) -> None:
    assert value and len(value) <= 4096
    assert all(0x20 <= ord(char) <= 0x7E for char in value), value


@pytest.mark.parametrize(
    "call_id", ["call_\r\nX-Evil: 1", "call\x00x", "call_中文", "c" * 10_000, "a b,c]d%"]
)
def test_the_changes_header_is_printable_ascii(call_id: str) -> None:
    from toolmend.integrations.litellm import changes_header

    value = changes_header([{"code": "dropped_orphan_result", "index": 1, "ids": [call_id]}])
    _header_ok(value)
    assert value.startswith("dropped_orphan_result@1[")
    shown = value[len("dropped_orphan_result@1[") : -1]
    if len(call_id) <= 40:
        assert escape.unescape(shown) == call_id
    else:
        assert shown.endswith("%..") and len(shown) <= 64


def test_a_header_for_2000_changes_keeps_codes_and_counts_first() -> None:
    from toolmend.integrations.litellm import changes_header

    changes = [
        {"code": "dropped_orphan_result", "index": n, "ids": [f"call_{n:05}" * 3]}
        for n in range(2000)
    ]
    value = changes_header(changes)
    _header_ok(value)
    tokens = value.split(" ")
    kept = [t for t in tokens if t.startswith("dropped_orphan_result@")]
    assert kept[:3] == [
        "dropped_orphan_result@0",
        "dropped_orphan_result@1",
        "dropped_orphan_result@2",
    ]
    assert value.endswith(f"+{2000 - len(kept)} more")


@pytest.fixture(scope="module")
def server() -> Iterator[StrictProviderServer]:
    with StrictProviderServer() as running:
        yield running


@pytest.fixture(scope="module")
def proxy(server: StrictProviderServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real ``litellm --config`` process on 127.0.0.1 in front of the strict server (the
    example config)."""
    with litellm_proxy.example_proxy(server, tmp_path_factory.mktemp("proxy")) as base:
        yield base


_post = litellm_proxy.post


@pytest.mark.slow
@pytest.mark.parametrize(
    "ids",
    [["call_\r\nX-Evil: 1"], ["call\x00x\n"], ["call_中文"], [f"call_{n}" for n in range(2000)]],
    ids=["crlf", "nul", "non-ascii", "2000-changes"],
)
def test_the_proxy_answers_with_a_valid_header(
    server: StrictProviderServer, proxy: str, ids: list[str]
) -> None:
    """Ids that broke the response before (connection dropped, 500, a 64 KB header): the
    proxy answers normally and ``x-toolmend-changes`` is printable ASCII within 4 KiB."""
    server.clear()
    messages = [_user(), *(_result(call_id) for call_id in ids), _user()]  # (not the newest)
    status, headers, body = _post(proxy, {"model": "my-deepseek", "messages": messages})
    assert status == 200, body
    lowered = {name.lower(): value for name, value in headers.items()}
    value = lowered["x-toolmend-changes"]
    _header_ok(value)
    assert value.startswith("dropped_orphan_result@1")
    if len(ids) > 1:
        assert value.endswith(" more")
    else:
        assert escape.unescape(value.split("[", 1)[1].rstrip("]")) == ids[0]
    assert lowered["x-toolmend-provider"] == "deepseek"
    assert len(server.requests) == 1


def test_the_debug_structure_lines_are_escaped(monkeypatch: pytest.MonkeyPatch) -> None:
    """``TOOLMEND_DEBUG=1`` logs each repaired history's structure: roles, names and ids."""
    import toolmend._api

    monkeypatch.setattr(toolmend._api, "_DEBUG", True)
    history = [
        _user(),
        {"role": "assistant\n", "content": "x"},
        _result("call_1\nINFO toolmend: toolmend repaired a.b for openai: fake@1"),
    ]
    logger = logging.getLogger("toolmend")
    saved = logger.level
    with logged() as lines:
        logger.setLevel(logging.DEBUG)
        logger.handlers[-1].setLevel(logging.DEBUG)
        try:
            toolmend.repair(history, provider="openai")
        finally:
            logger.setLevel(saved)
    debug = [line for line in lines if "toolmend before:" in line or "toolmend after:" in line]
    assert len(debug) == 2
    assert all("\n" not in line and "call_1%0AINFO" in line for line in debug[:1])


def test_the_html_pages_show_bidi_controls(tmp_path: Path) -> None:
    """``show --html`` and ``stats --html``: a bidi control in an id or a hook name is shown
    escaped (``\\u202e``), so it cannot reorder the page."""
    page = tmp_path / "show.html"
    code, _, err = _run("show", str(_hostile_history(tmp_path)), "--html", str(page))
    assert code == 1, err
    text = page.read_text(encoding="utf-8")
    assert "\u202e" not in text and "\\u202e" in text
    log = tmp_path / "bidi.log"
    log.write_text("INFO toolmend: toolmend repaired a\u202eb for openai: x@1\n", encoding="utf-8")
    code, out, err = _run("stats", str(log), "--html")
    assert code == 0, err
    assert "\u202e" not in out and "\\u202e" in out
