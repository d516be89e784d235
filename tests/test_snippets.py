"""Every ```python block of the documentation runs, so no snippet can rot.

The runner finds the blocks itself: each Markdown page at the top of the repository (README.md,
CONTRIBUTING.md, SECURITY.md, ...; not CHANGELOG.md) and under docs/, so a page added later is
covered without a line here. Each block runs whole, in a fresh interpreter, in an empty working
directory, with the environment a user of the block would set pointed at a strict provider
server (:class:`toolmend.testing.StrictProviderServer`) that this module starts on 127.0.0.1:

* ``OPENAI_BASE_URL`` (also read by LiteLLM, LangChain's ``ChatOpenAI`` and the Agents SDK),
  ``ANTHROPIC_BASE_URL``, ``GOOGLE_GEMINI_BASE_URL`` (google-genai, Google ADK), with dummy API
  keys (``OPENAI_API_KEY``, ``ANTHROPIC_API_KEY``, ``GEMINI_API_KEY``, ``GOOGLE_API_KEY``);
* ``LITELLM_LOCAL_MODEL_COST_MAP=True``, ``HF_HUB_OFFLINE=1`` and
  ``OPENAI_AGENTS_DISABLE_TRACING=1``, so that nothing tries the network.

So a block is written as a user writes it (``openai.OpenAI()``, ``ChatOpenAI(model=...)``,
``litellm.completion(model="gpt-4o-mini", ...)``) and talks to the strict server: a broken
history the hook did not repair gets the provider's HTTP 400, and the block fails.

A block says how it runs with an HTML comment on the line right before its fence:

* nothing: run as a script (``python block.py``); it passes when it exits 0;
* ``<!-- snippet: pytest -->``: a test module, run with ``python -m pytest`` (the
  ``strict_provider`` fixture of toolmend's pytest plugin is there);
* ``<!-- snippet: skip REASON -->``: not run (only compiled), for the rare block that cannot run
  offline; the reason is required. Any other ``snippet:`` word is an error.

A block that does not run and is not marked fails the suite. Blocks that are not Python go in
```text, ```bash, ```yaml... fences; this runner looks only at ```python.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import importlib.metadata
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from toolmend.testing import StrictProviderServer

ROOT = Path(__file__).resolve().parent.parent
MODES = ("script", "pytest", "skip")
_MARK = re.compile(r"^<!--\s*snippet:\s*(\S+)\s*(.*?)\s*-->\s*$")
_OPEN = re.compile(r"^```\s*python\s*$")
_PYTHONISH = re.compile(r"^\s*(?:```|~~~)\s*(?:py|python|python3|py3)\b", re.IGNORECASE)
"""A fence a Markdown renderer shows as Python (indented in a list, ``py``, ``~~~``, words
after the language) that :data:`_OPEN` would step past without running it."""


def pages(root: Path = ROOT) -> list[Path]:
    """The Markdown pages whose blocks run: the top-level pages but the changelog, and docs/."""
    top = [page for page in root.glob("*.md") if page.name != "CHANGELOG.md"]
    return sorted([*top, *(root / "docs").rglob("*.md")])


@dataclass(frozen=True)
class Block:
    """One ```python block: where it is, its code, and how it runs."""

    page: str
    line: int
    code: str
    mode: str = "script"
    reason: str = ""

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}"


def blocks(text: str, page: str) -> list[Block]:
    """The ```python blocks of one page, with the mark on the line before each (see the module
    docstring). Raises ``ValueError`` for an unknown mark, a skip without a reason, or a block
    that is never closed."""
    found: list[Block] = []
    lines = text.splitlines()
    index = 0
    while index < len(lines):
        line = lines[index]
        if _PYTHONISH.match(line) and not _OPEN.match(line):
            raise ValueError(
                f"{page}:{index + 1}: a Python fence the runner would not run "
                f"({line.strip()!r}): write ```python alone at the start of its line"
            )
        if line.startswith("```") and not _OPEN.match(line):  # another language: step over it
            end = next(
                (j for j in range(index + 1, len(lines)) if lines[j].startswith("```")), None
            )
            index = len(lines) if end is None else end + 1
            continue
        if not _OPEN.match(line):
            index += 1
            continue
        end = next((j for j in range(index + 1, len(lines)) if lines[j].startswith("```")), None)
        if end is None:
            raise ValueError(f"{page}:{index + 1}: a ```python block that is never closed")
        mode, reason = "script", ""
        mark = _MARK.match(lines[index - 1].strip()) if index else None
        if mark:
            mode, reason = mark.group(1), mark.group(2)
            if mode not in MODES:
                raise ValueError(f"{page}:{index + 1}: unknown snippet mark {mode!r}, not {MODES}")
            if mode == "skip" and not reason:
                raise ValueError(f"{page}:{index + 1}: a skipped block must say why")
        code = "\n".join(lines[index + 1 : end]) + "\n"
        found.append(Block(page, index + 1, code, mode, reason))
        index = end + 1
    return found


def all_blocks(root: Path = ROOT) -> list[Block]:
    return [
        block
        for page in pages(root)
        for block in blocks(page.read_text(encoding="utf-8"), str(page.relative_to(root)))
    ]


def environment(server: StrictProviderServer) -> dict[str, str]:
    """What the runner sets for a block: the SDKs' own variables, pointed at ``server``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLMEND_")}
    env.pop("PYTHONPATH", None)
    env.update(
        OPENAI_BASE_URL=server.openai_base_url,
        OPENAI_API_KEY="sk-test",
        ANTHROPIC_BASE_URL=server.anthropic_base_url,
        ANTHROPIC_API_KEY="sk-ant-test",
        GOOGLE_GEMINI_BASE_URL=server.gemini_base_url,
        GEMINI_API_KEY="test",
        GOOGLE_API_KEY="test",
        LITELLM_LOCAL_MODEL_COST_MAP="True",
        HF_HUB_OFFLINE="1",
        OPENAI_AGENTS_DISABLE_TRACING="1",
        NO_COLOR="1",
    )
    return env


