"""The package's structure, kept by the suite: a small public surface over private
implementation modules, layered imports with no cycle, and no module hidden by a function.

Layers, from the bottom (a module imports only its own layer or lower ones, and the graph has
no cycle):

0. the skeleton: what every part shares (``_skeleton``, ``_edits``, ``_report``, ``_jsontext``,
   ``_escape``)
1. formats and profiles: the wire shapes, the providers' rules as data, the policy
2. rules and planners: judging a skeleton and planning its repair
3. the API: ``check``/``repair``/``trim``/the loop guard, routing, the hooks' fast path
4. the front: the package's ``__init__``, the CLI, ``show``, the demo, the strict test server
5. the integrations (``toolmend.integrations``), which nothing in the core imports
"""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

import pytest

import toolmend

CORE = Path(toolmend.__file__).resolve().parent  # the sources, not an editable install's links
INTEGRATIONS = CORE.parent.parent / "integrations"

LAYERS: dict[str, int] = {
    "_skeleton": 0,
    "_edits": 0,
    "_report": 0,
    "_jsontext": 0,
    "_version": 0,
    "_escape": 0,
    "profiles": 1,
    "_spans": 1,
    "_policy": 1,
    "formats": 1,
    "_findings": 2,
    "_rules": 2,
    "_block_rules": 2,
    "_pairing": 2,
    "_planstate": 2,
    "_plan_ids": 2,
    "_plan_messages": 2,
    "_block_repair": 2,
    "_repair_items": 2,
    "_repair": 2,
    "_quickmend": 2,
    "_inline": 2,
    "_walks": 2,
    "_api": 3,
    "_trim": 3,
    "_loops": 3,
    "_fastpath": 3,
    "_routing": 3,
    "_appending": 3,
    "_error_texts": 2,
    "_rescue": 3,
    "__init__": 4,
    "__main__": 4,
    "_cli": 4,
    "_demo": 4,
    "_show": 4,
    "_stats": 4,
    "testing": 4,
}
"""Top-level module or subpackage of ``toolmend`` -> its layer."""

PUBLIC_SUBPACKAGES = {"formats", "profiles", "testing", "integrations"}
"""The public modules besides the package itself: the format registry, the strict provider
server and its pytest plugin, and the hooks."""

LAZY_IMPORTS = {"_cli"}
"""Modules whose function-level imports load heavy parts on demand (the CLI's ``show``,
``stats`` and ``demo`` subcommands), not to dodge a cycle."""


def _module_name(path: Path) -> str:
    parts = path.relative_to(CORE).with_suffix("").parts
    return ".".join(parts)


def _layer(module: str) -> int:
    return LAYERS[module.split(".")[0]]


def _import_graph() -> dict[str, set[str]]:
    """Module -> the core modules it imports (relative imports, resolved)."""
    graph: dict[str, set[str]] = {}
    for path in sorted(CORE.rglob("*.py")):
        module = _module_name(path)
        is_package = path.name == "__init__.py"
        tree = ast.parse(path.read_text(), str(path))
        edges: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level:
                base = module.split(".")
                if module.endswith("__init__"):
                    base = base[:-1]
                    is_package = True
                package = base[: len(base) - node.level + (1 if is_package else 0)]
                if node.module:
                    edges.add(".".join([*package, node.module]) or node.module)
                else:
                    edges.update(".".join([*package, alias.name]) for alias in node.names)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
                names.append(getattr(node, "module", None) or "")
                assert not any(n.startswith("toolmend.integrations") for n in names), (
                    f"{module} imports the integrations"
                )
        graph[module] = edges
    known = set(graph)
    resolved: dict[str, set[str]] = {}
    for module, edges in graph.items():
        targets = set()
        for edge in edges:
            edge = edge.removesuffix(".__init__")
            if edge in known:
                targets.add(edge)
            elif f"{edge}.__init__" in known:
                targets.add(f"{edge}.__init__")
            elif edge == "":
                targets.add("__init__")
        resolved[module] = targets - {module}
    return resolved


