"""The ``slow`` marker is on every test that starts a process or runs a script (a subprocess,
the LiteLLM Proxy, the CLI, an example, the demo, a browser) or builds a million-message history,
so that ``pytest -m "not slow"`` is a quick loop; ``.ci/run`` selects nothing and runs them all.

Read from the source with ``ast``, not by running or collecting anything: a test needs the
marker when its body, a fixture it takes, or a name it uses (a helper, a constant, a fixture of
its module, or a name of ``tests/support``) reaches a process starter or a count of a million or
more, followed through the module's own names. An autouse fixture that starts a process counts
for every test of its module, unless it starts it only for the tests the session selected
(``request.session.items``), as the proxy of ``test_fail_open.py`` does.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

TESTS = Path(__file__).resolve().parent
SUPPORT = TESTS / "support"

STARTERS = {
    "subprocess": {"run", "Popen", "call", "check_call", "check_output"},
    "asyncio": {"create_subprocess_exec", "create_subprocess_shell"},
    "os": {"system", "popen", "execv", "execve", "execvp", "fork"},
    "runpy": {"run_path", "run_module"},
}
"""module -> the functions that start a process, or run a script as ``__main__``."""

BROWSERS = {"sync_playwright", "async_playwright"}
"""Playwright's entry points, whatever they are reached through: they start a browser."""

MILLION = 10**6


def _is_starter(node: ast.AST, from_imports: dict[str, str]) -> bool:
    """``subprocess.run`` or a ``run`` imported from ``subprocess``, and the like."""
    if isinstance(node, ast.Attribute) and node.attr in BROWSERS:
        return True
    if isinstance(node, ast.Name) and node.id in BROWSERS:
        return True
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        return node.attr in STARTERS.get(node.value.id, ())
    if isinstance(node, ast.Name) and node.id in from_imports:
        return node.id in STARTERS.get(from_imports[node.id], ())
    return False


def _counts_a_million(tree: ast.AST) -> bool:
    """An integer of a million or more, other than a string's length (``"x" * 10_000_000``)."""
    text_lengths = {
        id(side)
        for node in ast.walk(tree)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult)
        for side, other in ((node.left, node.right), (node.right, node.left))
        if isinstance(other, ast.Constant) and isinstance(other.value, str)
    }
    return any(
        isinstance(node, ast.Constant)
        and type(node.value) is int
        and node.value >= MILLION
        and id(node) not in text_lengths
        for node in ast.walk(tree)
    )


def _names_used(tree: ast.AST) -> set[str]:
    """Names read (``x``, and ``module.x`` for an imported module), and the arguments of every
    function in ``tree``: a test's or fixture's arguments are the fixtures it asks for."""
    used: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            used.add(node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            used.add(f"{node.value.id}.{node.attr}")
        elif isinstance(node, ast.arg):
            used.add(node.arg)
    return used


def _fixture_name(node: ast.AST) -> str | None:
    """The name a ``@pytest.fixture`` function is requested by (``name=`` if given)."""
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    for decorator in node.decorator_list:
        call = decorator if isinstance(decorator, ast.Call) else None
        target = call.func if call else decorator
        if isinstance(target, ast.Attribute) and target.attr == "fixture":
            for keyword in call.keywords if call else ():
                if keyword.arg == "name" and isinstance(keyword.value, ast.Constant):
                    return str(keyword.value.value)
            return node.name
    return None


def _is_autouse(node: ast.AST) -> bool:
    """Is ``node`` a ``@pytest.fixture(autouse=True)`` function?"""
    return _fixture_name(node) is not None and any(
        keyword.arg == "autouse" and isinstance(keyword.value, ast.Constant) and keyword.value.value
        for decorator in getattr(node, "decorator_list", ())
        if isinstance(decorator, ast.Call)
        for keyword in decorator.keywords
    )


def _top_level(tree: ast.Module) -> dict[str, ast.AST]:
    """Each name the module defines (functions, classes, assignments, fixtures), to its node."""
    defined: dict[str, ast.AST] = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            defined[node.name] = node
            fixture = _fixture_name(node)
            if fixture:
                defined[fixture] = node
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                for name in ast.walk(target):
                    if isinstance(name, ast.Name):
                        defined[name.id] = node
    return defined


def _imports(tree: ast.Module) -> tuple[dict[str, str], set[str]]:
    """(name -> the module it was imported from, the names of ``tests/support`` that start a
    process, as this module refers to them)."""
    from_imports: dict[str, str] = {}
    slow_support: set[str] = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom) or node.module is None:
            continue
        for alias in node.names:
            local = alias.asname or alias.name
            from_imports[local] = node.module
            if node.module == "support":  # from support import litellm_proxy
                slow_support |= {f"{local}.{name}" for name in _slow_names(alias.name)}
            elif node.module.startswith("support.") and alias.name in _slow_names(
                node.module.removeprefix("support.")
            ):
                slow_support.add(local)
    return from_imports, slow_support


