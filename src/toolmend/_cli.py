"""The ``toolmend`` command: ``check``, ``repair`` and ``show`` a history saved as JSON, and
count what the hooks did from their log lines (``stats``).

``toolmend check FILE [--provider P] [--format F] [--model M]``
    Lists the problems, one per line with the provider's error text. Exit 0 when the provider
    accepts the history, 1 when it has problems, 2 when the file cannot be read.
``toolmend repair FILE [--provider P] [--format F] [--model M] [-o OUT]``
    Writes the repaired history as JSON to OUT (or standard output) and the changes to standard
    error. Exit 0, 1 when problems are left after the repair, or 2 when the file cannot be read.
``toolmend show FILE [--provider P] [--format F] [--fix] [--html OUT.html]``
    Prints the history as a timeline, one line per message: its index, role and a short
    preview, the calls it makes and the results it carries (a call and its result share a
    label), and each problem under its message with the provider's error text. ``--fix`` adds
    the repaired timeline below, each change marked on the message it made. Colour only when
    standard output is a terminal and ``NO_COLOR`` is unset. ``--html OUT.html`` writes the same,
    input and repair side by side, as one self-contained page instead (``-``: standard output;
    never over the input nor over a file that is not ``.html``, as ``stats``). Exit codes as
    ``check``.
    This is the one command that shows message content, because the user asks to see it.

``toolmend check|repair FILE --json``
    One JSON object on standard output (shapes in docs/cli.md): ``check``'s problems,
    ``repair``'s changes and ``problems_before``/``problems_left`` (its history goes to ``-o``
    only). Same exit codes; ``repair`` exits 1 when problems are left.
``toolmend serve [--port N] [--provider P]``
    The strict provider server until Ctrl-C (:mod:`toolmend.testing.serve`).
``toolmend --version``
    The version (:data:`toolmend._version.VERSION`).

``toolmend stats FILE... [--json | --html [PATH]]``
    Reads log files holding toolmend's log lines (plain or JSON-formatted logging, mixed with
    any other lines; ``-`` reads standard input, a gzip file is read as its text) and prints
    tables: requests repaired by provider and change code, requests sent with problems left,
    loop guard findings, requests sent unrepaired by hook. Codes and counts only: the ids in
    the lines are never printed. ``--json`` prints the counts as JSON; ``--html`` writes a
    self-contained page with a chart to PATH (standard output without one). Exit 0, or 2 when
    a file cannot be read.

Every failure (a file that cannot be read, an output path that cannot be written, standard
input closed, standard output full or closed) is one line on standard error, ``toolmend:
WHERE: WHY``, and exit 2. Ids, names and roles from the history are printed with control and
bidi characters escaped (:func:`toolmend._escape.terminal`).

FILE holds a JSON list of messages, or a logged request body with a ``messages``, ``contents``
or ``input`` key (the repaired output keeps the body around the history). ``-`` reads standard
input. Errors are one line naming the file and, where it applies, the message index. Without
``--provider`` the history is judged by its own format's provider (``openai`` for chat
messages, ``openai-responses``, ``anthropic``, ``gemini``, ``bedrock``). ``--provider`` names
who serves the request (a vendor or a self-hosted server, or a profile); the history's format
picks that vendor's API and ``--model`` the model-family rules (docs/providers.md, "How a
profile is picked"); the output names the profile that judged it.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from ._api import check, format_of, repair
from ._escape import TERMINAL_ESCAPES, terminal
from ._report import Change, Problem, Repair, ToolmendError
from ._routing import request_profile
from ._version import VERSION
from .profiles import primary_names

__all__ = ["main"]

_HISTORY_KEYS = ("messages", "contents", "input")


class _UnreadableError(Exception):
    """The file cannot be used; the message says why, in one line."""


def _load(path: str) -> Any:
    try:
        if path == "-":
            if sys.stdin is None:
                raise _UnreadableError("standard input is closed")
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
        return json.loads(text, parse_constant=_not_json)
    except json.JSONDecodeError as error:
        raise _UnreadableError(
            f"not JSON: {error.msg} at line {error.lineno} column {error.colno}"
        ) from None
    except RecursionError:
        raise _UnreadableError("not JSON this program can read: nested too deeply") from None


def _not_json(constant: str) -> NoReturn:
    """``NaN``, ``Infinity`` and ``-Infinity``: Python reads them, JSON (and a provider) does
    not, and toolmend writes only strict JSON."""
    raise _UnreadableError(f"not JSON: {constant} is not a JSON value")


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


_STDOUT = "standard output"


def _fail(path: str, reason: str) -> NoReturn:
    if sys.stderr is not None:
        with contextlib.suppress(OSError):  # standard error gone too: the exit code says it
            print(f"toolmend: {terminal(path)}: {terminal(reason)}", file=sys.stderr)
    raise SystemExit(2)


def _reason(error: OSError) -> str:
    return error.strerror or str(error) or type(error).__name__


def _print_problems(problems: Sequence[Problem], stream: Any) -> None:
    for problem in problems:
        rule = f" [{problem.rule}]" if problem.rule else ""
        line = f"message {problem.index}: {problem.code}{rule}: {problem.provider_error}"
        print(terminal(line), file=stream)


def _history(args: argparse.Namespace) -> tuple[Any, Any, str | None]:
    """The document, the history in it and its key; ``args.provider`` set to the history's own
    provider when ``--provider`` was left out (a Responses body is judged by the Responses
    rules, a Gemini body by Gemini's, rather than all by OpenAI chat's)."""
    document = _load(args.file)
    history, key = _split(document)
    module = format_of(history, args.format)
    if args.provider is None:
        args.provider = module.native_provider
    # the profile the vendor's API for this format and the model lead to, named in the output
    args.provider = request_profile(args.provider, format=module.name, model=args.model)
    return document, history, key


def _run_check(args: argparse.Namespace) -> int:
    _, history, _ = _history(args)
    problems = check(history, provider=args.provider, format=args.format)
    if args.json:
        _print_json(_check_report(args, problems))
        return 1 if problems else 0
    if not problems:
        print(f"{terminal(args.file)}: the {args.provider} profile accepts this history")
        return 0
    print(f"{terminal(args.file)}: {len(problems)} problem(s) for {args.provider}")
    _print_problems(problems, sys.stdout)
    return 1


def _run_repair(args: argparse.Namespace) -> int:
    if args.output == "-":  # standard output, as for every other path option
        if args.json:
            _fail("-o -", "--json prints its report on standard output: name a file for -o")
        args.output = None
    document, history, key = _history(args)
    # repaired before ``-o`` is opened (which truncates it): a repair that fails (an unknown
    # provider) leaves the file as it was, even when it is the input
    result = repair(history, provider=args.provider, format=args.format)
    with contextlib.ExitStack() as closing:
        target = None
        if args.output:  # a path that cannot be written fails before anything is printed
            try:
                target = closing.enter_context(open(args.output, "w", encoding="utf-8"))
            except OSError as error:
                _fail(args.output, _reason(error))
        return _repair_to(args, document, key, result, target)


def _repair_to(
    args: argparse.Namespace, document: Any, key: str | None, result: Repair, target: Any
) -> int:
    if args.json:
        return _repair_json(args, document, key, result)
    if result.problems:
        print(f"{len(result.problems)} problem(s) found for {args.provider}:", file=sys.stderr)
        _print_problems(result.problems, sys.stderr)
    print(f"{len(result.changes)} change(s):", file=sys.stderr)
    for change in result.changes:
        ids = f" ({', '.join(change.ids)})" if change.ids else ""
        line = f"  message {change.index}: {change.code}{ids}: {change.detail}"
        print(terminal(line), file=sys.stderr)
    if result.problems_left:
        print("still broken after repair:", file=sys.stderr)
        _print_problems(result.problems_left, sys.stderr)
    output = result.messages if key is None else {**document, key: result.messages}
    text = json.dumps(output, indent=2, ensure_ascii=False, default=str, allow_nan=False) + "\n"
    if target is not None:
        try:
            target.write(text)
            target.flush()
        except OSError as error:
            _fail(args.output, _reason(error))
    else:
        sys.stdout.write(_for_terminal(text))
    return 0 if not result.problems_left else 1


# --- --json: the report for scripts and CI -------------------------------------------------------


def _problem_json(problem: Problem) -> dict[str, Any]:
    return {
        "index": problem.index,
        "code": problem.code,
        "rule": problem.rule,
        "ids": list(problem.ids),
        "message": problem.message,
        "provider_error": problem.provider_error,
    }


def _change_json(change: Change) -> dict[str, Any]:
    return {
        "index": change.index,
        "code": change.code,
        "ids": list(change.ids),
        "detail": change.detail,
    }


def _check_report(args: argparse.Namespace, problems: Sequence[Problem]) -> dict[str, Any]:
    """``check --json``: see docs/cli.md for the shape (its keys only ever grow)."""
    return {
        "file": args.file,
        "provider": args.provider,
        "accepted": not problems,
        "problems": [_problem_json(p) for p in problems],
    }


def _repair_json(args: argparse.Namespace, document: Any, key: str | None, result: Repair) -> int:
    """``repair --json``: the report on standard output, the repaired history only to ``-o``."""
    left = result.problems_left
    if args.output:
        output = result.messages if key is None else {**document, key: result.messages}
        _write_json(args.output, output)
    _print_json(
        {
            "file": args.file,
            "provider": args.provider,
            "changed": bool(result.changes),
            "output": args.output or None,
            "changes": [_change_json(c) for c in result.changes],
            "problems_before": [_problem_json(p) for p in result.problems],
            "problems_left": [_problem_json(p) for p in left],
        }
    )
    return 1 if left else 0


def _write_json(path: str, value: Any) -> None:
    text = json.dumps(value, indent=2, ensure_ascii=False, default=str) + "\n"
    try:
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text)
    except OSError as error:
        _fail(path, error.strerror or str(error))


def _print_json(report: dict[str, Any]) -> None:
    sys.stdout.write(_for_terminal(json.dumps(report, indent=2, ensure_ascii=False) + "\n"))


_JSON_ESCAPES = {code: f"\\u{code:04x}" for code in TERMINAL_ESCAPES if code >= 0x7F}
"""The characters :func:`json.dumps` leaves raw that a terminal obeys or hides (DEL, the C1
controls such as CSI U+009B, bidi controls, zero-width and separator characters), as JSON
``\\uXXXX`` escapes (the C0 controls it escapes itself)."""


def _for_terminal(json_text: str) -> str:
    """JSON printed on standard output, which may be a terminal: those characters can only
    stand inside its strings, where ``\\uXXXX`` reads back as the same character, so the JSON
    is unchanged for a program and inert for a terminal."""
    return json_text.translate(_JSON_ESCAPES)


def _use_color(stream: Any) -> bool:
    """Colour for a terminal, unless ``NO_COLOR`` is set (https://no-color.org) or TERM=dumb."""
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def _run_show(args: argparse.Namespace) -> int:
    from ._show import html, text, timeline

    if args.html is not None:
        _refuse_overwrite(args.html, [args.file])
    _, history, _ = _history(args)
    fix = args.fix or args.html is not None
    view = timeline.build(history, provider=args.provider, format=args.format, fix=fix)
    if args.html is not None:
        page = html.render(view, source=args.file)
        if args.html == "-":
            sys.stdout.write(page)
            return 1 if view.before.problems else 0
        try:
            with open(args.html, "w", encoding="utf-8") as handle:
                handle.write(page)
        except OSError as error:
            _fail(args.html, error.strerror or str(error))
        changes = f", {len(view.changes)} change(s)" if view.fixed else ""
        print(
            f"{terminal(args.html)}: {len(view.before.rows)} messages, "
            f"{len(view.before.problems)} problem(s) for {args.provider}{changes}"
        )
    else:
        color = _use_color(sys.stdout)
        width = shutil.get_terminal_size().columns if color else 100
        reconfigure = getattr(sys.stdout, "reconfigure", None)
        if reconfigure is not None:  # a terminal that cannot show a character gets an escape
            reconfigure(errors="backslashreplace")
        sys.stdout.write(text.render(view, source=args.file, color=color, width=width))
    return 1 if view.before.problems else 0


_PAGE_SUFFIXES = (".html", ".htm")


def _refuse_overwrite(page_path: str, inputs: Sequence[str], hint: str = "") -> None:
    """Exit 2 before ``--html PATH`` would write over a file being read, or over a file that
    exists and is not a page (``show`` and ``stats`` keep the same rule); ``-`` is standard
    output and always allowed."""
    if page_path == "-":
        return
    read = page_path in inputs or any(
        path != "-" and _same_file(page_path, path) for path in inputs
    )
    if read or (os.path.exists(page_path) and not page_path.lower().endswith(_PAGE_SUFFIXES)):
        why = "it is being read" if read else "it is not an .html file"
        more = f", {hint}" if hint else ""
        _fail(
            page_path,
            f"not overwritten with the HTML page: {why} (name the page .html{more})",
        )


def _same_file(one: str, other: str) -> bool:
    try:
        return os.path.samefile(one, other)
    except OSError:  # either does not exist (yet)
        return False


def _run_stats(args: argparse.Namespace) -> int:
    from ._stats import html as stats_html
    from ._stats import logs, tables

    page_path: str | None = args.html
    if page_path is not None:
        # `--html a.log b.log` would name a log as the page
        _refuse_overwrite(page_path, args.files, "or put --html PATH after the log files")
    try:
        stats = logs.read_files(args.files)
    except logs.UnreadableLogError as error:
        _fail(*error.args)
    if args.json:
        sys.stdout.write(json.dumps(tables.summary(stats), indent=2) + "\n")
    elif page_path is None:
        sys.stdout.write(tables.render_text(stats))
    else:
        page = stats_html.render(stats)
        if page_path == "-":
            sys.stdout.write(page)
            return 0
        try:
            with open(page_path, "w", encoding="utf-8") as handle:
                handle.write(page)
        except OSError as error:
            _fail(page_path, error.strerror or str(error))
        print(
            f"{terminal(page_path)}: {stats.repaired.total_requests} request(s) repaired, "
            f"{stats.problems_left.total_requests} with problems left, "
            f"{stats.total_failures} sent unrepaired"
            + (f", {stats.total_rescues} rescued after a 400" if stats.total_rescues else "")
            + f" ({stats.toolmend_lines} toolmend lines in {stats.lines})"
        )
    return 0


_EXIT_CODES = {
    "check": "exit codes: 0 the provider accepts the history, 1 it has problems, "
    "2 the file cannot be read (or a bad argument)",
    "repair": "exit codes: 0 repaired (or nothing to repair), 1 problems are left after the "
    "repair, 2 the file cannot be read (or a bad argument)",
    "show": "exit codes: 0 the provider accepts the history, 1 it has problems, "
    "2 the file cannot be read, or --html would overwrite a file that is not a page",
    "stats": "exit codes: 0 counted (even when no toolmend line was found), 2 a file cannot be "
    "read, or --html would overwrite a file that is not a page",
}
"""The exit codes each command's ``--help`` ends with (``serve``'s are in
:data:`toolmend.testing.serve.EXIT_CODES`)."""

_JSON_HELP = {
    "check": "print the problems as one JSON object",
    "repair": "print the changes and problems as one JSON object (the history goes to -o only)",
}


def _add_serve(commands: Any) -> None:
    from .testing import serve

    summary = "run the strict provider server on 127.0.0.1 until Ctrl-C, printing its URLs"
    command = commands.add_parser(
        "serve", help=summary, description=summary, epilog=serve.EXIT_CODES
    )
    serve.add_arguments(command)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="toolmend",
        description="Check and repair the tool calls of an LLM chat history for a provider.",
    )
    parser.add_argument("--version", action="version", version=f"toolmend {VERSION}")
    commands = parser.add_subparsers(dest="command", required=True)
    for name, summary in (
        ("check", "list what the provider would reject"),
        ("repair", "write the history the provider accepts"),
        ("show", "show the history as a timeline, problems and changes marked"),
    ):
        command = commands.add_parser(
            name,
            help=summary,
            description=summary,
            epilog=_EXIT_CODES[name],
        )
        command.add_argument("file", help="JSON list of messages or request body; - for stdin")
        command.add_argument(
            "--provider",
            "-p",
            default=None,
            help="who serves the request (default: the history format's own, openai for chat): "
            + ", ".join(primary_names())
            + " (profiles and aliases: docs/providers.md)",
        )
        command.add_argument("--format", "-f", default=None, help="history format (detected)")
        command.add_argument(
            "--model", "-m", default=None, help="the model it goes to (model-family rules)"
        )
        if name in ("check", "repair"):
            command.add_argument(
                "--json", action="store_true", help=_JSON_HELP[name] + " (see docs/cli.md)"
            )
        if name == "repair":
            command.add_argument(
                "-o", "--output", help="write the repaired JSON here (- for standard output)"
            )
        if name == "show":
            command.add_argument(
                "--fix", action="store_true", help="also show the repaired history, changes marked"
            )
            command.add_argument(
                "--html", metavar="OUT.html", help="write a self-contained HTML page instead"
            )
    summary = "count what the hooks did, from their log lines"
    stats = commands.add_parser(
        "stats",
        help=summary,
        description=summary,
        epilog=_EXIT_CODES["stats"],
    )
    stats.add_argument(
        "files",
        nargs="+",
        metavar="FILE",
        help="log file with toolmend's lines (plain or JSON logging; gzip ok); - for stdin",
    )
    output = stats.add_mutually_exclusive_group()
    output.add_argument("--json", action="store_true", help="print the counts as JSON")
    output.add_argument(
        "--html",
        nargs="?",
        const="-",
        metavar="PATH",
        help="write a self-contained HTML page with a chart to PATH (stdout without PATH)",
    )
    _add_serve(commands)
    summary = "send broken histories through the real SDKs to a local strict provider"
    demo = commands.add_parser("demo", help=summary, description=summary)
    demo.add_argument("-v", "--verbose", action="store_true", help="full errors and changes")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``toolmend`` console script.

    Standard output that cannot be written (closed, a full disk, a reader that went away:
    ``| head -c1``) is one line on standard error and exit 2, like every other failure."""
    try:
        code = _main(argv)
        if sys.stdout is not None:
            sys.stdout.flush()  # a full disk or a closed pipe shows here at the latest
    except OSError as error:
        _quiet_stdout()
        _fail(_STDOUT, _reason(error))
    except AttributeError:
        if sys.stdout is not None:
            raise
        _fail(_STDOUT, "closed")
    return code


def _quiet_stdout() -> None:
    """Point standard output at the null device, so the interpreter's own flush at exit does
    not fail (and print a traceback) on the output that could not be written."""
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, sys.stdout.fileno())
        os.close(null)
    except (OSError, AttributeError, ValueError):
        pass


def _main(argv: Sequence[str] | None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "demo":
        from ._demo import main as demo_main

        return demo_main(verbose=args.verbose)
    if args.command == "stats":
        return _run_stats(args)
    if args.command == "serve":
        from .testing.serve import serve

        return serve(args.port, args.provider)
    runner = {"check": _run_check, "repair": _run_repair, "show": _run_show}[args.command]
    try:
        return runner(args)
    except _UnreadableError as error:
        _fail(args.file, str(error))
    except ToolmendError as error:
        _fail(args.file, str(error))


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