def run(block: Block, env: dict[str, str], workdir: Path) -> subprocess.CompletedProcess[str]:
    """Run one block in ``workdir`` (a fresh interpreter); the caller judges the exit code."""
    if block.mode == "pytest":
        path = workdir / "test_snippet.py"
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(path)]
        command += ["-p", "no:xdist", "-o", "addopts="]
    else:
        path = workdir / "snippet.py"
        command = [sys.executable, str(path)]
    path.write_text(block.code, encoding="utf-8")
    return subprocess.run(
        command, cwd=workdir, env=env, capture_output=True, text=True, timeout=600, check=False
    )


def check(block: Block, env: dict[str, str], workdir: Path) -> None:
    """Fail with the block's place and output unless it runs (or is marked skip and compiles)."""
    compile(block.code, block.id, "exec")
    if block.mode == "skip":
        return
    done = run(block, env, workdir)
    assert done.returncode == 0, (
        f"{block.id}: the ```python block does not run (exit {done.returncode}); fix it, or mark "
        f"it <!-- snippet: skip REASON -->\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    )


BLOCKS = all_blocks()


@pytest.fixture(scope="module")
def server() -> Iterator[StrictProviderServer]:
    with StrictProviderServer() as running:
        yield running


@pytest.mark.slow
@pytest.mark.parametrize("block", BLOCKS, ids=lambda block: block.id)
def test_every_python_block_runs(
    block: Block, server: StrictProviderServer, tmp_path: Path
) -> None:
    check(block, environment(server), tmp_path)


@pytest.mark.slow
def test_a_block_that_does_not_run_fails_the_runner(
    server: StrictProviderServer, tmp_path: Path
) -> None:
    env = environment(server)
    broken = Block("x.md", 3, "import toolmend\ntoolmend.check(messages)\n")
    with pytest.raises(AssertionError, match=r"(?s)x\.md:3: .*does not run.*NameError"):
        check(broken, env, tmp_path)
    rejected = Block(
        "x.md",
        9,
        "import openai\nopenai.OpenAI().chat.completions.create(model='gpt-4o-mini', "
        "messages=[{'role': 'tool', 'tool_call_id': 'c1', 'content': 'x'}])\n",
    )
    with pytest.raises(AssertionError, match="BadRequestError"):
        check(rejected, env, tmp_path)  # the environment reaches the strict server: its 400
    failing_test = Block("x.md", 5, "def test_it():\n    assert False\n", "pytest")
    with pytest.raises(AssertionError, match="1 failed"):
        check(failing_test, env, tmp_path)
    check(Block("x.md", 7, "raise SystemExit(1)\n", "skip", "needs a GPU"), env, tmp_path)


def test_blocks_are_found_with_their_marks() -> None:
    text = (
        "# Page\n\n```python\nprint(1)\n```\n\n```text\nnot python\n```\n\n"
        "<!-- snippet: pytest -->\n```python\ndef test_x(): pass\n```\n"
        "<!-- snippet: skip needs a real key -->\n```python\nprint(2)\n```\n"
    )
    found = blocks(text, "p.md")
    assert [(b.line, b.mode, b.reason, b.code) for b in found] == [
        (3, "script", "", "print(1)\n"),
        (12, "pytest", "", "def test_x(): pass\n"),
        (16, "skip", "needs a real key", "print(2)\n"),
    ]
    with pytest.raises(ValueError, match="unknown snippet mark 'maybe'"):
        blocks("<!-- snippet: maybe -->\n```python\nx = 1\n```\n", "p.md")
    with pytest.raises(ValueError, match="must say why"):
        blocks("<!-- snippet: skip -->\n```python\nx = 1\n```\n", "p.md")
    with pytest.raises(ValueError, match="never closed"):
        blocks("```python\nx = 1\n", "p.md")
    # fences a renderer shows as Python (a list item's, another spelling, a line of prose
    # that starts with one: CommonMark opens a block there) are refused, not stepped past
    for fence in ("  ```python", "```py", "~~~python", "```Python3", "  ```python block the"):
        with pytest.raises(ValueError, match="would not run"):
            blocks(f"* item\n{fence}\nx = 1\n```\n", "p.md")


def test_every_page_is_searched_and_new_pages_are_found(tmp_path: Path) -> None:
    found = {str(page.relative_to(ROOT)) for page in pages()}
    assert "README.md" in found and "CHANGELOG.md" not in found
    assert {f"docs/{p.name}" for p in (ROOT / "docs").glob("*.md")} <= found
    (tmp_path / "docs" / "deep").mkdir(parents=True)
    for name in ("NEW.md", "CHANGELOG.md", "docs/new.md", "docs/deep/page.md"):
        (tmp_path / name).write_text("```python\nx = 1\n```\n", encoding="utf-8")
    assert [b.page for b in all_blocks(tmp_path)] == ["NEW.md", "docs/deep/page.md", "docs/new.md"]


def test_the_documentation_has_runnable_blocks_and_skips_are_rare() -> None:
    """The README and the hooks page show code that runs; a skip is an exception, not a way
    out (at most two in the whole documentation)."""
    by_page = {block.page for block in BLOCKS if block.mode != "skip"}
    assert {"README.md", "docs/hooks.md", "docs/api.md", "docs/testing-server.md"} <= by_page
    assert sum(block.mode == "skip" for block in BLOCKS) <= 2


def _imported(code: str) -> set[str]:
    """The modules a block imports, by their full dotted names (``from a import b`` gives
    ``a.b``, which :func:`_distributions` reads as ``a`` when ``b`` is not a module)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.update(f"{node.module}.{alias.name}" for alias in node.names)  # maybe modules
    return names


@functools.cache
def _owners() -> dict[str, list[str]]:
    return dict(importlib.metadata.packages_distributions())


def _distributions(module: str) -> set[str]:
    """The distributions that install ``module``: the one whose files hold its longest dotted
    prefix, since a namespace (``opentelemetry``, ``google``) is shared by several."""
    owners = _owners().get(module.partition(".")[0], [])
    parts = module.split(".")
    for size in range(len(parts), 0, -1):
        path = "/".join(parts[:size])
        holding = {
            _canonical(owner)
            for owner in owners
            if any(
                str(file).startswith(path + "/") or str(file) == path + ".py"
                for file in importlib.metadata.files(owner) or []
            )
        }
        if holding:
            return holding
    return {_canonical(module.partition(".")[0])}


_EXTRA = re.compile(r"'\.\[([a-z0-9,-]+)\]'|the `([a-z0-9-]+)` extra")


def _extras_named(page: str) -> frozenset[str]:
    """The extras a page tells its reader to install (``pip install '.[a,b]'``, "the `otel`
    extra"), but the test extra, which installs everything the suite needs."""
    found = {
        name
        for match in _EXTRA.finditer(page)
        for group in match.groups()
        if group
        for name in group.split(",")
    }
    return frozenset(found - {"test"})


@functools.cache
def _extra_requirements() -> dict[str, list[str]]:
    """Each extra of toolmend and its requirements, from the installed metadata (what
    pyproject.toml declares), the ``; extra == "x"`` marker taken off."""
    found: dict[str, list[str]] = {}
    for line in importlib.metadata.requires("toolmend") or []:
        requirement, _, marker = line.partition(";")
        extra = re.search(r"extra\s*==\s*[\"']([^\"']+)[\"']", marker)
        if extra:
            found.setdefault(extra.group(1), []).append(requirement.strip())
    return found


@functools.cache
def _extras_distributions(extras: frozenset[str] | None = None) -> frozenset[str]:
    """Every distribution the given extras of toolmend install (all but the test extra when
    none are given), with what those depend on in turn (``langgraph`` brings
    ``langgraph-checkpoint``)."""
    wanted = set(extras) if extras is not None else set(_extra_requirements()) - {"test"}
    todo = [r for extra in sorted(wanted) for r in _extra_requirements().get(extra, [])]
    named: set[str] = set()
    while todo:
        requirement = todo.pop()
        if "extra ==" in requirement:  # an optional dependency of a dependency
            continue
        name = _canonical(re.split(r"[<>=!~;\[ (]", requirement, maxsplit=1)[0])
        if name == "toolmend":  # an extra made of other extras: toolmend[litellm]
            inner = re.search(r"\[([^\]]+)\]", requirement)
            for extra in inner.group(1).split(",") if inner else []:
                todo.extend(_extra_requirements().get(extra.strip(), []))
            continue
        if name in named:
            continue
        named.add(name)
        with contextlib.suppress(importlib.metadata.PackageNotFoundError):
            todo.extend(importlib.metadata.requires(name) or [])
    return frozenset(named)


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def test_every_import_of_a_block_comes_with_an_extra_or_is_named_on_its_page() -> None:
    """A user who installs what the page says can run the block: each package a block imports
    is installed by an extra the page names (with what it depends on), or the page names the
    package itself (``pip install opentelemetry-sdk``), as the OpenTelemetry setup must."""
    missing = []
    for block in BLOCKS:
        page = (ROOT / block.page).read_text(encoding="utf-8").lower()
        extras = _extras_distributions(_extras_named(page))
        for module in sorted(_imported(block.code)):
            top = module.partition(".")[0]
            if top in sys.stdlib_module_names or top == "toolmend":
                continue
            distributions = _distributions(module)
            if not distributions & extras and not any(d in page for d in distributions):
                missing.append(f"{block.id}: {module} ({', '.join(sorted(distributions))})")
    assert not missing, missing


def test_the_import_check_sees_an_exporter_no_extra_installs() -> None:
    """The OpenTelemetry namespace holds the API (the ``otel`` extra), the SDK and exporters
    (not in any extra): the check tells them apart."""
    extras = _extras_distributions(frozenset({"otel"}))
    assert _extras_named("pip install '.[otel]'; the `prometheus` extra") == {"otel", "prometheus"}
    assert _distributions("opentelemetry.trace") == {"opentelemetry-api"} <= extras
    assert _distributions("opentelemetry.sdk.trace") == {"opentelemetry-sdk"}
    assert not _distributions("opentelemetry.sdk.metrics.export") & extras
    assert _distributions("langchain_community.chat_message_histories") == {"langchain-community"}
