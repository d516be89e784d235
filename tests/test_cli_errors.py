"""Every failure of the ``toolmend`` command is one line on standard error and exit 2 (issue 30).

Run as a user runs it: the installed command in a real process, with a directory or a missing
folder as the output path, standard input closed, standard output full (``/dev/full``) or gone
(a pipe whose reader has closed it: what ``| head -c1`` leaves once ``head`` has exited).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

HISTORY = [
    {"role": "user", "content": "Weather in Paris?"},
    {"role": "tool", "tool_call_id": "call_1", "content": "21 C"},
]


def _command() -> list[str]:
    script = shutil.which("toolmend", path=str(Path(sys.executable).parent))
    return [script] if script else [sys.executable, "-m", "toolmend"]


def _run(*args: str, **options: Any) -> subprocess.CompletedProcess[str]:
    options.setdefault("stdout", subprocess.PIPE)
    return subprocess.run(
        [*_command(), *args], stderr=subprocess.PIPE, text=True, timeout=120, check=False, **options
    )


def _one_line(done: subprocess.CompletedProcess[str], where: str) -> None:
    """Exit 2 and one line saying why, the last on standard error (``repair`` lists its
    changes there first)."""
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and "Exception ignored" not in done.stderr, done.stderr
    failures = [line for line in done.stderr.splitlines() if line.startswith("toolmend: ")]
    assert failures == [done.stderr.splitlines()[-1]], done.stderr
    assert failures[0].startswith(f"toolmend: {where}: "), done.stderr


@pytest.fixture
def history(tmp_path: Path) -> Path:
    path = tmp_path / "history.json"
    path.write_text(json.dumps(HISTORY), encoding="utf-8")
    return path


@pytest.mark.slow
def test_repair_to_a_directory(history: Path, tmp_path: Path) -> None:
    done = _run("repair", str(history), "-o", str(tmp_path))
    _one_line(done, str(tmp_path))
    assert done.stderr.count("\n") == 1  # found before the repair: nothing else printed


@pytest.mark.slow
def test_repair_into_a_missing_folder(history: Path, tmp_path: Path) -> None:
    target = tmp_path / "missing" / "x.json"
    done = _run("repair", str(history), "-o", str(target))
    _one_line(done, str(target))
    assert "No such file or directory" in done.stderr


def _closed_stdin() -> None:
    os.close(0)


@pytest.mark.slow
@pytest.mark.parametrize("command", ["check", "repair", "show", "stats"])
def test_standard_input_closed(command: str) -> None:
    done = _run(command, "-", preexec_fn=_closed_stdin)
    _one_line(done, "-")
    assert "standard input is closed" in done.stderr


@pytest.mark.slow
@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full")
@pytest.mark.parametrize("command", [["check"], ["repair"], ["show", "--fix"]], ids=" ".join)
def test_standard_output_full(command: list[str], history: Path) -> None:
    with open("/dev/full", "w") as full:
        done = _run(*command, str(history), stdout=full)
    _one_line(done, "standard output")
    assert "No space left on device" in done.stderr


@pytest.mark.slow
@pytest.mark.parametrize(
    "command", [["check"], ["repair"], ["show", "--fix"], ["stats", "--json"]], ids=" ".join
)
def test_standard_output_gone(command: list[str], history: Path) -> None:
    """The reader of the pipe has gone: every write fails with EPIPE (``| head -c1``)."""
    read, write = os.pipe()
    os.close(read)
    try:
        done = _run(*command, str(history), stdout=write)
    finally:
        os.close(write)
    _one_line(done, "standard output")
    assert "Broken pipe" in done.stderr


@pytest.mark.parametrize("target", ["itself", "another"])
def test_a_repair_that_fails_leaves_the_output_file_as_it_was(
    history: Path, tmp_path: Path, target: str
) -> None:
    """``-o`` is written only once there is a repair to write: an unknown provider (found by
    the repair itself) used to truncate the output first, and ``-o`` naming the input lost the
    history."""
    from toolmend._cli import main

    output = history if target == "itself" else tmp_path / "kept.json"
    if target == "another":
        output.write_text("[]\n", encoding="utf-8")
    before = output.read_bytes()
    with pytest.raises(SystemExit) as exited:
        main(["repair", str(history), "-p", "no-such-provider", "-o", str(output)])
    assert exited.value.code == 2
    assert output.read_bytes() == before