def _upward(graph: dict[str, set[str]]) -> list[str]:
    """The edges of ``graph`` that import a higher layer (a package's own modules aside)."""
    return [
        f"{module} (layer {_layer(module)}) imports {target} (layer {_layer(target)})"
        for module, targets in graph.items()
        for target in targets
        if _layer(target) > _layer(module) and not module.startswith(target.split(".")[0])
    ]


def test_the_core_imports_down_the_layers_and_never_in_a_cycle() -> None:
    graph = _import_graph()
    assert len(graph) > 30
    assert _upward(graph) == []
    state: dict[str, int] = {}

    def visit(module: str, trail: list[str]) -> None:
        state[module] = 1
        for target in sorted(graph[module]):
            assert state.get(target) != 1, f"import cycle: {' -> '.join([*trail, target])}"
            if target not in state:
                visit(target, [*trail, target])
        state[module] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])


def test_the_layer_check_sees_an_upward_import() -> None:
    """The check above reads real edges (the rules import the format registry, the API the
    planners), and an edge the other way is listed."""
    graph = _import_graph()
    assert "formats.__init__" in graph["_rules"]
    assert "_repair" in graph["_api"]
    wrong = {**graph, "formats.__init__": graph["formats.__init__"] | {"_rules"}}
    assert _upward(wrong) == ["formats.__init__ (layer 1) imports _rules (layer 2)"]


def test_no_import_inside_a_function_and_no_private_name_across_modules() -> None:
    for path in sorted(CORE.rglob("*.py")):
        module = _module_name(path)
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level:
                # a private module may be imported as a module; a private name inside one not
                private = [
                    a.name
                    for a in node.names
                    if a.name.startswith("_")
                    and not (CORE / f"{a.name}.py").exists()
                    and not (CORE / "formats" / f"{a.name}.py").exists()
                ]
                assert not private, f"{module} imports private {private} from {node.module}"
        for function in ast.walk(tree):
            if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for node in ast.walk(function):
                    if isinstance(node, ast.ImportFrom) and node.level:
                        assert module in LAZY_IMPORTS, f"{module} imports inside {function.name}"


def test_every_implementation_module_is_private() -> None:
    public = sorted(
        _module_name(path)
        for path in CORE.rglob("*.py")
        if not any(part.startswith("_") for part in path.relative_to(CORE).with_suffix("").parts)
    )
    allowed = {"formats", "testing"}
    assert [m for m in public if m.split(".")[0] not in allowed] == []
    formats_public = [m for m in public if m.startswith("formats.")]
    assert formats_public == []  # the formats package's modules are private; its __init__ is not


@pytest.mark.parametrize("name", toolmend.__all__)
def test_no_public_name_is_also_a_module(name: str) -> None:
    """``import toolmend.repair as r`` must not give a module while ``toolmend.repair`` is the
    function: no submodule has the name of a public function or class."""
    assert importlib.util.find_spec(f"toolmend.{name}") is None


def test_the_package_namespace_is_the_public_api() -> None:
    """What ``dir(toolmend)`` shows is ``__all__``, the public subpackages, and dunders."""
    # (pytest's assertion rewriting adds "@py_builtins" when it loads the package itself)
    shown = {name for name in vars(toolmend) if not name.startswith("_") and name.isidentifier()}
    assert shown - set(toolmend.__all__) <= PUBLIC_SUBPACKAGES


def test_the_integrations_use_the_core_through_its_layers() -> None:
    """The hooks import the core's API layer or below, never the front (CLI, demo, show)."""
    front = {name for name, layer in LAYERS.items() if layer == 4} - {"__init__", "testing"}
    for path in sorted(INTEGRATIONS.rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module:
                parts = node.module.split(".")
                if parts[0] == "toolmend" and len(parts) > 1:
                    assert parts[1] not in front, f"{path.name} imports {node.module}"
                if node.module == "toolmend":
                    assert not {a.name for a in node.names} & front, f"{path.name}: {node.names}"
