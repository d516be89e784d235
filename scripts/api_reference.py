"""Write docs/reference.md, the API reference, from the docstrings of toolmend's public names.

The public names are ``toolmend.__all__``, the ``__all__`` of ``toolmend.formats`` and
``toolmend.testing``, and the ``__all__`` of each hook module users import
(:data:`MODULES`). For each name the page gives its signature and its own docstring, and for a
class its public methods and properties, each with its docstring. Everything goes in ```text
blocks: docstrings are reStructuredText-ish prose, and a ```python block in docs/ would be run
by ``tests/test_snippets.py``.

    python scripts/api_reference.py            # rewrite docs/reference.md
    python scripts/api_reference.py --check    # exit 1 when docs/reference.md is stale

``tests/test_docs.py`` runs the same check, so a docstring or signature change that is not in
the page fails the suite: regenerate the page and commit it with the change.
"""

from __future__ import annotations

import argparse
import enum
import importlib
import inspect
import os
import re
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "reference.md"

MODULES = (
    "toolmend",
    "toolmend.formats",
    "toolmend.testing",
    "toolmend.integrations.litellm",
    "toolmend.integrations.langchain",
    "toolmend.integrations.langgraph",
    "toolmend.integrations.adk",
    "toolmend.integrations.openai_agents",
    "toolmend.integrations.patch",
    "toolmend.integrations.telemetry",
    "toolmend.integrations.prometheus",
    "toolmend.integrations.budget",
    "toolmend.integrations.rescue",
)
"""The modules whose public names the page documents, in page order."""

INTERNAL = (
    "hooks",
    "langchain_history",
    "langchain_middleware",
    "langchain_stores",
    "litellm_guardrail",
    "litellm_routes",
    "logswitch",
)
"""Modules of ``integrations/`` that users do not import: shared by the hooks, or re-exported
by one of :data:`MODULES` (``langchain`` re-exports the history and the middleware)."""

HEADER = """# API reference

Generated from the docstrings by `python scripts/api_reference.py`; do not edit by hand
(`tests/test_docs.py` fails when this page is stale). The guides are [api.md](api.md) and
[hooks.md](hooks.md); this page lists every public name with its signature and docstring.
"""


def public_names(module: ModuleType) -> list[str]:
    """``module.__all__``, or, for a module without one, the names it defines itself that do not
    start with an underscore."""
    names = getattr(module, "__all__", None)
    if names is None:
        names = [
            name
            for name, value in vars(module).items()
            if not name.startswith("_")
            and getattr(value, "__module__", module.__name__) == module.__name__
            and not isinstance(value, ModuleType)
        ]
    return sorted(names, key=lambda name: (name.lower(), name))


def _doc(value: Any) -> str:
    """The object's own docstring, cleaned (not one inherited from a base class, which may
    belong to an SDK and change with its version)."""
    text = value.__dict__.get("__doc__") if isinstance(value, type) else value.__doc__
    return inspect.cleandoc(text) if isinstance(text, str) and text.strip() else ""


def _signature(name: str, value: Any) -> str:
    try:
        if isinstance(value, type) and not _own_init(value):
            return f"class {name}"
        text = str(inspect.signature(value))
    except (TypeError, ValueError):
        return name
    if isinstance(value, type):
        return f"class {name}{text.removesuffix(' -> None')}"
    return f"{name}{text}"


def _own_init(cls: type) -> bool:
    """Whether the constructor's signature is toolmend's (a dataclass, an ``__init__`` written
    here), not an SDK base class's that changes with the SDK's version."""
    for klass in cls.__mro__:
        if "__init__" in klass.__dict__ or "__new__" in klass.__dict__:
            return klass.__module__.startswith("toolmend") or klass is object
    return True


def _members(cls: type) -> list[str]:
    """The public methods and properties ``cls`` defines itself, with their docstrings."""
    lines: list[str] = []
    for name, member in sorted(cls.__dict__.items()):
        if name.startswith("_"):
            continue
        if isinstance(member, property):
            head, doc = f"{name} (property)", _doc(member)
        elif isinstance(member, (staticmethod, classmethod)):
            head, doc = _signature(name, member.__func__), _doc(member.__func__)
        elif inspect.isfunction(member):
            head, doc = _signature(name, member), _doc(member)
        else:
            continue
        lines += ["", f"  {head}"] + [f"      {line}".rstrip() for line in doc.splitlines()]
    return lines


def _entry(qualified: str, name: str, value: Any) -> list[str]:
    lines = [f"### `{qualified}`", "", "```text"]
    if isinstance(value, type) and issubclass(value, enum.Enum):
        lines.append(f"class {name}({value.__mro__[1].__name__})")
        lines += [f"  {member.name} = {member.value!r}" for member in value]
        doc = _doc(value)
    elif isinstance(value, type) or callable(value):
        lines.append(_signature(name, value))
        doc = _doc(value)
    else:
        shown = repr(value) if isinstance(value, (str, int, float, bool)) else type(value).__name__
        lines.append(f"{name} = {shown}" if len(shown) <= 80 else f"{name}: {type(value).__name__}")
        doc = ""
    if doc:
        lines += ["", *doc.splitlines()]
    if isinstance(value, type) and not issubclass(value, enum.Enum):
        lines += _members(value)
    return [*(line.rstrip() for line in lines), "```", ""]


def render() -> str:
    """The whole page."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no fetch at import
    out = [HEADER]
    for module_name in MODULES:
        module = importlib.import_module(module_name)
        names = public_names(module)
        summary = _doc(module).split("\n\n")[0].replace("\n", " ")
        out += [f"## `{module_name}`", "", summary, ""]
        for name in names:
            out += _entry(f"{module_name}.{name}", name, getattr(module, name))
    page = "\n".join(out).rstrip() + "\n"
    return re.sub(r" at 0x[0-9a-f]+>", ">", page)  # a default's repr: no address


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the page is stale")
    args = parser.parse_args(argv)
    fresh = render()
    page = PAGE.read_text(encoding="utf-8") if PAGE.exists() else ""
    if args.check:
        if fresh != page:
            print(f"{PAGE} is stale: run python scripts/api_reference.py", file=sys.stderr)
            return 1
        return 0
    if fresh != page:
        PAGE.write_text(fresh, encoding="utf-8")
        print(f"rewrote {PAGE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
