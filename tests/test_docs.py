"""The documentation stays true: the generated tables of docs/providers.md match the profiles and
routing tables they are rendered from, every relative link in README.md and docs/ leads to an
existing file (and heading), and the README keeps the two commands CI runs."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import re
import unicodedata
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [
    ROOT / "README.md",
    ROOT / "CHANGELOG.md",
    ROOT / "CONTRIBUTING.md",
    *sorted((ROOT / "docs").glob("*.md")),
]
_LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
_HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$", re.MULTILINE)
_FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)


def _script(name: str) -> ModuleType:
    """``scripts/NAME.py``, loaded as a module (the scripts are not a package)."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _generator() -> ModuleType:
    return _script("providers_table")


def test_providers_page_matches_the_profiles_and_routing_tables() -> None:
    generator = _generator()
    page = (ROOT / "docs" / "providers.md").read_text(encoding="utf-8")
    assert generator.render(page) == page, (
        "docs/providers.md is stale: run python scripts/providers_table.py"
    )


def test_the_generated_tables_name_every_profile_alias_and_host() -> None:
    """The check above compares the page with the generator; this one keeps the generator honest
    about its sources (a table that silently skipped a profile would still be "in sync")."""
    import toolmend

    generator = _generator()
    profiles, routing = generator._module("profiles"), generator._module("routing")
    page = (ROOT / "docs" / "providers.md").read_text(encoding="utf-8")
    for name in profiles.profile_names():
        assert f"`{name}`" in page, name
    for profile in profiles.PROFILES.values():
        for check in (*profile.checks.values(), *profile.strict_checks.values()):
            assert f"`{check.rule}`" in page, check.rule
    for host, provider in routing.HOSTS:
        assert f"| `{host}` | {provider} |" in page
        assert toolmend.provider_for_host(host.replace("*", "x")) == provider


def test_the_check_mode_fails_on_a_stale_page(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    generator = _generator()
    page = (ROOT / "docs" / "providers.md").read_text(encoding="utf-8")
    stale = tmp_path / "providers.md"
    stale.write_text(page.replace("| `api.deepseek.com` | deepseek |\n", ""), encoding="utf-8")
    monkeypatch.setattr(generator, "PAGE", stale)
    assert generator.main(["--check"]) == 1
    assert generator.main([]) == 0
    assert stale.read_text(encoding="utf-8") == page
    assert generator.main(["--check"]) == 0


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = heading.strip().lower()
    kept = "".join(c for c in text if c in " -_" or unicodedata.category(c)[0] in "LN")
    return kept.replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    text = _FENCE.sub("", path.read_text(encoding="utf-8"))
    return {_slug(match.group(1)) for match in _HEADING.finditer(text)}


def _links(path: Path) -> list[str]:
    text = _FENCE.sub("", path.read_text(encoding="utf-8"))
    text = re.sub(r"`[^`\n]*`", "", text)
    return _LINK.findall(text)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_leads_to_an_existing_file_and_heading(page: Path) -> None:
    assert page.exists(), page
    broken = []
    for target in _links(page):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto:
            continue
        file_part, _, anchor = target.partition("#")
        destination = (page.parent / file_part).resolve() if file_part else page
        if not destination.exists():
            broken.append(f"{target}: no such file")
        elif anchor and destination.suffix == ".md" and anchor not in _anchors(destination):
            broken.append(f"{target}: no heading #{anchor}")
    assert not broken, broken


def test_the_readme_is_short_and_keeps_the_two_commands_ci_runs() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.encode()) <= 10_240
    demo = "python3 -m venv .venv && .venv/bin/pip install -q '.[demo]' && .venv/bin/toolmend demo"
    suite = (
        "python3 -m venv .venv && .venv/bin/pip install -q -e '.[test]' "
        "&& .venv/bin/python -m pytest"
    )
    first_block = readme.split("```bash\n", 1)[1].split("```", 1)[0]
    assert first_block.splitlines() == [demo, suite]
    assert suite in (ROOT / ".ci" / "run").read_text(encoding="utf-8")


def test_every_docs_page_is_linked_from_the_readme() -> None:
    linked = {target.partition("#")[0] for target in _links(ROOT / "README.md")}
    for page in sorted((ROOT / "docs").glob("*.md")):
        if page.name.startswith("_"):
            continue  # working notes for the maintainers, not a page
        assert f"docs/{page.name}" in linked, page.name


def _extras() -> set[str]:
    """toolmend's extras, as the installed metadata (pyproject.toml) declares them."""
    return set(importlib.metadata.metadata("toolmend").get_all("Provides-Extra") or [])


def _doc_pages() -> list[Path]:
    return sorted({*ROOT.glob("*.md"), *(ROOT / "docs").rglob("*.md")} - {ROOT / "CHANGELOG.md"})


def test_install_lines_work_from_the_clone_and_name_real_extras() -> None:
    """toolmend is not on PyPI: an install line names the clone (``'.[litellm]'``) or a built
    wheel, never ``'toolmend[litellm]'``, and every extra it names exists."""
    extras = _extras()
    for page in _doc_pages():
        text = page.read_text(encoding="utf-8")
        flat = re.sub(r"\s+", " ", text)
        assert not re.search(r"pip install (-\S+ )*'toolmend\[", flat), page.name
        for match in re.finditer(r"'\.\[([a-z0-9,-]+)\]'", flat):
            assert set(match.group(1).split(",")) <= extras, (page.name, match.group(0))
    quickstart = (ROOT / "docs" / "quickstart.md").read_text(encoding="utf-8")
    assert "python -m build" in quickstart
    assert 'pip install "$(ls dist/toolmend-*.whl)[litellm]"' in quickstart
    listed = set(re.findall(r"`([a-z0-9-]+)`", quickstart.split("The\nextras:", 1)[1][:600]))
    assert extras <= listed, extras - listed


