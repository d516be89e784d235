"""The documentation stays true: the generated tables of docs/providers.md match the profiles and
routing tables they are rendered from, every relative link in README.md and docs/ leads to an
existing file (and heading), and the README keeps the two commands CI runs."""

from __future__ import annotations

import importlib.util
import re
import unicodedata
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").glob("*.md"))]
_LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
_HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$", re.MULTILINE)
_FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)


def _generator() -> ModuleType:
    path = ROOT / "scripts" / "providers_table.py"
    spec = importlib.util.spec_from_file_location("providers_table", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


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
