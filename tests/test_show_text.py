"""``toolmend show`` in the terminal: golden timelines of the seed scenarios (plain text), colour
only on a terminal, every format, request bodies, content escaped and never logged.

Golden files live in ``tests/golden/show/``. After an intended change of the output, rewrite
them with ``TOOLMEND_UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/test_show_text.py`` and
review the diff; without that variable a difference fails the test.
"""

from __future__ import annotations

import difflib
import json
import logging
import os
import pty
import select
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import toolmend
from toolmend._cli import main
from toolmend._show import html, text, timeline

from support.show_cases import EXAMPLE_PROVIDERS, EXAMPLES, ROOT, Case, cases, history_of

GOLDEN = ROOT / "tests" / "golden" / "show"
UPDATE = os.environ.get("TOOLMEND_UPDATE_GOLDEN", "") not in ("", "0")
CASES = cases()


def _golden(name: str, output: str) -> None:
    path = GOLDEN / f"{name}.txt"
    if UPDATE:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(output, encoding="utf-8")
    assert path.exists(), f"no golden file {path}: write it with TOOLMEND_UPDATE_GOLDEN=1"
    expected = path.read_text(encoding="utf-8")
    if output != expected:
        diff = "".join(
            difflib.unified_diff(
                expected.splitlines(True), output.splitlines(True), str(path), "now"
            )
        )
        pytest.fail(f"the timeline differs from {path.name}:\n{diff}")


