"""One version, said in demoserv/version.py: the package metadata, demoserv --version,
demoserv version, demoserv-serve --version, flask version and the OpenAPI document all
give it."""

import importlib.metadata
import tomllib
from pathlib import Path

import pytest

from demoserv import __version__
from demoserv.web.views.openapi import build
from demoserv.web.views.table import ENDPOINTS

from .conftest import suite_app
from .installed import run_installed

PYPROJECT = Path(__file__).resolve().parent.parent / "pyproject.toml"


def test_the_package_metadata_reads_the_version_module():
    project = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))
    assert "version" in project["project"]["dynamic"]
    assert "version" not in project["project"]
    dynamic = project["tool"]["setuptools"]["dynamic"]["version"]
    assert dynamic == {"attr": "demoserv.version.__version__"}
    # The installed metadata (a reinstall updates it after the version changes).
    assert importlib.metadata.version("demoserv") == __version__


@pytest.mark.parametrize(
    "command", [["demoserv", "--version"], ["demoserv", "version"], ["demoserv-serve", "--version"]]
)
def test_the_installed_commands_say_the_version(command):
    result = run_installed(*command)
    assert (result.returncode, result.stdout, result.stderr) == (0, f"demoserv {__version__}\n", "")


def test_flask_version_command(loaded_database):
    app = suite_app(loaded_database)
    result = app.test_cli_runner().invoke(args=["version"])
    assert result.exit_code == 0
    assert result.output == f"demoserv {__version__}\n"


def test_the_openapi_document_gives_the_version():
    assert build(ENDPOINTS)["info"]["version"] == __version__