def _reaches(node: ast.AST, slow: set[str], from_imports: dict[str, str]) -> bool:
    """Does ``node`` start a process or count a million itself, or use a name that does?"""
    return (
        _counts_a_million(node)
        or any(_is_starter(n, from_imports) for n in ast.walk(node))
        or bool(_names_used(node) & slow)
    )


def _slow_closure(tree: ast.Module) -> set[str]:
    """The module's names that reach a process starter or a million, directly or through
    other names of the module or of ``tests/support``."""
    from_imports, slow = _imports(tree)
    defined = _top_level(tree)
    slow |= {name for name, node in defined.items() if _reaches(node, set(), from_imports)}
    uses = {name: _names_used(node) for name, node in defined.items()}
    grew = True
    while grew:
        grew = False
        for name, used in uses.items():
            if name not in slow and used & slow:
                slow.add(name)
                grew = True
    return slow


@functools.cache
def _slow_names(support_module: str) -> frozenset[str]:
    """The names of ``tests/support/<support_module>.py`` that start a process."""
    path = SUPPORT / f"{support_module}.py"
    if not path.exists():
        return frozenset()
    return frozenset(_slow_closure(ast.parse(path.read_text(encoding="utf-8"))))


def _marks_slow(decorators: list[ast.expr]) -> bool:
    """Is ``pytest.mark.slow`` among these decorators (or this ``pytestmark`` value)?"""
    for decorator in decorators:
        for node in ast.walk(decorator):
            if (
                isinstance(node, ast.Attribute)
                and node.attr == "slow"
                and isinstance(node.value, ast.Attribute)
                and node.value.attr == "mark"
            ):
                return True
    return False


def unmarked_slow_tests(source: str) -> list[str]:
    """The tests of a test module's ``source`` that need the ``slow`` marker and lack it."""
    tree = ast.parse(source)
    slow = _slow_closure(tree)
    from_imports, _ = _imports(tree)
    module_marked = any(
        _marks_slow([node.value])
        for node in tree.body
        if isinstance(node, ast.Assign)
        and any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in node.targets)
    )
    autouse_slow = any(
        _is_autouse(node) and name in slow and "session.items" not in ast.unparse(node)
        for name, node in _top_level(tree).items()
    )
    tests: list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef, bool]] = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            tests.append((node.name, node, False))
        elif isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
            marked = _marks_slow(node.decorator_list)
            tests += [
                (f"{node.name}::{method.name}", method, marked)
                for method in node.body
                if isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef))
            ]
    missing = []
    for name, function, class_marked in tests:
        if not function.name.startswith("test"):
            continue
        needs = autouse_slow or _reaches(function, slow, from_imports)
        marked = module_marked or class_marked or _marks_slow(function.decorator_list)
        if needs and not marked:
            missing.append(name)
    return missing


def test_every_test_that_starts_a_process_or_a_million_messages_is_marked_slow() -> None:
    missing = {
        path.name: found
        for path in sorted(TESTS.glob("test_*.py"))
        if (found := unmarked_slow_tests(path.read_text(encoding="utf-8")))
    }
    assert not missing, f"add @pytest.mark.slow to: {missing}"


def test_the_check_sees_each_way_a_test_starts_a_process() -> None:
    """Not blind: a subprocess in the body, in a helper, in a fixture, in a ``tests/support``
    helper, an example script, a browser, a million messages; and the marker on the test, its
    class or the module."""
    source = """
import runpy
import subprocess

import pytest

from support import litellm_proxy

SIZE = 1_000_000
TEXT = "x" * 10_000_000


def _cli():
    return subprocess.run(["toolmend"])


@pytest.fixture(name="proxy")
def _proxy_fixture():
    yield litellm_proxy.Proxy


def test_body():
    subprocess.Popen(["x"])


def test_helper():
    _cli()


def test_fixture(proxy):
    pass


def test_example():
    runpy.run_path("examples/x.py")


@pytest.fixture(scope="module")
def browser():
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as playwright:
        yield playwright


def test_browser(browser):
    pass


def test_million():
    return [0] * SIZE


def test_a_long_string_is_not_slow():
    assert TEXT


@pytest.mark.slow
def test_marked():
    _cli()


@pytest.mark.slow
class TestMarked:
    def test_in_class(self, proxy):
        pass
"""
    assert unmarked_slow_tests(source) == [
        "test_body",
        "test_helper",
        "test_fixture",
        "test_example",
        "test_browser",
        "test_million",
    ]
    assert unmarked_slow_tests("import pytest\npytestmark = [pytest.mark.slow]\n" + source) == []


def test_an_autouse_fixture_that_starts_a_process_counts_for_every_test() -> None:
    """Unless it starts the process only when the session selected a test that asks for it."""
    source = """
import subprocess

import pytest


@pytest.fixture(scope="module", autouse=True)
def _server(request):
    if {guard}:
        yield subprocess.Popen(["server"])
    else:
        yield None


def test_in_process():
    pass
"""
    assert unmarked_slow_tests(source.format(guard="True")) == ["test_in_process"]
    guard = "any('server' in item.fixturenames for item in request.session.items)"
    assert unmarked_slow_tests(source.format(guard=guard)) == []