def _show(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(["show", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _run(*args: str, **options: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "toolmend", "show", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
        **options,
    )


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.name)
def test_golden_timeline_with_the_repair(
    case: Case, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    if case.path is not None:  # the bundled files go through the command, as a user runs it
        monkeypatch.chdir(ROOT)
        shown = str(case.path.relative_to(ROOT))
        code, out, err = _show([shown, "--provider", case.provider, "--fix"], capsys)
        assert (code, err) == (1, "")
    else:
        view = timeline.build(history_of(case.history), provider=case.provider, fix=True)
        out = text.render(view, source=case.name)
    assert "\x1b" not in out
    _golden(case.name, out)


def test_golden_timeline_without_the_repair(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)
    code, out, _ = _show(
        ["examples/histories/seed000_deepseek_dangling_tool.json", "-p", "deepseek"], capsys
    )
    assert code == 1
    assert "after repair" not in out and "(add --fix to see the repaired history)" in out
    _golden("seed000_deepseek_dangling_tool.no-fix", out)


def test_every_bundled_example_has_a_golden_timeline() -> None:
    stems = {path.stem for path in EXAMPLES.glob("*.json")}
    assert stems <= set(EXAMPLE_PROVIDERS), "add the new example to tests/support/show_cases.py"
    names = {case.name for case in CASES}
    kept = {path.stem for path in GOLDEN.glob("*.txt")} - {"seed000_deepseek_dangling_tool.no-fix"}
    assert kept == names, "a golden file without a case, or a case without a golden file"


def test_every_change_and_problem_is_marked_where_it_sits() -> None:
    for case in CASES:
        history = history_of(case.history)
        view = timeline.build(history, provider=case.provider, fix=True)
        out = text.render(view, source=case.name)
        result = toolmend.repair(history, provider=case.provider)
        for change in result.changes:
            assert f"{change.code}" in out, (case.name, change)
        for problem in result.problems:
            assert problem.provider_error in out, (case.name, problem.code)
        # each change once where it sits; a row it touched without holding it points to it
        # ("** edited: see moved_result at input #2"), once per code and input message
        pointers = out.count(": see ")
        assert out.count("** ") - pointers == len(result.changes), case.name
        assert out.count("!! ") == len(result.problems) + len(result.problems_left), case.name


def test_a_call_and_its_result_share_a_label_and_orphans_stand_out() -> None:
    view = timeline.build(json.loads((EXAMPLES / "interleaved_user_message.json").read_text()))
    out = text.render(view, source="x")
    assert "-> [B] call git_diff (call_a2), result in #4" in out
    assert "<- [B] result of git_diff (call_a2), call in #1" in out
    seed001 = json.loads((EXAMPLES / "seed001_trimmed_tool_group.json").read_text())
    out = text.render(timeline.build(seed001), source="x")
    assert "<- [?] result for call_Qm3p9Lh2a7Xr: ORPHAN" in out
    assert "-> [A] call git_log (call_Hb5Rj0Ys6uTq): NO RESULT" in out


def test_a_logged_request_body_shows_like_its_history(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    history = json.loads((EXAMPLES / "interleaved_user_message.json").read_text())
    body = tmp_path / "request.json"
    body.write_text(json.dumps({"model": "gpt-4.1", "temperature": 0, "messages": history}))
    bare = tmp_path / "history.json"
    bare.write_text(json.dumps(history))
    code, from_body, _ = _show([str(body), "--fix"], capsys)
    assert code == 1
    _, from_list, _ = _show([str(bare), "--fix"], capsys)
    assert from_body.replace(str(body), "F") == from_list.replace(str(bare), "F")


def test_exit_codes_follow_check(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    clean = tmp_path / "clean.json"
    clean.write_text(json.dumps([{"role": "user", "content": "hi"}]))
    code, out, _ = _show([str(clean), "--fix"], capsys)
    assert code == 0
    assert "the openai profile accepts this history" in out and "nothing to repair" in out
    broken = tmp_path / "broken.json"
    broken.write_text("[{")
    with pytest.raises(SystemExit) as exited:
        main(["show", str(broken)])
    assert exited.value.code == 2
    assert "not JSON" in capsys.readouterr().err
    unreadable = tmp_path / "bad-message.json"
    unreadable.write_text(json.dumps([{"role": "user", "content": "hi"}, 5]))
    with pytest.raises(SystemExit) as exited:
        main(["show", str(unreadable)])
    assert exited.value.code == 2
    assert "message 1" in capsys.readouterr().err


def test_an_html_page_that_cannot_be_written_is_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "missing-folder" / "out.html"
    with pytest.raises(SystemExit) as exited:
        main(["show", str(EXAMPLES / "interleaved_user_message.json"), "--html", str(target)])
    assert exited.value.code == 2
    assert capsys.readouterr().err.startswith(f"toolmend: {target}: ")


@pytest.mark.slow
def test_empty_history_problem_names_no_message(tmp_path: Path) -> None:
    empty = tmp_path / "empty.json"
    empty.write_text("[]")
    done = _run(str(empty), "--fix")
    assert done.returncode == 1
    assert "!! empty_history" in done.stdout
    assert "the repair changes nothing" in done.stdout


# --- colour -----------------------------------------------------------------------------------


def _on_a_terminal(*args: str, env: dict[str, str]) -> str:
    """Run the command with its standard output on a pseudo-terminal; what it wrote."""
    leader, follower = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "toolmend", "show", *args],
        stdout=follower,
        stderr=subprocess.DEVNULL,
        cwd=ROOT,
        env=env,
    )
    os.close(follower)
    chunks = []
    while True:
        ready, _, _ = select.select([leader], [], [], 30)
        if not ready:
            break
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the terminal closed with the process
            break
        if not chunk:
            break
        chunks.append(chunk)
    process.wait(timeout=30)
    os.close(leader)
    return b"".join(chunks).decode("utf-8", "replace")


@pytest.mark.slow
def test_colour_only_on_a_terminal_and_never_with_no_color() -> None:
    example = "examples/histories/interleaved_user_message.json"
    env = {key: value for key, value in os.environ.items() if key not in ("NO_COLOR", "TERM")}
    coloured = _on_a_terminal(example, "--fix", env={**env, "TERM": "xterm"})
    assert "\x1b[" in coloured and "missing_result" in coloured
    plain = _on_a_terminal(example, "--fix", env={**env, "TERM": "xterm", "NO_COLOR": "1"})
    assert "\x1b[" not in plain and "missing_result" in plain
    piped = _run(example, "--fix", env={**env, "TERM": "xterm"})
    assert "\x1b[" not in piped.stdout and piped.returncode == 1
    assert piped.stdout == plain.replace("\r\n", "\n")


# --- content ----------------------------------------------------------------------------------


def test_previews_escape_what_would_drive_the_terminal() -> None:
    history = [
        {"role": "user", "content": "line one\nline two\x1b[2J\x07 \u202eevil\u200b"},
        {"role": "assistant", "content": "x" * 500},
    ]
    view = timeline.build(history)
    for color in (False, True):
        out = text.render(view, source="f", color=color)
        assert "\x1b[2J" not in out and "\x07" not in out and "\u202e" not in out
        assert "line one\\nline two\\x1b[2J\\x07 \\u202eevil\\u200b" in out
    lines = text.render(view, source="f", width=80).splitlines()
    assert max(len(line) for line in lines if "xxx" in line) <= 80
    assert any(line.endswith("x...") for line in lines)


def test_message_content_never_reaches_a_log(caplog: pytest.LogCaptureFixture) -> None:
    secret = "s3cr3t-content-marker"
    history = [
        {"role": "user", "content": f"{secret} user"},
        {"role": "assistant", "content": None, "tool_calls": [_call("call_1", "look")]},
        {"role": "user", "content": f"{secret} interleaved"},
        {"role": "tool", "tool_call_id": "call_1", "content": f"{secret} result"},
    ]
    caplog.set_level(logging.DEBUG)
    view = timeline.build(history, fix=True)
    assert secret in text.render(view, source="f") and secret in html.render(view, source="f")
    assert secret not in caplog.text
    assert all(secret not in str(record.args) for record in caplog.records)


def _call(call_id: str, name: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": "{}"}}


# --- formats the command cannot read from a file ----------------------------------------------


def test_langchain_messages_show_like_the_others() -> None:
    messages = pytest.importorskip("langchain_core.messages")
    history = [
        messages.HumanMessage("Weather in Paris?"),
        messages.AIMessage(
            "", tool_calls=[{"id": "call_lc1", "name": "get_weather", "args": {"city": "Paris"}}]
        ),
        messages.HumanMessage("hello?"),
        messages.ToolMessage("21 C", tool_call_id="call_lc1"),
    ]
    view = timeline.build(history, provider="openai", fix=True)
    out = text.render(view, source="langchain")
    assert view.before.format == "langchain"
    assert "-> [A] call get_weather (call_lc1), result in #3" in out
    assert "!! missing_result" in out and "** moved: moved_result (call_lc1)" in out
    assert "21 C" in out and "hello?" in out
    assert '"tool_call_id": "call_lc1"' in html.render(view, source="langchain")


def test_sdk_objects_show_their_content() -> None:
    genai = pytest.importorskip("google.genai.types")
    history = [
        genai.Content(role="user", parts=[genai.Part(text="What's the weather?")]),
        genai.Content(
            role="model",
            parts=[genai.Part(function_call=genai.FunctionCall(name="get_weather", args={}))],
        ),
        genai.Content(
            role="user",
            parts=[
                genai.Part(
                    function_response=genai.FunctionResponse(
                        name="call_9", response={"result": "sunny"}
                    )
                )
            ],
        ),
    ]
    view = timeline.build(history, provider="gemini", fix=True)
    out = text.render(view, source="genai")
    assert "What's the weather?" in out and "sunny" in out
    assert "** renamed: filled_result_name" in out


def test_a_repair_that_cannot_be_followed_claims_no_source(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(timeline, "_origins", lambda *args, **kwargs: None)
    history = json.loads((EXAMPLES / "interleaved_user_message.json").read_text())
    view = timeline.build(history, fix=True)
    assert view.after is not None
    assert {row.origin for row in view.after.rows} == {"unknown"}
    out = text.render(view, source="x")
    assert "moved_message" in out and "moved_result" in out
    assert "(unknown)" in out and "(dropped)" not in out
    assert 'data-fate="unknown"' in html.render(view, source="x")
