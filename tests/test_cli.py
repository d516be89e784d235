"""The ``toolmend`` command as a user runs it: the installed console script, real files."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "histories" / "interleaved_user_message.json"

# every test here runs the installed command in its own process
pytestmark = pytest.mark.slow


def _toolmend(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[str]:
    script = shutil.which("toolmend", path=str(Path(sys.executable).parent))
    command = [script] if script else [sys.executable, "-m", "toolmend"]
    return subprocess.run(
        [*command, *args],
        input=stdin.decode() if stdin else None,
        capture_output=True,
        text=True,
        check=False,
    )


def test_repair_prints_changes_and_a_history_the_provider_accepts(tmp_path: Path) -> None:
    done = _toolmend("repair", str(EXAMPLE), "--provider", "deepseek")
    assert done.returncode == 0, done.stderr
    assert "moved_result" in done.stderr and "moved_message" in done.stderr
    repaired = tmp_path / "fixed.json"
    repaired.write_text(done.stdout)
    assert _toolmend("check", str(repaired), "--provider", "deepseek").returncode == 0
    assert json.loads(done.stdout)[2]["role"] == "tool"


def test_check_exit_codes_and_provider_text() -> None:
    broken = _toolmend("check", str(EXAMPLE), "-p", "openai")
    assert broken.returncode == 1
    assert "OA-MISSING-TOOL-RESPONSE" in broken.stdout
    assert "did not have response messages: call_a2" in broken.stdout


def test_repair_keeps_a_request_body_around_the_history(tmp_path: Path) -> None:
    body = {"model": "deepseek-chat", "temperature": 0, "messages": json.loads(EXAMPLE.read_text())}
    source = tmp_path / "request.json"
    source.write_text(json.dumps(body))
    out = tmp_path / "out.json"
    done = _toolmend("repair", str(source), "-p", "deepseek", "-o", str(out))
    assert done.returncode == 0, done.stderr
    fixed = json.loads(out.read_text())
    assert fixed["model"] == "deepseek-chat" and len(fixed["messages"]) == 5


@pytest.mark.parametrize(
    ("content", "words"),
    [
        (b"\xff\xfe not utf-8 \x80", "not UTF-8"),
        (b'[{"role": "user"', "not JSON"),
        (b'{"model": "x"}', "without a 'messages'"),
        (b'[{"role": "user", "content": "hi"}, 7]', "message 1"),
        (b'[{"role": "tool", "tool_call_id": 5}]', "message 0, field 'tool_call_id'"),
    ],
)
def test_unreadable_input_is_one_line_and_exit_2(
    tmp_path: Path, content: bytes, words: str
) -> None:
    source = tmp_path / "bad.json"
    source.write_bytes(content)
    for command in ("check", "repair"):
        done = _toolmend(command, str(source))
        assert done.returncode == 2
        assert words in done.stderr
        assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
        assert str(source) in done.stderr


def test_missing_file_and_unknown_provider() -> None:
    assert "No such file" in _toolmend("check", "/nonexistent.json").stderr
    done = _toolmend("check", str(EXAMPLE), "-p", "deepsek")
    assert done.returncode == 2 and "Did you mean 'deepseek'" in done.stderr


def test_stdin_is_read_with_dash() -> None:
    done = _toolmend("check", "-", "-p", "deepseek", stdin=EXAMPLE.read_bytes())
    assert done.returncode == 1


@pytest.mark.parametrize(
    ("example", "provider", "code"),
    [
        ("responses_orphan_output.json", "openai-responses", "OR-NO-TOOL-CALL"),
        ("gemini_contents_opaque_names.json", "gemini", "gemini.function_response_name_mismatch"),
        ("interleaved_user_message.json", "openai", "OA-MISSING-TOOL-RESPONSE"),
    ],
)
def test_without_provider_the_history_is_judged_by_its_own_formats(
    example: str, provider: str, code: str
) -> None:
    """A Responses body judged by OpenAI chat's rules got three wrong problems, and a Gemini
    body an error; the format's own provider is the default instead."""
    done = _toolmend("check", str(EXAMPLE.parent / example))
    assert done.returncode == 1, done.stderr
    assert f"problem(s) for {provider}\n" in done.stdout
    assert code in done.stdout
    named = _toolmend("check", str(EXAMPLE.parent / example), "-p", provider)
    assert named.stdout == done.stdout
