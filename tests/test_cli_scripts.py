"""The ``toolmend`` command for scripts and CI (issue 33): ``--version`` from the one place,
``check --json`` and ``repair --json``, exit codes in every ``--help``, the short provider list,
``show --html`` never writing over its input or a file that is not a page, and what ``stats``
says when a log has no toolmend line. Run in this process through ``toolmend._cli.main``; the
installed console script is exercised in ``tests/test_cli.py``."""

from __future__ import annotations

import importlib.metadata
import json
from pathlib import Path
from typing import Any

import pytest

import toolmend
from toolmend._cli import main
from toolmend.profiles._vendors import VENDORS

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "histories" / "interleaved_user_message.json"

CLEAN = [
    {"role": "user", "content": "Weather?"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "w", "arguments": "{}"}}
        ],
    },
    {"role": "tool", "tool_call_id": "call_1", "content": "21 C"},
]

PROBLEM_KEYS = {"index", "code", "rule", "ids", "message", "provider_error"}
CHANGE_KEYS = {"index", "code", "ids", "detail"}


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    try:
        code = main(list(args))
    except SystemExit as exit_:
        code = int(exit_.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


# --- the version ---------------------------------------------------------------------------------


def test_the_version_comes_from_one_place(capsys: pytest.CaptureFixture[str]) -> None:
    from toolmend import _version

    assert toolmend.__version__ == _version.VERSION == "0.2.0"
    assert importlib.metadata.version("toolmend") == toolmend.__version__
    tomllib = pytest.importorskip("tomllib")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "version" not in project["project"]  # not written twice
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {
        "attr": "toolmend._version.VERSION"
    }
    code, out, _ = _run(capsys, "--version")
    assert (code, out) == (0, f"toolmend {toolmend.__version__}\n")


# --- check --json and repair --json --------------------------------------------------------------


def test_check_json_lists_the_problems(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(capsys, "check", str(EXAMPLE), "-p", "deepseek", "--json")
    report = json.loads(out)
    assert code == 1 and err == ""
    assert set(report) == {"file", "provider", "accepted", "problems"}
    assert report["provider"] == "deepseek" and report["accepted"] is False
    expected = toolmend.check(json.loads(EXAMPLE.read_text()), provider="deepseek")
    assert [(p["index"], p["code"]) for p in report["problems"]] == [
        (p.index, p.code) for p in expected
    ]
    assert all(set(problem) == PROBLEM_KEYS for problem in report["problems"])
    assert report["problems"][0]["provider_error"] == expected[0].provider_error


def test_check_json_of_a_clean_history(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    clean = tmp_path / "clean.json"
    clean.write_text(json.dumps(CLEAN))
    code, out, _ = _run(capsys, "check", str(clean), "--json")
    assert code == 0
    assert json.loads(out) == {
        "file": str(clean),
        "provider": "openai",
        "accepted": True,
        "problems": [],
    }


def test_repair_json_reports_on_stdout_and_writes_the_history_to_output(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    out_file = tmp_path / "fixed.json"
    code, out, err = _run(
        capsys, "repair", str(EXAMPLE), "-p", "deepseek", "--json", "-o", str(out_file)
    )
    report = json.loads(out)
    assert code == 0 and err == ""
    assert set(report) == {
        "file",
        "provider",
        "changed",
        "output",
        "changes",
        "problems_before",
        "problems_left",
    }
    assert report["changed"] is True and report["output"] == str(out_file)
    assert report["problems_left"] == []
    result = toolmend.repair(json.loads(EXAMPLE.read_text()), provider="deepseek")
    assert [(c["index"], c["code"]) for c in report["changes"]] == [
        (c.index, c.code) for c in result.changes
    ]
    assert all(set(change) == CHANGE_KEYS for change in report["changes"])
    assert [p["code"] for p in report["problems_before"]] == [p.code for p in result.problems]
    assert json.loads(out_file.read_text()) == result.messages
    assert toolmend.check(json.loads(out_file.read_text()), provider="deepseek") == []


def test_repair_json_without_output_prints_only_the_report(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = _run(capsys, "repair", str(EXAMPLE), "--json")
    assert code == 0
    assert json.loads(out)["output"] is None  # one JSON document: the report, not the history


def test_repair_json_exit_1_when_problems_are_left(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # the report policy is not reachable from the CLI; a history whose damage the repair cannot
    # mend is: a tool result with no id at all, for a provider that needs one
    broken = tmp_path / "left.json"
    broken.write_text(json.dumps([*CLEAN[:2], {"role": "tool", "content": "21 C"}]))
    result = toolmend.repair(json.loads(broken.read_text()), provider="openai")
    code, out, _ = _run(capsys, "repair", str(broken), "--json")
    report = json.loads(out)
    assert [p["code"] for p in report["problems_left"]] == [p.code for p in result.problems_left]
    assert code == (1 if result.problems_left else 0)


# --- help texts -----------------------------------------------------------------------------------


@pytest.mark.parametrize("command", ["check", "repair", "show", "stats", "serve"])
def test_every_help_ends_with_its_exit_codes(
    capsys: pytest.CaptureFixture[str], command: str
) -> None:
    code, out, _ = _run(capsys, command, "--help")
    flat = " ".join(out.split())
    assert code == 0
    assert "exit codes: 0 " in flat and " 2 " in flat.split("exit codes:")[1]


def test_repair_help_names_exit_1(capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = _run(capsys, "repair", "--help")
    assert "1 problems are left" in " ".join(out.split())


def test_the_provider_list_is_short(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "2000")  # argparse would wrap inside a hyphenated name
    _, out, _ = _run(capsys, "check", "--help")
    flat = " ".join(out.split())
    listed = flat.split("openai for chat): ")[1].split(" (profiles")[0].split(", ")
    assert listed == [vendor.name for vendor in VENDORS]  # vendors and servers, no alias
    assert "vllm" in listed and "ollama" in listed and "azure" in listed
    for name in ("claude", "vertex_ai", "openai-responses", "deepseek-reasoner", "gemini-3"):
        assert name not in flat  # profiles and aliases are accepted, not listed


def test_an_unknown_provider_lists_the_names_without_aliases(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, _, err = _run(capsys, "check", str(EXAMPLE), "-p", "claud")
    assert code == 2
    assert "Did you mean 'claude'?" in err  # an alias is still suggested and accepted
    known = err.split("Vendors and servers: ")[1]
    assert "claude," not in known and "openai-responses" not in known
    assert known.startswith(", ".join(vendor.name for vendor in VENDORS))
    assert len(err.strip().splitlines()) == 1


# --- show --html never overwrites what it should not -----------------------------------------------


def _history_file(tmp_path: Path) -> Path:
    source = tmp_path / "history.json"
    source.write_text(EXAMPLE.read_text())
    return source


@pytest.mark.parametrize("spelling", ["same", "dotted"])
def test_show_html_never_overwrites_its_input(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    spelling: str,
) -> None:
    source = _history_file(tmp_path)
    before = source.read_bytes()
    monkeypatch.chdir(tmp_path)
    target = "history.json" if spelling == "same" else "./history.json"
    code, out, err = _run(capsys, "show", "history.json", "--html", target)
    assert code == 2 and out == ""
    assert "not overwritten" in err and "being read" in err
    assert source.read_bytes() == before


def test_show_html_never_overwrites_a_file_that_is_not_a_page(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    source = _history_file(tmp_path)
    notes = tmp_path / "notes.txt"
    notes.write_text("keep me")
    code, _, err = _run(capsys, "show", str(source), "--html", str(notes))
    assert code == 2 and "not an .html file" in err
    assert notes.read_text() == "keep me"


def test_show_html_writes_a_page_and_overwrites_only_a_page(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    source = _history_file(tmp_path)
    page = tmp_path / "view.html"
    page.write_text("old page")
    code, out, _ = _run(capsys, "show", str(source), "--html", str(page))
    assert code == 1  # the history has problems, as `check` says
    assert page.read_text().startswith("<!DOCTYPE html>")
    assert out.startswith(f"{page}: ")


def test_show_html_dash_is_standard_output(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = _history_file(tmp_path)
    monkeypatch.chdir(tmp_path)
    code, out, _ = _run(capsys, "show", str(source), "--html", "-")
    assert code == 1
    assert out.startswith("<!DOCTYPE html>") and out.rstrip().endswith("</html>")
    assert not (tmp_path / "-").exists()


def test_repair_output_dash_is_standard_output(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = _history_file(tmp_path)
    monkeypatch.chdir(tmp_path)
    code, out, _ = _run(capsys, "repair", str(source), "-o", "-")
    assert code in (0, 1)
    assert isinstance(json.loads(out), (list, dict))  # the repaired history, on stdout
    assert not (tmp_path / "-").exists()
    code, out, err = _run(capsys, "repair", str(source), "--json", "-o", "-")
    assert (code, out) == (2, "") and err.startswith("toolmend: -o -: ")
    assert not (tmp_path / "-").exists()


def test_stats_html_keeps_the_same_rule(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "app.log"
    log.write_text("INFO something else\n")
    monkeypatch.chdir(tmp_path)
    code, _, err = _run(capsys, "stats", "--html", "./app.log", "app.log")
    assert code == 2 and "being read" in err
    assert log.read_text() == "INFO something else\n"


# --- stats: no lines, and stored histories ----------------------------------------------------------


def test_stats_says_how_to_turn_the_lines_on(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    log = tmp_path / "proxy.log"
    log.write_text('INFO:     127.0.0.1:51234 - "POST /v1/chat/completions HTTP/1.1" 200 OK\n')
    code, out, _ = _run(capsys, "stats", str(log))
    assert code == 0
    assert "TOOLMEND_LOG=info" in out
    code, out, _ = _run(capsys, "stats", "--html", "-", str(log))
    assert "TOOLMEND_LOG=info" in out


HEAL_LINES = [
    "INFO toolmend repaired agents.repair_session for openai-responses (session rules): "
    "inserted_placeholder_result@3[call_1]",
    "INFO toolmend repaired agents.session_input_callback for openai-responses (session rules): "
    "dropped_orphan_result@2[call_9]",
    "INFO toolmend repaired langgraph.repair_thread for openai: dropped_orphan_result@1[call_2]",
    "INFO toolmend repaired google_genai.Chat.send_message for gemini: dropped_orphan_result@1[x]",
    "INFO toolmend repaired agents.call_model_input_filter for openai: moved_result@3[call_1]",
]


def test_stats_does_not_count_a_healed_store_as_a_request(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    log = tmp_path / "agents.log"
    log.write_text("\n".join(HEAL_LINES) + "\n")
    code, out, _ = _run(capsys, "stats", "--json", str(log))
    summary: dict[str, Any] = json.loads(out)
    assert code == 0
    assert summary["repaired"]["requests"] == 1  # the input filter's: the one request sent
    assert list(summary["hooks"]) == ["agents.call_model_input_filter"]
    assert summary["healed"]["requests"] == 4
    assert summary["healed"]["by_provider"]["openai-responses"]["changes"] == 2
    _, text, _ = _run(capsys, "stats", str(log))
    assert "Stored histories healed (not requests): 4 heals, 4 changes" in text