@pytest.mark.slow
def test_the_built_wheel_offers_every_extra_the_docs_name(tmp_path: Path) -> None:
    """What quickstart.md says to do with a wheel works: the wheel pip builds from the clone
    declares each extra the docs install (``pip install "<wheel>[litellm]"``)."""
    import subprocess
    import sys
    import zipfile

    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(ROOT)],
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    (wheel,) = tmp_path.glob("toolmend-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        metadata = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        offered = set(re.findall(r"^Provides-Extra: (\S+)$", archive.read(metadata).decode(), re.M))
        names = archive.namelist()
    assert _extras() <= offered
    assert "toolmend/integrations/litellm.py" in names and "toolmend/py.typed" in names


def test_the_readme_sends_a_newcomer_to_the_quickstart_near_the_top() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "(docs/quickstart.md)" in readme[: readme.index("## What it is")]


def test_every_hook_the_quickstart_names_imports() -> None:
    """The quickstart's table: each ``from toolmend... import ...`` line in it imports."""
    table = (ROOT / "docs" / "quickstart.md").read_text(encoding="utf-8")
    lines = re.findall(r"`((?:from|import) toolmend[^`]*)`", table)
    assert len(lines) >= 9
    for line in lines:
        exec(compile(line, "quickstart.md", "exec"), {})  # an ImportError names the hook


_JARGON = ("founding", "live frontier", "stored orphan")


@pytest.mark.parametrize("page", _doc_pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_the_docs_speak_the_users_words(page: Path) -> None:
    """The project's own shorthand ("founding bug reports", "live frontier", "replays a stored
    orphan") said in plain words instead (docs/benchmarks.md names benchmark seeds)."""
    text = page.read_text(encoding="utf-8").lower()
    if page.name == "benchmarks.md":
        return
    assert not [term for term in _JARGON if term in text]


def test_the_hooks_page_lists_every_section_at_the_top() -> None:
    text = (ROOT / "docs" / "hooks.md").read_text(encoding="utf-8")
    top, _, body = text.partition("\n## ")
    sections = re.findall(r"^## (.+)$", "## " + body, re.M)
    linked = {target.lstrip("#") for target in _LINK.findall(top) if target.startswith("#")}
    assert {_slug(section) for section in sections} <= linked


def test_every_environment_variable_toolmend_reads_is_documented() -> None:
    docs = "".join(page.read_text(encoding="utf-8") for page in _doc_pages())
    code = "".join(
        path.read_text(encoding="utf-8")
        for folder in ("src", "integrations")
        for path in (ROOT / folder).rglob("*.py")
    )
    names = set(re.findall(r"[\"'](TOOLMEND_[A-Z_]+)[\"']", code))
    assert "TOOLMEND_REPAIR_CHAT_HISTORY" in names
    assert not sorted(name for name in names if name not in docs)


def _reference_generator() -> ModuleType:
    return _script("api_reference")


def test_the_api_reference_matches_the_docstrings() -> None:
    generator = _reference_generator()
    page = (ROOT / "docs" / "reference.md").read_text(encoding="utf-8")
    assert generator.render() == page, (
        "docs/reference.md is stale: run python scripts/api_reference.py"
    )


def test_the_api_reference_names_every_public_name_of_every_hook_module() -> None:
    """Every name of ``toolmend.__all__`` and of each hook module has its entry, and every
    module of integrations/ is either documented or declared internal (a new hook module must
    be one or the other)."""
    import importlib

    import toolmend

    generator = _reference_generator()
    page = (ROOT / "docs" / "reference.md").read_text(encoding="utf-8")
    for name in toolmend.__all__:
        assert f"### `toolmend.{name}`\n" in page, name
    for module_name in generator.MODULES:
        module = importlib.import_module(module_name)
        for name in generator.public_names(module):
            assert f"### `{module_name}.{name}`\n" in page, (module_name, name)
    modules = {p.stem for p in (ROOT / "integrations").glob("*.py") if p.stem != "__init__"}
    documented = {m.rpartition(".")[2] for m in generator.MODULES if ".integrations." in m}
    assert modules <= documented | set(generator.INTERNAL), modules - documented
    assert "```python" not in page  # the snippet runner would try to run it


def test_the_reference_check_mode_fails_on_a_stale_page(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    generator = _reference_generator()
    page = (ROOT / "docs" / "reference.md").read_text(encoding="utf-8")
    stale = tmp_path / "reference.md"
    stale.write_text(page.replace("### `toolmend.check`", "### `toolmend.chek`"), encoding="utf-8")
    monkeypatch.setattr(generator, "PAGE", stale)
    assert generator.main(["--check"]) == 1
    assert generator.main([]) == 0
    assert stale.read_text(encoding="utf-8") == page
    assert generator.main(["--check"]) == 0


def test_contributing_gives_the_commands_and_scripts_that_exist() -> None:
    """CONTRIBUTING.md: the suite's command is CI's, and every script it says to run exists."""
    text = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    assert "python3 -m venv .venv && .venv/bin/pip install -q -e '.[test]'" in text
    assert ".venv/bin/python -m pytest" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    scripts = set(re.findall(r"python (scripts/\w+\.py)", text))
    assert scripts == {"scripts/providers_table.py", "scripts/api_reference.py"}
    assert all((ROOT / script).exists() for script in scripts)
    for heading in (
        "Set up",
        "Run the tests",
        "Style",
        "Add a provider rule",
        "Add a history format",
        "Add a hook",
        "Documentation",
        "Commits",
    ):
        assert f"\n## {heading}\n" in text, heading
