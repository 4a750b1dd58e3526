"""README and the docs beside it (docs/*.md) document every query parameter the API takes:
their tables name each one, for each listing that has it (the descriptions themselves
live once, in api/parameters.py and the resource declarations, and OPTIONS and the OpenAPI
document read them there); and every subcommand, setting and module. README stays short."""

import re
from pathlib import Path

import pytest

from demoserv.api import parameters
from demoserv.resources import NAMES, RESOURCES

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
# README and the pages beside it, which together document everything.
DOCS = "\n".join(
    [README, *(page.read_text(encoding="utf-8") for page in sorted((ROOT / "docs").glob("*.md")))]
)


def _table_rows():
    return [line for line in DOCS.splitlines() if line.startswith("| ")]


def test_readme_is_short_and_links_every_page():
    assert len(README.splitlines()) <= 250
    for page in (ROOT / "docs").glob("*.md"):
        if page.name != "index.md":
            assert f"(docs/{page.name}" in README, f"README does not link docs/{page.name}"


def test_the_sites_home_page_links_every_page_and_the_site_fetches_nothing_elsewhere():
    """The built site's pages are docs/*.md; mkdocs's own theme would load highlight.js
    from a CDN unless told not to."""
    home = (ROOT / "docs" / "index.md").read_text(encoding="utf-8")
    for page in (ROOT / "docs").glob("*.md"):
        if page.name != "index.md":
            assert f"]({page.name})" in home, f"docs/index.md does not link {page.name}"
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    assert re.search(r"^theme:\n  name: mkdocs\n  highlightjs: false$", config, re.MULTILINE)
    assert "extra_javascript" not in config and "extra_css" not in config


def test_every_filter_is_in_the_filter_table():
    rows = _table_rows()
    for resource in RESOURCES:
        for item in resource.filters:
            assert any(
                f"`{item.parameter}`" in row
                and re.search(rf"(^\| |, ){re.escape(resource.name)}[ ,]", row)
                for row in rows
            ), f"README's filter table lacks {resource.name} {item.parameter}"


@pytest.mark.parametrize(
    "query",
    ["platform=0", "competition_placing_min=-1", "released_since=0000", "updated_since=0000"],
)
def test_the_ranges_the_filters_answer_are_documented(client, query):
    """The bounds a filter's 400 gives are the ones the docs give."""
    detail = client.get(f"/api/v1/productions/?{query}").json["detail"]
    bounds = re.search(r"from (\S+) to ([0-9][0-9:.TZ-]*[0-9Z])", detail).groups()
    assert all(bound in DOCS for bound in bounds), (detail, bounds)


def test_every_common_parameter_is_in_the_parameter_table():
    rows = _table_rows()
    for name in ("page", "ordering", "format", "fields"):
        assert any(row.startswith(f"| `{name}` |") for row in rows), name


def test_options_and_openapi_share_the_descriptions(client):
    from demoserv.web.views.openapi import build
    from demoserv.web.views.table import ENDPOINTS

    spec = build(ENDPOINTS)
    for resource in RESOURCES:
        described = client.options(f"/api/v1/{resource.name}/").json["parameters"]
        documented = {
            p["name"]: p["description"]
            for p in spec["paths"][f"/api/v1/{resource.name}/"]["get"]["parameters"]
        }
        assert described == documented
        assert described["format"] == parameters.FORMAT


def test_the_architecture_block_names_every_module():
    """Every module of the package and of bench/ has its line in the architecture block
    (docs/architecture.md), under its package's folder; a resource's modules as
    <name>.py."""
    block = DOCS.split("## Architecture\n\n```text\n", 1)[1].split("```", 1)[0]
    named = set(re.findall(r"[\w/]+\.py", block))
    root = Path(__file__).resolve().parent.parent
    for path in (root / "demoserv").rglob("*.py"):
        package = path.parent.name
        if package == "resources" and path.stem in NAMES:
            assert f"  {package}/ " in block and "<name>.py" in block, path
            continue  # a resource's modules: the block's <name>.py, not one line each
        if path.name in ("__init__.py",) and package not in ("demoserv", "resources"):
            assert f"  {package}/ " in block, f"the architecture lacks {package}/"
            continue
        assert path.name in named, f"the architecture lacks {package}/{path.name}"
        assert f"{package}/" in block, f"the architecture lacks {package}/"
    for path in (root / "bench").glob("*.py"):
        assert path.name in named, f"the architecture lacks bench/{path.name}"


def test_every_subcommand_is_documented():
    from demoserv.cli.commands import main

    for name in main.commands:
        assert f"`demoserv {name}" in DOCS, f"the docs lack demoserv {name}"


def _documented_settings():
    """The settings the configuration table names; a first cell such as
    ``DEMOSERV_FETCH_RETRIES``, ``_BACKOFF`` names DEMOSERV_FETCH_BACKOFF too."""
    names = set()
    for row in DOCS.splitlines():
        if row.startswith("| `DEMOSERV_"):
            first, *more = [name.strip("` ") for name in row.split(" | ")[0][2:].split(",")]
            prefix = "_".join(first.split("_")[:2])
            names |= {first, *(prefix + name for name in more)}
    return names


def test_every_setting_is_in_the_configuration_table():
    from demoserv.settings import SETTINGS

    documented = _documented_settings()
    for setting in SETTINGS:
        assert f"DEMOSERV_{setting.name}" in documented, f"undocumented: DEMOSERV_{setting.name}"
