"""The ``toolmend`` command: ``check`` and ``repair`` a history saved as JSON.

``toolmend check FILE --provider P [--format F]``
    Lists the problems, one per line with the provider's error text. Exit 0 when the provider
    accepts the history, 1 when it has problems, 2 when the file cannot be read.
``toolmend repair FILE --provider P [--format F] [-o OUT]``
    Writes the repaired history as JSON to OUT (or standard output) and the changes to standard
    error. Exit 0, or 2 when the file cannot be read.

FILE holds a JSON list of messages, or a logged request body with a ``messages``, ``contents``
or ``input`` key (the repaired output keeps the body around the history). ``-`` reads standard
input. Errors are one line naming the file and, where it applies, the message index.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from .api import check, repair
from .profiles import profile_names
from .report import Problem, ToolmendError

__all__ = ["main"]

_HISTORY_KEYS = ("messages", "contents", "input")


class _UnreadableError(Exception):
    """The file cannot be used; the message says why, in one line."""


def _load(path: str) -> Any:
    try:
        if path == "-":
            raw = sys.stdin.buffer.read()
        else:
            with open(path, "rb") as handle:
                raw = handle.read()
    except OSError as error:
        raise _UnreadableError(error.strerror or str(error)) from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise _UnreadableError(f"not UTF-8 text (byte {error.start})") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise _UnreadableError(
            f"not JSON: {error.msg} at line {error.lineno} column {error.colno}"
        ) from None
    except RecursionError:
        raise _UnreadableError("not JSON this program can read: nested too deeply") from None


def _split(document: Any) -> tuple[Any, str | None]:
    """The history inside ``document`` and the key it sat under (None for a bare list)."""
    if isinstance(document, list):
        return document, None
    if isinstance(document, dict):
        for key in _HISTORY_KEYS:
            if key in document:
                return document[key], key
        raise _UnreadableError("a JSON object without a 'messages', 'contents' or 'input' key")
    raise _UnreadableError(
        f"expected a JSON list of messages or a request body, got {type(document).__name__}"
    )


def _fail(path: str, reason: str) -> NoReturn:
    print(f"toolmend: {path}: {reason}", file=sys.stderr)
    raise SystemExit(2)


def _print_problems(problems: Sequence[Problem], stream: Any) -> None:
    for problem in problems:
        rule = f" [{problem.rule}]" if problem.rule else ""
        print(
            f"message {problem.index}: {problem.code}{rule}: {problem.provider_error}", file=stream
        )


def _run_check(args: argparse.Namespace) -> int:
    history, _ = _split(_load(args.file))
    problems = check(history, provider=args.provider, format=args.format)
    if not problems:
        print(f"{args.file}: the {args.provider} profile accepts this history")
        return 0
    print(f"{args.file}: {len(problems)} problem(s) for {args.provider}")
    _print_problems(problems, sys.stdout)
    return 1


def _run_repair(args: argparse.Namespace) -> int:
    document = _load(args.file)
    history, key = _split(document)
    result = repair(history, provider=args.provider, format=args.format)
    if result.problems:
        print(f"{len(result.problems)} problem(s) found for {args.provider}:", file=sys.stderr)
        _print_problems(result.problems, sys.stderr)
    print(f"{len(result.changes)} change(s):", file=sys.stderr)
    for change in result.changes:
        ids = f" ({', '.join(change.ids)})" if change.ids else ""
        print(f"  message {change.index}: {change.code}{ids}: {change.detail}", file=sys.stderr)
    if result.problems_left:
        print("still broken after repair:", file=sys.stderr)
        _print_problems(result.problems_left, sys.stderr)
    output = result.messages if key is None else {**document, key: result.messages}
    text = json.dumps(output, indent=2, ensure_ascii=False, default=str) + "\n"
    if args.output:
        with open(args.output, "w", encoding="utf-8") as handle:
            handle.write(text)
    else:
        sys.stdout.write(text)
    return 0 if not result.problems_left else 1


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="toolmend",
        description="Check and repair the tool calls of an LLM chat history for a provider.",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    for name, summary in (
        ("check", "list what the provider would reject"),
        ("repair", "write the history the provider accepts"),
    ):
        command = commands.add_parser(name, help=summary, description=summary)
        command.add_argument("file", help="JSON list of messages or request body; - for stdin")
        command.add_argument(
            "--provider",
            "-p",
            default="openai",
            help="provider profile: " + ", ".join(profile_names()),
        )
        command.add_argument("--format", "-f", default=None, help="history format (detected)")
        if name == "repair":
            command.add_argument("-o", "--output", help="write the repaired JSON here")
    summary = "send broken histories through the real SDKs to a local strict provider"
    demo = commands.add_parser("demo", help=summary, description=summary)
    demo.add_argument("-v", "--verbose", action="store_true", help="full errors and changes")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``toolmend`` console script."""
    args = _parser().parse_args(argv)
    if args.command == "demo":
        from .demo import main as demo_main

        return demo_main(verbose=args.verbose)
    runner = _run_check if args.command == "check" else _run_repair
    try:
        return runner(args)
    except _UnreadableError as error:
        _fail(args.file, str(error))
    except ToolmendError as error:
        _fail(args.file, str(error))


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
