"""``toolmend stats``: the counts it reads in a log are what the hooks did.

The logs are written by real hook calls (tests/support/stats_logs.py: the openai SDK patched by
toolmend over real HTTP to the strict server, ``hooks.mend`` for the other outcomes, LiteLLM
with ``mock_response``, the Agents SDK's filter and session callback), through real logging
formatters (a plain format, python-json-logger, LiteLLM's ``JSON_LOGS`` formatter), and each
count is compared with the :class:`toolmend.integrations.telemetry.HookReport` the hooks
recorded for the same calls. So a change to a log line that stats no longer reads fails here.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile
import warnings
from collections import Counter
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

from support.stats_logs import (
    FAULT_TEXT,
    MODEL_IN_SOURCE,
    PLAIN_FORMAT,
    SECRET_IDS,
    Produced,
    actual,
    calls,
    capture,
    chat_broken,
    chat_left,
    chat_loop,
    expected,
    produce,
    result,
    user,
)

pytest.importorskip("openai")
pytest.importorskip("pythonjsonlogger", reason="pip install -e '.[test]'")


@pytest.fixture(scope="module")
def produced(tmp_path_factory: pytest.TempPathFactory) -> Produced:
    return produce(tmp_path_factory.mktemp("logs"))


def stats(*args: str, stdin: bytes | None = None) -> tuple[int, str, str]:
    """``toolmend stats ARGS`` in process: exit code, standard output, standard error."""
    out, err = io.StringIO(), io.StringIO()
    saved = sys.stdin
    if stdin is not None:
        sys.stdin = io.TextIOWrapper(io.BytesIO(stdin))
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(["stats", *args])
            except SystemExit as exit:
                code = int(exit.code or 0)
    finally:
        sys.stdin = saved
    return code, out.getvalue(), err.getvalue()


def summary(*args: str, stdin: bytes | None = None) -> dict[str, Any]:
    code, out, err = stats(*args, "--json", stdin=stdin)
    assert code == 0, err
    result: dict[str, Any] = json.loads(out)
    return result


# --- the counts are what the hooks did --------------------------------------------------------


@pytest.mark.parametrize("kind", ["plain", "json", "messages"])
def test_the_counts_are_what_the_hooks_reported(produced: Produced, kind: str) -> None:
    path = getattr(produced, kind)
    got = summary(str(path))
    assert actual(got) == expected(produced.reports, produced.outside)
    # and the problem codes left are those the repairs left
    left = Counter(
        {
            (provider, code): entry["requests"]
            for provider, by in got["problems_left"]["by_provider"].items()
            for code, entry in by["codes"].items()
        }
    )
    assert left == produced.left_codes
    # every outcome is there: nothing was counted by luck of an empty table
    assert set(got["repaired"]["by_provider"]) == {
        "openai",
        "openai-responses",
        "anthropic",
        "deepseek",
    }
    assert got["hooks"]["openai.Completions.create"]["repaired"] == 2
    assert got["loops"]["by_provider"]["openai"]["codes"]
    assert got["sent_unrepaired"]["by_hook"] == {
        "openai.Completions.create": {"failed": 1, "unreadable": 0, "over_budget": 0},
        "test.fault": {"failed": 1, "unreadable": 0, "over_budget": 0},
        "test.unreadable": {"failed": 0, "unreadable": 1, "over_budget": 0},
        "test.cap": {"failed": 0, "unreadable": 0, "over_budget": 1},
    }
    assert got["errors"] == {
        "a hook failed while it was built": 1,
        "a report did not reach a telemetry sink": 1,
    }
    # the model in a source is not part of the hook's name
    assert "test.mend" in got["hooks"] and not any("(" in hook for hook in got["hooks"])


def test_two_files_add_up(produced: Produced) -> None:
    one = summary(str(produced.plain))
    both = summary(str(produced.plain), str(produced.json))
    assert both["repaired"]["requests"] == 2 * one["repaired"]["requests"]
    assert both["repaired"]["changes"] == 2 * one["repaired"]["changes"]
    assert both["sent_unrepaired"]["requests"] == 2 * one["sent_unrepaired"]["requests"]
    assert both["files"] == [str(produced.plain), str(produced.json)]


def test_the_text_tables(produced: Produced) -> None:
    code, out, _ = stats(str(produced.plain))
    assert code == 0
    got = summary(str(produced.plain))
    repaired = got["repaired"]
    assert f"Repaired: {repaired['requests']} requests, {repaired['changes']} changes" in out
    openai_row = repaired["by_provider"]["openai"]
    assert re.search(
        rf"\n  openai +\(all\) +{openai_row['requests']} +{openai_row['changes']}\n", out
    )
    for code_name, entry in openai_row["codes"].items():
        assert re.search(
            rf"\n  openai +{code_name} +{entry['requests']} +{entry['changes']}\n", out
        )
    assert "Problems left: 2 requests" in out
    assert "Sent unrepaired: 4 requests" in out
    assert re.search(r"\n  test\.unreadable +0 +1 +0\n", out)
    assert re.search(r"\n  test\.cap +0 +0 +1\n", out)
    assert "By hook (requests):" in out


@pytest.mark.parametrize("output", ["text", "json", "html"])
def test_no_id_and_no_content_in_the_output(produced: Produced, output: str) -> None:
    flags = {"text": [], "json": ["--json"], "html": ["--html"]}[output]
    code, out, _ = stats(str(produced.plain), str(produced.json), *flags)
    assert code == 0 and "moved_result" in out
    for secret in (*SECRET_IDS, MODEL_IN_SOURCE, "Paris", "21 C", "fake_code"):
        assert secret not in out, secret
    for line in produced.plain.read_text().splitlines():  # the log itself names the ids
        if "toolmend repaired" in line:
            assert "[call_sent_1]" in line or "[call_" in line or "[toolu_" in line
            break


# --- what is read and what is not -------------------------------------------------------------


def _wrapped_lines(produced: Produced) -> list[str]:
    """The bare messages the hooks wrote, wrapped the ways log pipelines wrap them, with
    other lines and tracebacks between them."""
    raw = produced.messages.read_text().splitlines()
    # the messages themselves, not the lines of their tracebacks (the fault's text reads like
    # a repaired line on purpose)
    records = [line for line in raw if line.startswith("toolmend") and logs.parse_message(line)]
    assert len(records) >= 10
    out: list[str] = []
    for n, line in enumerate(records):
        how = n % 6
        if how == 0:
            out.append(f"2026-12-02T01:00:{n:02d} WARNING toolmend: {line}")
        elif how == 1:
            out.append(json.dumps({"event": line, "level": "info", "logger": "toolmend"}))
        elif how == 2:  # Docker's json-file driver
            out.append(json.dumps({"log": line + "\n", "stream": "stderr", "time": "x"}))
        elif how == 3:  # a container runtime's prefix before a JSON record
            out.append("2026-12-02T01:00:00Z stderr F " + json.dumps({"msg": line}))
        elif how == 4:  # LiteLLM's plain formatter with request correlation
            out.append(
                f"01:00:00 - toolmend:INFO: hooks.py:176 - {line} [trace_id=t1 session_id=ann@1]"
            )
        else:
            out.append(f"app-1  | {line}")
        out += [
            "INFO httpx: HTTP Request: POST http://127.0.0.1/v1 200 OK",
            "toolmend is installed; toolmend repaired nothing here",
            json.dumps({"message": 42, "name": "toolmend"}),
            json.dumps({"level": "info"}),
            "{not json at all}",
        ]
    # tracebacks whose frames and exception text look like toolmend lines, plain and prefixed
    out += [
        "ERROR app: request failed",
        "Traceback (most recent call last):",
        '  File "x.py", line 1, in <module>',
        f"    raise RuntimeError({FAULT_TEXT!r})",
        f"RuntimeError: {FAULT_TEXT}",
        "",
        "During handling of the above exception, another exception occurred:",
        "",
        "Traceback (most recent call last):",
        '  File "y.py", line 2, in <module>',
        f"toolmend.ToolChainError: {FAULT_TEXT}",
        "app-1  | Traceback (most recent call last):",
        'app-1  |   File "z.py", line 3, in f',
        f"app-1  | RuntimeError: {FAULT_TEXT}",
        json.dumps({"message": "boom", "stacktrace": f"Traceback...\nRuntimeError: {FAULT_TEXT}"}),
        json.dumps({"log": "Traceback (most recent call last):\n"}),
        json.dumps({"log": '  File "w.py", line 4\n'}),
        json.dumps({"log": f"RuntimeError: {FAULT_TEXT}\n"}),
    ]
    return out


def test_wrapped_lines_read_as_the_bare_messages(produced: Produced, tmp_path: Path) -> None:
    mixed = tmp_path / "mixed.log"
    mixed.write_text("\n".join(_wrapped_lines(produced)) + "\n")
    got, bare = summary(str(mixed)), summary(str(produced.messages))
    for part in ("repaired", "problems_left", "loops", "sent_unrepaired", "hooks"):
        assert got[part] == bare[part], part
    assert "fake.hook" not in got["hooks"]


@pytest.mark.parametrize(
    ("line", "event"),
    [
        (  # a model with a colon, a space and " for " in it, escaped as the hooks write it
            "toolmend repaired litellm.acompletion(bedrock/x%3A0%20for%20y) for anthropic: "
            "moved_result@3[a,b] answered_missing_call@5[c]",
            logs.Event(
                "repaired",
                "litellm.acompletion",
                "anthropic",
                ("moved_result", "answered_missing_call"),
            ),
        ),
        (  # LiteLLM's plain formatter appends the request's correlation ids
            "toolmend repaired a.b for openai: moved_result@1[x]; 1 problem(s) left: "
            "missing_result@4 [trace_id=t1 session_id=ann@1]",
            logs.Event("repaired", "a.b", "openai", ("moved_result",), ("missing_result",)),
        ),
    ],
)
def test_a_line_with_odd_names(line: str, event: logs.Event) -> None:
    assert logs.parse_message(f"12:00:00 - toolmend:INFO: {line}") == event


def test_standard_input_and_gzip(produced: Produced, tmp_path: Path) -> None:
    data = produced.plain.read_bytes()
    packed = tmp_path / "plain.log.gz"
    packed.write_bytes(gzip.compress(data))
    bare = summary(str(produced.plain))
    for got in (summary("-", stdin=data), summary(str(packed))):
        assert got["repaired"] == bare["repaired"]
        assert got["sent_unrepaired"] == bare["sent_unrepaired"]


def test_a_log_without_toolmend_lines(tmp_path: Path) -> None:
    empty, other = tmp_path / "empty.log", tmp_path / "other.log"
    empty.write_text("")
    other.write_text("INFO app: started\nWARNING app: toolmend is not configured\n")
    for path in (empty, other):
        code, out, err = stats(str(path))
        assert (code, err) == (0, "")
        assert "no toolmend log lines found" in out
        assert "logger 'toolmend'" in out
        got = summary(str(path))
        assert got["toolmend_lines"] == 0 and got["repaired"]["requests"] == 0


def test_a_file_that_cannot_be_read(tmp_path: Path) -> None:
    missing = tmp_path / "nope.log"
    code, out, err = stats(str(missing))
    assert (code, out) == (2, "")
    assert err == f"toolmend: {missing}: No such file or directory\n"
    code, _, err = stats(str(tmp_path))
    assert code == 2 and err.startswith(f"toolmend: {tmp_path}: ")
    broken = tmp_path / "broken.gz"
    broken.write_bytes(b"\x1f\x8b\x08\x00garbage")
    code, _, err = stats(str(broken))
    assert code == 2 and err.startswith(f"toolmend: {broken}: ")


def test_html_never_overwrites_a_log(produced: Produced, tmp_path: Path) -> None:
    log = tmp_path / "a.log"
    shutil.copy(produced.plain, log)
    before = log.read_bytes()
    code, _, err = stats("--html", str(log), str(produced.json))
    assert code == 2 and "not overwritten" in err
    assert log.read_bytes() == before
    page = tmp_path / "page.html"
    code, out, _ = stats(str(log), "--html", str(page))
    assert code == 0 and page.read_text().startswith("<!DOCTYPE html>")
    assert out.startswith(f"{page}: 6 request(s) repaired, 2 with problems left, 4 sent unrepaired")


def test_the_page_escapes_what_it_read(tmp_path: Path) -> None:
    hostile = tmp_path / "hostile.log"
    hostile.write_text(
        "toolmend repaired <script>x=1</script> for <img/src=x/onerror=y>: "
        "dropped_orphan_result@1[<b>id</b>]\n"
        "toolmend failed on <svg/onload=z>; the original request was sent\n"
    )
    code, page, _ = stats(str(hostile), "--html")
    assert code == 0
    assert "<script>x=1" not in page and "<img/src" not in page and "<svg/onload" not in page
    assert "&lt;script&gt;x=1&lt;/script&gt;" in page and "&lt;img/src=x/onerror=y&gt;" in page
    assert "<b>id</b>" not in page and "&lt;b&gt;id" not in page


# --- more hooks: LiteLLM's own JSON logs, the Agents SDK's lines ------------------------------


def test_litellm_calls_logged_by_litellms_json_formatter(tmp_path: Path) -> None:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    litellm = pytest.importorskip("litellm")
    from litellm._logging import JsonFormatter

    from toolmend.integrations.litellm import ToolMend

    path = tmp_path / "litellm.json.log"
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setFormatter(JsonFormatter())
    saved = litellm.callbacks
    litellm.callbacks = [ToolMend()]
    try:
        with capture([handler]) as reports:
            litellm.completion(model="gpt-4o", messages=chat_broken(), mock_response="ok")
            litellm.completion(
                model="anthropic/claude-sonnet-4-5", messages=chat_broken(), mock_response="ok"
            )
    finally:
        litellm.callbacks = saved
    assert len(reports) == 2
    assert json.loads(path.read_text().splitlines()[0])["component"] == "toolmend"
    got = summary(str(path))
    assert actual(got) == expected(reports)
    assert set(got["hooks"]) == {"litellm.completion"}
    assert set(got["repaired"]["by_provider"]) == {"openai", "anthropic"}


def test_the_agents_sdk_lines(tmp_path: Path) -> None:
    agents = pytest.importorskip("agents")
    openai = pytest.importorskip("openai")
    hook = pytest.importorskip("toolmend.integrations.openai_agents")
    from agents.run_config import CallModelData, ModelInputData

    agents.set_tracing_disabled(True)
    call = {"type": "function_call", "call_id": "call_ag_1", "name": "f", "arguments": "{}"}
    output = {"type": "function_call_output", "call_id": "call_ag_1", "output": "21 C"}
    late = [user(), call, user("Still there?"), output]  # fine for Responses, not for Chat
    orphan = [user(), {**output, "call_id": "call_gone"}, {"role": "assistant", "content": "ok"}]
    client = openai.AsyncOpenAI(api_key="sk-test", base_url="http://127.0.0.1:9/v1")
    model = agents.OpenAIChatCompletionsModel("gpt-4.1", client)

    def data(items: list[Any]) -> Any:
        agent = agents.Agent(name="a", model=model)
        return CallModelData(ModelInputData(input=items, instructions="x"), agent, None)

    path = tmp_path / "agents.log"
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setFormatter(logging.Formatter(PLAIN_FORMAT))
    with capture([handler]):
        assert hook.ToolMendInputFilter()(data(late)).input is not late
        hook.ToolMendInputFilter(policy="report")(data(late))
        hook.ToolMendSessionInput()(orphan, [user("Go on")])
        hook.ToolMendSessionInput(policy="report")(orphan, [user("Go on")])
    got = summary(str(path))
    assert got["hooks"] == {
        "agents.call_model_input_filter": {
            "repaired": 1,
            "problems_left": 1,
            "loop": 0,
            "failed_open": 0,
        },
    }
    # the session's stored items are healed, not sent: not a request (docs/observability.md)
    assert set(got["repaired"]["by_provider"]) == {"openai"}
    assert set(got["problems_left"]["by_provider"]) == {"openai"}
    assert set(got["healed"]["by_provider"]) == {"openai-responses"}
    assert set(got["stored_problems_left"]["by_provider"]) == {"unknown"}
    text = stats(str(path))[1]
    assert "call_ag_1" not in text and "call_gone" not in text and "gpt-4.1" not in text


def test_the_langchain_history_lines(tmp_path: Path) -> None:
    lc = pytest.importorskip("toolmend.integrations.langchain")
    from langchain_core.chat_history import InMemoryChatMessageHistory
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        store = InMemoryChatMessageHistory()
    history = lc.ToolMendHistory(store)
    path = tmp_path / "langchain.log"
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setFormatter(logging.Formatter(PLAIN_FORMAT))
    with capture([handler]) as reports:
        history.add_message(HumanMessage("hi"))
        history.add_message(ToolMessage(content="21 C", tool_call_id="call_lc_1"))  # no call
        call = {"id": "call_lc_2", "name": "get_weather", "args": {}}
        store.add_messages([AIMessage("", tool_calls=[call]), HumanMessage("again")])
        assert len(history.messages) == 4  # the read answers the call
    got = summary(str(path))
    assert got["refused_by_history_store"] == {"add_message": 1}
    assert actual(got) == expected(reports)
    assert got["hooks"]["langchain.history"]["repaired"] == 1
    text = stats(str(path))[1]
    assert "call_lc_1" not in text and "call_lc_2" not in text and "21 C" not in text


# --- a property: any mix of outcomes, any format ----------------------------------------------

OUTCOMES = ("clean", "repaired", "left", "report", "loop", "unreadable", "failed")
SOURCES = ("svc.hook", "litellm.acompletion(gpt-4o)", "agents.call_model_input_filter(a b)")


def _one_call(outcome: str, provider: str, source: str) -> None:
    """One hook call with ``outcome``."""
    options = hooks.HookOptions()
    history: list[Any] = chat_broken()
    if outcome == "clean":
        history = [user(), calls("call_c"), result("call_c")]
    elif outcome == "left":
        history, options = chat_left(), hooks.HookOptions(policy=toolmend.Policy(frontier="keep"))
    elif outcome == "report":
        options = hooks.HookOptions(policy="report")
    elif outcome == "loop":
        history = chat_loop()
    elif outcome == "unreadable":
        history = [user(), 7]
    if outcome != "failed":
        hooks.mend(history, provider=provider, source=source, options=options)
        return
    real = hooks.repair  # what mend calls (held from import time)
    hooks.repair = _boom  # type: ignore[assignment]
    try:
        hooks.mend(history, provider=provider, source=source, options=options)
    finally:
        hooks.repair = real


def _boom(*args: Any, **kwargs: Any) -> Any:
    raise RuntimeError(FAULT_TEXT)


@contextlib.contextmanager
def _quiet_stderr() -> Iterator[None]:
    with contextlib.redirect_stderr(io.StringIO()):
        yield


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.tuples(
            st.sampled_from(OUTCOMES),
            st.sampled_from(("openai", "deepseek", "mistral")),
            st.sampled_from(SOURCES),
            st.booleans(),
        ),
        max_size=10,
    ),
    st.sampled_from(("plain", "json")),
)
def test_any_mix_of_outcomes_is_counted_as_reported(
    plan: list[tuple[str, str, str, bool]], style: str
) -> None:
    from pythonjsonlogger.json import JsonFormatter

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "app.log"
        handler = logging.FileHandler(path, encoding="utf-8")
        handler.setFormatter(
            logging.Formatter(PLAIN_FORMAT) if style == "plain" else JsonFormatter()
        )
        with capture([handler]) as reports:
            for outcome, provider, source, other in plan:
                if other:  # another logger's line between two requests
                    handler.stream.write("WARNING app: toolmend found nothing to say\n")
                _one_call(outcome, provider, source)
        got = summary(str(path))
    assert actual(got) == expected(reports)
    unrepaired = sum(outcome in ("failed", "unreadable") for outcome, *_ in plan)
    assert got["sent_unrepaired"]["requests"] == unrepaired


# --- the installed command ----------------------------------------------------------------------


@pytest.mark.slow  # runs the installed console script
def test_the_installed_command(produced: Produced, tmp_path: Path) -> None:
    script = shutil.which("toolmend", path=str(Path(sys.executable).parent))
    command = [script] if script else [sys.executable, "-m", "toolmend"]
    done = subprocess.run(
        [*command, "stats", str(produced.plain)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == stats(str(produced.plain))[1]
    page = tmp_path / "stats.html"
    done = subprocess.run(
        [*command, "stats", str(produced.json), "--html", str(page)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert page.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    missing = subprocess.run(
        [*command, "stats", str(tmp_path / "gone.log")], capture_output=True, text=True, check=False
    )
    assert missing.returncode == 2 and "No such file or directory" in missing.stderr


@pytest.mark.parametrize(
    "line",
    [
        "toolmend could not add its guardrail record to the LiteLLM call",
        "toolmend could not make its guardrail record for the LiteLLM call",
        "toolmend could not turn on its Prometheus metrics; requests go on",
        "toolmend failed on langgraph.repair_thread; nothing was written",
        "toolmend failed on aadd_messages; the messages were stored as given",
        "toolmend failed on agents.session_input_callback; the items were left as they are",
    ],
)
def test_toolmend_errors_that_send_no_request_are_errors_not_requests(line: str) -> None:
    """Every ERROR toolmend logs is counted; one on a stored history, on messages being
    written or outside any request sent nothing, so it is not a request sent unrepaired (the
    telemetry reports no ``failed_open`` for it either)."""
    event = logs.parse_message(f"2026-12-02 02:40:00 ERROR toolmend: {line}")
    assert event is not None and event.kind == "error", event


def test_an_id_with_a_bracket_and_a_line_with_no_code_read(tmp_path: Path) -> None:
    """A tool call id is the caller's to choose and may hold ``]``: the hooks write it escaped
    (``%5D``), and the code is read. A repaired line whose codes cannot be read is not one
    toolmend writes: it counts as nothing, and the page is still written."""
    ids = ",".join(map(escape.log, ("x]y", "a b")))
    line = f"toolmend repaired a.b for openai: moved_result@1[{ids}] answered_missing_call@2[z]"
    event = logs.parse_message(line)
    assert event is not None and event.codes == ("moved_result", "answered_missing_call")
    log = tmp_path / "odd.log"
    log.write_text("INFO toolmend: toolmend repaired a.b for openai: ???\n")
    assert logs.read_files([str(log)]).toolmend_lines == 0
    code, page, err = stats(str(log), "--html")
    assert code == 0, err
    assert "</html>" in page and "<svg" not in page
